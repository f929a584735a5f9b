// A hand-made Megatron step for the pipeline tests: dp x pp workers (tp 1)
// running non-interleaved 1F1B over `microbatches`, ops in the order
// Megatron runs them, every op at the duration the caller gives. Times only
// order the ops (the replay reads the order and the durations).

#ifndef LAGGARD_TESTS_ANALYSIS_PIPELINES_PIPELINE_TIMELINE_FIXTURE_H_
#define LAGGARD_TESTS_ANALYSIS_PIPELINES_PIPELINE_TIMELINE_FIXTURE_H_

#include <functional>
#include <vector>

#include "model/op_timeline.h"

namespace laggard::testing {

// Duration (ns) of an op of `kind` on worker (dp, pp) in `step`, microbatch `mb`.
using DurationFn = std::function<DurationNs(TimelineOpKind kind, int32_t dp, int32_t pp,
                                            int64_t step, int32_t mb)>;

inline OpTimeline OneFOneBTimeline(int32_t dp, int32_t pp, int32_t microbatches, int32_t steps,
                                   const DurationFn& dur) {
  using K = TimelineOpKind;
  OpTimeline t;
  t.layout = ParallelLayout{dp, pp, 1, 1};
  for (int32_t s = 0; s < pp; ++s) {
    for (int32_t d = 0; d < dp; ++d) {
      TimelineWorker w;
      w.coord = {d, s, 0};
      w.rank = static_cast<int32_t>(MegatronRank(*t.layout, w.coord));
      t.workers.push_back(w);
    }
  }
  for (int32_t step = 0; step < steps; ++step) {
    for (size_t wi = 0; wi < t.workers.size(); ++wi) {
      const ParallelCoord& c = t.workers[wi].coord;
      TimeNs now = 0;
      int32_t seq[kTimelineOpKinds] = {};
      auto add = [&](K kind, int32_t mb) {
        TimelineOp op;
        op.kind = kind;
        op.worker = static_cast<int32_t>(wi);
        op.step = step;
        op.microbatch = mb;
        op.seq = seq[static_cast<int>(kind)]++;
        op.start_ns = step * 1'000'000'000'000LL + now;
        op.dur_ns = dur(kind, c.dp, c.pp, step, mb);
        now += 1000;
        t.ops.push_back(op);
      };
      auto forward = [&](int32_t mb) {
        if (c.pp > 0) add(K::kForwardRecv, -1);
        add(K::kForwardCompute, mb);
        if (c.pp < pp - 1) add(K::kForwardSend, -1);
      };
      auto backward = [&](int32_t mb) {
        if (c.pp < pp - 1) add(K::kBackwardRecv, -1);
        add(K::kBackwardCompute, mb);
        if (c.pp > 0) add(K::kBackwardSend, -1);
      };
      add(K::kParamsAllGather, -1);
      int32_t warmup = std::min(pp - c.pp - 1, microbatches);
      int32_t f = 0, b = 0;
      for (; f < warmup; ++f) forward(f);
      for (; f < microbatches; ++f, ++b) {
        forward(f);
        backward(b);
      }
      for (; b < microbatches; ++b) backward(b);
      add(K::kGc, -1);
      add(K::kLayernormGradsAllReduce, -1);
      if (c.pp == 0 || c.pp == pp - 1) add(K::kEmbeddingGradsAllReduce, -1);
      add(K::kGradsReduceScatter, -1);
      add(K::kOptimizerClipMainGrad, -1);
      add(K::kOptimizer, -1);
    }
  }
  return t;
}

// Typical durations: forward 10 ms, backward 20 ms, transfers 0.1 ms, the
// DP collectives 2 ms, optimizer 3 ms, gc 0.
inline DurationNs BaseDuration(TimelineOpKind kind) {
  using K = TimelineOpKind;
  switch (kind) {
    case K::kForwardCompute: return 10'000'000;
    case K::kBackwardCompute: return 20'000'000;
    case K::kParamsAllGather:
    case K::kGradsReduceScatter: return 2'000'000;
    case K::kOptimizer: return 3'000'000;
    case K::kGc: return 0;
    default: return 100'000;
  }
}

}  // namespace laggard::testing

#endif  // LAGGARD_TESTS_ANALYSIS_PIPELINES_PIPELINE_TIMELINE_FIXTURE_H_
