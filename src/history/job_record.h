// One job's verdict as the fleet history keeps it (docs/history.md): the
// job, and every part of the cluster it ran on — GPUs, hosts, NICs,
// switches, or bare ranks when the inputs place none — each marked culprit
// or seen healthy. "Seen healthy" is evidence too: a GPU that was the
// culprit in 4 of its last 5 jobs is chronic, one that was once among 40 is
// transient.
//
// Parts are keyed by the most stable identity the inputs give, so that the
// same card is recognised in the next job, where its rank number differs:
//   hardware  a GPU's UUID (or serial) from nvidia-smi -q, DCGM or the agent;
//   location  host and GPU index, host and NIC port, a switch name: stable
//             until someone swaps the card, so weaker evidence;
//   rank      a rank with no host: says nothing about hardware, never drained.
//
// RecordOfJob() is a pure function of a diagnosis; `diagnose --record`
// (src/cli) calls it and hands the record to HistoryStore (store.h).

#ifndef LAGGARD_HISTORY_JOB_RECORD_H_
#define LAGGARD_HISTORY_JOB_RECORD_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/common/rank_map.h"
#include "model/run.h"
#include "verdict/verdict.h"

namespace laggard::history {

// Serialized in the store as PartKindName(); append, never rename.
enum class PartKind : uint8_t { kGpu, kHost, kNic, kSwitch, kRank };
std::string_view PartKindName(PartKind k);  // "gpu", "host", "nic", "switch", "rank"
std::optional<PartKind> ParsePartKind(std::string_view name);

enum class Identity : uint8_t { kHardware, kLocation, kRank };
std::string_view IdentityName(Identity i);  // "hardware", "location", "rank"
std::optional<Identity> ParseIdentity(std::string_view name);

struct PartRecord {
  // "gpu:GPU-5f1e…" (UUID), "gpu:serial:1320…", "gpu@node-01/3" (host and
  // index), "host:node-01", "nic:node-01/mlx5_0 port 1", "switch:leaf-2",
  // "rank:3". Unique within a job.
  std::string key;
  PartKind kind = PartKind::kGpu;
  Identity identity = Identity::kLocation;
  std::optional<std::string> host;
  std::optional<int32_t> gpu;
  std::optional<int32_t> rank;
  std::optional<std::string> uuid;
  std::optional<std::string> serial;
  std::optional<std::string> nic;
  std::optional<std::string> switch_name;
  bool culprit = false;
  // Set on culprits: the verdict's cause class and cause, its confidence,
  // slowdown (0.21 = +21%), and the codes of the findings on this part.
  std::optional<std::string> cause_class;
  std::optional<std::string> cause;
  std::optional<double> confidence;
  std::optional<double> slowdown;
  std::vector<std::string> evidence_codes;

  bool operator==(const PartRecord&) const = default;
};

struct JobRecord {
  // --job-id, else $SLURM_JOB_ID, else the first input's absolute path.
  std::string job_id;
  // What the job's inputs hold, hashed (ranks, steps, times, hosts, GPUs):
  // the same job read from a copy has the same one. "" for none.
  std::string fingerprint;
  std::string source = "diagnose";
  int64_t recorded_at_s = 0;  // Unix seconds
  // The job's wall-clock span when its records are timed; else nullopt.
  std::optional<TimeNs> first_ns, last_ns;
  std::string status;  // VerdictStatusName()
  std::string summary;
  std::optional<double> throughput_lost;
  std::string impact_method;
  std::vector<PartRecord> parts;  // sorted by key

  // When the job ran: its first timed record, else when it was recorded.
  int64_t when_s() const { return first_ns ? *first_ns / 1'000'000'000 : recorded_at_s; }
};

// A verdict that decides: a straggler named, none found, or who stopped a
// hung job. Inconclusive, job-wide and communication-bound verdicts say
// nothing of one part's health.
bool DecidesParts(std::string_view status);

// One part in one job in compact form (HistoryStore::Scan), by its index
// among the parts and hosts its JobSink was given.
struct CompactPart {
  uint32_t part = 0;
  std::optional<uint32_t> host;
  std::optional<int32_t> gpu;
  std::optional<int32_t> rank;
  bool culprit = false;
  // Culprits only, as PartRecord's; valid while the job is added.
  std::optional<std::string_view> cause_class;
  std::optional<std::string_view> cause;
  std::optional<double> confidence;
};

// The place and verdict of `p` (a PartRecord, or a scan_codec.h ScanPart)
// as a CompactPart; its part and host indices are the caller's to set.
template <class Part>
CompactPart CompactOf(const Part& p) {
  CompactPart c;
  c.gpu = p.gpu;
  c.rank = p.rank;
  c.culprit = p.culprit;
  c.cause_class = p.cause_class;
  c.cause = p.cause;
  c.confidence = p.confidence;
  return c;
}

// Valid while the sink's AddJob() runs.
struct CompactJob {
  std::string_view job_id;
  bool decided = false;            // DecidesParts(status)
  int64_t when_s = 0;              // JobRecord::when_s()
  bool timed = false;              // JobRecord::first_ns is set
  std::vector<CompactPart> parts;  // in key order
};

// What reads jobs in compact form: every part (its identity: key, kind,
// identity, uuid, serial, nic, switch) and host before the first job that
// names it, then the jobs oldest first.
class JobSink {
 public:
  virtual ~JobSink() = default;
  // How many parts and hosts are coming (room made for them at once).
  virtual void Expect(size_t parts, size_t hosts) {
    (void)parts;
    (void)hosts;
  }
  // The index the jobs will name it by.
  virtual uint32_t AddPart(const PartRecord& identity) = 0;
  virtual uint32_t AddHost(const std::string& name) = 0;
  virtual void AddJob(const CompactJob& job) = 0;
};

// `jobs` (oldest first) into `sink`: each part (by key) and host the first
// time a job names it.
void FeedJobs(const std::vector<JobRecord>& jobs, JobSink& sink);

// The record of one diagnosis. `findings`: every detector's, for the
// evidence codes of the culprits' parts.
JobRecord RecordOfJob(const Run& run, const RankMap& ranks, const Verdict& verdict,
                      std::span<const Finding* const> findings, std::string job_id,
                      int64_t recorded_at_s);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_JOB_RECORD_H_
