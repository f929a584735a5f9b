// The parallel layout of a model-parallel job: how its ranks split into
// data-, pipeline- and tensor-parallel groups, and where the run's files
// state it. Op timelines carry their own (model/op_timeline.h); launch logs
// (Megatron's "using world size: ..., data-parallel size: ..." line and its
// argument dump) and torch's process groups (Kineto distributedInfo.pg_config)
// state it for the rest of a run; analysis/common/run_layout.h decides which
// one a run has.

#ifndef LAGGARD_MODEL_PARALLEL_LAYOUT_H_
#define LAGGARD_MODEL_PARALLEL_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "model/source.h"

namespace laggard {

// How the ranks of a job are split: data-, pipeline-, tensor-parallel sizes
// and the virtual pipeline (interleaved 1F1B) chunks per stage.
struct ParallelLayout {
  int32_t dp = 1;
  int32_t pp = 1;
  int32_t tp = 1;
  int32_t vpp = 1;
  int32_t cp = 1;  // context-parallel size (Megatron's order: tp-cp-dp-pp)
  int64_t world() const { return int64_t{dp} * pp * tp * cp; }
  friend bool operator==(const ParallelLayout&, const ParallelLayout&) = default;
};

// One worker's place in the layout.
struct ParallelCoord {
  int32_t dp = 0;
  int32_t pp = 0;
  int32_t tp = 0;
  int32_t cp = 0;
  friend bool operator==(const ParallelCoord&, const ParallelCoord&) = default;
  friend auto operator<=>(const ParallelCoord&, const ParallelCoord&) = default;
};

// Megatron's rank order (tp fastest, then cp, dp, pp: "tp-cp-dp-pp").
inline int64_t MegatronRank(const ParallelLayout& l, const ParallelCoord& c) {
  return c.tp + int64_t{l.tp} * (c.cp + int64_t{l.cp} * (c.dp + int64_t{l.dp} * c.pp));
}

// The coordinates of global `rank` in Megatron's order; rank < l.world().
inline ParallelCoord MegatronCoord(const ParallelLayout& l, int64_t rank) {
  ParallelCoord c;
  c.tp = static_cast<int32_t>(rank % l.tp);
  rank /= l.tp;
  c.cp = static_cast<int32_t>(rank % l.cp);
  rank /= l.cp;
  c.dp = static_cast<int32_t>(rank % l.dp);
  c.pp = static_cast<int32_t>(rank / l.dp);
  return c;
}

// Where a layout was stated. Serialized by name (LayoutSourceName): append only.
enum class LayoutSource : uint8_t {
  kFlag,           // --layout
  kOpTimeline,     // an op timeline's own worker coordinates
  kLaunchLog,      // Megatron's layout line or argument dump
  kProcessGroups,  // torch process groups (Kineto pg_config), by their members
};
const char* LayoutSourceName(LayoutSource s);

// "dp=2,pp=4,tp=1" (",cp=C" / ",vpp=V" when > 1): --layout's own syntax.
std::string LayoutText(const ParallelLayout& l);

// One statement of a run's layout by one file.
struct LayoutStatement {
  ParallelLayout layout;
  LayoutSource source = LayoutSource::kLaunchLog;
  SourceRef src;  // the line that said it (0: the file as a whole)
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_PARALLEL_LAYOUT_H_
