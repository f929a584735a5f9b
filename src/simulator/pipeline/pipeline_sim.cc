// SimulatePipeline(): each step's durations (base × fault × noise), the
// schedule of the step (pipeline_schedule.h), and the what-if truth: the
// same schedule re-run with every op at its type's typical duration.
//
// Durations of one step, per action (PipelineCosts has the bases):
//   forward / backward / optimizer  base × fault × lognormal(compute_cv)
//   gc                              0
//   p2p                             latency + activation / p2p bandwidth (a batched
//                                   call carries two tensors: twice the bytes)
//   params-all-gather               latency + (D − 1) / D · params / tp / bus bandwidth
//   grads-reduce-scatter            the same with fp32 gradients (twice the bytes)
//   embedding-grads-all-reduce      latency + embedding / tp / p2p bandwidth (2 ranks)
//   layernorm-grads-all-reduce      layernorm_us
//   optimizer-clip-main-grad        clip_us + 50 µs · ⌈log2 world⌉
// every transfer × fault × lognormal(transfer_cv). Each rank draws its own
// stream per step, in program order, so no draw depends on scheduling.

#include <algorithm>
#include <cmath>

#include "simulator/pipeline/pipeline_schedule.h"
#include "simulator/pipeline/pipeline_sim.h"

namespace laggard::sim {
namespace {

using namespace pipeline;  // NOLINT: the op indices

constexpr uint64_t kDurationTag = 32;
constexpr uint64_t kSeqlenTag = 33;
constexpr double kMib = 1024.0 * 1024.0;
constexpr double kStepGap = 0.1;  // between steps, of the step's time

struct BaseCosts {
  double forward = 0, backward = 0, optimizer = 0;
  double p2p = 0, p2p_batched = 0;
  double params_all_gather = 0, grads_reduce_scatter = 0, embedding = 0, layernorm = 0, clip = 0;
};

BaseCosts BaseCostsOf(const PipelineScenario& sc) {
  const PipelineCosts& c = sc.costs;
  const PipelineLayout& l = sc.layout;
  auto us = [](double mib, double gbps) { return mib * kMib / (gbps * 1e9) * 1e6; };
  BaseCosts b;
  b.forward = c.forward_us;
  b.backward = c.backward_us;
  b.optimizer = c.optimizer_us;
  b.p2p = c.p2p_latency_us + us(c.activation_mib, c.p2p_gbps);
  b.p2p_batched = c.p2p_latency_us + us(2 * c.activation_mib, c.p2p_gbps);
  double ring = static_cast<double>(l.dp - 1) / l.dp;
  b.params_all_gather = c.dp_latency_us + ring * us(c.stage_params_mib / l.tp, c.dp_busbw_gbps);
  b.grads_reduce_scatter =
      c.dp_latency_us + ring * us(2 * c.stage_params_mib / l.tp, c.dp_busbw_gbps);
  b.embedding = c.p2p_latency_us + us(c.embedding_mib / l.tp, c.p2p_gbps);
  b.layernorm = c.layernorm_us;
  b.clip = c.clip_us + 50 * std::ceil(std::log2(static_cast<double>(l.world())));
  return b;
}

double BaseOf(const BaseCosts& b, const Action& a) {
  switch (a.kind) {
    case kFwd: return b.forward;
    case kBwd: return b.backward;
    case kOptimizer: return b.optimizer;
    case kGc: return 0;
    case kParamsAllGather: return b.params_all_gather;
    case kGradsReduceScatter: return b.grads_reduce_scatter;
    case kEmbeddingAllReduce: return b.embedding;
    case kLayernormAllReduce: return b.layernorm;
    case kClip: return b.clip;
    default: return a.kind2 != kNoOp ? b.p2p_batched : b.p2p;
  }
}

bool Active(const PipelineFault& f, int step) {
  return f.kind != PipelineFaultKind::kNone && step >= f.onset_step &&
         (!f.end_step || step <= *f.end_step);
}

// Draws every action's duration of one step.
class StepDurations {
 public:
  StepDurations(const PipelineScenario& sc, const Plan& plan)
      : sc_(sc), plan_(plan), base_(BaseCostsOf(sc)) {}

