#include "analysis/hardware/p2p_links.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

std::string_view MatrixWords(P2pMatrixKind k) {
  switch (k) {
    case P2pMatrixKind::kBiEnabled: return "bidirectional P2P=Enabled bandwidth";
    case P2pMatrixKind::kUniEnabled: return "unidirectional P2P=Enabled bandwidth (writes)";
    case P2pMatrixKind::kUniEnabledReads: return "unidirectional P2P=Enabled bandwidth (reads)";
    case P2pMatrixKind::kLatencyEnabled: return "P2P=Enabled write latency";
    default: return "matrix";
  }
}

const P2pMatrix* Find(const P2pBandwidthTest& t, P2pMatrixKind k) {
  for (const P2pMatrix& m : t.matrices) {
    if (m.kind == k && m.n == t.n) return &m;
  }
  return nullptr;
}

// One GPU's peer-to-peer cells against the cells among the others.
struct GpuLinks {
  double mine = 0;    // mean of its row and column cells
  double others = 0;  // mean of the cells among the other GPUs
  double below = 0;   // share of its cells under the others' median
  // (p90 - p10) / median of its cells, and of the others': how alike the
  // links are.
  double mine_spread = 0;
  double others_spread = 0;
  bool ok = false;
};

// (p90 - p10) / median: how alike the links are.
double Spread(const Summary& s) { return s.median > 0 ? (s.p90 - s.p10) / s.median : 0; }

GpuLinks Measure(const P2pBandwidthTest& t, const P2pMatrix& m, int32_t g) {
  std::vector<double> mine, others;
  for (int32_t i = 0; i < t.n; ++i) {
    for (int32_t j = 0; j < t.n; ++j) {
      if (i == j) continue;
      double v = m.cells[i * t.n + j];
      if (std::isnan(v) || t.can_access[i * t.n + j] == 0) continue;
      (i == g || j == g ? mine : others).push_back(v);
    }
  }
  GpuLinks l;
  if (mine.size() < 2 || others.size() < 2) return l;
  Summary mine_s = *Summarize(mine);
  Summary others_s = *Summarize(others);
  l.mine = mine_s.mean;
  l.others = others_s.mean;
  l.below = static_cast<double>(std::count_if(mine.begin(), mine.end(),
                                              [&](double x) { return x < others_s.median; })) /
            static_cast<double>(mine.size());
  l.mine_spread = Spread(mine_s);
  l.others_spread = Spread(others_s);
  l.ok = l.others > 0 && l.mine > 0;
  return l;
}

// The latency rows: GPU g's writes against the others'.
std::optional<Evidence> Latency(const P2pBandwidthTest& t, int32_t g) {
  const P2pMatrix* m = Find(t, P2pMatrixKind::kLatencyEnabled);
  if (m == nullptr) return std::nullopt;
  double mine = 0, others = 0;
  int nm = 0, no = 0;
  for (int32_t i = 0; i < t.n; ++i) {
    for (int32_t j = 0; j < t.n; ++j) {
      double v = m->cells[i * t.n + j];
      if (i == j || std::isnan(v) || t.can_access[i * t.n + j] == 0) continue;
      if (i == g) {
        mine += v;
        ++nm;
      } else {
        others += v;
        ++no;
      }
    }
  }
  if (nm == 0 || no == 0 || others <= 0) return std::nullopt;
  mine /= nm;
  others /= no;
  return Evidence{fmt::format("its P2P write latency: {:.2f} us against the others' {:.2f} us "
                              "({:+.0f}%)",
                              mine, others, 100 * (mine / others - 1)),
                  m->src};
}

std::string GpuName(const P2pBandwidthTest& t, int32_t g) {
  std::string s = fmt::format("GPU {}", g);
  if (static_cast<size_t>(g) < t.gpu_names.size() && !t.gpu_names[g].empty())
    s += fmt::format(" ({})", t.gpu_names[g]);
  if (t.host) s += " on " + *t.host;
  return s;
}

