#include "confirm/read_back.h"

#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

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

// The suspect host's pairs against the control pair.
void JudgeTriangle(const std::vector<PairFigure>& pairs, Confirmation& c) {
  std::vector<const PairFigure*> suspect;
  const PairFigure* control = nullptr;
  for (const PairFigure& p : pairs) {
    if (p.role == PairRole::kSuspect) suspect.push_back(&p);
    if (p.role == PairRole::kControl) control = &p;
  }
  if (suspect.empty()) {
    c.verdict = "inconclusive";
    c.figures = "no pair with the suspect gave a bandwidth";
    return;
  }
  const std::string& s = suspect[0]->a;
  if (control == nullptr) {
    c.verdict = "inconclusive";
    std::vector<std::string> each;
    for (const PairFigure* p : suspect)
      each.push_back(fmt::format("{} {:.1f} GB/s", p->b, p->gbps));
    c.figures =
        fmt::format("{} with {}: no control pair to compare with", s, fmt::join(each, ", "));
    return;
  }
  double ref = control->gbps;
  size_t slow = 0, fast = 0;
  std::vector<std::string> each;
  for (const PairFigure* p : suspect) {
    double r = p->gbps / ref;
    slow += r <= kPairSlow;
    fast += r >= kPairFast;
    each.push_back(fmt::format("{} {:.1f} GB/s ({})", p->b, p->gbps, Ratio(p->gbps, ref)));
  }
  std::string base = fmt::format("{} with {}; control {} with {} {:.1f} GB/s", s,
                                 fmt::join(each, ", "), control->a, control->b, ref);
  if (slow == suspect.size() && suspect.size() >= 2) {
    c.verdict = "confirmed";
    c.locus = "node";
    c.figures = fmt::format(
        "{}: slow with every partner, so {} (the host, its NICs or its link to the switch)", base,
        s);
  } else if (fast == suspect.size()) {
    c.verdict = "refuted";
    c.figures = fmt::format(
        "{}: as fast as its peers' pair, so not {}'s network; look at software or input (or the "
        "fabric as a whole, if every pair runs below the links' rating)",
        base, s);
  } else if (slow > 0 && fast > 0) {
    c.verdict = "inconclusive";
    c.locus = "path";
    std::vector<std::string> slow_with;
    for (const PairFigure* p : suspect) {
      if (p->gbps / ref <= kPairSlow) slow_with.push_back(p->b);
    }
    c.figures = fmt::format("{}: slow with {} only, so the path between them, not {}", base,
                            fmt::join(slow_with, ", "), s);
  } else {
    c.verdict = "inconclusive";
    c.figures = fmt::format(
        "{}: neither clearly slow nor clearly fast (slow at <= {:.2f}x, fast "
        "at >= {:.2f}x)",
        base, kPairSlow, kPairFast);
  }
}

// A suspect switch: across its uplink, inside it, and a control elsewhere.
void JudgeSwitch(const std::vector<PairFigure>& pairs, Confirmation& c) {
  const PairFigure *across = nullptr, *inside = nullptr, *control = nullptr;
  for (const PairFigure& p : pairs) {
    if (p.role == PairRole::kAcross) across = &p;
    if (p.role == PairRole::kInside) inside = &p;
    if (p.role == PairRole::kControl) control = &p;
  }
  if (across == nullptr || (inside == nullptr && control == nullptr)) {
    c.verdict = "inconclusive";
    c.figures =
        "the pair across the switch's uplink and a pair to compare it with did not both "
        "give a bandwidth";
    return;
  }
  double ref = std::max(inside ? inside->gbps : 0.0, control ? control->gbps : 0.0);
  std::string base = fmt::format("across {}-{} {:.1f} GB/s ({})", across->a, across->b,
                                 across->gbps, Ratio(across->gbps, ref));
  if (inside) base += fmt::format(", inside {}-{} {:.1f} GB/s", inside->a, inside->b, inside->gbps);
  if (control) {
    base += fmt::format(", elsewhere {}-{} {:.1f} GB/s", control->a, control->b, control->gbps);
  }
  bool inside_slow = inside && control && inside->gbps <= kPairSlow * control->gbps;
  double r = across->gbps / ref;
  if (inside_slow) {
    c.verdict = "inconclusive";
    c.locus = "node";
    c.figures = fmt::format(
        "{}: slow inside the switch too, so a host under it ({}), not the "
        "uplink",
        base, inside->a);
  } else if (r <= kPairSlow) {
    c.verdict = "confirmed";
    c.locus = "switch";
    c.figures = fmt::format(
        "{}: slow across only, so the switch's uplink or its other tenants, "
        "not a node",
        base);
  } else if (r >= kPairFast) {
    c.verdict = "refuted";
    c.figures = fmt::format("{}: across the uplink as fast as elsewhere", base);
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
  if (c.verdict == "confirmed") {
    c.locus = "nic";
    c.figures += fmt::format("; ibstat: {}: the NIC", fmt::join(faults, "; "));
  } else {
    c.figures += fmt::format("; ibstat: {} (its pairs did not show it)", fmt::join(faults, "; "));
  }
}

}  // namespace

