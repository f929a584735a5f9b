// The fleet history store: every recorded verdict, kept in SQLite, or in
// PostgreSQL for a fleet (--history postgresql://…: every login node and
// agent writing to one place) (docs/history.md). `diagnose --record`
// writes to it; `laggard history` reads it; `history drain --apply`
// writes what it did. Both speak the same SQL (sql.h).
//
// Layout (schema version kSchemaVersion, PRAGMA user_version; migrations
// run in order when an older store is opened for writing):
//   jobs      one row per job id and content fingerprint (a second record
//             of the same id or the same content is kept once: the first
//             stays, Record() says so);
//   parts     one row per part key (job_record.h) and its identity;
//   hosts     host names;
//   seen      (job, part): the part ran in the job, with its place there
//             (host, GPU index: a card moves between hosts), its rank, and
//             whether it was a culprit: what "k of its last n jobs" counts;
//   culprits  (job, part): cause, confidence, slowdown, evidence codes;
//   job_scan  (when_s, job): the job's parts packed in one value
//             (scan_codec.h), written with the rows above: what Scan()
//             reads, one row per job;
//   actions   each drain command printed or run, with its outcome.
//
// PostgreSQL: the same tables, in the database's schema `laggard`, with a
// table `meta` (application, schema version) in place of the pragmas;
// schema 2 is the first it had.
//
// Safety: a file that is not SQLite, or an SQLite database that is not a
// laggard history (PRAGMA application_id), is refused with a message and
// never written to; so is a PostgreSQL schema `laggard` that holds other
// tables. Several processes may record at once: SQLite, WAL mode, a busy
// timeout, and one IMMEDIATE transaction per record; PostgreSQL, one
// transaction per record, hosts and parts written in key order, and a
// record that deadlocked with another tried again (up to 5 times).
//
// One HistoryStore per thread; each process opens its own.

#ifndef LAGGARD_HISTORY_STORE_H_
#define LAGGARD_HISTORY_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "history/job_record.h"

namespace laggard::history {

inline constexpr int kSchemaVersion = 2;
// PRAGMA application_id of a laggard history: "LGHS".
inline constexpr int32_t kApplicationId = 0x4C474853;

class Db;

// $XDG_DATA_HOME/laggard/history.db, else ~/.local/share/laggard/history.db;
// "" when neither variable is set.
std::string DefaultHistoryPath();

// Which jobs Load() returns.
struct LoadFilter {
  std::optional<int64_t> since_s;  // jobs that ran at or after (JobRecord::when_s)
  std::optional<size_t> last;      // Load(): only the last n of them
};

// One drain command printed or run (drain.h).
struct ActionRecord {
  int64_t at_s = 0;
  std::string host;
  std::string command;
  std::string reason;
  bool applied = false;  // run, not only printed
  std::optional<int> exit_code;
  std::string output;  // the command's stdout and stderr, cut to 4 KiB
};

class HistoryStore {
 public:
  // kReadWrite creates the store (and its folder) when absent;
  // kWriteExisting only opens one that exists (`history drain --apply`: a
  // mistyped path must not read as an empty fleet).
  enum class Mode { kReadOnly, kReadWrite, kWriteExisting };

  // Opens the store at `path` (a file, or a postgresql:// or postgres://
  // URI), migrating an older schema when writing
  // (read-only, an older schema is read as it is).
  // Fails, leaving the file as it was, on a file that is not a laggard
  // history (another program's, even without tables) or of a newer schema.
  static StatusOr<HistoryStore> Open(const std::string& path, Mode mode);

  // Records one job. true: recorded; false: a job of this id or this
  // fingerprint was already recorded (the first record stays).
  StatusOr<bool> Record(const JobRecord& job);

  // The jobs the filter selects, oldest first (when_s, then record order),
  // with their parts.
  StatusOr<std::vector<JobRecord>> Load(const LoadFilter& filter) const;

  // The jobs Load() would return (`filter.last` aside), in compact form,
  // into `sink`: every part and host first, then the jobs in Load()'s
  // order, their parts in key order. Without evidence codes, slowdown or
  // the job's summary: 10^6 jobs in well under a second (a store of schema
  // 1, opened read-only before anything migrated it, is loaded instead).
  Status Scan(const LoadFilter& filter, JobSink& sink) const;

  Status RecordAction(const ActionRecord& action);
  StatusOr<std::vector<ActionRecord>> Actions() const;

  // The path as messages show it: a PostgreSQL URI without its password.
  std::string display() const;

  HistoryStore(HistoryStore&&) noexcept;
  HistoryStore& operator=(HistoryStore&&) noexcept;
  ~HistoryStore();

 private:
  HistoryStore(std::string path, std::unique_ptr<Db> db, int64_t schema);

  std::string path_;
  std::unique_ptr<Db> db_;
  int64_t schema_ = kSchemaVersion;  // an older one only when opened read-only
};

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_STORE_H_
