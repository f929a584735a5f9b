#include "confirm/read_back.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "confirm/bisect.h"
#include "confirm/gpu_health.h"
#include "ingest/ingest.h"
#include "ingest/nccl/nccl_readers.h"
#include "ingest/network/network_readers.h"

namespace laggard::confirm {
namespace {

std::optional<double> RowFigure(const NcclTestRow& r) {
  if (r.oop_busbw_gbps && *r.oop_busbw_gbps > 0) return r.oop_busbw_gbps;
  if (r.ip_busbw_gbps && *r.ip_busbw_gbps > 0) return r.ip_busbw_gbps;
  return std::nullopt;
}

std::string Ratio(double x, double ref) { return fmt::format("{:.2f}x", ref > 0 ? x / ref : 0); }

// A culprit's pair tests: which ran well, and which did not.
struct PairTests {
  std::vector<PairFigure> figures;  // ran, with a figure at the common size
  std::vector<std::pair<const PlannedTest*, std::string>> failed;  // planned, no figure: why
};

// "; no figure from a-b exited 1, ..." for the pairs that gave none.
std::string FailedText(const PairTests& pt) {
  std::vector<std::string> failed;
  for (const auto& [t, why] : pt.failed) {
    failed.push_back(fmt::format("{}-{} {}", t->hosts[0], t->hosts[1], why));
  }
  return failed.empty() ? "" : fmt::format("; no figure from {}", fmt::join(failed, ", "));
}

// The suspect host's triangle: (S, H1), (S, H2) and the control (H1, H2),
// each against the fastest of the three. A host slow with both its pairs
// while the third is fast is that host; when the two slow pairs cross
// between switches and the fast one stays inside one, it is the path
// between the switches as much as that host.
void JudgeTriangle(const PairTests& pt, const ConfirmInput& in, Confirmation& c) {
  std::vector<const PairFigure*> suspect;
  const PairFigure* control = nullptr;
  for (const PairFigure& p : pt.figures) {
    if (p.role == PairRole::kSuspect) suspect.push_back(&p);
    if (p.role == PairRole::kControl) control = &p;
  }
  size_t suspect_failed = 0;
  for (const auto& [t, why] : pt.failed) suspect_failed += t->role == PairRole::kSuspect;
  std::string failed_text = FailedText(pt);
  if (suspect.empty()) {
    c.verdict = "inconclusive";
    c.figures = "no pair with the suspect gave a bandwidth" + failed_text;
    return;
  }
  const std::string& s = suspect[0]->a;
  std::vector<std::string> each;
  if (control == nullptr) {
    for (const PairFigure* p : suspect)
      each.push_back(fmt::format("{} {:.1f} GB/s", p->b, p->gbps));
    c.verdict = "inconclusive";
    c.figures = fmt::format("{} with {}: no control pair to compare with{}", s,
                            fmt::join(each, ", "), failed_text);
    return;
  }
  double ref = control->gbps;
  for (const PairFigure* p : suspect) ref = std::max(ref, p->gbps);
  auto is_slow = [&](const PairFigure* p) { return ref > 0 && p->gbps <= kPairSlow * ref; };
  auto is_fast = [&](const PairFigure* p) { return ref > 0 && p->gbps >= kPairFast * ref; };
  size_t slow = 0, fast = 0;
  std::vector<std::string> slow_with;
  for (const PairFigure* p : suspect) {
    slow += is_slow(p);
    fast += is_fast(p);
    if (is_slow(p)) slow_with.push_back(p->b);
    each.push_back(fmt::format("{} {:.1f} GB/s ({})", p->b, p->gbps, Ratio(p->gbps, ref)));
  }
  std::string base =
      fmt::format("{} with {}; control {} with {} {:.1f} GB/s ({}){}", s, fmt::join(each, ", "),
                  control->a, control->b, control->gbps, Ratio(control->gbps, ref), failed_text);
  bool all = suspect_failed == 0 && suspect.size() >= 2;
  auto sw_s = SwitchOf(in, s);
  if (all && slow == suspect.size() && is_fast(control)) {
    bool both_across =
        sw_s && std::all_of(suspect.begin(), suspect.end(), [&](const PairFigure* p) {
          auto sw = SwitchOf(in, p->b);
          return sw && sw != sw_s;
        });
    if (both_across) {
      c.verdict = "inconclusive";
      c.locus = "node_or_uplink";
      c.figures = fmt::format(
          "{}: slow with every partner, all behind another switch, so {} or the uplink of its "
          "switch {}: pair it with a host on its own switch to tell",
          base, s, *sw_s);
    } else {
      c.verdict = "confirmed";
      c.locus = "node";
      c.host = s;
      c.figures = fmt::format(
          "{}: slow with every partner, so {} (the host, its NICs or its link to the switch)", base,
          s);
    }
    return;
  }
  // No pair slow, and S at full speed with a partner: a slow host is slow
  // with every partner, so S is not (the other pair's dip is the noise
  // between pairs).
  if (all && slow == 0 && fast >= 1 && !is_slow(control)) {
    c.verdict = "refuted";
    c.figures = fmt::format(
        "{}: at full speed with a partner and slow with none, so not {}'s network; look at "
        "software or input (or the fabric as a whole, if every pair runs below the links' rating)",
        base, s);
    return;
  }
  // A partner slow with both its pairs (with S and in the control) while
  // S's other pair is fast: that partner, or the switches between.
  if (all && slow == 1 && fast == 1 && is_slow(control)) {
    const PairFigure* good = is_fast(suspect[0]) ? suspect[0] : suspect[1];
    const std::string& h = slow_with[0];
    auto sw_h = SwitchOf(in, h), sw_good = SwitchOf(in, good->b);
    c.verdict = "refuted";
    if (sw_s && sw_h && sw_h != sw_s && sw_good == sw_s) {
      c.locus = "fabric";
      c.figures = fmt::format(
          "{}: {}'s pair inside switch {} is fast and both pairs across to {} (switch {}) are "
          "slow, so the path between switches {} and {} (their uplinks), or {} itself; not {}",
          base, s, *sw_s, h, *sw_h, *sw_s, *sw_h, h, s);
    } else {
      c.locus = "other_host";
      c.figures =
          fmt::format("{}: {} is slow with both its partners, so {}, not {}", base, h, h, s);
    }
    return;
  }
  if (slow > 0 && fast > 0) {
    c.verdict = "inconclusive";
    c.locus = "path";
    c.figures = fmt::format("{}: slow with {} only, so the path between them, not {}", base,
                            fmt::join(slow_with, ", "), s);
  } else if (all && fast == suspect.size() && is_slow(control)) {
    c.verdict = "refuted";
    c.figures = fmt::format("{}: {}'s pairs are fast; the control's path is the slow one", base, s);
  } else if (!all) {
    c.verdict = "inconclusive";
    c.figures = fmt::format(
        "{}: a pair with {} gave no figure, so {} is neither confirmed nor "
        "cleared",
        base, s, s);
  } else {
    c.verdict = "inconclusive";
    c.figures = fmt::format(
        "{}: neither clearly slow nor clearly fast (slow at <= {:.2f}x, fast "
        "at >= {:.2f}x the fastest pair)",
        base, kPairSlow, kPairFast);
  }
}

// A suspect switch: across its uplink, inside it, and a control elsewhere.
void JudgeSwitch(const PairTests& pt, Confirmation& c) {
  const PairFigure *across = nullptr, *inside = nullptr, *control = nullptr;
  for (const PairFigure& p : pt.figures) {
    if (p.role == PairRole::kAcross) across = &p;
    if (p.role == PairRole::kInside) inside = &p;
    if (p.role == PairRole::kControl) control = &p;
  }
  std::string failed_text = FailedText(pt);
  if (across == nullptr) {
    c.verdict = "inconclusive";
    c.figures = "the pair across the switch's uplink gave no figure" + failed_text;
    return;
  }
  std::string base = fmt::format("across {}-{} {:.1f} GB/s", across->a, across->b, across->gbps);
  if (inside) base += fmt::format(", inside {}-{} {:.1f} GB/s", inside->a, inside->b, inside->gbps);
  if (control) {
    base += fmt::format(", elsewhere {}-{} {:.1f} GB/s", control->a, control->b, control->gbps);
  }
  base += failed_text;
  if (inside == nullptr) {
    // The host under the switch is in the across pair: a slow one is that
    // host or the uplink, and a fast one clears the uplink only as far as
    // that host goes.
    bool slow = control && across->gbps <= kPairSlow * control->gbps;
    bool fast = control && across->gbps >= kPairFast * control->gbps;
    c.verdict = fast ? "refuted" : "inconclusive";
    if (slow) c.locus = "node_or_uplink";
    c.figures = fast   ? fmt::format("{} ({}): across the uplink as fast as elsewhere", base,
                                     Ratio(across->gbps, control->gbps))
                : slow ? fmt::format("{} ({}): no pair inside the switch, so {} or the uplink",
                                     base, Ratio(across->gbps, control->gbps), across->a)
                       : fmt::format("{}: no pair inside the switch to compare with", base);
    return;
  }
  if (control && inside->gbps <= kPairSlow * control->gbps) {
    c.verdict = "inconclusive";
    c.locus = "node";
    c.figures = fmt::format(
        "{}: slow inside the switch too, so a host under it ({}), not the "
        "uplink",
        base, inside->a);
    return;
  }
  // The reference: the pair inside (it leaves the uplink out), or the
  // better of inside and elsewhere.
  double ref = std::max(inside->gbps, control ? control->gbps : 0.0);
  double r = ref > 0 ? across->gbps / ref : 0;
  base += fmt::format(" (across {})", Ratio(across->gbps, ref));
  if (r <= kPairSlow) {
    c.verdict = "confirmed";
    c.locus = "switch";
    c.figures = fmt::format(
        "{}: slow across only, so the switch's uplink or its other tenants, "
        "not a node",
        base);
  } else if (r >= kPairFast) {
    c.verdict = "refuted";
    c.figures = fmt::format("{}: across the uplink as fast as inside", base);
  } else {
    c.verdict = "inconclusive";
    c.figures = fmt::format("{}: neither clearly slow nor clearly fast", base);
  }
}

}  // namespace

namespace {

// The suspect's ibstat beside its pairs' answer.
void JudgeNic(const std::vector<PortReading>& ports, Confirmation& c) {
  std::vector<std::string> faults = NicFaults(ports);
  if (faults.empty()) {
    Rails rails = RailsOf(ports);
    if (c.verdict == "confirmed" && rails.count >= 2) {
      c.figures += fmt::format(
          "; ibstat: its {} rails ({}) all Active at {:g} Gb/s: the node, not "
          "one NIC",
          rails.count, rails.kind, rails.best_gbps);
    }
    return;
  }
  if (c.verdict == "confirmed" || c.locus == "node_or_uplink") {
    c.verdict = "confirmed";
    c.locus = "nic";
    if (c.host.empty() && !c.pairs.empty()) c.host = c.pairs.front().a;
    c.figures += fmt::format("; ibstat: {}: the NIC", fmt::join(faults, "; "));
  } else {
    c.figures += fmt::format("; ibstat: {} (its pairs did not show it)", fmt::join(faults, "; "));
  }
}

}  // namespace

namespace {

std::vector<SizeBandwidth> SizesOf(const NcclTestRun& t) {
  std::map<int64_t, double> by_size;  // a size printed twice keeps its last
  for (const NcclTestRow& r : t.rows) {
    if (auto f = RowFigure(r)) by_size[r.size_bytes] = *f;
  }
  std::vector<SizeBandwidth> out;
  for (const auto& [size, gbps] : by_size) out.push_back({size, gbps});
  return out;
}

PortReading ReadingOf(const IbPort& p) {
  return {fmt::format("{} port {}", p.ca, p.port), p.state.value_or(""), p.rate_gbps,
          fmt::format("{} {}", p.link_layer.value_or("?"), p.ca_type.value_or("?"))};
}

}  // namespace

std::vector<SizeBandwidth> BusBandwidthOf(const std::string& file, std::string& why) {
  static const std::unique_ptr<TextReader> reader = MakeNcclTestsReader();
  auto run = Ingest({file}, {reader.get()}, IngestOptions{});
  if (!run.ok()) {
    why = std::string(run.status().message());
    return {};
  }
  const std::vector<NcclTestRun>& tests = run->network.nccl_tests;
  if (tests.empty()) {
    why = fmt::format("{}: no nccl-tests table in the output", file);
    return {};
  }
  std::vector<SizeBandwidth> out = SizesOf(tests.back());
  if (out.empty()) why = fmt::format("{}: the nccl-tests table has no bus bandwidth", file);
  return out;
}

StatusOr<std::vector<TestRun>> ReadResults(const ConfirmPlan& plan, const std::string& dir) {
  static const std::unique_ptr<TextReader> tests_reader = MakeNcclTestsReader();
  static const std::unique_ptr<TextReader> ib_reader = MakeIbstatReader();
  auto run = Ingest({dir}, {tests_reader.get(), ib_reader.get()}, IngestOptions{});
  if (!run.ok()) return run.status();
  const NetworkData& net = run->network;
  auto path_of = [&](const SourceRef& src) {
    return src.file < run->files.size() ? run->files[src.file].path : dir;
  };
  std::vector<TestRun> runs(plan.tests.size());
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    TestRun& r = runs[i];
    r.argv = t.argv;
    if (t.kind == TestKind::kCommunication && t.hosts.size() >= 2) {
      std::set<std::string> want(t.hosts.begin(), t.hosts.end());
      // The last all_reduce_perf run (in file order) on exactly these hosts,
      // with the planned processes per host when one has them.
      const NcclTestRun* pick = nullptr;
      std::vector<int> pick_procs;
      bool pick_exact = false;
      for (const NcclTestRun& x : net.nccl_tests) {
        if (x.collective != "all_reduce") continue;
        std::map<std::string, int> per;
        for (const NcclTestRank& k : x.ranks) ++per[k.host];
        std::set<std::string> hosts;
        for (const auto& [h, n] : per) hosts.insert(h);
        if (hosts != want) continue;
        std::vector<int> procs;
        for (const std::string& h : t.hosts) procs.push_back(per[h]);
        bool exact = procs == t.procs;
        if (pick_exact && !exact) continue;
        pick = &x;
        pick_procs = std::move(procs);
        pick_exact = exact;
      }
      if (pick != nullptr) {
        const NcclTestRun& x = *pick;
        r.ran = true;
        r.file = path_of(x.src);
        r.state = x.errors.empty() ? "ran" : "failed";
        if (!x.errors.empty()) r.output = x.errors.front();
        r.procs = pick_procs;
        if (!pick_exact && x.errors.empty()) {
          r.note = fmt::format("ran with {} processes on its hosts, not the planned {}",
                               fmt::join(pick_procs, "+"), fmt::join(t.procs, "+"));
        }
        r.busbw = SizesOf(x);
      }
    } else if (!t.argv.empty() && t.argv[0] == "ibstat" && t.hosts.size() == 1) {
      for (const IbPort& p : net.ib_ports) {
        if (p.host != t.hosts[0]) continue;
        r.ran = true;
        r.state = "ran";
        r.file = path_of(p.src);
        r.ports.push_back(ReadingOf(p));
      }
    }
    if (!r.ran) {
      r.state = "not run";
      r.output = fmt::format("no result for it in {}", dir);
    }
  }
  return runs;
}

