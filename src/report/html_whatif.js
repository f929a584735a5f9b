// The HTML report's "What-if (op timeline)" section (docs/html-report.md).
// html_report.cc embeds it, with its data in <script id="laggard-op-timelines">
// (html_whatif.cc), after the page script, only for runs with an op
// timeline's what-if replay. It uses the page script's helpers
// (window.laggardPage) and puts one card per timeline after the verdict and
// the next steps.
//
// The grid: one row per pipeline stage, one column per DP rank, each cell
// the replay's slowdown with only that worker at its measured durations
// (the largest of its tp ranks' with tp > 1), coloured like the step
// heatmap: white at 1.00x, amber to dark red for 1.05x .. 1.25x and more.
// One slow worker lights one cell, a heavy stage its row, workload that
// moves between replicas every cell.
(function () {
  'use strict';

  var P = window.laggardPage;
  var timelines = JSON.parse(document.getElementById('laggard-op-timelines').textContent);
  var app = document.getElementById('app');
  var el = P.el;

  function times(x) { return typeof x === 'number' && isFinite(x) ? x.toFixed(2) + '×' : '–'; }

  // The card goes after the verdict and the next steps.
  function place(card) {
    var after = document.getElementById('next-steps') || app.querySelector('.card.verdict');
    var cards = app.querySelectorAll('.whatif-card');
    if (cards.length) after = cards[cards.length - 1];
    if (after && after.parentNode === app) app.insertBefore(card, after.nextSibling);
    else app.appendChild(card);
  }

  function headline(t) {
    var l = t.layout;
    return 'The job runs ' + times(t.slowdown) + ' slower than if no op straggled: ' +
      P.secs(t.measured_step_s) + ' per step measured, ' + P.secs(t.ideal_step_s) +
      ' ideal (what-if replay of ' + t.steps + ' step' + (t.steps === 1 ? '' : 's') +
      ', dp ' + l.dp + ' × pp ' + l.pp + ' × tp ' + l.tp + (l.vpp > 1 ? ' × vpp ' + l.vpp : '') + ').';
  }

  function cellTitle(c, dp, pp, tp) {
    if (!c) return 'DP rank ' + dp + ', stage ' + pp + ': not replayed';
    var who = c.worker + (typeof c.rank === 'number' ? ' (rank ' + c.rank + ')' : '');
    var of = tp > 1 ? ', the slowest of its ' + c.tp_replayed + ' replayed tp rank' +
      (c.tp_replayed === 1 ? '' : 's') : '';
    return who + ': ' + times(c.slowdown) + ' with only this worker measured' + of;
  }

  function heatmap(t) {
    var h = t.heatmap;
    var head = el('tr', null, el('th', {text: 'stage \\ DP rank'}),
      h.dp_ranks.map(function (dp) { return el('th', {class: 'num', text: String(dp)}); }));
    var rows = h.cells.map(function (row, pp) {
      return el('tr', null, el('th', {text: 'stage ' + pp}), row.map(function (c, i) {
        var dp = h.dp_ranks[i];
        var td = el('td', {class: c ? 'num' : 'num not-replayed', title: cellTitle(c, dp, pp, h.tp),
                           'data-dp': dp, 'data-pp': pp,
                           'data-slowdown': c && typeof c.slowdown === 'number' ? c.slowdown : null});
        if (c) {
          var x = typeof c.slowdown === 'number' ? c.slowdown - 1 : NaN;
          var bg = P.excessColor(x);
          if (bg) td.style.background = bg;
          if (x > 0.12) td.style.color = '#ffffff';
          td.textContent = times(c.slowdown);
        } else {
          td.textContent = '–';
        }
        return td;
      }));
    });
    return el('div', {class: 'scroll whatif-grid'},
      el('table', {class: 'whatif-heatmap'}, el('thead', null, head), el('tbody', null, rows)));
  }

  function legend(t) {
    var h = t.heatmap;
    var swatches = [0, 0.05, 0.1, 0.25].map(function (x) {
      return el('span', null, el('span', {class: 'swatch', style: 'background:' + P.excessColor(x)}),
        times(1 + x) + (x === 0.25 ? ' or more' : ''));
    });
    var parts = swatches.concat([
      el('span', null, el('span', {class: 'swatch not-replayed'}), '– not replayed')]);
    var notes = [];
    if (t.workers_replayed < t.workers) {
      notes.push(t.workers_replayed + ' of ' + t.workers + ' workers replayed alone (the replay ' +
        'decomposes at most 64, those whose compute exceeds its typical time most)');
    }
    if (h.dp_ranks_not_shown > 0) {
      notes.push(h.dp_ranks_not_shown + ' DP ranks without a replayed worker not shown');
    }
    if (notes.length) parts.push(el('span', {text: notes.join('; ') + '.'}));
    return el('div', {class: 'legend'}, parts);
  }

  function groups(title, g) {
    var box = el('div', {class: 'whatif-groups'}, el('h3', {text: title}));
    if (!g.top.length) { box.appendChild(el('p', {class: 'empty', text: 'not decomposed'})); return box; }
    box.appendChild(P.table([
      {title: 'group', get: function (r) { return r.group; }},
      {title: 'slowdown', num: true, get: function (r) { return times(r.slowdown); }},
      {title: 'recovered', num: true, get: function (r) { return P.pct(r.recovered); }}
    ], g.top));
    if (g.more) box.appendChild(el('p', {class: 'sub', text: 'and ' + g.more + ' more'}));
    return box;
  }

  timelines.forEach(function (t, i) {
    var title = 'What-if (op timeline' + (timelines.length > 1 ? ' ' + (i + 1) + ': ' + (t.file || '?') : '') + ')';
    var card = el('section', {class: 'card whatif-card', id: 'whatif-op-timeline-' + i}, el('h2', {text: title}));
    place(card);
    card.appendChild(el('p', {class: 'whatif-headline', text: headline(t)}));
    (t.findings || []).forEach(function (f) {
      card.appendChild(el('p', {class: 'sub'}, el('span', {class: 'mono', text: f.code}), ' ', f.message));
    });
    card.appendChild(el('h3', {text: 'slowdown per worker (only that worker measured, the rest ideal)'}));
    card.appendChild(heatmap(t));
    card.appendChild(legend(t));
    card.appendChild(el('div', {class: 'whatif-tables'},
      groups('by stage', t.by_stage), groups('by DP rank', t.by_dp_rank), groups('by op type', t.by_op_type)));
  });
  document.getElementById('laggard-status').setAttribute('data-whatif', String(timelines.length));
})();
