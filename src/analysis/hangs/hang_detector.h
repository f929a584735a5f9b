// Hang detector: when a job stopped (a watchdog fired, a collective timed
// out), which rank did not arrive, at which collective of which process
// group, and what the evidence says about why. Reads Run::hang (Flight
// Recorder dumps, the hang lines of rank logs and NCCL RAS status reports,
// model/hang.h); run by
// AnalyzeRun(); the verdict makes its first decided finding the culprit.
//
// Groups (analysis/hangs/hang_groups.h). A group's id ("PG 11", an FR pg_status
// key) is a counter each process keeps on its own; a group is what the
// dumps' pg_config says of it: its description and member ranks. A status
// whose id cannot be tied to pg_config is left out (HangAnalysis::
// statuses_unplaced). Dumps without pg_config (older FR) fall back to the
// id, and the decided finding says the groups could not be matched.
//
// Metric (per process group, per rank that reported):
//   completed   last completed collective sequence number: FR pg_status
//               last_completed_collective; a watchdog exception's "last
//               completed NCCL work"; a watchdog timeout's SeqNum - 1 (the
//               work that timed out had not completed, the ones before had:
//               collectives of one group complete in order)
//   enqueued    last enqueued: FR last_enqueued_collective; "last enqueued
//               NCCL work"; a timeout's SeqNum
//   started     FR last_started_collective: its GPU began that one
//   waiting in  the first collective it did not complete: completed + 1,
//               with its op (FR entry of that seq: profiling_name, sizes,
//               stack) when known
// The group's stuck collective N = the smallest "waiting in" over its
// reporting ranks. Members: the group's ranks (FR / Kineto pg_config), the
// world for the default group (world: the largest of the ranks seen in any
// input, the groups' sizes, a RAS report's largest communicator); unknown
// otherwise.
//
// RAS (NCCL >= 2.24, `ncclras`; analysis/hangs/hang_ras.h) names ranks within
// an NCCL communicator: global ranks in a communicator as large as the
// world, "rank N of communicator <hash>" otherwise. It names a rank only
// as an outlier (by default at most 10 ranks and 25% of the communicator
// share what it says); the rest are counts, and a rank it does not name is
// never blamed.
//
// Decision, first that holds (each a finding with evidence and next step):
//   hang.desync          ranks at N run different ops or sizes under that
//                        number (FR entries), or TORCH_DISTRIBUTED_DEBUG's
//                        mismatch line: the minority is named; or ranks
//                        waiting in different collectives of one group
//                        (each completed < the others' N): the ones behind
//                        are named with how far, never the ones ahead
//   hang.host_stopped    ranks whose own dump (pg_status) says they
//                        enqueued only up to N-1, all of it completed,
//                        while others of the group wait in N: their host
//                        stopped issuing (Python, the GIL, a data loader,
//                        a deadlock, a CPU hang). Named across every group
//                        that shows them behind; their last entry's stack
//                        (FR frames) is evidence
//   hang.not_joined      the same from lines (a watchdog's "last enqueued
//                        / completed NCCL work"), where no dump states the
//                        rank's enqueued; or PyTorch's desync report names
//                        ranks that did not join.
//                        For both: a rank that waits in a collective of
//                        another group is never named for being behind
//                        here. It is held there (its host blocks on that
//                        collective, or its GPU queues behind it); the
//                        group it waits in says by whom
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
//                        none completed it: the GPU or the network side
//                        (NCCL, a link, a GPU error); its ranks are the
//                        group's, the entity the job. Where several groups
//                        show one, the others queue behind it: the one
//                        every member's GPU started (last_started >= N)
//                        first, then the one enqueued first (FR
//                        time_created_ns); a member that enqueued N but
//                        never started it is evidence (its stream waits on
//                        earlier work). Beside a finding decided above,
//                        only one every member's GPU started is kept: the
//                        others queue behind what that finding names.
//                        Assumption: dumps write last_started (torch does
//                        when start events are recorded); without it the
//                        earliest enqueued wins
//   hang.inconclusive    a hang with none of the above decided: members
//                        that did not report are listed (never blamed), and
//                        what to collect. A log cut by a pager says so.
// A rank that is absent from the evidence is never the culprit: absence is
// what a truncated log or a missing dump looks like. A RAS report whose
// only problem is a MISMATCH in one query, or that shows none, is no hang
// evidence on its own.
//
// Thread-safety: pure function.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_DETECTOR_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "model/run.h"