void TestFindings(const P2pBandwidthTest& t, std::vector<Finding>& out) {
  if (t.n < 3 || t.can_access.size() != static_cast<size_t>(t.n) * t.n) return;
  const P2pMatrix* main = Find(t, P2pMatrixKind::kBiEnabled);
  const P2pMatrix* other = Find(t, P2pMatrixKind::kUniEnabled);
  if (main == nullptr) std::swap(main, other);
  if (main == nullptr) return;
  std::vector<GpuLinks> links(t.n);
  int32_t lowest = -1;
  for (int32_t g = 0; g < t.n; ++g) {
    links[g] = Measure(t, *main, g);
    if (!links[g].ok) continue;
    if (lowest < 0 || links[g].mine / links[g].others < links[lowest].mine / links[lowest].others)
      lowest = g;
  }
  if (lowest < 0) return;
  // Cells the output did not print (a pasted copy's cut): each GPU would be
  // measured on other links.
  size_t cut = 0;
  for (int32_t i = 0; i < t.n; ++i) {
    for (int32_t j = 0; j < t.n; ++j) cut += i != j && std::isnan(main->cells[i * t.n + j]);
  }
  for (int32_t g = 0; g < t.n; ++g) {
    const GpuLinks& l = links[g];
    if (!l.ok) continue;
    double low = 1 - l.mine / l.others;
    // A warning needs a box whose other links are alike (one kind of link
    // between every pair), links of the GPU alike too, and a fall a
    // degraded link gives: a different kind of link (PCIe beside NVLink)
    // runs at a fraction, which the box's wiring explains as well as a
    // link down.
    const bool uniform = l.others_spread <= kP2pUniformSpread && l.mine_spread <= kP2pUniformSpread;
    const bool other_kind = low >= kP2pOtherLinkKind;
    bool warn = low >= kP2pLowShare && l.below >= kP2pLowCells && t.n >= 4 && uniform &&
                !other_kind && cut == 0;
    if (!warn && !(g == lowest && low >= kP2pMildShare)) continue;
    Finding f;
    f.code = FindingCode::kGpuP2pBandwidthLow;
    f.entity.host = t.host;
    f.entity.gpu = g;
    f.cause = "p2p_link";
    f.slowdown = l.others / l.mine - 1;
    f.severity = warn ? Severity::kWarning : Severity::kInfo;
    f.confidence = warn ? kP2pWarnConfidence : kP2pInfoConfidence;
    f.message = fmt::format(
        "{}'s links run {:.0f}% below its peers' in p2pBandwidthLatencyTest ({}: {:.1f} GB/s "
        "mean against {:.1f} GB/s among the others){}",
        GpuName(t, g), 100 * low, MatrixWords(main->kind), l.mine, l.others,
        warn         ? std::string(": its NVLink or PCIe path is degraded")
        : cut > 0    ? fmt::format(": the output was cut ({} cells not printed), so the GPUs "
                                      "are measured on different links",
                                   cut)
        : t.n < 4    ? std::string(": with three GPUs, the box's wiring cannot be told from "
                                      "a slow link")
        : other_kind ? std::string(": a different kind of link (PCIe beside NVLink?): the "
                                   "box's wiring or a link down; nvidia-smi topo -m and "
                                   "nvlink --status tell which")
        : !uniform   ? std::string(": the box's links differ by design (NVLink pairs, CPU "
                                     "sockets), so this is no fault by itself; compare with "
                                     "nvidia-smi topo -m")
        : low >= kP2pLowShare ? std::string(", though not on most of its links: one slow pair, "
                                            "not the GPU")
                              : std::string(": within what the path gives (a link across CPU "
                                            "sockets runs ~10% slower)"));
    f.evidence.push_back(Evidence{fmt::format("{}: {:.0f}% of its cells under the others' median",
                                              MatrixWords(main->kind), 100 * l.below),
                                  main->src});
    if (other != nullptr) {
      GpuLinks o = Measure(t, *other, g);
      if (o.ok) {
        f.evidence.push_back(Evidence{
            fmt::format("{}: {:.1f} GB/s against {:.1f} ({:+.0f}%)", MatrixWords(other->kind),
                        o.mine, o.others, 100 * (o.mine / o.others - 1)),
            other->src});
      }
    }
    if (auto lat = Latency(t, g)) f.evidence.push_back(std::move(*lat));
    if (warn) {
      f.next_steps.push_back(fmt::format(
          "check GPU {}'s links{}: nvidia-smi nvlink --status -i {} (a link down or at a lower "
          "speed), nvidia-smi -q -d ECC,ROW_REMAPPER, and nvidia-smi topo -m against a healthy "
          "node",
          g, t.host ? " on " + *t.host : "", g));
    }
    out.push_back(std::move(f));
  }
}

}  // namespace

std::vector<Finding> P2pLinkFindings(const Run& run) {
  std::vector<Finding> out;
  for (const P2pBandwidthTest& t : run.network.p2p_tests) TestFindings(t, out);
  return out;
}

}  // namespace laggard
