// What the fleet history says (docs/history.md): which parts keep being the
// culprit across jobs, and whether that points at hardware or at the job.
//
// Per part (job_record.h's keys), over the jobs it ran in:
//   k of n      culprit in k of its last n jobs (ReportOptions::last_jobs),
//               every job it ran in counted in n: a culprit counts in k
//               when its confidence is at least min_confidence; a weaker
//               one, and a job whose verdict decided nothing (inconclusive,
//               job-wide, communication-bound), is "unsure": in n, not in k;
//   chronic     k >= chronic_min_jobs and k / n >= chronic_share: the article's
//               "always the same place: a link or a card is failing";
//   recurring   culprit in at least two jobs, not chronic;
//   transient   culprit once (in all its recorded jobs): occasional slowness
//               is normal on a shared cluster.
// A host is also judged as a whole (any of its parts a culprit): a node
// chronic while none of its parts is (different GPUs each time) points at
// the node (power, cooling, its host CPU).
// Periodic: at least 3 culprit jobs, and >= 75% of them within one 2-hour
// window of the day (UTC) that holds under half its healthy jobs; or the
// culprit jobs evenly spaced among its jobs (every d-th job, d >= 2).
// Not evidence against a part: a culprit for imbalance (the job's own work
// split) or external interference (a shared switch), and every part of a
// job whose verdict decided nothing: "unsure".
// Rank-fixed: one rank number the culprit in >= chronic_min_jobs jobs and
// in >= chronic_share of the decided jobs that had that rank, either on >= 3
// different parts none of which holds half of them, or mostly for
// imbalance: the code or the data (a shard, a pipeline stage), not a card.
//
// Pure functions: `laggard history` (src/cli) prints the result.

#ifndef LAGGARD_HISTORY_FLEET_REPORT_H_
#define LAGGARD_HISTORY_FLEET_REPORT_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "history/job_record.h"

namespace laggard::history {

struct ReportOptions {
  int last_jobs = 10;
  int chronic_min_jobs = 3;
  double chronic_share = 0.5;
  double min_confidence = 0.5;
};

// A GPU or rank known by place or rank number only, not by UUID or serial:
// a swapped card takes its place. (Hosts, NICs and switches are known by
// their names.)
bool WeakIdentity(const PartRecord& p);

enum class Standing : uint8_t { kChronic, kRecurring, kTransient };
std::string_view StandingName(Standing s);  // "chronic", "recurring", "transient"

struct Offender {
  PartRecord part;    // identity and latest place; culprit fields unset
  bool node = false;  // a host judged as a whole (any of its parts)
  Standing standing = Standing::kTransient;
  int culprit_last = 0;  // k: culprit in k of its last n jobs
  int jobs_last = 0;     // n
  int culprit_all = 0;   // over every recorded job it ran in
  int jobs_all = 0;
  int unsure_all = 0;  // of jobs_all: culprit below min_confidence, or an undecided job
  // Cause -> culprit jobs ("compute_slow/thermal": 4), over all its jobs.
  std::map<std::string, int> causes;
  std::vector<int32_t> ranks;             // the rank numbers it held when culprit, ascending
  std::vector<std::string> culprit_jobs;  // job ids, oldest first
  std::optional<std::string> periodic;    // "14:00-16:00 UTC in 4 of 5", "every 3rd job"
  int64_t last_culprit_s = 0;
  bool weak() const { return !node && WeakIdentity(part); }
  // "GPU GPU-5f1e… (node-07 GPU 3)", "node node-07", "NIC node-12 mlx5_0 port 1".
  std::string Name() const;
  // "compute_slow/thermal", the commonest cause.
  std::string MainCause() const;

  bool operator==(const Offender&) const = default;
};

struct RankFixed {
  int32_t rank = 0;
  int culprit_jobs = 0;
  int imbalance_jobs = 0;          // of them, named for doing more work (imbalance)
  std::vector<std::string> parts;  // the distinct parts it ran on when culprit

  bool operator==(const RankFixed&) const = default;
};

struct FleetReport {
  int jobs = 0;
  int healthy_jobs = 0;    // no straggler found
  int undecided_jobs = 0;  // no culprit, and the verdict decided nothing
  int64_t first_s = 0, last_s = 0;
  std::vector<Offender> offenders;  // chronic, recurring, transient; then k/n, then name
  std::vector<RankFixed> rank_fixed;
  int weak_jobs = 0;  // jobs with a GPU or rank culprit known by place or rank only