std::vector<PortReading> IbstatPortsOf(const std::string& file, std::string& why) {
  static const std::unique_ptr<TextReader> reader = MakeIbstatReader();
  std::vector<PortReading> out;
  auto run = Ingest({file}, {reader.get()}, IngestOptions{});
  if (!run.ok()) {
    why = std::string(run.status().message());
    return out;
  }
  for (const IbPort& p : run->network.ib_ports) out.push_back(ReadingOf(p));
  if (out.empty()) why = fmt::format("{}: no ibstat port in the output", file);
  return out;
}

Rails RailsOf(const std::vector<PortReading>& ports) {
  // The kind of port the host has most of (8 InfiniBand HCAs beside a
  // front-end Ethernet NIC whose unused ports are Down), the faster kind on
  // a tie.
  std::map<std::string, std::pair<size_t, double>> kinds;  // count, best rate
  for (const PortReading& p : ports) {
    auto& [n, best] = kinds[p.kind];
    ++n;
    if (p.state == "Active" && p.rate_gbps) best = std::max(best, *p.rate_gbps);
  }
  Rails r;
  std::pair<size_t, double> top{0, 0};
  for (const auto& [kind, v] : kinds) {
    if (v > top) top = v, r.kind = kind;
  }
  r.count = top.first;
  r.best_gbps = top.second;
  return r;
}

