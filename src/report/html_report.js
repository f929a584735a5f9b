// The HTML report's page script (html_report.cc embeds it at build time,
// after Chart.js and the report document). It renders the JSON report
// (docs/json-report.md) found in <script id="laggard-report">; every chart
// uses the fields that are present and skips what is absent, so sections
// added to the report later (hardware, network) show up without changes.
//
// When everything is drawn it sets #laggard-status data-state="ok" (and the
// number of charts); the browser test reads that marker from the DOM.
(function () {
  'use strict';

  var R = JSON.parse(document.getElementById('laggard-report').textContent);
  var app = document.getElementById('app');
  var charts = [];   // Chart.js instances
  var canvases = 0;  // hand-drawn canvases (heatmap)

  var COLORS = {
    culprit: '#d1372b',
    peer: '#2f6fdb',
    median: '#8a93a3',
    compute: '#3b7dd8',
    comm: '#f0a73a',
    idle: '#c9ced8',
    other: '#9aa5b8',
    flagged: '#f0a73a'
  };
  var KNOWN_SECTIONS = ['schema', 'tool', 'verdict', 'findings', 'ranks', 'job', 'traces',
                        'data_quality', 'series', 'hang'];

  // ---- small helpers -------------------------------------------------------

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === 'text') e.textContent = v;
        else if (k === 'class') e.className = v;
        else e.setAttribute(k, v === true ? '' : v);
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      if (Array.isArray(c)) c.forEach(function (x) { if (x) e.appendChild(x); });
      else e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }
  function isNum(x) { return typeof x === 'number' && isFinite(x); }
  function pct(x, digits) { return isNum(x) ? (100 * x).toFixed(digits === undefined ? 1 : digits) + '%' : '–'; }
  function signedPct(x) { return isNum(x) ? (x >= 0 ? '+' : '') + (100 * x).toFixed(1) + '%' : '–'; }
  function secs(s) {
    if (!isNum(s)) return '–';
    if (Math.abs(s) < 1) return (s * 1000).toPrecision(3) + ' ms';
    return s.toPrecision(4) + ' s';
  }
  function num(x, d) { return isNum(x) ? x.toFixed(d === undefined ? 2 : d) : '–'; }
  function text(x) { return x === null || x === undefined ? '–' : String(x); }
  function confWord(c) { return c >= 0.8 ? 'high' : c >= 0.5 ? 'medium' : 'low'; }
  function median(values) {
    var v = values.filter(isNum).slice().sort(function (a, b) { return a - b; });
    if (!v.length) return null;
    var m = Math.floor(v.length / 2);
    return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  }
  function entityName(e) {
    if (!e) return '';
    if (e.job) return 'job';
    var parts = [];
    if (e.rank !== null && e.rank !== undefined) parts.push('rank ' + e.rank);
    if (e.host) parts.push(e.host);
    if (e.gpu !== null && e.gpu !== undefined) parts.push('GPU ' + e.gpu);
    return parts.join(' · ');
  }
  function card(title, sub) {
    var s = el('section', {class: 'card', id: title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}, el('h2', {text: title}));
    if (sub) s.appendChild(el('p', {class: 'sub', text: sub}));
    app.appendChild(s);
    return s;
  }
  function confidence(c) {
    if (!isNum(c)) return el('span', {text: '–'});
    var bar = el('span', {class: 'bar'}, el('span', {style: 'width:' + Math.round(100 * c) + '%'}));
    return el('span', {class: 'conf'}, bar, el('span', {text: c.toFixed(2) + ' (' + confWord(c) + ')'}));
  }
  // A column: {title, get(row) -> text or Node, num, tip(row) -> the cell's
  // title (its whole value, where the cell shows a cut one)}.
  function table(columns, rows, rowClass, cls) {
    var head = el('tr', null, columns.map(function (c) {
      return el('th', {class: c.num ? 'num' : null, text: c.title});
    }));
    var body = rows.map(function (r) {
      return el('tr', {class: rowClass ? rowClass(r) : null}, columns.map(function (c) {
        var v = c.get(r);
        var td = el('td', {class: c.num ? 'num' : null, title: c.tip ? c.tip(r) : null});
        if (v instanceof Node) td.appendChild(v); else td.textContent = text(v);
        return td;
      }));
    });
    return el('table', {class: cls}, el('thead', null, head), el('tbody', null, body));
  }
  function rankInfo(rank) {
    return (R.ranks || []).find(function (r) { return r.rank === rank; }) || null;
  }

  // ---- who is compared: the culprit and the healthy peer ------------------

  // Every rank of a culprit: its rank, the ranks of a group culprit, or the
  // ranks on a culprit host (a host or NIC culprit names no rank).
  var culpritRanks = [];
  function addCulpritRank(rank) {
    if (isNum(rank) && culpritRanks.indexOf(rank) < 0) culpritRanks.push(rank);
  }
  function ranksOnHost(host) {
    var out = [];
    (R.ranks || []).concat((R.traces && R.traces.ranks) || []).forEach(function (r) {
      if (r.host === host && isNum(r.rank) && out.indexOf(r.rank) < 0) out.push(r.rank);
    });
    return out.sort(function (a, b) { return a - b; });
  }
  function ranksOfCulprit(c) {
    if (isNum(c.rank)) return [c.rank];
    if ((c.ranks || []).length) return c.ranks.filter(isNum);
    return c.host ? ranksOnHost(c.host) : [];
  }
  var culprits = (R.verdict && R.verdict.culprits) || [];
  culprits.forEach(function (c) { ranksOfCulprit(c).forEach(addCulpritRank); });
  function isCulprit(rank) { return culpritRanks.indexOf(rank) >= 0; }
  function rankList(ranks) {
    var sorted = ranks.slice().sort(function (a, b) { return a - b; });
    var runs = [];
    sorted.forEach(function (r) {
      var last = runs[runs.length - 1];
      if (last && r === last[1] + 1) last[1] = r; else runs.push([r, r]);
    });
    return runs.map(function (x) { return x[0] === x[1] ? String(x[0]) : x[0] + '–' + x[1]; }).join(', ');
  }
  var focus = null;  // {rank, label}
  var firstCulprit = culprits.length ? ranksOfCulprit(culprits[0]) : [];
  if (firstCulprit.length) {
    focus = {rank: firstCulprit[0], label: 'culprit rank ' + firstCulprit[0] +
             (firstCulprit.length > 1 ? ' (of ranks ' + rankList(firstCulprit) + ')' : '')};
  } else if (R.traces && isNum(R.traces.culprit)) {
    focus = {rank: R.traces.culprit, label: 'late rank ' + R.traces.culprit};
  } else if ((R.ranks || []).length > 1) {
    var slowest = R.ranks.filter(function (r) { return isNum(r.median_step_s); })
      .sort(function (a, b) { return b.median_step_s - a.median_step_s; })[0];
    if (slowest) focus = {rank: slowest.rank, label: 'slowest rank ' + slowest.rank};
  }
  // The healthy peer: the one the findings (terminal and JSON) compare the
  // culprit with, traces.peer. Without one (no traces, or no one late in
  // them), the rank neither culprit nor flagged whose median step time is the
  // median of those ranks'. Never a rank of a culprit.
  var peer = null;
  (function () {
    function usable(rank) { return isNum(rank) && !isCulprit(rank) && (!focus || rank !== focus.rank); }
    if (R.traces && usable(R.traces.peer)) {
      peer = {rank: R.traces.peer, label: 'healthy peer rank ' + R.traces.peer};
      return;
    }
    var healthy = (R.ranks || []).filter(function (r) {
      return isNum(r.median_step_s) && !r.flagged && usable(r.rank);
    });
    if (healthy.length) {
      var m = median(healthy.map(function (r) { return r.median_step_s; }));
      healthy.sort(function (a, b) {
        return Math.abs(a.median_step_s - m) - Math.abs(b.median_step_s - m) || a.rank - b.rank;
      });
      peer = {rank: healthy[0].rank, label: 'median healthy peer rank ' + healthy[0].rank};
      return;
    }
    // Traces only: the rank with the smallest lateness.
    var tr = ((R.traces && R.traces.ranks) || []).filter(function (t) {
      return isNum(t.median_lateness_ms) && usable(t.rank);
    }).sort(function (a, b) { return Math.abs(a.median_lateness_ms) - Math.abs(b.median_lateness_ms); });
    if (tr.length) peer = {rank: tr[0].rank, label: 'healthy peer rank ' + tr[0].rank};
  })();

  // ---- verdict -------------------------------------------------------------

  function renderVerdict() {
    var v = R.verdict || {};
    var s = el('section', {class: 'card verdict ' + (v.status || '')});
    s.appendChild(el('div', {class: 'summary'},
      el('span', {class: 'badge ' + (v.status || ''), text: (v.status || 'unknown').replace(/_/g, ' ')}),
      ' ', (R.jobs ? 'job ' + R.jobs.diagnosed + ' of ' + R.jobs.found + ' (listed under Jobs): ' : '') +
      (v.summary || '').replace(/^verdict:\s*/, '')));
    var c = (v.culprits || [])[0];
    var impact = v.impact || {};
    var kpis = el('div', {class: 'kpis'});
    function kpi(label, value, note, wide) {
      kpis.appendChild(el('div', {class: wide ? 'kpi wide' : 'kpi'}, el('div', {class: 'label', text: label}),
        el('div', {class: 'value', text: value}), note ? el('div', {class: 'note', text: note}) : null));
    }
    if (c) {
      kpi('culprit', entityName(c), c.pattern ? c.pattern + (isNum(c.onset_step) ? ' from step ' + c.onset_step : '') : null, true);
      var cls = (c.cause_class || 'unknown').replace(/_/g, ' ');
      kpi('cause', c.cause ? c.cause.replace(/_/g, ' ') : cls, c.cause ? cls : null);
      kpi('confidence', isNum(c.confidence) ? c.confidence.toFixed(2) : '–', isNum(c.confidence) ? confWord(c.confidence) : null);
      kpi('slowdown', signedPct(c.slowdown), 'vs its peers');
    }
    if (c || isNum(impact.throughput_lost) || isNum(impact.gpu_hours_per_day)) {
      kpi('throughput lost', pct(impact.throughput_lost),
          {upper_bound: 'whole job, at most', lower_bound: 'whole job, at least',
           replay: 'whole job, what-if replay',
           before_after: 'whole job, measured: steps ' + impact.first_step + '–' +
               (impact.last_step == null ? 'end' : impact.last_step) + ' vs before',
           slow_steps: 'whole job, measured: its slow steps since step ' + impact.first_step
          }[impact.method] || 'whole job');
      kpi('GPU-hours / day', isNum(impact.gpu_hours_per_day) ? impact.gpu_hours_per_day.toFixed(1) : '–', 'at the job\'s size');
    }
    if (kpis.childNodes.length) s.appendChild(kpis);
    if ((v.culprits || []).length > 1) {
      s.appendChild(table([
        {title: 'culprit', get: function (x) { return entityName(x); }},
        {title: 'cause class', get: function (x) { return (x.cause_class || '').replace(/_/g, ' '); }},
        {title: 'cause', get: function (x) { return x.cause; }},
        {title: 'confidence', get: function (x) { return confidence(x.confidence); }},
        {title: 'slowdown', num: true, get: function (x) { return signedPct(x.slowdown); }},
        {title: 'onset step', num: true, get: function (x) { return x.onset_step; }},
        {title: 'pattern', get: function (x) { return x.pattern; }}
      ], v.culprits));
    }
    var job = R.job || {};
    var facts = [];
    if (isNum(job.ranks) && job.ranks) facts.push(job.ranks + ' ranks');
    if (isNum(job.steps) && job.steps) facts.push(job.steps + ' steps analysed');
    if (isNum(job.median_step_s)) facts.push('median step ' + secs(job.median_step_s));
    if (isNum(job.sync_spread)) facts.push('per-step spread ' + pct(job.sync_spread, 2));
    if (R.traces && (R.traces.ranks || []).length) facts.push(R.traces.ranks.length + ' rank traces, ' + R.traces.instances + ' collectives matched');
    if (facts.length) s.appendChild(el('p', {class: 'sub', text: facts.join(' · ')}));
    app.appendChild(s);

    if ((v.next_steps || []).length) {
      var n = card('Next steps');
      n.appendChild(el('ol', {class: 'steps'}, v.next_steps.map(function (t) { return el('li', {text: t}); })));
    }
  }

  // ---- heatmap: rank x step, excess over the per-step median ---------------

  function excessColor(x) {
    // Faster than the median: blue; at it: near white; slower: amber to dark red.
    if (!isNum(x)) return null;
    if (x < 0) {
      var t = Math.min(1, -x / 0.10);
      return 'rgb(' + Math.round(247 - 120 * t) + ',' + Math.round(248 - 70 * t) + ',' + Math.round(250 - 20 * t) + ')';
    }
    var u = Math.min(1, x / 0.25);
    // white -> amber (at ~5-10%) -> red -> dark red
    var stops = [[247, 248, 250], [252, 205, 120], [232, 100, 55], [150, 20, 30]];
    var p = u * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(p)), f = p - i;
    var a = stops[i], b = stops[i + 1];
    return 'rgb(' + Math.round(a[0] + (b[0] - a[0]) * f) + ',' + Math.round(a[1] + (b[1] - a[1]) * f) + ',' + Math.round(a[2] + (b[2] - a[2]) * f) + ')';
  }

  function renderHeatmap(parent, S) {
    var rows = S.ranks, cols = S.steps.length;
    var wrap = el('div', {class: 'heatmap-wrap'});
    var canvas = el('canvas', {class: 'heatmap', id: 'heatmap'});
    var tip = el('div', {class: 'tooltip'});
    wrap.appendChild(canvas);
    wrap.appendChild(tip);
    parent.appendChild(wrap);

    var left = 62, top = 8, bottom = 34, right = 10;
    // 16 px rows while they fit in 560 px; then the grid grows to at most
    // 1200 px and rows get thinner (a fraction of a pixel for thousands of
    // ranks: culprit rows keep their red outline).
    var rowH = rows.length * 16 <= 560 ? 16 : Math.max(560, Math.min(rows.length * 2, 1200)) / rows.length;
    var width = Math.max(400, wrap.clientWidth || 1200);
    var plotW = width - left - right, plotH = rowH * rows.length;
    var height = top + plotH + bottom;
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = height + 'px';
    var ctx = canvas.getContext('2d');
    ctx.scale(dpr, dpr);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, width, height);
    var colW = plotW / cols;
    var drawn = 0;
    rows.forEach(function (r, y) {
      for (var c = 0; c < cols; c++) {
        var v = r.step_s[c], m = S.median_s[c];
        var color = isNum(v) && isNum(m) && m > 0 ? excessColor(v / m - 1) : '#eceef2';
        ctx.fillStyle = color;
        ctx.fillRect(left + c * colW, top + y * rowH, Math.ceil(colW), Math.max(rowH, 1));
        drawn++;
      }
    });
    // Axes: rank labels (every k-th row) and culprit markers, step ticks.
    ctx.fillStyle = '#5d6677';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    var every = Math.max(1, Math.ceil(14 / rowH));
    var culpritRows = [];
    rows.forEach(function (r, y) { if (culpritRanks.indexOf(r.rank) >= 0) culpritRows.push(y); });
    function nearCulprit(y) {
      return culpritRows.some(function (c) { return c !== y && Math.abs(c - y) * rowH < 13; });
    }
    rows.forEach(function (r, y) {
      var isCulprit = culpritRows.indexOf(y) >= 0;
      if (isCulprit) {
        ctx.fillStyle = COLORS.culprit;
        ctx.fillRect(left - 6, top + y * rowH, 4, Math.max(rowH, 2));
        ctx.strokeStyle = COLORS.culprit;
        ctx.lineWidth = 1;
        ctx.strokeRect(left + 0.5, top + y * rowH + 0.5, plotW - 1, Math.max(rowH - 1, 1));
      }
      if (isCulprit || (y % every === 0 && !nearCulprit(y))) {
        ctx.fillStyle = isCulprit ? COLORS.culprit : '#5d6677';
        ctx.fillText('rank ' + r.rank, left - 9, top + y * rowH + rowH / 2);
      }
    });
    ctx.fillStyle = '#5d6677';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    var ticks = Math.min(cols, 10);
    for (var t = 0; t < ticks; t++) {
      var c = Math.round(t * (cols - 1) / Math.max(1, ticks - 1));
      var x = left + (c + 0.5) * colW;
      ctx.fillRect(x, top + plotH, 1, 4);
      ctx.fillText(String(S.steps[c]), x, top + plotH + 6);
    }
    ctx.fillText('step', left + plotW / 2, top + plotH + 20);
    canvases++;

    canvas.addEventListener('mousemove', function (ev) {
      var rect = canvas.getBoundingClientRect();
      var x = ev.clientX - rect.left, y = ev.clientY - rect.top;
      var c = Math.floor((x - left) / colW), r = Math.floor((y - top) / rowH);
      if (c < 0 || c >= cols || r < 0 || r >= rows.length) { tip.style.display = 'none'; return; }
      var v = rows[r].step_s[c], m = S.median_s[c];
      var last = c + 1 < cols ? S.steps[c + 1] - 1 : null;
      var steps = S.bucket_steps > 1 ? 'steps ' + S.steps[c] + (last !== null ? '–' + last : '+') : 'step ' + S.steps[c];
      tip.textContent = 'rank ' + rows[r].rank + ', ' + steps + ': ' +
        (isNum(v) ? secs(v) + (isNum(m) && m > 0 ? ' (' + signedPct(v / m - 1) + ' vs median ' + secs(m) + ')' : '') : 'no data');
      tip.style.display = 'block';
      tip.style.left = Math.min(x + 14, width - 260) + 'px';
      tip.style.top = (y + 12) + 'px';
    });
    canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; });

    // Legend.
    var lg = el('canvas', {width: 260, height: 12});
    var lctx = lg.getContext('2d');
    for (var i = 0; i < 260; i++) {
      lctx.fillStyle = excessColor(-0.10 + 0.35 * i / 259);
      lctx.fillRect(i, 0, 1, 12);
    }
    parent.appendChild(el('div', {class: 'legend'},
      el('span', {text: '−10%'}), lg, el('span', {text: '+25% or more over the step\'s median across ranks'}),
      el('span', null, el('span', {class: 'swatch', style: 'background:#eceef2'}), 'no data'),
      culpritRanks.length ? el('span', null, el('span', {class: 'swatch', style: 'background:' + COLORS.culprit}), 'culprit') : null));
    return drawn > 0;
  }

  // ---- Chart.js charts -----------------------------------------------------

  Chart.defaults.animation = false;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = '#5d6677';
  Chart.defaults.maintainAspectRatio = false;

  function chartBox(parent, cls) {
    var box = el('div', {class: 'chart' + (cls ? ' ' + cls : '')});
    var canvas = el('canvas');
    box.appendChild(canvas);
    parent.appendChild(box);
    return canvas;
  }
  function addChart(canvas, config) {
    var ch = new Chart(canvas.getContext('2d'), config);
    charts.push(ch);
    return ch;
  }

  function renderRankBars(parent) {
    var ranks = (R.ranks || []).filter(function (r) { return isNum(r.median_step_s); });
    if (!ranks.length) return false;
    var colors = ranks.map(function (r) {
      return isCulprit(r.rank) ? COLORS.culprit : r.flagged ? COLORS.flagged : COLORS.other;
    });
    addChart(chartBox(parent), {
      type: 'bar',
      data: {
        labels: ranks.map(function (r) { return String(r.rank); }),
        datasets: [{label: 'median step time (s)', data: ranks.map(function (r) { return r.median_step_s; }),
                    backgroundColor: colors, borderWidth: 0}]
      },
      options: {
        plugins: {legend: {display: false},
                  tooltip: {callbacks: {title: function (it) { return 'rank ' + it[0].label; },
                                        label: function (it) {
                                          var r = ranks[it.dataIndex];
                                          return secs(r.median_step_s) + ' (' + signedPct(r.excess) + ' vs peers)';
                                        }}}},
        scales: {x: {title: {display: true, text: 'rank'}, grid: {display: false}},
                 y: {title: {display: true, text: 'median step time (s)'}, beginAtZero: false,
                     suggestedMin: Math.min.apply(null, ranks.map(function (r) { return r.median_step_s; })) * 0.9}}
      }
    });
    var medians = ranks.map(function (r) { return r.median_step_s; });
    var lo = Math.min.apply(null, medians), hi = Math.max.apply(null, medians);
    if (synchronised) {
      note(parent, synchronisedWhy() + 'So every rank\'s median is the job\'s. ' + noTracesAdvice());
    } else if (ranks.length > 1 && hi - lo <= FLAT_MEDIANS * median(medians)) {
      note(parent, 'Every rank\'s median step time is within ' + pct((hi - lo) / median(medians), 2) +
        ' of the others\': by step times no rank is slower than its peers.');
    }
    return true;
  }

  function renderComputeWait(parent) {
    var tr = ((R.traces && R.traces.ranks) || []).filter(function (t) { return isNum(t.window_s) && t.window_s > 0; });
    if (!tr.length) return false;
    function perStep(t, v) { return isNum(v) ? 1000 * v / Math.max(1, t.steps || 1) : null; }
    addChart(chartBox(parent), {
      type: 'bar',
      data: {
        labels: tr.map(function (t) { return String(t.rank); }),
        datasets: [
          {label: 'compute', backgroundColor: COLORS.compute,
           data: tr.map(function (t) { return perStep(t, t.compute_busy_s); })},
          {label: 'communication / waiting', backgroundColor: COLORS.comm,
           data: tr.map(function (t) { return perStep(t, t.busy_s - t.compute_busy_s); })},
          {label: 'idle (no kernel)', backgroundColor: COLORS.idle,
           data: tr.map(function (t) { return perStep(t, t.idle_s); })}
        ]
      },
      options: {
        plugins: {tooltip: {callbacks: {title: function (it) { return 'rank ' + it[0].label; },
                                        label: function (it) { return it.dataset.label + ': ' + num(it.raw, 2) + ' ms/step'; }}}},
        scales: {x: {stacked: true, title: {display: true, text: 'rank'}, grid: {display: false}},
                 y: {stacked: true, title: {display: true, text: 'ms per profiled step'}}}
      }
    });
    return true;
  }

  function seriesOf(rank) {
    var S = R.series;
    if (!S || rank === null) return null;
    return (S.ranks || []).find(function (r) { return r.rank === rank; }) || null;
  }

  function gpuOf(rank) {
    var S = R.series;
    if (!S || !S.gpus) return null;
    var g = S.gpus.find(function (x) { return x.rank === rank; });
    if (g) return g;
    var info = rankInfo(rank);
    if (info && info.host && isNum(info.gpu)) {
      return S.gpus.find(function (x) { return x.host === info.host && x.gpu === info.gpu; }) || null;
    }
    return null;
  }

  // Time-axis charts stacked in the timeline get one y-axis width, so their
  // plot areas start at the same x and the signals line up.
  var Y_AXIS_WIDTH = 64;
  function fixedWidth(scale) { scale.width = Y_AXIS_WIDTH; }

  function lineDataset(label, color, points, dashed) {
    return {label: label, data: points, borderColor: color, backgroundColor: color, borderWidth: 1.6,
            pointRadius: points.length > 80 ? 0 : 2, borderDash: dashed ? [5, 4] : undefined,
            spanGaps: false, tension: 0};
  }

  function renderTimeline(parent) {
    var S = R.series;
    if (!S || !focus) return 0;
    var who = [{rank: focus.rank, label: focus.label, color: COLORS.culprit}];
    if (peer) who.push({rank: peer.rank, label: peer.label, color: COLORS.peer});
    var timed = (S.start_s || []).some(isNum);
    var made = 0;
    var timeCharts = [];  // charts on the time axis, aligned after creation

    // Step time. The y-scale leaves out the warm-up steps (before
    // job.first_step, which the detector skips too): a first step of
    // several seconds would flatten every other step into a line.
    var firstStep = R.job && isNum(R.job.first_step) ? R.job.first_step : null;
    var scale = {lo: Infinity, hi: -Infinity}, warm = {lo: Infinity, hi: -Infinity};
    function points(values) {
      var pts = [];
      values.forEach(function (v, c) {
        var x = timed ? S.start_s[c] : S.steps[c];
        if (!isNum(x) || !isNum(v)) return;
        pts.push({x: x, y: v});
        var into = firstStep !== null && S.steps[c] < firstStep ? warm : scale;
        into.lo = Math.min(into.lo, v);
        into.hi = Math.max(into.hi, v);
      });
      return pts;
    }
    var stepSets = [];
    who.forEach(function (w) {
      var s = seriesOf(w.rank);
      if (!s) return;
      var pts = points(s.step_s);
      if (pts.length) stepSets.push(lineDataset(w.label, w.color, pts));
    });
    if (stepSets.length) {
      stepSets.push(lineDataset('median of all ranks', COLORS.median, points(S.median_s), true));
      var yScale = {title: {display: true, text: 's'}, afterFit: fixedWidth};
      var warmNote = null;
      if (isFinite(scale.lo) && isFinite(warm.lo) && (warm.hi > scale.hi || warm.lo < scale.lo)) {
        var pad = Math.max(0.1 * (scale.hi - scale.lo), 0.01 * scale.hi);
        yScale.min = scale.lo - pad;
        yScale.max = scale.hi + pad;
        var off = [];
        if (warm.hi > scale.hi) off.push('up to ' + secs(warm.hi));
        if (warm.lo < scale.lo) off.push('down to ' + secs(warm.lo));
        warmNote = el('span', {class: 'zoom', text: 'warm-up steps before step ' + firstStep +
          ' (' + off.join(', ') + ') are off the scale; '});
      }
      if (synchronised) {
        warmNote = el('span', {class: 'zoom'}, warmNote,
          el('span', {text: 'synchronised: every rank logs the same step time, so the lines coincide '}));
      }
      var stepNote = el('span', {class: 'zoom'});
      parent.appendChild(el('h3', {text: 'step time '}, warmNote, stepNote));
      var stepBox = chartBox(parent, 'small');
      stepBox.parentNode.id = 'chart-step-time';
      timeCharts.push({timed: timed, note: stepNote, chart: addChart(stepBox, {
        type: 'line', data: {datasets: stepSets},
        options: {parsing: false, normalized: true, interaction: {mode: 'nearest', intersect: false},
                  plugins: {legend: {position: 'top', align: 'end', labels: {boxWidth: 14}}},
                  scales: {x: {type: 'linear', title: {display: true, text: timed ? 'seconds since ' + S.origin : 'step'}},
                           y: yScale}}
      })});
      made++;
    }

    // Time-based signals: collective lateness and GPU metrics.
    var signals = [
      {key: 'lateness_ms', title: 'collective lateness', unit: 'ms', from: function (w) {
        var c = (S.collectives || []).find(function (x) { return x.rank === w.rank; });
        return c ? {t: c.t_s, v: c.lateness_ms} : null;
      }},
      {key: 'temp_c', title: 'GPU temperature', unit: '°C'},
      {key: 'sm_clock_mhz', title: 'SM clock', unit: 'MHz'},
      {key: 'power_w', title: 'power', unit: 'W'}
    ];
    var approximate = false;
    signals.forEach(function (sig) {
      var sets = [];
      who.forEach(function (w) {
        var d;
        if (sig.from) {
          d = sig.from(w);
        } else {
          var g = gpuOf(w.rank);
          if (g && g[sig.key]) {
            d = {t: g.t_s, v: g[sig.key]};
            if (g.time_approximate) approximate = true;
          }
        }
        if (!d) return;
        var pts = [];
        for (var i = 0; i < d.t.length; i++) if (isNum(d.t[i]) && isNum(d.v[i])) pts.push({x: d.t[i], y: d.v[i]});
        if (pts.length) sets.push(lineDataset(w.label, w.color, pts));
      });
      if (!sets.length) return;
      var note = el('span', {class: 'zoom'});
      parent.appendChild(el('h3', {text: sig.title + ' (' + sig.unit + ') '}, note));
      timeCharts.push({timed: true, note: note, chart: addChart(chartBox(parent, 'small'), {
        type: sig.from ? 'scatter' : 'line', data: {datasets: sets},
        options: {parsing: false, normalized: true, interaction: {mode: 'nearest', intersect: false},
                  plugins: {legend: {position: 'top', align: 'end', labels: {boxWidth: 14}}},
                  scales: {x: {type: 'linear', title: {display: true, text: 'seconds since ' + (S.origin || 'the first sample')}},
                           y: {title: {display: true, text: sig.unit}, afterFit: fixedWidth}}}
      })});
      made++;
    });
    // One time range for the time-axis charts, so the signals line up. A
    // signal that covers a small part of it (a profiled window of a few
    // steps) keeps its own range, or it would shrink to a line.
    function span(tc) {
      var lo = Infinity, hi = -Infinity;
      tc.chart.data.datasets.forEach(function (ds) {
        ds.data.forEach(function (p) { lo = Math.min(lo, p.x); hi = Math.max(hi, p.x); });
      });
      return {lo: lo, hi: hi};
    }
    var all = {lo: Infinity, hi: -Infinity};
    timeCharts.forEach(function (tc) {
      if (!tc.timed) return;
      tc.span = span(tc);
      all.lo = Math.min(all.lo, tc.span.lo);
      all.hi = Math.max(all.hi, tc.span.hi);
    });
    if (isFinite(all.lo) && all.hi > all.lo) {
      timeCharts.forEach(function (tc) {
        if (!tc.timed) return;
        if (tc.span.hi - tc.span.lo < 0.2 * (all.hi - all.lo)) {
          tc.note.textContent = 'zoomed to ' + num(tc.span.lo, 1) + '–' + num(tc.span.hi, 1) + ' s (the rest of the run has no data)';
          return;
        }
        tc.chart.options.scales.x.min = all.lo;
        tc.chart.options.scales.x.max = all.hi;
        tc.chart.update();
      });
    }
    if (!timed && made > 1) {
      parent.appendChild(el('p', {class: 'sub', text: 'The step logs carry no timestamps: step time is drawn by step number, the other signals by time.'}));
    }
    if (approximate) {
      parent.appendChild(el('p', {class: 'sub', text: 'Some GPU samples have no absolute time (the tool printed none): they are drawn from their first sample.'}));
    }
    return made;
  }

  // ---- the synchronised case ----------------------------------------------
  //
  // When every rank logs the same step time (each step waits for the slowest
  // rank in the all-reduce: job.synchronised), per-rank step times are flat
  // and cannot show the culprit; the traces can: who arrives last at the
  // collectives, and who computes longest.

  var synchronised = !!(R.job && R.job.synchronised);
  // Medians this close are flat on the chart (the detector's own sync
  // threshold, StepDetectorOptions::sync_spread).
  var FLAT_MEDIANS = 0.005;
  var tracedRanks = ((R.traces && R.traces.ranks) || []).filter(function (t) { return isNum(t.rank); });
  var lateRanks = tracedRanks.filter(function (t) { return isNum(t.median_lateness_ms); });
  var computeRanks = tracedRanks.filter(function (t) { return isNum(t.compute_busy_s) && t.steps > 0; });

  function synchronisedWhy() {
    var spread = R.job && isNum(R.job.sync_spread) ? ' (per-step spread across ranks ' + pct(R.job.sync_spread, 2) + ')' : '';
    return 'Step times are synchronised: every rank logs the same step time' + spread +
      ', because each step waits for the slowest rank in the all-reduce. ';
  }
  function noTracesAdvice() {
    return 'To see which rank is slow, add profiler traces of 2 steps from every rank ' +
      '(torch.profiler: who arrives last at the collectives, who computes longest), ' +
      'or log compute-only step time (before the gradient all-reduce).';
  }
  function note(parent, text) { parent.appendChild(el('p', {class: 'flat-note', text: text})); }

  // Bars per rank, the culprit's red; `value` of a trace rank, in `unit`.
  function rankValueBars(parent, ranks, value, unit, tip) {
    var colors = ranks.map(function (t) { return isCulprit(t.rank) ? COLORS.culprit : COLORS.other; });
    var values = ranks.map(value);
    var finite = values.filter(isNum);
    var lo = Math.min.apply(null, finite), hi = Math.max.apply(null, finite);
    addChart(chartBox(parent), {
      type: 'bar',
      data: {labels: ranks.map(function (t) { return String(t.rank); }),
             datasets: [{label: unit, data: values, backgroundColor: colors, borderWidth: 0}]},
      options: {
        plugins: {legend: {display: false},
                  tooltip: {callbacks: {title: function (it) { return 'rank ' + it[0].label; },
                                        label: function (it) { return tip(ranks[it.dataIndex], it.raw); }}}},
        scales: {x: {title: {display: true, text: 'rank'}, grid: {display: false}},
                 y: {title: {display: true, text: unit}, beginAtZero: lo <= 0,
                     suggestedMin: lo > 0 ? lo - 0.5 * (hi - lo) : undefined}}
      }
    });
    return true;
  }

  function renderLatenessBars(parent) {
    if (lateRanks.length < 2) return false;
    return rankValueBars(parent, lateRanks, function (t) { return t.median_lateness_ms; },
      'median lateness (ms)', function (t, v) {
        return num(v) + ' ms after the median arrival; last at ' + pct(t.share_last, 0) + ' of collectives';
      });
  }

  function renderComputeBars(parent) {
    if (computeRanks.length < 2) return false;
    return rankValueBars(parent, computeRanks, function (t) { return 1000 * t.compute_busy_s / t.steps; },
      'compute (ms per profiled step)', function (t, v) {
        return num(v) + ' ms of ' + (t.cpu_only ? 'CPU ops' : 'kernels') + ' per profiled step';
      });
  }

  function renderCharts() {
    var S = R.series;
    var withTraces = synchronised && (lateRanks.length >= 2 || computeRanks.length >= 2);
    if (S && (S.ranks || []).length && (S.steps || []).length) {
      var h = card('Step time by rank and step', withTraces ? null :
        'Each cell is a rank\'s step time relative to the median of all ranks at that step' +
        (S.bucket_steps > 1 ? ' (' + S.bucket_steps + ' steps per column, averaged)' : '') + '.');
      if (withTraces) {
        note(h, synchronisedWhy() + 'Step times per rank would be flat here; lateness at the collectives ' +
          'and compute per rank, from the profiler traces, are charted below instead.');
      } else {
        if (synchronised) note(h, synchronisedWhy() + 'So this heatmap is flat. ' + noTracesAdvice());
        renderHeatmap(h, S);
      }
    }
    // Sections go into the page before their charts are made: Chart.js
    // sizes a chart from its container, which a detached node does not have.
    var grid = el('div', {class: 'grid2'});
    app.appendChild(grid);
    var panels = [];
    function panel(title, sub, draw) {
      var c = el('section', {class: 'card', id: title.toLowerCase().replace(/[^a-z0-9]+/g, '-')},
                 el('h2', {text: title}), sub ? el('p', {class: 'sub', text: sub}) : null);
      grid.appendChild(c);
      if (draw(c)) panels.push(c); else grid.removeChild(c);
    }
    if (withTraces) {
      panel('Lateness at collectives per rank',
        'From the profiler traces: the median of each rank\'s arrival at a collective against the median ' +
        'arrival. The rank that arrives last holds the others up; culprit in red.', renderLatenessBars);
      panel('Compute per rank',
        'From the profiler traces: kernel time (CPU op time in CPU-only traces) per profiled step, ' +
        'without communication; culprit in red.', renderComputeBars);
    } else {
      panel('Median step time per rank', null, renderRankBars);
    }
    panel('Compute vs communication per rank', 'From the profiler traces: time per profiled step.', renderComputeWait);
    if (panels.length === 1) grid.style.gridTemplateColumns = '1fr';
    if (panels.length === 3) panels[2].style.gridColumn = '1 / -1';
    if (panels.length % 2) charts.forEach(function (c) { c.resize(); });
    if (!panels.length) app.removeChild(grid);
    if (focus) {
      var t = el('section', {class: 'card timeline'}, el('h2', {text: 'Timeline: ' + focus.label + (peer ? ' vs ' + peer.label : '')}));
      app.appendChild(t);
      if (!renderTimeline(t)) app.removeChild(t);
    }
  }

  // ---- findings, ranks, generic sections, data quality ---------------------

  function renderFindings() {
    var f = R.findings || [];
    var s = card('Evidence', f.length ? f.length + ' finding' + (f.length === 1 ? '' : 's') + ' from the detectors, most important first.' : null);
    if (!f.length) { s.appendChild(el('p', {class: 'empty', text: 'No findings.'})); return; }
    f.forEach(function (x) {
      var d = el('div', {class: 'finding'});
      d.appendChild(el('div', {class: 'head'},
        el('span', {class: 'badge ' + x.severity, text: x.severity}),
        el('strong', {text: entityName(x.entity)}),
        el('span', {class: 'code mono', text: x.code}),
        el('span', {class: 'code', text: 'confidence ' + num(x.confidence)})));
      d.appendChild(el('div', {text: x.message}));
      if ((x.evidence || []).length) {
        d.appendChild(el('ul', null, x.evidence.map(function (e) {
          var where = e.source && e.source.file ? e.source.file + (e.source.line ? ':' + e.source.line : '') : null;
          return el('li', null, e.text, where ? el('span', {class: 'code mono', text: '  [' + where + ']'}) : null);
        })));
      }
      (x.next_steps || []).forEach(function (n) { d.appendChild(el('div', {class: 'next', text: '→ ' + n})); });
      s.appendChild(d);
    });
  }

  function renderRanks() {
    var ranks = R.ranks || [];
    var traces = (R.traces && R.traces.ranks) || [];
    var unranked = (R.traces && R.traces.unranked) || [];
    if (!ranks.length && !traces.length && !unranked.length) return;
    var s = card('Per-rank tables');
    if (ranks.length) {
      var det = el('details', {open: ranks.length <= 32}, el('summary', {text: 'Step times of ' + ranks.length + ' ranks'}));
      det.appendChild(el('div', {class: 'scroll'}, table([
        {title: 'rank', num: true, get: function (r) { return r.rank; }},
        {title: 'host', get: function (r) { return r.host; }},
        {title: 'GPU', num: true, get: function (r) { return r.gpu; }},
        {title: 'steps', num: true, get: function (r) { return r.steps; }},
        {title: 'median', num: true, get: function (r) { return secs(r.median_step_s); }},
        {title: 'p90', num: true, get: function (r) { return secs(r.p90_step_s); }},
        {title: 'max', num: true, get: function (r) { return secs(r.max_step_s); }},
        {title: 'excess', num: true, get: function (r) { return signedPct(r.excess); }},
        {title: 'z', num: true, get: function (r) { return num(r.z, 1); }},
        {title: 'slowest share', num: true, get: function (r) { return pct(r.slowest_share, 0); }},
        {title: 'flagged', get: function (r) { return r.flagged ? 'yes' : ''; }}
      ], ranks, function (r) { return culpritRanks.indexOf(r.rank) >= 0 ? 'culprit' : r.flagged ? 'flagged' : null; })));
      s.appendChild(det);
    }
    if (traces.length) {
      var dt = el('details', {open: traces.length <= 16}, el('summary', {text: 'Profiler traces of ' + traces.length + ' ranks'}));
      dt.appendChild(el('div', {class: 'scroll'}, table([
        {title: 'rank', num: true, get: function (t) { return t.rank; }},
        {title: 'host', get: function (t) { return t.host; }},
        {title: 'steps', num: true, get: function (t) { return t.steps; }},
        {title: 'compute busy', num: true, get: function (t) { return secs(t.compute_busy_s); }},
        {title: 'in collectives', num: true, get: function (t) { return secs(t.collective_s); }},
        {title: 'idle', num: true, get: function (t) { return secs(t.idle_s); }},
        {title: 'clock offset', num: true, get: function (t) { return isNum(t.clock_offset_ms) ? num(t.clock_offset_ms) + ' ms' : '–'; }},
        {title: 'last at', num: true, get: function (t) { return pct(t.share_last, 0); }},
        {title: 'median lateness', num: true, get: function (t) { return isNum(t.median_lateness_ms) ? num(t.median_lateness_ms) + ' ms' : '–'; }},
        {title: 'delay caused', num: true, get: function (t) { return num(t.delay_caused_ms) + ' ms'; }}
      ], traces, function (t) { return culpritRanks.indexOf(t.rank) >= 0 ? 'culprit' : null; })));
      s.appendChild(dt);
    }
    if (unranked.length) {
      var du = el('details', {open: unranked.length <= 16},
                  el('summary', {text: 'Profiler traces without a rank: ' + unranked.length + ' (not matched with other ranks)'}));
      du.appendChild(el('div', {class: 'scroll'}, table([
        {title: 'file', get: function (t) { return t.file; }},
        {title: 'host', get: function (t) { return t.host; }},
        {title: 'steps', num: true, get: function (t) { return t.steps; }},
        {title: 'window', num: true, get: function (t) { return secs(t.window_s); }},
        {title: 'compute busy', num: true, get: function (t) { return secs(t.compute_busy_s); }},
        {title: 'in collectives', num: true, get: function (t) { return secs(t.collective_s); }},
        {title: 'idle', num: true, get: function (t) { return secs(t.idle_s); }},
        {title: 'largest gap', num: true, get: function (t) { return secs(t.largest_gap_s); }}
      ], unranked)));
      s.appendChild(du);
    }
  }

  // Any value as table(s): arrays of objects become tables with the union of
  // their keys as columns; objects of scalars become key/value tables.
  // Their cells stay one line high: a long value is cut to the column's
  // width (html_report.css, table.generic) and shown whole in its title.
  var MAX_ROWS = 500;
  var CUT_CHARS = 24;  // about the width a cell keeps (max-width: 16em)
  function cell(v) {
    if (v === null || v === undefined) return '–';
    if (typeof v === 'object') {
      var s = JSON.stringify(v);
      return s.length > 160 ? s.slice(0, 157) + '…' : s;
    }
    if (typeof v === 'number') return String(Math.round(v * 1e6) / 1e6);
    return String(v);
  }
  function wholeValue(v) {
    if (v === null || v === undefined) return null;
    var s = typeof v === 'object' ? JSON.stringify(v) : String(v);
    return s.length > CUT_CHARS ? s : null;
  }
  function genericTable(parent, title, value, depth) {
    if (depth > 0) parent.appendChild(el('h3', {text: title}));
    if (Array.isArray(value)) {
      if (!value.length) { parent.appendChild(el('p', {class: 'empty', text: 'none'})); return; }
      if (value.every(function (x) { return x && typeof x === 'object' && !Array.isArray(x); })) {
        var keys = [];
        value.forEach(function (x) { Object.keys(x).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
        var rows = value.slice(0, MAX_ROWS);
        parent.appendChild(el('div', {class: 'scroll'}, table(keys.map(function (k) {
          return {title: k, num: rows.every(function (r) { return r[k] === null || r[k] === undefined || typeof r[k] === 'number'; }),
                  get: function (r) { return el('div', {class: 'cut', text: cell(r[k])}); },
                  tip: function (r) { return wholeValue(r[k]); }};
        }), rows, null, 'generic')));
        if (value.length > MAX_ROWS) parent.appendChild(el('p', {class: 'sub', text: (value.length - MAX_ROWS) + ' more rows in the JSON report'}));
      } else {
        parent.appendChild(el('p', {class: 'mono', text: value.map(cell).join(', ')}));
      }
      return;
    }
    if (value && typeof value === 'object') {
      var scalars = [], nested = [], empty = [];
      Object.keys(value).forEach(function (k) {
        if (value[k] !== null && typeof value[k] === 'object') {
          (isEmptyValue(value[k]) ? empty : nested).push(k);
        } else {
          scalars.push(k);
        }
      });
      if (scalars.length) {
        parent.appendChild(table([{title: 'field', get: function (k) { return k; }},
                                  {title: 'value', get: function (k) { return cell(value[k]); }}], scalars));
      }
      nested.forEach(function (k) { genericTable(parent, (depth > 0 ? title + ' · ' : '') + k.replace(/_/g, ' '), value[k], depth + 1); });
      // What the section has no data for: one line, not a heading each.
      if (empty.length) {
        parent.appendChild(el('p', {class: 'sub not-given', text: 'not given: ' +
          empty.map(function (k) { return k.replace(/_/g, ' '); }).join(', ')}));
      }
      return;
    }
    parent.appendChild(el('p', {text: cell(value)}));
  }

  // A value with nothing to show: null, [], {}, or an object of such.
  function isEmptyValue(v) {
    if (v === null || v === undefined) return true;
    if (Array.isArray(v)) return v.length === 0;
    if (typeof v === 'object') return Object.keys(v).every(function (k) { return isEmptyValue(v[k]); });
    return false;
  }

  // What each section needs as input, for the line of sections not given.
  var NOT_GIVEN = {
    hardware: 'GPU metrics (nvidia-smi, DCGM, the laggard agent)',
    network: 'network data (ibstat, ethtool, perfquery, nccl-tests, NCCL_DEBUG logs, topology, switch map)',
    rank_map: 'where each rank runs (NCCL_DEBUG logs, --gpus-per-node, a rank map)'
  };

  function renderOtherSections() {
    var missing = [];
    Object.keys(R).forEach(function (k) {
      if (KNOWN_SECTIONS.indexOf(k) >= 0) return;
      var title = k.charAt(0).toUpperCase() + k.slice(1).replace(/_/g, ' ');
      if (isEmptyValue(R[k])) {
        missing.push(NOT_GIVEN[k] || title.toLowerCase());
        return;
      }
      var s = card(title);
      s.id = 'section-' + k;
      genericTable(s, title, R[k], 0);
    });
    ['hardware', 'network'].forEach(function (k) {
      if (!(k in R)) missing.push(NOT_GIVEN[k]);
    });
    // Sections without data collapse into one line.
    if (missing.length) {
      var s = el('section', {class: 'card not-given', id: 'not-given'});
      s.appendChild(el('p', {class: 'sub', text: 'not given: ' + missing.join('; ') +
        ' — how to add them: `laggard formats` lists every input laggard reads, and how to produce it ' +
        '(docs/input-formats.md).'}));
      app.appendChild(s);
    }
  }

  function renderDataQuality() {
    var dq = R.data_quality;
    if (!dq) return;
    var s = card('Data quality', dq.files_read + ' file' + (dq.files_read === 1 ? '' : 's') + ' read, ' +
      dq.files_skipped + ' skipped, ' + dq.records + ' step records.');
    var counts = [];
    [['bad_records', 'bad record'], ['skipped_files', 'skipped file'], ['notes', 'note']].forEach(function (p) {
      Object.keys(dq[p[0]] || {}).forEach(function (code) { counts.push({kind: p[1], code: code, n: dq[p[0]][code]}); });
    });
    if (counts.length) {
      s.appendChild(table([{title: 'kind', get: function (c) { return c.kind; }},
                           {title: 'code', get: function (c) { return el('span', {class: 'mono', text: c.code}); }},
                           {title: 'count', num: true, get: function (c) { return c.n; }}], counts));
    } else {
      s.appendChild(el('p', {class: 'empty', text: 'No bad records.'}));
    }
    if ((dq.examples || []).length) {
      s.appendChild(el('h3', {text: 'examples'}));
      s.appendChild(el('div', {class: 'scroll'}, table([
        {title: 'code', get: function (e) { return el('span', {class: 'mono', text: e.code}); }},
        {title: 'where', get: function (e) { return (e.file || '') + (e.line ? ':' + e.line : e.offset ? ' @' + e.offset : ''); }},
        {title: 'message', get: function (e) { return e.message; }}], dq.examples)));
    }
    if ((dq.files || []).length) {
      var det = el('details', null, el('summary', {text: 'Input files (' + dq.files.length + ')'}));
      det.appendChild(el('div', {class: 'scroll'}, table([
        {title: 'path', get: function (f) { return el('span', {class: 'mono', text: f.path}); }},
        {title: 'format', get: function (f) { return f.format || 'skipped'; }},
        {title: 'bytes', num: true, get: function (f) { return f.bytes; }},
        {title: 'records', num: true, get: function (f) { return f.records; }}], dq.files.slice(0, MAX_ROWS))));
      s.appendChild(det);
    }
  }

  // For the scripts embedded after this one (html_whatif.js).
  window.laggardPage = {el: el, table: table, excessColor: excessColor, secs: secs, pct: pct};

  // The Hang section: written as HTML by html_hang.cc into a <template>,
  // moved here after the verdict and the next steps.
  function placeHang() {
    var t = document.getElementById('laggard-hang');
    if (!t) return;
    var after = document.getElementById('next-steps') || app.querySelector('.card.verdict');
    var node = document.importNode(t.content, true);
    if (after && after.parentNode === app) app.insertBefore(node, after.nextSibling);
    else app.appendChild(node);
  }

  renderVerdict();
  placeHang();
  renderCharts();
  renderFindings();
  renderRanks();
  renderOtherSections();
  renderDataQuality();

  var drawn = charts.filter(function (c) { return c.width > 0 && c.height > 0; }).length;
  var status = document.getElementById('laggard-status');
  status.setAttribute('data-charts', String(drawn + canvases));
  if (drawn === charts.length && status.getAttribute('data-state') !== 'error') {
    status.setAttribute('data-state', 'ok');
  } else if (drawn !== charts.length) {
    window.laggardReportError('only ' + drawn + ' of ' + charts.length + ' charts have a size');
  }
})();
