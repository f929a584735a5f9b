#include "analysis/pipelines/pipeline_detector.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

using Kind = TimelineOpKind;

bool IsWorkOp(Kind k) { return k == Kind::kForwardCompute || k == Kind::kBackwardCompute; }

int32_t RankOf(const WhatIf& w, const PipelineWorkerMetrics& m) {
  return m.rank.value_or(static_cast<int32_t>(MegatronRank(w.layout, m.coord)));
}

// Per worker and step: compute time (forward + backward).
std::vector<std::vector<double>> ComputePerStep(const OpTimeline& t, std::vector<int64_t>& steps) {
  steps.clear();
  for (const TimelineOp& op : t.ops) steps.push_back(op.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  std::vector<std::vector<double>> c(t.workers.size(), std::vector<double>(steps.size(), 0));
  for (const TimelineOp& op : t.ops) {
    if (!IsWorkOp(op.kind) || op.worker < 0 || static_cast<size_t>(op.worker) >= c.size()) continue;
    size_t s =
        static_cast<size_t>(std::lower_bound(steps.begin(), steps.end(), op.step) - steps.begin());
    c[static_cast<size_t>(op.worker)][s] += static_cast<double>(op.dur_ns);
  }
  return c;
}

void MeasurePeers(const WhatIf& w, const std::vector<ParallelCoord>& coords,
                  const std::vector<std::vector<double>>& comp, PipelineMetrics& m) {
  const size_t n_steps = comp.empty() ? 0 : comp[0].size();
  for (size_t i = 0; i < m.workers.size(); ++i) {
    if (w.layout.dp < 2) break;
    std::vector<double> ratios;
    for (size_t s = 0; s < n_steps; ++s) {
      std::vector<double> peers;
      for (size_t j = 0; j < coords.size(); ++j) {
        if (j != i && coords[j].pp == coords[i].pp && coords[j].tp == coords[i].tp &&
            comp[j][s] > 0) {
          peers.push_back(comp[j][s]);
        }
      }
      std::optional<double> med = Median(std::move(peers));
      if (med && *med > 0 && comp[i][s] > 0) ratios.push_back(comp[i][s] / *med);
    }
    m.workers[i].peer_ratio = Median(std::move(ratios));
  }
  // Per step, the replica with the most compute.
  std::map<int32_t, size_t> top_count;
  std::vector<double> spreads;
  for (size_t s = 0; s < n_steps && w.layout.dp >= 2; ++s) {
    std::vector<double> replica(static_cast<size_t>(w.layout.dp), 0);
    for (size_t j = 0; j < coords.size(); ++j)
      replica[static_cast<size_t>(coords[j].dp)] += comp[j][s];
    auto top = std::max_element(replica.begin(), replica.end());
    if (*top <= 0) continue;
    int32_t dp = static_cast<int32_t>(top - replica.begin());
    m.slowest_dp.push_back(dp);
    ++top_count[dp];
    if (std::optional<double> med = Median(replica); med && *med > 0)
      spreads.push_back(*top / *med);
  }
  m.median_spread = Median(std::move(spreads));
  size_t most = 0;
  for (auto [dp, n] : top_count) most = std::max(most, n);
  if (!m.slowest_dp.empty()) {
    m.top_share = static_cast<double>(most) / static_cast<double>(m.slowest_dp.size());
  }
}

// How much a microbatch's work varies, and how much of that is one
// replica's: each forward / backward op over the median of its (kind,
// stage), averaged per (step, replica, microbatch) over stages and TP ranks.
// Longer sequences make one microbatch heavier on every stage; a slow
// worker makes one replica's heavier on one stage, in every step.
void MeasureWork(const OpTimeline& t, const std::vector<ParallelCoord>& coords,
                 PipelineMetrics& m) {
  std::map<std::pair<int, int32_t>, std::vector<double>> by_kind_stage;
  auto valid = [&](const TimelineOp& op) {
    return IsWorkOp(op.kind) && op.worker >= 0 && static_cast<size_t>(op.worker) < coords.size();
  };
  for (const TimelineOp& op : t.ops) {
    if (valid(op)) {
      by_kind_stage[{static_cast<int>(op.kind), coords[static_cast<size_t>(op.worker)].pp}]
          .push_back(static_cast<double>(op.dur_ns));
    }
  }
  std::map<std::pair<int, int32_t>, double> median;
  for (auto& [key, v] : by_kind_stage) median[key] = Median(std::move(v)).value_or(0);
  std::map<std::tuple<int64_t, int32_t, int32_t>, std::pair<double, int>> units;
  for (const TimelineOp& op : t.ops) {
    if (!valid(op)) continue;
    const ParallelCoord& c = coords[static_cast<size_t>(op.worker)];
    double med = median[{static_cast<int>(op.kind), c.pp}];
    if (med <= 0) continue;
    auto& u = units[{op.step, c.dp, op.microbatch >= 0 ? op.microbatch : op.seq}];
    u.first += static_cast<double>(op.dur_ns) / med;
    ++u.second;
  }
  if (units.size() < 4) return;
  std::vector<double> x;
  std::map<int32_t, std::pair<double, int>> per_dp;
  for (const auto& [key, u] : units) {
    double v = u.first / u.second;
    x.push_back(v);
    auto& d = per_dp[std::get<1>(key)];
    d.first += v;
    ++d.second;
  }
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  double between = 0;
  for (const auto& [dp, d] : per_dp) {
    double dm = d.first / d.second;
    between += d.second * (dm - mean) * (dm - mean);
  }
  between /= static_cast<double>(x.size());
  if (mean <= 0) return;
  m.work_cv = std::sqrt(var) / mean;
  m.work_dp_share = var > 0 ? between / var : 0;
}

void MeasureCommGroups(const OpTimeline& t, const PipelineDetectorOptions& o, PipelineMetrics& m) {
  std::map<std::string, std::vector<std::vector<double>>> per_type;  // type -> worker -> durs
  for (const TimelineOp& op : t.ops) {
    if (!IsCommunicationOp(op.kind)) continue;
    auto& v = per_type[WhatIfOpType(op.kind)];
    v.resize(t.workers.size());
    v[static_cast<size_t>(op.worker)].push_back(static_cast<double>(op.dur_ns));
  }
  for (auto& [type, workers] : per_type) {
    std::vector<double> all, med(workers.size(), 0);
    for (size_t i = 0; i < workers.size(); ++i) {
      all.insert(all.end(), workers[i].begin(), workers[i].end());
      med[i] = Median(workers[i]).value_or(0);
    }
    double typical = Median(std::move(all)).value_or(0);
    std::vector<int32_t> slow;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (typical > 0 && med[i] >= o.comm_group_ratio * typical)
        slow.push_back(static_cast<int32_t>(i));
    }
    m.comm_groups.emplace_back(type, std::move(slow));
  }
}

