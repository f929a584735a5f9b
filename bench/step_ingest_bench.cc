// step_ingest_bench: how fast laggard reads the article's step lines
// (`rank R, step S, time Ts`) and diagnoses them, at the scale of the
// foundation issue: 4,096 ranks x 2,500 steps, ~10M lines.
//
// The data is generated with the simulator (two injected stragglers, so the
// detector has work) into a temporary directory that is deleted at the end
// (--dir keeps it where you say, --keep keeps it). Each measurement runs in
// its own forked child, whose peak-RSS mark is reset at the start, so every
// peak is that measurement's own:
//   (a) baseline   read the file and split it into lines (LineReader): the
//                  ceiling any line parser can reach
//   (b) ingest     Ingest() of the one file, threads=1: single-core parse
//   (c) ingest     the same lines split into 8 files (one per node group),
//                  threads=1 and threads=2: scaling across files
//   (d) diagnose   AnalyzeStepTimes + DecideVerdict on the Run of (b), timed
//                  alone
//   (e) total      (b) + (d) in one process, as `laggard diagnose` does; and
//                  the same from the 8 files on 2 threads
//   (f) peak RSS   of every child (getrusage ru_maxrss)
// and the gzip variant of (a) and (b). MB are 10^6 bytes (of decompressed
// text in the rates). The files sit in the page cache after generation, so
// the numbers are parse speed, not disk speed. Every row runs once per
// round, --repeat rounds (5, at least 3); the table prints min / median /
// max wall and CPU s, rates from the median round, the highest peak RSS, and
// "steal": the share of the VM's CPU time the hypervisor gave to other
// guests while the row ran (/proc/stat).
//
// At the scale of the largest jobs: --ranks 100000 --steps 1000 (10^8
// records, ~3.6 GB of text).
//
// Usage: step_ingest_bench [--ranks N] [--steps N] [--repeat N]
//                          [--dir PATH] [--keep] [--gzip-level 1-9]

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench_child.h"
#include "bench_lines.h"

#include "analysis/steps/step_time_detector.h"
#include "ingest/common/input_file.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "simulator/writers/step_logs.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::CpuModel;
using bench::CpuSeconds;
using bench::g_rss_reset_works;
using bench::GzipFile;
using bench::LoadAverage;
using bench::MallocHugePages;
using bench::RunInChild;
using bench::Seconds;

constexpr int kNodeGroups = 8;

struct BenchOptions {
  int ranks = 4096;
  int steps = 2500;
  int repeat = 5;
  int gzip_level = 6;
  std::string dir;  // "" -> a fresh temporary directory
  bool keep = false;
};

// What a child sends back through its pipe (plain data, fixed size).
struct Sample {
  bool ok = false;
  double wall_s = 0;
  double cpu_s = 0;
  uint64_t bytes = 0;   // decompressed bytes read
  uint64_t lines = 0;   // lines split (baseline) or step records taken (ingest)
  double ingest_s = 0;  // total: the parts
  double analyze_s = 0;
  double verdict_s = 0;
  long peak_rss_kb = 0;
  char note[256] = {};
};

// What a row of IngestAndMaybeDiagnose times.
enum class Timed { kIngest, kDiagnoseOnly, kTotal };

// (b), (c), (d), (e): Ingest(), then optionally the diagnosis; the sample's
// times are the ingest's, the diagnosis's alone (d), or both (e).
Sample IngestAndMaybeDiagnose(const std::string& path, int threads, Timed timed) {
  const bool diagnose = timed != Timed::kIngest;
  Sample s;
  // The reader set of `laggard diagnose` without --step-pattern.
  auto readers = MakeDefaultTextReaders(std::nullopt);
  if (!readers.ok()) {
    std::snprintf(s.note, sizeof s.note, "%s", readers.status().message().c_str());
    return s;
  }
  IngestOptions options;
  options.threads = threads;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  auto run = Ingest({path}, readers->readers, options);
  auto t1 = Clock::now();
  const double cpu_ingested = CpuSeconds();
  if (!run.ok()) {
    std::snprintf(s.note, sizeof s.note, "%s", run.status().message().c_str());
    return s;
  }
  for (const InputFileInfo& f : run->files) s.bytes += f.bytes;
  s.lines = run->total_steps();
  s.ingest_s = Seconds(t0, t1);
  s.wall_s = s.ingest_s;
  if (diagnose) {
    StepAnalysis steps = AnalyzeStepTimes(*run, StepDetectorOptions());
    auto t2 = Clock::now();
    Verdict verdict = DecideVerdict(*run, steps);
    auto t3 = Clock::now();
    s.analyze_s = Seconds(t1, t2);
    s.verdict_s = Seconds(t2, t3);
    s.wall_s = timed == Timed::kDiagnoseOnly ? Seconds(t1, t3) : Seconds(t0, t3);
    std::snprintf(s.note, sizeof s.note, "%s", verdict.summary.c_str());
  }
  s.cpu_s = CpuSeconds() - (timed == Timed::kDiagnoseOnly ? cpu_ingested : cpu0);
  s.ok = true;
  return s;
}

