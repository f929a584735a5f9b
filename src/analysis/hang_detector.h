// Hang detector: when a job stopped (a watchdog fired, a collective timed
// out), which rank did not arrive, at which collective of which process
// group, and what the evidence says about why. Reads Run::hang (Flight
// Recorder dumps, the hang lines of rank logs and NCCL RAS status reports,
// model/hang.h); run by
// AnalyzeRun(); the verdict makes its first decided finding the culprit.
//
// Metric (per process group, per rank that reported):
//   completed   last completed collective sequence number: FR pg_status
//               last_completed_collective; a watchdog exception's "last
//               completed NCCL work"; a watchdog timeout's SeqNum - 1 (the
//               work that timed out had not completed, the ones before had:
//               collectives of one group complete in order)
//   enqueued    last enqueued: FR last_enqueued_collective; "last enqueued
//               NCCL work"; a timeout's SeqNum
//   waiting in  the first collective it did not complete: completed + 1,
//               with its op (FR entry of that seq: profiling_name, sizes,
//               stack) when known
// The group's stuck collective N = the smallest "waiting in" over its
// reporting ranks. Members: the group's ranks (FR / Kineto pg_config), the
// world for the default group (world: the largest of the ranks seen in any
// input, the groups' sizes, a RAS report's largest communicator); unknown
// otherwise.
//
// RAS (NCCL >= 2.24, `ncclras`) names ranks within an NCCL communicator:
// global ranks in a communicator as large as the world, "rank N of
// communicator <hash>" otherwise. It names a rank only as an outlier (by
// default at most 10 ranks and 25% of the communicator share what it says);
// the rest are counts, and a rank it does not name is never blamed.
//
// Decision, first that holds (each a finding with evidence and next step):
//   hang.desync          ranks at N run different ops or sizes under that
//                        number (FR entries), or TORCH_DISTRIBUTED_DEBUG's
//                        mismatch line: the minority is named; or ranks
//                        waiting in different collectives of one group
//                        (each completed < the others' N): the ones behind
//                        are named with how far, never the ones ahead
//   hang.not_joined      some reporting ranks never enqueued N (enqueued <
//                        N) while others wait in it; or PyTorch's desync
//                        report names ranks that did not join. Their last
//                        entry's stack (FR frames) is evidence
//   hang.process_missing a rank's process exited or was killed (torchrun's
//                        exitcode / signal lines), no rank left behind; or
//                        RAS could not reach a process (INCOMPLETE: no
//                        answer to its query, confidence 0.6; DEAD: none
//                        for 60 s, 0.8): its pid, node, GPUs and the ranks
//                        RAS lists as missing with it
//   hang.not_joined (RAS) a communicator's ranks launched different numbers
//                        of operations ("Rank 5 has launched up to
//                        operation 1200" while 7 ranks reached 1201): the
//                        ranks below the highest count never called the
//                        next collective. RAS counts launches, which run
//                        ahead of completion, so one query showing it is
//                        taken only beside other hang evidence (0.4); the
//                        same counts in two queries are a hang (0.7); a
//                        later complete query without the mismatch
//                        resolves it. A rank RAS names above the others'
//                        count is ahead, never blamed
//   hang.transport_error NET/IB completion errors, gloo connection losses,
//                        ncclRemoteError: the host and peer
//   hang.stuck_collective every member reported, every one enqueued N and
//                        none completed it: the network / NCCL
//   hang.inconclusive    a hang with none of the above decided: members
//                        that did not report are listed (never blamed), and
//                        what to collect. A log cut by a pager says so.
// A rank that is absent from the evidence is never the culprit: absence is
// what a truncated log or a missing dump looks like. A RAS report whose
// only problem is a MISMATCH in one query, or that shows none, is no hang
// evidence on its own.
//
// Thread-safety: pure function.

#ifndef LAGGARD_ANALYSIS_HANG_DETECTOR_H_
#define LAGGARD_ANALYSIS_HANG_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "model/run.h"

namespace laggard {

struct HangDetectorOptions {
  size_t max_ranks_listed = 16;  // ranks spelled out in a message
};

// One rank's progress in one group.
struct HangRankState {
  int32_t rank = 0;
  std::optional<int64_t> enqueued;
  std::optional<int64_t> completed;
  std::optional<int64_t> timed_out;  // the work its watchdog timed out / failed on
  std::string op_waiting;            // the op of the collective it waits in, when known
  std::string sizes_waiting;         // its input sizes, "[[1024, 4]]", when known
  std::vector<StackFrame> frames;    // of its last entry, when an FR dump gave them
  bool from_dump = false;
  // `completed` inferred from a timeout's SeqNum, not stated: never enough
  // to call a rank ahead of its group.
  bool completed_inferred = false;
  std::optional<SourceRef> src;
};

struct HangGroupState {
  std::string pg_id;  // "0", "1", ...; "?" for lines that name no group
  std::string pg_desc;
  std::vector<int32_t> members;      // known members, ascending; empty: unknown
  std::vector<HangRankState> ranks;  // reporting ranks, ascending
  std::optional<int64_t> stuck_seq;  // N
};

struct HangAnalysis {
  bool hang = false;  // the inputs hold hang evidence (dumps or hang lines)
  std::optional<int32_t> world;
  std::vector<HangGroupState> groups;
  std::vector<Finding> findings;  // the decided finding first, then the others
  // Stops the hang lines hold (analysis/hang_episodes.h): only the latest
  // is analysed; the lines of the others are counted, not used.
  size_t episodes = 1;
  size_t events_left_out = 0;
};

HangAnalysis AnalyzeHang(const Run& run, const HangDetectorOptions& options = {});

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANG_DETECTOR_H_