std::string Times(double x) { return fmt::format("{:.3f}x", x); }

// The what-if's headline evidence, shared by every finding.
Evidence WhatIfLine(const WhatIf& w, uint32_t file) {
  return Evidence{fmt::format("what-if replay: the job runs {} slower than if no op straggled "
                              "({:.4g} s per step measured, {:.4g} s ideal, {} steps)",
                              Times(w.slowdown), w.measured_step_ns / 1e9, w.ideal_step_ns / 1e9,
                              w.per_step.size()),
                  SourceRef{file, 0}};
}

std::string GroupList(const std::vector<WhatIfGroup>& v, size_t max, const char* prefix) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}{} {}", prefix, v[i].label, Times(v[i].slowdown));
  }
  return out;
}

Finding Base(FindingCode code, const WhatIf& w, const PipelineMetrics& m, double recovered) {
  Finding f = MakeFinding(code);
  f.slowdown = w.slowdown - 1;
  f.recovered = recovered;
  f.evidence.push_back(WhatIfLine(w, m.file));
  return f;
}

std::vector<int32_t> StageRanks(const WhatIf& w, const PipelineMetrics& m, int32_t pp) {
  std::vector<int32_t> r;
  for (const PipelineWorkerMetrics& x : m.workers) {
    if (x.coord.pp == pp) r.push_back(RankOf(w, x));
  }
  std::sort(r.begin(), r.end());
  return r;
}

