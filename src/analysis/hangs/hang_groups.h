// Hang groups: the process groups of a stopped job as every process knows
// them, and each rank's progress in each. The hang detector
// (analysis/hangs/hang_detector.h) calls CollectHangGroups() on the Flight
// Recorder dumps and the latest stop's hang lines (analysis/hangs/hang_episodes.h),
// then decides on the groups it returns; its rules ask WaitsInCollective().
//
// A group's id ("PG 11", an FR pg_status key) is a counter each process
// keeps on its own: "11" on rank 0 and on rank 9 can be two groups. A group
// is what the dumps' pg_config says of it: its description and member
// ranks (DATA_PARALLEL_GROUP of stage 0 and of stage 1 are two groups). A
// dump's id is tied to its pg_config record by its entries, which carry
// both the id and the pg_config name; an id no entry ties is taken as a
// name when pg_config holds it and no entry ties that name to another id,
// else its status is left out and counted (statuses_unplaced). Dumps
// without pg_config (older FR) fall back to the id, and are counted
// (dumps_without_config). A hang line joins the group its rank's own dump
// gives its id (or its PG GUID, the pg_config name), else the one matched
// group of its description that holds the rank, else its id.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_GROUPS_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/hangs/hang_detector.h"
#include "model/run.h"

namespace laggard {

struct HangGroups {
  std::vector<HangGroupState> groups;  // each with its members and stuck collective
  size_t dumps_without_config = 0;     // HangAnalysis::dumps_without_config
  size_t statuses_unplaced = 0;        // HangAnalysis::statuses_unplaced
};

// Each rank's progress in each group: from the dumps (pg_status, the
// entries' op, sizes and stack), then from `events`, the hang lines of
// the latest stop. `world` gives the default group its members where no
// pg_config does.
HangGroups CollectHangGroups(const Run& run, const std::vector<HangEvent>& events,
                             std::optional<int32_t> world);

// The default group: id "0" or description "default_pg".
bool IsDefaultGroup(std::string_view id, std::string_view desc);

// Waiting in a collective: enqueued past what it completed, or timed out.
bool WaitsInCollective(const HangRankState& s);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_GROUPS_H_