// Splits `path` into kNodeGroups files by rank (ranks / kNodeGroups each),
// keeping every line as it is.
bool SplitByNodeGroup(const std::string& path, int ranks, const std::string& dir) {
  fs::create_directories(dir);
  std::vector<std::ofstream> outs;
  for (int g = 0; g < kNodeGroups; ++g) {
    outs.emplace_back(fmt::format("{}/nodes-{}.log", dir, g), std::ios::binary);
  }
  auto source = OpenByteSource(path);
  if (!source.ok()) return false;
  LineReader lines(**source);
  std::string_view line;
  int per_group = std::max(1, (ranks + kNodeGroups - 1) / kNodeGroups);
  while (lines.Next(line)) {
    // "rank R, step S, time Ts"
    int rank = std::atoi(line.data() + 5);
    int g = std::min(kNodeGroups - 1, rank / per_group);
    outs[static_cast<size_t>(g)].write(line.data(), static_cast<std::streamsize>(line.size()));
    outs[static_cast<size_t>(g)].put('\n');
  }
  for (auto& o : outs) {
    o.close();
    if (!o) return false;
  }
  return true;
}

using Row = bench::RoundsRow<Sample>;

bool ParseArgs(int argc, char** argv, BenchOptions& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--keep") {
      o.keep = true;
    } else if ((a == "--ranks" || a == "--steps" || a == "--repeat" || a == "--gzip-level") &&
               (v = value()) != nullptr) {
      int n = std::atoi(v);
      if (n <= 0 || (a == "--repeat" && n < 3)) return false;
      (a == "--ranks"    ? o.ranks
       : a == "--steps"  ? o.steps
       : a == "--repeat" ? o.repeat
                         : o.gzip_level) = n;
    } else if (a == "--dir" && (v = value()) != nullptr) {
      o.dir = v;
      o.keep = true;
    } else {
      return false;
    }
  }
  return o.gzip_level <= 9;
}