std::optional<Finding> DecideCommunication(const WhatIf& w, const PipelineMetrics& m,
                                           const PipelineDetectorOptions& o) {
  const WhatIfGroup* top_comm = nullptr;
  double comm_excess = 0;  // over every communication type: a slow p2p link
                           // slows both its forward and backward transfers
  for (const WhatIfGroup& g : w.by_op_type) {
    auto kind = TimelineOpFromName(g.label);
    bool comm = g.label.find("pp-comm") != std::string::npos || (kind && IsCommunicationOp(*kind));
    if (!comm) continue;
    comm_excess += std::max(0.0, g.slowdown - 1);
    if (top_comm == nullptr || g.slowdown > top_comm->slowdown) top_comm = &g;
  }
  // Transfers explain at least half the slowdown (op noise lifts the
  // compute types a little, so "more than every compute type" missed real
  // links).
  if (top_comm == nullptr || comm_excess < o.min_group_excess ||
      comm_excess < o.min_comm_share * (w.slowdown - 1)) {
    return std::nullopt;
  }
  Finding f = Base(FindingCode::kPipelineSlowCommunication, w, m, top_comm->recovered.value_or(0));
  std::vector<int32_t> workers;
  for (const auto& [type, slow] : m.comm_groups) {
    if (type == top_comm->label) workers = slow;
  }
  for (int32_t i : workers) f.ranks.push_back(RankOf(w, m.workers[static_cast<size_t>(i)]));
  std::sort(f.ranks.begin(), f.ranks.end());
  std::string who =
      f.ranks.empty() ? "every group alike" : fmt::format("ranks {}", RankListText(f.ranks));
  f.message = fmt::format(
      "{} transfers hold the step up: {} alone gives {} of the ideal step, "
      "more than any compute type ({})",
      top_comm->label, top_comm->label, Times(top_comm->slowdown), who);
  f.confidence = o.confidence.slow_communication;
  f.cause = "slow_" + top_comm->label;
  f.entity.job = f.ranks.empty();
  if (f.ranks.size() == 1) f.entity.rank = f.ranks[0];
  f.evidence.push_back(
      {fmt::format("op types: {}", GroupList(w.by_op_type, 4, "")), SourceRef{m.file, 0}});
  f.next_steps.push_back(fmt::format(
      "run nccl-tests over the ranks of that group ({}), and check their NICs and links (ibstat, "
      "ethtool -S, NCCL_DEBUG=INFO); removing the slow transfers recovers ~{:.0f}% of step time",
      who, 100 * std::max(0.0, top_comm->recovered.value_or(0))));
  return f;
}

std::optional<Finding> DecideWorker(const WhatIf& w, const PipelineMetrics& m,
                                    const PipelineDetectorOptions& o) {
  const PipelineWorkerMetrics* top = nullptr;
  for (const PipelineWorkerMetrics& x : m.workers) {
    if (x.peer_ratio && (top == nullptr || *x.peer_ratio > *top->peer_ratio)) top = &x;
  }
  if (top == nullptr || *top->peer_ratio < o.worker_ratio) return std::nullopt;
  for (const PipelineWorkerMetrics& x : m.workers) {
    if (&x != top && x.coord.pp == top->coord.pp && x.coord.tp == top->coord.tp && x.peer_ratio &&
        *x.peer_ratio >= o.peer_quiet_ratio) {
      return std::nullopt;
    }
  }
  const WhatIfGroup* g = nullptr;
  for (const WhatIfGroup& x : w.by_worker) {
    if (x.dp == top->coord.dp && x.pp == top->coord.pp) g = &x;
  }
  double recovered = g ? g->recovered.value_or(0) : 0;
  // A worker slow by chance in a job whose work moves (sequence lengths)
  // gives nothing back when made typical: not the straggler.
  if (recovered < o.min_worker_recovered) return std::nullopt;
  Finding f = Base(FindingCode::kPipelineSlowWorker, w, m, recovered);
  int32_t rank = RankOf(w, *top);
  f.entity.rank = rank;
  f.entity.dp_rank = top->coord.dp;
  f.entity.pp_stage = top->coord.pp;
  f.entity.tp_rank = top->coord.tp;
  f.slowdown = *top->peer_ratio - 1;
  // Tensor-parallel ranks wait for each other inside every op: a slow one
  // makes its whole TP group slow, and the timeline cannot say which.
  std::vector<int32_t> tp_group;
  for (const PipelineWorkerMetrics& x : m.workers) {
    if (x.coord.dp == top->coord.dp && x.coord.pp == top->coord.pp && x.peer_ratio &&
        *x.peer_ratio >= o.worker_ratio) {
      tp_group.push_back(RankOf(w, x));
    }
  }
  std::sort(tp_group.begin(), tp_group.end());
  std::string alone =
      g ? fmt::format("; alone it makes the step {} the ideal", Times(g->slowdown)) : "";
  if (tp_group.size() > 1) {
    f.ranks = tp_group;
    f.entity.tp_rank.reset();
    f.message = fmt::format(
        "the tensor-parallel group of dp {}, pp {} (ranks {}) computes {:+.0f}% longer than the "
        "other replicas of stage {}{}: its ranks wait for each other inside every op, so the "
        "timeline cannot say which of them is slow",
        top->coord.dp, top->coord.pp, RankListText(tp_group), 100 * (*top->peer_ratio - 1),
        top->coord.pp, alone);
  } else {
    f.message = fmt::format(
        "rank {} (dp {}, pp {}, tp {}) computes {:+.0f}% longer than the other replicas of "
        "stage {}{}",
        rank, top->coord.dp, top->coord.pp, top->coord.tp, 100 * (*top->peer_ratio - 1),
        top->coord.pp, alone);
  }
  f.confidence = o.confidence.slow_worker;
  f.cause = "slow_worker";
  f.evidence.push_back({fmt::format("median over steps of its forward + backward time over its "
                                    "role peers' (same stage and TP rank): {}",
                                    Times(*top->peer_ratio)),
                        SourceRef{m.file, 0}});
  std::string who = tp_group.size() > 1 ? fmt::format("ranks {}", RankListText(tp_group))
                                        : fmt::format("rank {}", rank);
  f.next_steps.push_back(fmt::format(
      "check the GPU and host of {}: clocks, temperature and power limit (nvidia-smi -q -d "
      "PERFORMANCE,CLOCK,TEMPERATURE,POWER), the PCIe link, other processes; fixing it recovers "
      "~{:.0f}% of step time",
      who, 100 * std::max(0.0, recovered)));
  return f;
}

