// Internal to the 3D-parallel simulator (pipeline_sim.h): the program each
// worker runs in one training step (BuildPipelinePlan: Megatron's
// non-interleaved 1F1B schedule and the step's collectives) and the
// event-driven scheduler that times it (RunPipelineSchedule). Only the
// files of simulator/pipeline/ include it.
//
// A worker's program is a list of actions run in order. An action either
// runs alone (a compute op without tensor parallelism, gc, the optimizer)
// or meets its peers at a rendezvous:
//   transfer  a p2p exchange or a collective: it starts when the last peer
//             arrives, and each member then takes its own transfer time (the
//             exporter's convention: waiting is idle time, not the op's);
//   lockstep  a forward or backward compute of a tensor-parallel group: each
//             member starts when it is ready and all end together, when the
//             slowest would have (the TP all-reduces inside the op wait).
// One action writes one event, or two for Megatron's batched p2p calls
// (send_forward_recv_backward: forward-send + backward-recv, equal ts and
// dur; send_backward_recv_forward: backward-send + forward-recv).
//
// Thread-safety: a Plan is immutable once built; RunPipelineSchedule
// writes only its outputs.

#ifndef LAGGARD_SIMULATOR_PIPELINE_PIPELINE_SCHEDULE_H_
#define LAGGARD_SIMULATOR_PIPELINE_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "formats/megatron_timeline.h"
#include "simulator/pipeline/pipeline_sim.h"
#include "simulator/rng.h"

namespace laggard::sim::pipeline {

// Op types, as indices of megatron_timeline::kOpTypes.
enum Op : uint8_t {
  kFwd = 0,
  kBwd = 1,
  kFwdSend = 2,
  kFwdRecv = 3,
  kBwdSend = 4,
  kBwdRecv = 5,
  kParamsAllGather = 6,
  kGradsReduceScatter = 7,
  kEmbeddingAllReduce = 9,
  kLayernormAllReduce = 10,
  kClip = 11,
  kOptimizer = 12,
  kGc = 13,
};
inline constexpr uint8_t kNoOp = 0xff;
inline constexpr int kOpCount = static_cast<int>(megatron_timeline::kOpTypes.size());
static_assert(megatron_timeline::kOpTypes[kFwdRecv] == megatron_timeline::kForwardRecv);
static_assert(megatron_timeline::kOpTypes[kEmbeddingAllReduce] ==
              megatron_timeline::kEmbeddingGradsAllReduce);
static_assert(megatron_timeline::kOpTypes[kGc] == megatron_timeline::kGc);

// Compute by nature (the what-if's typical duration is a mean), else
// communication (a median).
inline bool IsComputeOp(uint8_t op) {
  return op == kFwd || op == kBwd || op == kOptimizer || op == kGc;
}
inline bool IsP2pOp(uint8_t op) { return op >= kFwdSend && op <= kBwdRecv; }
// The thread of an op: index into megatron_timeline::kCategories.
int CategoryOf(uint8_t op);
// args.model_chunk: 0 for the per-chunk ops, -1 for the rest (as the exporter writes).
int ModelChunkOf(uint8_t op);

enum class Sync : uint8_t { kAlone, kTransfer, kLockstep };

struct Action {
  int32_t group = -1;  // rendezvous; -1 when it runs alone
  int16_t mb = -1;     // args.mb_id of its events
  int16_t seq = 0;     // args.seq_id of the first event
  int16_t seq2 = 0;    // of the second
  uint8_t kind = 0;
  uint8_t kind2 = kNoOp;  // the second event of a batched p2p call
  Sync sync = Sync::kAlone;
};

struct RendezvousGroup {
  int32_t size = 0;
  int32_t first_slot = 0;  // its members take slots [first_slot, first_slot + size)
};

// One step's programs; the same every step.
struct Plan {
  PipelineLayout layout;
  int microbatches = 0;
  std::vector<Action> actions;  // worker by worker, in global rank order
  std::vector<int32_t> begin;   // world + 1: rank r's actions are [begin[r], begin[r + 1])
  std::vector<RendezvousGroup> groups;
  int32_t slots = 0;
  // Each rank's events in the exporter's order (name, then seq_id):
  // action * 2 + (0: its first event, 1: its second), ranks in order.
  std::vector<uint32_t> event_order;
  std::vector<int32_t> event_begin;  // world + 1
};

// The step's programs for `layout` with `microbatches` (>= pp) per step.
Plan BuildPipelinePlan(const PipelineLayout& layout, int microbatches);

// Times one step: every worker starts at `origin_us`; action a lasts
// `dur_us[a]` (its transfer for a rendezvous of kind transfer, its own
// compute for lockstep). Writes each action's start and duration (both of a
// batched call's events share them). An error means the plan deadlocks.
Status RunPipelineSchedule(const Plan& plan, std::span<const double> dur_us, double origin_us,
                           std::span<double> ts_us, std::span<double> out_dur_us);

// A random stream per purpose and key (splitmix64 of the seed, the tag and
// two keys), so a draw never depends on the order of others.
inline uint64_t StreamSeed(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b) {
  uint64_t h = Rng(seed ^ (tag * 0xd1b54a32d192ed03ull)).Next() ^ (a * 0x9e3779b97f4a7c15ull);
  h = Rng(h).Next() ^ (b * 0xc2b2ae3d27d4eb4full);
  return Rng(h).Next();
}

// A lognormal factor of mean 1 and coefficient of variation `cv`.
inline double LogNormalFactor(Rng& rng, double cv) {
  if (cv <= 0) return 1;
  double sigma = std::sqrt(std::log1p(cv * cv));
  return std::exp(sigma * rng.Normal() - sigma * sigma / 2);
}

}  // namespace laggard::sim::pipeline

#endif  // LAGGARD_SIMULATOR_PIPELINE_PIPELINE_SCHEDULE_H_