  // Fills dur (one per action); returns the heaviest replica under seqlen.
  std::optional<int> Draw(int step, std::vector<double>& dur) {
    const PipelineFault& f = sc_.fault;
    active_ = Active(f, step);
    std::optional<int> heaviest;
    if (active_ && f.kind == PipelineFaultKind::kSeqlen) heaviest = DrawSeqlens(step);
    const PipelineLayout& l = sc_.layout;
    for (int r = 0; r < l.world(); ++r) {
      Rng rng(StreamSeed(sc_.seed, kDurationTag, static_cast<uint64_t>(step),
                         static_cast<uint64_t>(r)));
      WorkerCoord c = CoordOfRank(l, r);
      for (auto a = static_cast<size_t>(plan_.begin[static_cast<size_t>(r)]);
           a < static_cast<size_t>(plan_.begin[static_cast<size_t>(r) + 1]); ++a) {
        const Action& act = plan_.actions[a];
        if (act.kind == kGc) {
          dur[a] = 0;
          continue;
        }
        double cv = IsComputeOp(act.kind) ? sc_.costs.compute_cv : sc_.costs.transfer_cv;
        dur[a] = BaseOf(base_, act) * FaultFactor(act, c) * LogNormalFactor(rng, cv);
      }
    }
    return heaviest;
  }

 private:
  int DrawSeqlens(int step) {
    const int m = sc_.microbatches;
    seqlen_.assign(static_cast<size_t>(sc_.layout.dp * m), 1);
    int heaviest = 0;
    double most = -1;
    for (int d = 0; d < sc_.layout.dp; ++d) {
      Rng rng(
          StreamSeed(sc_.seed, kSeqlenTag, static_cast<uint64_t>(step), static_cast<uint64_t>(d)));
      double sum = 0;
      for (int i = 0; i < m; ++i) {
        double v = LogNormalFactor(rng, *sc_.fault.factor);
        seqlen_[static_cast<size_t>(d * m + i)] = v;
        sum += v;
      }
      if (sum > most) {
        most = sum;
        heaviest = d;
      }
    }
    return heaviest;
  }

  double FaultFactor(const Action& a, const WorkerCoord& c) const {
    if (!active_) return 1;
    const PipelineFault& f = sc_.fault;
    const double factor = *f.factor;
    const bool compute = a.kind == kFwd || a.kind == kBwd || a.kind == kOptimizer;
    const bool tp_match = !f.tp || *f.tp == c.tp;
    switch (f.kind) {
      case PipelineFaultKind::kNone: return 1;
      case PipelineFaultKind::kSlowWorker:
        return compute && c.dp == *f.dp && c.pp == *f.pp && c.tp == *f.tp ? factor : 1;
      case PipelineFaultKind::kHeavyStage: return compute && c.pp == *f.pp ? factor : 1;
      case PipelineFaultKind::kSeqlen:
        if (a.kind != kFwd && a.kind != kBwd) return 1;
        return seqlen_[static_cast<size_t>(c.dp * sc_.microbatches + a.mb)];
      case PipelineFaultKind::kSlowLink:
        if (f.link_is_p2p) {
          if (!IsP2pOp(a.kind)) return 1;
          // forward-send and backward-recv go down to stage + 1 (also as the
          // first event of a batched call); the others come from stage − 1.
          int lower = a.kind == kFwdSend || a.kind == kBwdRecv ? c.pp : c.pp - 1;
          return c.dp == *f.dp && lower == *f.pp && tp_match ? factor : 1;
        }
        if (a.kind != kParamsAllGather && a.kind != kGradsReduceScatter) return 1;
        return c.pp == *f.pp && tp_match ? factor : 1;
    }
    return 1;
  }