std::optional<Finding> DecideWorkload(const WhatIf& w, const PipelineMetrics& m,
                                      const PipelineDetectorOptions& o) {
  if (!m.work_cv || !m.work_dp_share) return std::nullopt;
  // Microbatches differ in work on every stage, and not because one
  // replica is slower: the work moves.
  if (*m.work_cv < o.min_work_cv || *m.work_dp_share > o.max_work_dp_share) return std::nullopt;
  double recovered = 0;
  for (const WhatIfGroup& g : w.by_op_type) {
    if (g.label == TimelineOpName(Kind::kForwardCompute) ||
        g.label == TimelineOpName(Kind::kBackwardCompute)) {
      recovered += std::max(0.0, g.recovered.value_or(0));
    }
  }
  Finding f = Base(FindingCode::kPipelineWorkloadImbalance, w, m, recovered);
  f.entity.job = true;
  f.pattern = Pattern::kJobWide;
  f.message = fmt::format(
      "the work of a microbatch varies by {:.0f}% (cv) on every stage alike, and only {:.0f}% "
      "of that variation is one replica's: uneven work (sequence lengths), not a faulty worker",
      100 * *m.work_cv, 100 * *m.work_dp_share);
  f.confidence = o.confidence.workload_imbalance;
  f.cause = "workload_imbalance";
  f.evidence.push_back(
      {fmt::format("DP ranks: {}", GroupList(w.by_dp_rank, 4, "dp ")), SourceRef{m.file, 0}});
  f.next_steps.push_back(
      "balance the work per microbatch: pack sequences to a fixed token count, or sample by "
      "length buckets so that every replica gets similar sequence lengths");
  return f;
}

