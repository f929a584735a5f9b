// The fleet history at scale: records N verdicts (default 10^6) of a fleet
// of 4,096 nodes x 8 GPUs into a fresh SQLite store, each job through
// HistoryStore::Record() as `diagnose --record` does, then times the
// queries `laggard history` runs: the last day, the last 30 days, and all
// of them (Scan into a FleetTally; --host and --gpu only pick offenders
// from the same report), and prints the store's size. --compare also times
// Load + BuildFleetReport and checks that both give the same report (exit
// 1 when not). Results: docs/history.md.
//
//   history_bench [--jobs N] [--nodes-per-job K] [--out PATH] [--compare]
//                 [--reuse: time the queries of the store at PATH again]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include <fmt/format.h>

#include "history/fleet_report.h"
#include "history/store.h"

namespace {

using laggard::history::BuildFleetReport;
using laggard::history::FleetReport;
using laggard::history::FleetTally;
using laggard::history::HistoryStore;
using laggard::history::Identity;
using laggard::history::JobRecord;
using laggard::history::LoadFilter;
using laggard::history::PartKind;
using laggard::history::PartRecord;

constexpr int kNodes = 4096;
constexpr int kGpus = 8;
constexpr int64_t kStart = 1764000000;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

JobRecord Job(int64_t i, int64_t n_jobs, int nodes_per_job, std::mt19937_64& rng) {
  JobRecord j;
  j.job_id = fmt::format("slurm:{}", 1'000'000 + i);
  // N jobs over a year.
  j.recorded_at_s = kStart + i * (365LL * 86400) / n_jobs;
  int first = static_cast<int>(rng() % kNodes);
  bool straggler = rng() % 100 < 20;
  int bad_node = static_cast<int>(rng() % nodes_per_job), bad_gpu = static_cast<int>(rng() % kGpus);
  for (int k = 0; k < nodes_per_job; ++k) {
    std::string host = fmt::format("node-{:04}", (first + k) % kNodes);
    PartRecord h;
    h.key = "host:" + host;
    h.kind = PartKind::kHost;
    h.identity = Identity::kHardware;
    h.host = host;
    j.parts.push_back(h);
    for (int g = 0; g < kGpus; ++g) {
      PartRecord p;
      p.uuid = fmt::format("GPU-{:08x}-{}", (first + k) % kNodes, g);
      p.key = "gpu:" + *p.uuid;
      p.kind = PartKind::kGpu;
      p.identity = Identity::kHardware;
      p.host = host;
      p.gpu = g;
      p.rank = k * kGpus + g;
      if (straggler && k == bad_node && g == bad_gpu) {
        p.culprit = true;
        p.cause_class = "compute_slow";
        p.cause = "thermal";
        p.confidence = 0.8;
        p.slowdown = 0.2;
        p.evidence_codes = {"gpu.thermal", "step.straggler"};
      }
      j.parts.push_back(p);
    }
  }
  j.status = straggler ? "straggler" : "no_straggler";
  j.summary = straggler ? "verdict: rank 3 is the straggler — compute-slow: thermal"
                        : "verdict: no straggler found";
  return j;
}

// What `laggard history` runs (Scan into a FleetTally); with `compare`,
// also Load + BuildFleetReport, and whether the two reports are the same.
bool Query(const HistoryStore& store, const char* what, const LoadFilter& f, bool compare) {
  auto t0 = std::chrono::steady_clock::now();
  FleetTally tally({});
  laggard::Status s = store.Scan(f, tally);
  FleetReport report = tally.Finish();
  double scan_s = Seconds(t0);
  if (!s.ok()) {
    fmt::print("{}: {}\n", what, s.message());
    return false;
  }
  fmt::print("{:<12} {:>9} jobs  scan + report {:7.3f} s  ({} offenders)\n", what, report.jobs,
             scan_s, report.offenders.size());
  if (!compare) return true;
  auto t1 = std::chrono::steady_clock::now();
  auto jobs = store.Load(f);
  double load_s = Seconds(t1);
  if (!jobs.ok()) {
    fmt::print("{}: {}\n", what, jobs.status().message());
    return false;
  }
  auto t2 = std::chrono::steady_clock::now();
  FleetReport loaded = BuildFleetReport(*jobs, {});
  double report_s = Seconds(t2);
  bool same = report == loaded;
  fmt::print("{:<12} {:>9} jobs  load {:7.3f} s  report {:7.3f} s  total {:7.3f} s: {}\n", what,
             jobs->size(), load_s, report_s, load_s + report_s,
             same ? "the same report" : "A DIFFERENT REPORT");
  return same;
}

// The last day, the last 30 days and all of the simulated year.
bool Queries(const HistoryStore& store, bool compare) {
  int64_t end = kStart + 365LL * 86400;
  LoadFilter day;
  day.since_s = end - 86400;
  bool same = Query(store, "--since 1d", day, compare);
  LoadFilter month;
  month.since_s = end - 30 * 86400;
  same = Query(store, "--since 30d", month, compare) && same;
  return Query(store, "all jobs", {}, compare) && same;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n_jobs = 1'000'000;
  int nodes_per_job = 1;
  std::string out = "/tmp/laggard-history-bench.db";
  bool compare = false, reuse = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--compare") compare = true;
    if (std::string(argv[i]) == "--reuse") reuse = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--compare" || a == "--reuse") {
      --i;
      continue;
    }
    if (a == "--jobs") n_jobs = std::atoll(argv[i + 1]);
    if (a == "--nodes-per-job") nodes_per_job = std::atoi(argv[i + 1]);
    if (a == "--out") out = argv[i + 1];
  }
  if (reuse) {
    // The store of an earlier run, its queries timed again.
    auto store = HistoryStore::Open(out, HistoryStore::Mode::kReadOnly);
    if (!store.ok()) {
      fmt::print(stderr, "{}\n", store.status().message());
      return 1;
    }
    return Queries(*store, compare) ? 0 : 1;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(out + suffix);
  auto store = HistoryStore::Open(out, HistoryStore::Mode::kReadWrite);
  if (!store.ok()) {
    fmt::print(stderr, "{}\n", store.status().message());
    return 1;
  }
  std::mt19937_64 rng(42);
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n_jobs; ++i) {
    auto added = store->Record(Job(i, n_jobs, nodes_per_job, rng));
    if (!added.ok()) {
      fmt::print(stderr, "{}\n", added.status().message());
      return 1;
    }
    if ((i + 1) % 100000 == 0) {
      fmt::print(stderr, "  {} jobs recorded, {:.0f} s\n", i + 1, Seconds(t0));
    }
  }
  double record_s = Seconds(t0);
  fmt::print(
      "recorded {} jobs of {} node(s) x {} GPUs ({} parts seen each) in {:.1f} s: {:.0f} us/job\n",
      n_jobs, nodes_per_job, kGpus, nodes_per_job * (kGpus + 1), record_s, record_s * 1e6 / n_jobs);
  {
    // A checkpoint folds the WAL into the file, so the size is the store's.
    auto reopened = HistoryStore::Open(out, HistoryStore::Mode::kReadWrite);
  }
  store = HistoryStore::Open(out, HistoryStore::Mode::kReadOnly);
  uint64_t bytes = std::filesystem::file_size(out);
  std::error_code ec;
  uint64_t wal = std::filesystem::file_size(out + "-wal", ec);
  fmt::print("store: {:.1f} MB (+ {:.1f} MB WAL), {:.0f} bytes per job\n", bytes / 1e6,
             ec ? 0.0 : wal / 1e6, static_cast<double>(bytes) / n_jobs);
  return Queries(*store, compare) ? 0 : 1;
}
