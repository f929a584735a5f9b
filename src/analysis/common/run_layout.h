// The parallel layout of a run as a whole: which ranks are role peers (same
// pipeline stage, same tensor-parallel position) and which stage each rank
// runs. Op timelines carry their own layout (pipeline_replay.h); this is for
// the rest of the run: step logs, Kineto and nsys traces.
//
// Sources, first that gives one wins:
//   1. --layout (AnalysisOptions::layout);
//   2. launch logs (Megatron's "using world size: ..." line, its argument
//      dump; Run::layouts), when every statement agrees;
//   3. the process groups of Kineto traces (distributedInfo.pg_config) that
//      name their axis: Megatron-core's group_desc (TENSOR_MODEL_PARALLEL_GROUP,
//      PIPELINE_MODEL_PARALLEL_GROUP, DATA_PARALLEL_GROUP, CONTEXT_PARALLEL_GROUP;
//      torch >= 2.4) or DeviceMesh's "mesh_<dim>" (mesh_pp, mesh_dp,
//      mesh_dp_shard, mesh_dp_replicate, mesh_cp, mesh_tp), and whose
//      members sit where Megatron's rank order (tp-cp-dp-pp) puts them.
// Groups without such a description ("undefined", plain new_group) are not
// used: their members alone cannot tell a data-parallel from a
// tensor-parallel group.
//
// A statement that contradicts the ranks seen (a world larger than the
// layout's) or another statement is not used; `conflicts` says why.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_COMMON_RUN_LAYOUT_H_
#define LAGGARD_ANALYSIS_COMMON_RUN_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/parallel_layout.h"
#include "model/run.h"

namespace laggard {

struct RunLayout {
  ParallelLayout layout;
  LayoutSource source = LayoutSource::kFlag;
  std::optional<SourceRef> src;  // the statement's file and line, when one file said it
  int32_t world_seen = 0;        // ranks the run has (steps or traces): <= layout.world()

  // Role peers: every rank of `rank`'s stage and tensor-parallel (and
  // context-parallel) position, `rank` included, ascending.
  std::vector<int32_t> RolePeers(int32_t rank) const;
  // The ranks of pipeline stage `stage`, ascending.
  std::vector<int32_t> StageRanks(int32_t stage) const;
  ParallelCoord Coord(int32_t rank) const { return MegatronCoord(layout, rank); }
  bool pipelined() const { return layout.pp > 1; }
};

struct RunLayoutResult {
  std::optional<RunLayout> layout;
  std::vector<std::string> conflicts;  // statements not used, and why
};

// The ranks of `run`: the highest rank of its step series and ranked traces + 1.
int32_t RanksSeen(const Run& run);

// The layout stated by the process groups of `traces` (source 3 above), or
// nullopt; a group whose members contradict the inferred layout adds to
// `conflicts`.
std::optional<ParallelLayout> LayoutFromProcessGroups(const std::vector<RankTrace>& traces,
                                                      std::vector<std::string>* conflicts);

RunLayoutResult ResolveRunLayout(const Run& run, const std::optional<ParallelLayout>& flag);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_COMMON_RUN_LAYOUT_H_