std::optional<Finding> DecideStage(const WhatIf& w, const PipelineMetrics& m,
                                   const PipelineDetectorOptions& o) {
  if (w.by_stage.empty() || w.by_stage[0].slowdown - 1 < o.min_group_excess) return std::nullopt;
  const WhatIfGroup& s = w.by_stage[0];
  Finding f = Base(FindingCode::kPipelineStageImbalance, w, m, s.recovered.value_or(0));
  f.entity.pp_stage = s.pp;
  f.entity.job = true;
  f.ranks = StageRanks(w, m, *s.pp);
  f.pattern = Pattern::kPersistent;
  std::vector<std::string> ops;
  for (const WhatIfGroup& g : w.by_op_type) {
    if (g.slowdown - 1 >= o.min_group_excess) ops.push_back(g.label);
  }
  f.message = fmt::format(
      "pipeline stage {} is slower on every data-parallel replica: alone at its measured times "
      "it makes the step {} the ideal ({}); the layers are not partitioned evenly",
      *s.pp, Times(s.slowdown),
      ops.empty() ? std::string("no op type stands out") : fmt::format("{}", fmt::join(ops, ", ")));
  f.confidence = o.confidence.stage_imbalance;
  f.cause = "pipeline_stage_imbalance";
  f.evidence.push_back(
      {fmt::format("stages: {}", GroupList(w.by_stage, 4, "stage ")), SourceRef{m.file, 0}});
  std::vector<std::string> replicas;
  for (const WhatIfGroup& g : w.by_worker) {
    if (g.pp == s.pp) replicas.push_back(fmt::format("dp {} {}", *g.dp, Times(g.slowdown)));
  }
  if (!replicas.empty()) {
    f.evidence.push_back(
        {fmt::format("its workers alike on every replica: {}", fmt::join(replicas, ", ")),
         SourceRef{m.file, 0}});
  }
  f.evidence.push_back(
      {fmt::format("op types: {}", GroupList(w.by_op_type, 3, "")), SourceRef{m.file, 0}});
  if (w.layout.dp < 2) {
    f.evidence.push_back(
        {"one data-parallel replica: a slow GPU on this stage would look the "
         "same; check its GPU metrics before repartitioning",
         SourceRef{m.file, 0}});
    f.confidence = o.confidence.stage_imbalance_one_replica;
  }
  f.next_steps.push_back(fmt::format(
      "rebalance the layers of stage {}: fewer transformer layers there (e.g. an uneven split "
      "such as Megatron's --decoder-last-pipeline-num-layers / "
      "--decoder-first-pipeline-num-layers, "
      "or count the embedding and loss as layers); balanced, the step recovers ~{:.0f}%",
      *s.pp, 100 * std::max(0.0, s.recovered.value_or(0))));
  return f;
}

}  // namespace

PipelineMetrics MeasurePipeline(const Run& run, const OpTimeline& timeline,
                                const std::optional<ParallelLayout>& layout,
                                const PipelineDetectorOptions& options) {
  (void)run;
  PipelineMetrics m;
  m.file = timeline.file;
  std::vector<ParallelCoord> coords;
  auto l = ResolveLayout(timeline, layout, &coords);
  if (!l.ok()) {
    m.error = l.status().message();
    return m;
  }
  auto w = RunWhatIf(timeline, layout, options.whatif);
  if (!w.ok()) {
    m.error = w.status().message();
    return m;
  }
  m.whatif = std::move(w.value());
  for (size_t i = 0; i < timeline.workers.size(); ++i) {
    PipelineWorkerMetrics x;
    x.worker = static_cast<int32_t>(i);
    x.coord = coords[i];
    x.rank = timeline.workers[i].rank;
    m.workers.push_back(x);
  }
  std::vector<int64_t> steps;
  MeasurePeers(*m.whatif, coords, ComputePerStep(timeline, steps), m);
  MeasureWork(timeline, coords, m);
  MeasureCommGroups(timeline, options, m);
  return m;
}

std::vector<Finding> DecidePipeline(const Run& run, const OpTimeline& timeline,
                                    const PipelineMetrics& m, const PipelineDetectorOptions& o) {
  (void)timeline;
  std::vector<Finding> out;
  if (!m.whatif) {
    Finding f = MakeFinding(FindingCode::kPipelineNoLayout);
    f.entity.job = true;
    std::string path = m.file < run.files.size() ? run.files[m.file].path : "";
    f.message = fmt::format("{}: {}", path, m.error.value_or("the replay did not run"));
    f.confidence = o.confidence.no_layout;
    f.evidence.push_back({f.message, SourceRef{m.file, 0}});
    f.next_steps.push_back(DefaultNextStep(f.code));
    out.push_back(std::move(f));
    return out;
  }
  const WhatIf& w = *m.whatif;
  if (w.slowdown < o.min_slowdown) return out;
  for (auto decide : {DecideCommunication, DecideWorkload, DecideWorker, DecideStage}) {
    if (std::optional<Finding> f = decide(w, m, o)) {
      out.push_back(std::move(*f));
      break;
    }
  }
  return out;
}

PipelineAnalysis AnalyzePipelines(const Run& run, const std::optional<ParallelLayout>& layout,
                                  const PipelineDetectorOptions& options) {
  PipelineAnalysis a;
  for (const OpTimeline& t : run.op_timelines) {
    PipelineMetrics m = MeasurePipeline(run, t, layout, options);
    std::vector<Finding> f = DecidePipeline(run, t, m, options);
    a.findings.insert(a.findings.end(), f.begin(), f.end());
    a.timelines.push_back(std::move(m));
  }
  return a;
}

}  // namespace laggard