int Main(int argc, char** argv) {
  BenchOptions o;
  if (!ParseArgs(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: step_ingest_bench [--ranks N] [--steps N] [--repeat N] [--dir PATH] "
                 "[--keep] [--gzip-level 1-9]\n");
    return 2;
  }
  if (o.dir.empty()) {
    o.dir = bench::MakeTempDir("laggard-bench");
    if (o.dir.empty()) {
      std::fprintf(stderr, "step_ingest_bench: mkdtemp: %s\n", std::strerror(errno));
      return 1;
    }
  }
  fs::create_directories(o.dir);
  const std::string log = o.dir + "/steps.log";
  const std::string gz = o.dir + "/steps.log.gz";
  const std::string split_dir = o.dir + "/nodes";

  sim::StepLogScenario sc;
  sc.ranks = o.ranks;
  sc.gpus_per_node = 8;
  sc.steps = o.steps;
  sc.base_step_s = 0.8;
  sc.jitter = 0.02;
  sc.seed = 42;
  sc.rank_slowdowns.push_back(sim::RankSlowdown{o.ranks * 3 / 10, 0.20, o.steps / 5});
  sc.rank_slowdowns.push_back(sim::RankSlowdown{o.ranks * 7 / 10, 0.10, 0});

  fmt::print(
      "step_ingest_bench: {} ranks x {} steps; stragglers: rank {} +20% from step {}, "
      "rank {} +10% throughout\n",
      sc.ranks, sc.steps, sc.rank_slowdowns[0].rank, sc.rank_slowdowns[0].onset_step,
      sc.rank_slowdowns[1].rank);
  fmt::print("machine: {} CPUs, {}; load average {} at start; {}\n",
             std::thread::hardware_concurrency(), CpuModel(), LoadAverage(), MallocHugePages());
  auto g0 = Clock::now();
  {
    std::ofstream out(log, std::ios::binary);
    sim::WriteArticleLines(sc, out);
    out.close();
    if (!out) {
      std::fprintf(stderr, "step_ingest_bench: cannot write %s\n", log.c_str());
      return 1;
    }
  }
  if (!SplitByNodeGroup(log, sc.ranks, split_dir) || !GzipFile(log, gz, o.gzip_level)) {
    std::fprintf(stderr, "step_ingest_bench: cannot write the split or gzip files in %s\n",
                 o.dir.c_str());
    return 1;
  }
  malloc_trim(0);
  fmt::print(
      "data in {} ({:.1f} MB text, {:.1f} MB gzip -{}), generated in {:.1f} s; "
      "{} rounds\n\n",
      o.dir, static_cast<double>(fs::file_size(log)) / 1e6,
      static_cast<double>(fs::file_size(gz)) / 1e6, o.gzip_level, Seconds(g0, Clock::now()),
      o.repeat);

  using M = bench::Measurement<Sample>;
  std::vector<M> ms = {
      {"(a) baseline: read + split lines", [&] { return bench::SplitLines<Sample>(log); }},
      {"(b) Ingest, 1 file, threads=1",
       [&] { return IngestAndMaybeDiagnose(log, 1, Timed::kIngest); }},
      {"(c) Ingest, 8 files, threads=1",
       [&] { return IngestAndMaybeDiagnose(split_dir, 1, Timed::kIngest); }},
      {"(c) Ingest, 8 files, threads=2",
       [&] { return IngestAndMaybeDiagnose(split_dir, 2, Timed::kIngest); }},
      {"(d) AnalyzeStepTimes + DecideVerdict",
       [&] { return IngestAndMaybeDiagnose(log, 1, Timed::kDiagnoseOnly); }},
      {"(e) total: Ingest(1 file, threads=1) + (d)",
       [&] { return IngestAndMaybeDiagnose(log, 1, Timed::kTotal); }},
      {"(e) total: Ingest(8 files, threads=2) + (d)",
       [&] { return IngestAndMaybeDiagnose(split_dir, 2, Timed::kTotal); }},
      {"gz (a) baseline: inflate + split lines", [&] { return bench::SplitLines<Sample>(gz); }},
      {"gz (b) Ingest, 1 .gz file, threads=1",
       [&] { return IngestAndMaybeDiagnose(gz, 1, Timed::kIngest); }},
  };
  const std::vector<bool> throughput = {true, true, true, true, false, true, true, true, true};
  std::vector<Row> rows = bench::RunRounds(ms, o.repeat);
  fmt::print("\n");
  bench::PrintRoundsTable(rows, throughput, throughput);
  fmt::print("load average {} at the end\n", LoadAverage());

  const Sample& a = rows[0].s;
  const Sample& b = rows[1].s;
  const Sample& total = rows[5].s;
  const Sample& total2 = rows[6].s;
  auto median_wall = [&](size_t i) { return bench::SpreadOf(rows[i].wall_s).median; };
  fmt::print(
      "\n(d) split (best round of (e)): AnalyzeStepTimes {:.3f} s, DecideVerdict {:.3f} s "
      "(its peak RSS is (e)'s: it needs the Run in memory)\n",
      total.analyze_s, total.verdict_s);
  fmt::print("(e) {}\n", total.note);
  if (a.ok && b.ok) {
    fmt::print("full ingest / bare baseline: {:.2f}x the time ({:.0f}% of the baseline's MB/s)\n",
               median_wall(1) / median_wall(0), 100.0 * median_wall(0) / median_wall(1));
  }
  if (rows[2].s.ok && rows[3].s.ok) {
    fmt::print("threads=2 / threads=1 on 8 files: {:.2f}x speed-up (medians)\n",
               median_wall(2) / median_wall(3));
  }
  if (b.ok) {
    fmt::print("peak RSS of (b): {:.1f} B per step record\n",
               static_cast<double>(b.peak_rss_kb) * 1024 / static_cast<double>(b.lines));
  }
  if (b.ok && a.ok && b.lines != a.lines) {
    fmt::print("WARNING: Ingest took {} records from {} lines\n", b.lines, a.lines);
  }
  if (!g_rss_reset_works) {
    fmt::print("WARNING: /proc/self/clear_refs not writable: peak RSS includes the parent's\n");
  }

  double mbps = b.ok ? static_cast<double>(b.bytes) / median_wall(1) / 1e6 : 0;
  double peak_mb = static_cast<double>(total.peak_rss_kb) * 1024 / 1e6;
  const double total_wall = total.ok ? median_wall(5) : 0;
  auto verdict = [](bool met) { return met ? "met" : "MISSED"; };
  fmt::print(
      "\ntargets: single-core parse >= 200 MB/s: {:.0f} MB/s, {}; "
      "parse + diagnose < 10 s: {:.2f} s, {}; peak RSS < 1 GB: {:.0f} MB, {}\n",
      mbps, verdict(mbps >= 200), total_wall, verdict(total.ok && total_wall < 10), peak_mb,
      verdict(total.ok && peak_mb < 1000));
  if (total2.ok) {
    fmt::print(
        "records: {}; on 2 threads from 8 files, ingest {:.2f} s, ingest + diagnose {:.2f} s "
        "(medians)\n",
        total2.lines, median_wall(3), median_wall(6));
  }

  if (!o.keep) {
    std::error_code ec;
    fs::remove_all(o.dir, ec);
  }
  for (const Row& row : rows) {
    if (!row.s.ok) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) { return laggard::Main(argc, argv); }