std::optional<double> BusBandwidthOf(const std::string& file, std::string& why) {
  static const std::unique_ptr<TextReader> reader = MakeNcclTestsReader();
  auto run = Ingest({file}, {reader.get()}, IngestOptions{});
  if (!run.ok()) {
    why = std::string(run.status().message());
    return std::nullopt;
  }
  const std::vector<NcclTestRun>& tests = run->network.nccl_tests;
  if (tests.empty()) {
    why = fmt::format("{}: no nccl-tests table in the output", file);
    return std::nullopt;
  }
  const NcclTestRun& t = tests.back();
  const NcclTestRow* largest = nullptr;
  for (const NcclTestRow& r : t.rows) {
    if (RowFigure(r) && (largest == nullptr || r.size_bytes >= largest->size_bytes)) largest = &r;
  }
  if (largest != nullptr) return RowFigure(*largest);
  if (t.avg_busbw_gbps && *t.avg_busbw_gbps > 0) return t.avg_busbw_gbps;
  why = fmt::format("{}: the nccl-tests table has no bus bandwidth", file);
  return std::nullopt;
}

std::vector<PortReading> IbstatPortsOf(const std::string& file, std::string& why) {
  static const std::unique_ptr<TextReader> reader = MakeIbstatReader();
  std::vector<PortReading> out;
  auto run = Ingest({file}, {reader.get()}, IngestOptions{});
  if (!run.ok()) {
    why = std::string(run.status().message());
    return out;
  }
  for (const IbPort& p : run->network.ib_ports) {
    out.push_back({fmt::format("{} port {}", p.ca, p.port), p.state.value_or(""), p.rate_gbps,
                   fmt::format("{} {}", p.link_layer.value_or("?"), p.ca_type.value_or("?"))});
  }
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

std::vector<Confirmation> ReadBack(const ConfirmInput& in, const ConfirmPlan& plan,
                                   const std::vector<TestRun>& runs) {
  std::vector<Confirmation> out;
  for (size_t ci = 0; ci < in.culprits.size(); ++ci) {
    Confirmation c;
    c.culprit = ci;
    size_t tests = 0, ran = 0, comm = 0;
    std::vector<std::string> gemm;                    // the GEMM tests' verdicts
    const std::vector<PortReading>* ports = nullptr;  // the suspect's ibstat
    std::string gemm_figures;
    for (size_t i = 0; i < plan.tests.size() && i < runs.size(); ++i) {
      const PlannedTest& t = plan.tests[i];
      if (t.culprit != ci) continue;
      ++tests;
      const TestRun& r = runs[i];
      ran += r.ran;
      if (t.kind == TestKind::kCompute && !r.verdict.empty()) {
        gemm.push_back(r.verdict);
        if (gemm_figures.empty() || r.verdict == "confirmed") gemm_figures = r.figures;
      }
      if (!t.argv.empty() && t.argv[0] == "ibstat" && !r.ports.empty()) ports = &r.ports;
      if (t.kind == TestKind::kCommunication) {
        ++comm;
        if (r.busbw_gbps && t.hosts.size() == 2) {
          c.pairs.push_back({t.hosts[0], t.hosts[1], *r.busbw_gbps, i, t.role});
        }
      }
    }
    if (tests == 0) continue;
    if (ran == 0) {
      c.verdict = "not run";
      c.figures = fmt::format("{} test{} planned, none run here", tests, tests == 1 ? "" : "s");
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
      bool is_switch = std::any_of(c.pairs.begin(), c.pairs.end(), [](const PairFigure& p) {
        return p.role == PairRole::kAcross || p.role == PairRole::kInside;
      });
      if (is_switch) {
        JudgeSwitch(c.pairs, c);
      } else {
        JudgeTriangle(c.pairs, c);
        if (ports != nullptr) JudgeNic(*ports, c);
      }
    } else {
      c.verdict = "not judged";
      c.figures =
          "its health checks' outputs are saved for reading; laggard does not judge them "
          "yet";
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace laggard::confirm