  bool operator==(const FleetReport&) const = default;
};

// The report, built job by job from jobs in compact form (a store's
// Scan(), or BuildFleetReport's records): per part only its counts, its
// culprit jobs and the hours of its healthy ones, so that 10^6 jobs fit.
class FleetTally : public JobSink {
 public:
  // What one job says of a part: culprit, healthy, or unsure (a weak
  // culprit, not the part's fault, or a verdict that decided nothing).
  enum class Seen : uint8_t { kHealthy, kCulprit, kUnsure };

  explicit FleetTally(const ReportOptions& options) : o_(options) {}

  void Expect(size_t parts, size_t hosts) override;
  uint32_t AddPart(const PartRecord& identity) override;
  uint32_t AddHost(const std::string& name) override;
  void AddJob(const CompactJob& job) override;
  FleetReport Finish();

 private:
  // A job in which the part (or node) was the culprit.
  struct Hit {
    uint32_t position = 0;  // among the part's jobs
    uint32_t job = 0;       // index into job_ids_
    int64_t when_s = 0;
    bool timed = false;
    std::optional<int32_t> rank;
    uint32_t cause = 0;  // index into causes_
  };
  // What every job touches first, in one cache line.
  struct alignas(64) Track {
    uint32_t jobs = 0;
    uint32_t unsure = 0;
    uint32_t healthy_timed = 0;
    bool weak = false;  // WeakIdentity() of its part
    // Its latest place: a card moves between hosts.
    std::optional<uint32_t> host;
    std::optional<int32_t> gpu, rank;
    std::vector<Hit> hits;
    std::array<uint32_t, 24> healthy_hours{};  // healthy timed jobs by hour of day (UTC)
  };
  struct RankTally {
    int decided_jobs = 0;                     // decided jobs that had this rank
    int jobs = 0;                             // of them, those it was the culprit in
    int imbalance = 0;                        // of those, for the job's own work split
    std::unordered_map<uint32_t, int> parts;  // culprit jobs by part
  };
  struct NodeState {
    uint32_t stamp = 0;  // the job (jobs_ + 1) it was last set in
    Seen seen = Seen::kHealthy;
    uint32_t cause = 0;
  };

  void Count(Track& t, Seen seen, const CompactJob& job, int hour, std::optional<int32_t> rank,
             uint32_t cause);
  uint32_t CauseIndex(const CompactPart& p);
  Offender Judge(const Track& t) const;
  std::optional<std::string> Periodic(const Track& t) const;

  ReportOptions o_;
  FleetReport r_;
  uint32_t jobs_ = 0;
  std::vector<PartRecord> parts_;  // identity only
  std::vector<Track> part_tracks_;
  std::vector<std::string> hosts_;
  std::vector<Track> node_tracks_;
  std::vector<NodeState> node_states_;
  std::vector<uint32_t> job_hosts_;  // the hosts of the job being added
  std::vector<std::string> causes_;  // "compute_slow/thermal"
  std::map<std::string, uint32_t, std::less<>> cause_index_;
  std::vector<std::string> job_ids_;      // of jobs with a hit
  std::optional<uint32_t> job_id_index_;  // of the job being added, once it has a hit
  RankTally& RankAt(int32_t rank);
  // Rank numbers 0 .. kDenseRanks - 1 by index, others by number.
  static constexpr int32_t kDenseRanks = 1 << 16;
  std::vector<RankTally> dense_ranks_;
  std::map<int32_t, RankTally> other_ranks_;
  std::vector<int32_t> job_ranks_;
};

// `jobs` oldest first, as HistoryStore::Load() returns them.
FleetReport BuildFleetReport(const std::vector<JobRecord>& jobs, const ReportOptions& options);

// One host in one job, as the report judges it: the worst of its parts.
struct HostState {
  enum Kind : uint8_t { kHealthy, kCulprit, kUnsure } kind = kHealthy;
  std::string cause;  // of its culprit part: "compute_slow/thermal"
  std::string what;   // that part: "GPU 3", "NIC mlx5_1 port 1", "host"
};
std::map<std::string, HostState> HostStatesOf(const JobRecord& job, const ReportOptions& options);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_FLEET_REPORT_H_