std::vector<std::string> NicFaults(const std::vector<PortReading>& ports) {
  Rails rails = RailsOf(ports);
  std::pair<size_t, double> top{rails.count, rails.best_gbps};
  std::vector<std::string> faults;
  if (top.first < 2) return faults;  // one port: nothing to compare it with
  size_t active = 0;
  for (const PortReading& p : ports) active += p.kind == rails.kind && p.state == "Active";
  for (const PortReading& p : ports) {
    if (p.kind != rails.kind) continue;
    if (!p.state.empty() && p.state != "Active" && active > 0) {
      faults.push_back(fmt::format("{} {} (its {} peer{} Active)", p.name, p.state, active,
                                   active == 1 ? "" : "s"));
    } else if (p.state == "Active" && p.rate_gbps && *p.rate_gbps < top.second) {
      faults.push_back(
          fmt::format("{} at {:g} Gb/s, its peers {:g}", p.name, *p.rate_gbps, top.second));
    }
  }
  return faults;
}

namespace {

// A culprit's communication tests: figures at the largest size every pair
// that ran well reached; the others with why.
PairTests CollectPairs(const ConfirmPlan& plan, const std::vector<TestRun>& runs, size_t culprit,
                       int64_t& size_bytes) {
  PairTests pt;
  std::vector<size_t> good;
  for (size_t i = 0; i < plan.tests.size() && i < runs.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    if (t.culprit != culprit || t.kind != TestKind::kCommunication || t.hosts.size() != 2) continue;
    const TestRun& r = runs[i];
    if (!r.ran) continue;
    if (r.state != "ran") {
      pt.failed.push_back({&t, r.state});
    } else if (r.busbw.empty()) {
      pt.failed.push_back({&t, "(no bus bandwidth in its output)"});
    } else {
      good.push_back(i);
    }
  }
  if (good.empty()) return pt;
  // Pairs read back with other process counts than most of them are not
  // compared with those (8 GPUs a host against 4 moves the figure).
  std::map<std::vector<int>, size_t> shapes;
  auto shape = [&](size_t i) {
    std::vector<int> p = runs[i].procs;
    std::sort(p.begin(), p.end());
    return p;
  };
  for (size_t i : good) ++shapes[shape(i)];
  std::vector<int> common_shape;
  size_t most = 0;
  for (const auto& [p, n] : shapes) {
    if (n > most) most = n, common_shape = p;
  }
  std::vector<size_t> kept;
  for (size_t i : good) {
    if (shape(i) == common_shape) {
      kept.push_back(i);
    } else {
      pt.failed.push_back({&plan.tests[i], "(other process counts than the other pairs)"});
    }
  }
  good = std::move(kept);
  // The largest size in every good pair's table.
  std::vector<int64_t> common;
  for (const SizeBandwidth& b : runs[good[0]].busbw) common.push_back(b.size_bytes);
  for (size_t i : good) {
    std::vector<int64_t> mine, both;
    for (const SizeBandwidth& b : runs[i].busbw) mine.push_back(b.size_bytes);
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  if (common.empty()) {
    for (size_t i : good) {
      pt.failed.push_back({&plan.tests[i], "(no message size in common with the other pairs)"});
    }
    return pt;
  }
  size_bytes = common.back();
  for (size_t i : good) {
    const PlannedTest& t = plan.tests[i];
    for (const SizeBandwidth& b : runs[i].busbw) {
      if (b.size_bytes == size_bytes)
        pt.figures.push_back({t.hosts[0], t.hosts[1], b.gbps, i, t.role});
    }
  }
  return pt;
}

// A GPU culprit's GEMM tests (one per host of its GPUs, each of the host's
// GPUs at once), each of its GPUs against its peers and the controls (no
// GPU any culprit names is a peer or a control): confirmed when one is
// slow, refuted when every one is as fast as its peers; "" when none was
// timed.
GemmJudgement JudgeGpuGemms(const ConfirmInput& in, size_t ci, const ConfirmPlan& plan,
                            const std::vector<TestRun>& runs) {
  std::set<std::pair<std::string, int32_t>> named = NamedGpus(in);
  auto named_on = [&](const std::string& host) {
    std::vector<int32_t> out;
    for (const auto& [h, g] : named) {
      if (h == host) out.push_back(g);
    }
    return out;
  };
  std::vector<GemmResult> control_lines;
  for (size_t i = 0; i < plan.tests.size() && i < runs.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    if (t.culprit != ci || t.kind != TestKind::kCompute || !t.gpu || !t.control) continue;
    std::vector<int32_t> out = named_on(t.hosts.at(0));
    for (const GemmResult& g : runs[i].gemm) {
      bool suspect = std::any_of(out.begin(), out.end(),
                                 [&](int32_t n) { return g.device == fmt::format("gpu:{}", n); });
      if (!suspect) control_lines.push_back(g);
    }
  }
  std::vector<GemmJudgement> each;
  std::vector<std::pair<std::string, int32_t>> mine = CulpritGpus(in, in.culprits[ci]);
  for (size_t i = 0; i < plan.tests.size() && i < runs.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    if (t.culprit != ci || t.kind != TestKind::kCompute || !t.gpu || t.control) continue;
    if (runs[i].gemm.empty()) continue;
    const std::string& host = t.hosts.at(0);
    std::vector<int32_t> out = named_on(host);
    for (const auto& [h, g] : mine) {
      if (h != host) continue;
      std::vector<int32_t> others;
      for (int32_t n : out) {
        if (n != g) others.push_back(n);
      }
      each.push_back(JudgeGpuGemm(runs[i].gemm, g, others, control_lines));
    }
  }
  if (each.empty()) return {};
  auto is = [&](const char* v) { return [v](const GemmJudgement& j) { return j.verdict == v; }; };
  GemmJudgement out;
  out.host_wide = std::any_of(each.begin(), each.end(), [](const GemmJudgement& j) {
    return j.host_wide && j.verdict == "confirmed";
  });
  out.verdict = std::any_of(each.begin(), each.end(), is("confirmed")) ? "confirmed"
                : std::all_of(each.begin(), each.end(), is("refuted")) ? "refuted"
                                                                       : "inconclusive";
  for (const GemmJudgement& j : each) {
    if (out.verdict == "confirmed" && j.verdict != "confirmed") continue;
    out.figures += (out.figures.empty() ? "" : "; ") + j.figures;
  }
  return out;
}

// The GEMM and the health pages together: either confirming confirms (a
// slow GEMM is the slowdown measured; a failed diagnostic or an error
// counter is a fault seen); a GEMM as fast as its peers refutes unless the
// pages show a fault (on the control too: then nothing is clear); else
// inconclusive.
void CombineGpu(const GemmJudgement& g, const GpuHealth& h, Confirmation& c) {
  if (g.verdict.empty()) {
    c.verdict = h.verdict;
    c.figures = h.figures;
    return;
  }
  bool health_confirms = h.verdict == "confirmed";
  if (g.verdict == "confirmed" || health_confirms) {
    c.verdict = "confirmed";
    c.figures = g.verdict == "confirmed" ? g.figures : h.figures;
    if (g.verdict == "confirmed" && health_confirms) c.figures += "; " + h.figures;
    if (g.verdict != "confirmed") c.figures += fmt::format(" (its GEMM: {})", g.figures);
    return;
  }
  c.verdict = g.verdict == "refuted" && !h.faults.empty() ? "inconclusive" : g.verdict;
  c.figures = g.figures;
  if (!h.figures.empty()) c.figures += "; " + h.figures;
}

}  // namespace

std::vector<Confirmation> ReadBack(const ConfirmInput& in, const ConfirmPlan& plan,
                                   const std::vector<TestRun>& runs) {
  std::vector<Confirmation> out;
  for (size_t ci = 0; ci < in.culprits.size(); ++ci) {
    Confirmation c;
    c.culprit = ci;
    size_t tests = 0, ran = 0, comm = 0;
    bool is_switch = false;
    std::vector<std::string> gemm;                    // the GEMM tests' verdicts
    const std::vector<PortReading>* ports = nullptr;  // the suspect's ibstat
    std::string gemm_figures;
    for (size_t i = 0; i < plan.tests.size() && i < runs.size(); ++i) {
      const PlannedTest& t = plan.tests[i];
      if (t.culprit != ci) continue;
      ++tests;
      const TestRun& r = runs[i];
      ran += r.ran;
      if (t.kind == TestKind::kCompute && t.gpu) {
        // A GPU's GEMM: judged with its controls below.
      } else if (t.kind == TestKind::kCompute && !r.verdict.empty()) {
        gemm.push_back(r.verdict);
        if (gemm_figures.empty() || r.verdict == "confirmed") gemm_figures = r.figures;
      }
      if (!t.argv.empty() && t.argv[0] == "ibstat" && r.state == "ran" && !r.ports.empty()) {
        ports = &r.ports;
      }
      if (t.kind == TestKind::kCommunication) {
        ++comm;
        is_switch |= t.role == PairRole::kAcross || t.role == PairRole::kInside;
      }
    }
    if (tests == 0) continue;
    if (Bisects(in.culprits[ci])) {
      out.push_back(BisectNext(in, plan, runs, ci, PlanOptions{}).answer);
      continue;
    }
    if (ran == 0) {
      c.verdict = "not run";
      c.figures = fmt::format("{} test{} planned, none run", tests, tests == 1 ? "" : "s");
    } else if (!gemm.empty()) {
      auto has = [&](const char* v) { return std::count(gemm.begin(), gemm.end(), v) > 0; };
      c.verdict = has("confirmed") ? "confirmed"
                  : std::all_of(gemm.begin(), gemm.end(),
                                [](const std::string& v) { return v == "refuted"; })
                      ? "refuted"
                      : "inconclusive";
      if (c.verdict == "confirmed") c.locus = "compute";
      c.figures = gemm_figures;
    } else if (comm > 0) {
      PairTests pt = CollectPairs(plan, runs, ci, c.size_bytes);
      c.pairs = pt.figures;
      if (is_switch) {
        JudgeSwitch(pt, c);
      } else {
        JudgeTriangle(pt, in, c);
        if (ports != nullptr) JudgeNic(*ports, c);
      }
    } else {
      // A GPU suspect: its GEMM against its peers', and what its pages say.
      std::vector<std::string> mine, control;
      for (size_t i = 0; i < plan.tests.size() && i < runs.size(); ++i) {
        const PlannedTest& t = plan.tests[i];
        if (t.culprit != ci || t.kind != TestKind::kHealth || runs[i].file.empty()) continue;
        (t.control ? control : mine).push_back(runs[i].file);
      }
      GpuHealth h = JudgeGpuHealth(mine, control, in.culprits[ci].gpu);
      GemmJudgement g = JudgeGpuGemms(in, ci, plan, runs);
      CombineGpu(g, h, c);
      if (c.verdict == "confirmed") {
        c.locus = g.host_wide && h.verdict != "confirmed" ? "node" : "gpu";
        if (in.culprits[ci].host) c.host = *in.culprits[ci].host;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace laggard::confirm