  const PipelineScenario& sc_;
  const Plan& plan_;
  BaseCosts base_;
  bool active_ = false;
  std::vector<double> seqlen_;  // [dp * M + mb]
};

// Per op type: the sum and count of compute durations, every transfer.
struct DurationStats {
  std::array<double, kOpCount> sum{};
  std::array<int64_t, kOpCount> count{};
  std::array<std::vector<double>, kOpCount> transfers;

  void Add(uint8_t kind, double dur) {
    if (IsComputeOp(kind)) {
      sum[kind] += dur;
      ++count[kind];
    } else {
      transfers[kind].push_back(dur);
    }
  }
  std::array<double, kOpCount> Typical() {
    std::array<double, kOpCount> t{};
    for (size_t k = 0; k < t.size(); ++k) {
      if (count[k] > 0) t[k] = sum[k] / static_cast<double>(count[k]);
      std::vector<double>& v = transfers[k];
      if (v.empty()) continue;
      auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
      std::nth_element(v.begin(), mid, v.end());
      t[k] = *mid;
      if (v.size() % 2 == 0) t[k] = (t[k] + *std::max_element(v.begin(), mid)) / 2;
    }
    return t;
  }
};

double LastEnd(std::span<const double> ts, std::span<const double> dur) {
  double end = -1e300;
  for (size_t i = 0; i < ts.size(); ++i) end = std::max(end, ts[i] + dur[i]);
  return end;
}

}  // namespace

StatusOr<PipelineResult> SimulatePipeline(const PipelineScenario& sc,
                                          const PipelineStepFn& on_step) {
  PipelineResult result;
  result.scenario = sc;
  const Plan plan = BuildPipelinePlan(sc.layout, sc.microbatches);
  const size_t n = plan.actions.size();
  std::vector<double> dur(n), ts(n), out(n);
  std::vector<PipelineEvent> events(plan.event_order.size());
  StepDurations durations(sc, plan);
  DurationStats stats;
  double origin = 0;
  for (int step = 0; step < sc.steps; ++step) {
    std::optional<int> heaviest = durations.Draw(step, dur);
    if (Status st = RunPipelineSchedule(plan, dur, origin, ts, out); !st.ok()) return st;
    for (size_t r = 0; r + 1 < plan.event_begin.size(); ++r) {
      for (auto i = static_cast<size_t>(plan.event_begin[r]);
           i < static_cast<size_t>(plan.event_begin[r + 1]); ++i) {
        uint32_t e = plan.event_order[i];
        const Action& a = plan.actions[e / 2];
        PipelineEvent& ev = events[i];
        ev.ts_us = ts[e / 2];
        ev.dur_us = out[e / 2];
        ev.rank = static_cast<int32_t>(r);
        ev.kind = e % 2 ? a.kind2 : a.kind;
        ev.seq = e % 2 ? a.seq2 : a.seq;
        ev.mb = a.mb;
        stats.Add(ev.kind, ev.dur_us);
      }
    }
    double end = LastEnd(ts, out);
    result.steps.push_back({origin, end - origin, 0, heaviest});
    result.events += static_cast<int64_t>(events.size());
    if (on_step) {
      if (Status st = on_step(step, events); !st.ok()) return st;
    }
    origin = end + kStepGap * (end - origin);
  }
  result.typical_us = stats.Typical();
  for (size_t a = 0; a < n; ++a) {
    const Action& act = plan.actions[a];
    dur[a] = result.typical_us[act.kind];
    if (act.kind2 != kNoOp) dur[a] = std::max(dur[a], result.typical_us[act.kind2]);
  }
  if (Status st = RunPipelineSchedule(plan, dur, 0, ts, out); !st.ok()) return st;
  const double ideal = LastEnd(ts, out);
  for (PipelineStepTruth& s : result.steps) {
    s.ideal_us = ideal;
    result.mean_actual_us += s.actual_us / static_cast<double>(result.steps.size());
  }
  result.mean_ideal_us = ideal;
  result.slowdown = ideal > 0 ? result.mean_actual_us / ideal : 1;
  return result;
}

}  // namespace laggard::sim