namespace laggard {

struct HangDetectorOptions {
  size_t max_ranks_listed = 16;  // ranks spelled out in a message
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double checked_lines_bonus = 0.1;      // hang.desync / not_joined by torch's check
    double barrier_implied_penalty = 0.1;  // hang.not_joined implied by a send timeout
    double inconclusive = 0.3;             // hang.inconclusive
    double ras_dead = 0.8;                 // hang.process_missing, RAS: dead
    double ras_unreachable = 0.6;          // hang.process_missing, RAS: no answer
    double ras_counts_only = 0.5;          // hang.process_missing, RAS: counts only
    double ras_behind = 0.7;               // hang.not_joined, RAS: same counts twice
    double ras_behind_once = 0.4;          // hang.not_joined, RAS: one query
  };
  Confidences confidence;
};

// One rank's progress in one group.
struct HangRankState {
  int32_t rank = 0;
  std::string pg_id;  // the id its process gave the group ("?": its lines name none)
  std::optional<int64_t> enqueued;
  std::optional<int64_t> started;  // FR last_started_collective: its GPU began that one
  std::optional<int64_t> completed;
  std::optional<int64_t> timed_out;          // the work its watchdog timed out / failed on
  std::string op_waiting;                    // the op of the collective it waits in, when known
  std::string sizes_waiting;                 // its input sizes, "[[1024, 4]]", when known
  std::vector<StackFrame> frames;            // of its last entry, when an FR dump gave them
  std::optional<TimeNs> waiting_created_ns;  // when it enqueued the one it waits in (FR)
  bool from_dump = false;
  // `completed` inferred from a timeout's SeqNum, not stated: never enough
  // to call a rank ahead of its group.
  bool completed_inferred = false;
  std::optional<SourceRef> src;
};

struct HangGroupState {
  // "0", "1", ...; "?" for lines that name no group. A group matched by
  // pg_config: the ids its ranks' processes gave it, "3" when they agree,
  // "3 / 2" when not (each rank's own is HangRankState::pg_id).
  std::string pg_id;
  std::string pg_desc;
  bool matched = false;              // identified by pg_config's description and ranks, not by id
  std::vector<int32_t> members;      // known members, ascending; empty: unknown
  std::vector<HangRankState> ranks;  // reporting ranks, ascending
  std::optional<int64_t> stuck_seq;  // N
};

struct HangAnalysis {
  bool hang = false;  // the inputs hold hang evidence (dumps or hang lines)
  std::optional<int32_t> world;
  std::vector<HangGroupState> groups;
  std::vector<Finding> findings;  // the decided finding first, then the others
  // Stops the hang lines hold (analysis/hangs/hang_episodes.h): only the latest
  // is analysed; the lines of the others are counted, not used.
  size_t episodes = 1;
  size_t events_left_out = 0;
  // FR dumps without pg_config: their groups were matched across ranks by
  // id, which each process counts on its own (the decided finding says so).
  size_t dumps_without_config = 0;
  // FR pg_status records whose id no entry of their dump ties to a
  // pg_config group (all its collectives left the ring buffer): not
  // compared with other ranks.
  size_t statuses_unplaced = 0;
  // Jobs the Flight Recorder dumps belong to (analysis/hangs/hang_jobs.h): only
  // the first was analysed, and the decided finding says so.
  size_t dump_jobs = 1;
};

HangAnalysis AnalyzeHang(const Run& run, const HangDetectorOptions& options = {});

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_DETECTOR_H_
