// hang_log_bench: how fast laggard reads a hung job's watchdog lines and
// places the hang, at the scale of a large job: 10,000 ranks' ProcessGroupNCCL
// lines in one ~50 MB log (what `cat rank*.err > all.log` of such a job
// gives), with the torch 2.x forms real logs print (docs/input-formats.md):
// per rank a watchdog timeout, the watchdog exception with the last
// enqueued / completed work, the "Some NCCL operations" and "taking the
// entire process down" lines, the watchdog thread's termination and the
// C++ stack PyTorch prints under it. One rank is one collective behind
// (completed N - 1, waiting in N while the others wait in N + 1): the
// detector has a rank to find.
//
// Rows, each in its own forked child (peak RSS its own), --repeat rounds:
//   (a) baseline   read the file and split it into lines (LineReader)
//   (b) ingest     Ingest() with `laggard diagnose`'s text readers
//   (c) analyse    AnalyzeHang on the Run of (b), timed alone
//   (d) total      Ingest + AnalyzeRun + DecideVerdict, as `laggard
//                  diagnose` does (its note: the verdict's summary)
// MB are 10^6 bytes. The file sits in the page cache after generation.
//
// Usage: hang_log_bench [--ranks N] [--mb N] [--repeat N] [--dir PATH] [--keep]

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench_child.h"
#include "bench_lines.h"

#include "analysis/analyze_run.h"
#include "analysis/hangs/hang_detector.h"
#include "ingest/common/input_file.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "verdict/verdict.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::CpuModel;
using bench::CpuSeconds;
using bench::LoadAverage;
using bench::MallocHugePages;
using bench::Seconds;

struct BenchOptions {
  int ranks = 10000;
  int mb = 50;
  int repeat = 5;
  std::string dir;
  bool keep = false;
};

struct Sample {
  bool ok = false;
  double wall_s = 0;
  double cpu_s = 0;
  uint64_t bytes = 0;
  uint64_t lines = 0;   // lines split (a) or hang lines taken (b, c, d)
  double ingest_s = 0;  // (d): the parts
  double analyze_s = 0;
  double verdict_s = 0;
  long peak_rss_kb = 0;
  char note[256] = {};
};

constexpr int64_t kStuckSeq = 1580;

// "[rank12]:[E1206 18:44:12.123456789 ProcessGroupNCCL.cpp:1664] " with
// the time moving on by `micros`.
std::string Prefix(int rank, int64_t micros, int src_line) {
  int64_t s = 12 + micros / 1'000'000;
  return fmt::format("[rank{}]:[E1206 18:{:02}:{:02}.{:06}000 ProcessGroupNCCL.cpp:{}] ", rank,
                     44 + s / 60 % 10, s % 60, micros % 1'000'000, src_line);
}

// Writes the log; returns its size, 0 on failure. Every rank's lines of
// one kind come together (the ranks time out within a second of each
// other), kind by kind, and the stack frames repeat until `mb` MB.
uint64_t WriteLog(const std::string& path, int ranks, int mb, int culprit) {
  std::ofstream out(path, std::ios::binary);
  const std::string work =
      "WorkNCCL(SeqNum={}, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
      "Timeout(ms)=600000) ran for {} milliseconds before timing out.";
  int64_t t = 0;
  auto seq_of = [&](int r) { return r == culprit ? kStuckSeq - 1 : kStuckSeq; };
  for (int r = 0; r < ranks; ++r, t += 37) {
    out << Prefix(r, t, 607)
        << fmt::format(
               "[Rank {}] Watchdog caught collective operation "
               "timeout: ",
               r)
        << fmt::format(fmt::runtime(work), seq_of(r), 600060 + r % 97) << '\n';
  }
  for (int r = 0; r < ranks; ++r, t += 41) {
    const int64_t n = seq_of(r);
    out << Prefix(r, t, 1664)
        << fmt::format(
               "[PG 0 (default_pg) Rank {}] Exception (either an error or timeout) "
               "detected by watchdog at work: {}, last enqueued NCCL work: {}, last "
               "completed NCCL work: {}.\n",
               r, n, r == culprit ? n : n + 2, n - 1);
  }
  for (int r = 0; r < ranks; ++r, t += 29) {
    out << Prefix(r, t, 621)
        << fmt::format(
               "[Rank {}] Some NCCL operations have failed or timed out. Due to the "
               "asynchronous nature of CUDA kernels, subsequent GPU operations might run "
               "on corrupted/incomplete data.\n",
               r)
        << Prefix(r, t + 3, 627)
        << fmt::format(
               "[Rank {}] To avoid data inconsistency, we are taking the entire process "
               "down.\n",
               r);
  }
  const uint64_t target = static_cast<uint64_t>(mb) * 1'000'000;
  for (int r = 0; r < ranks; ++r, t += 53) {
    out << Prefix(r, t, 1515)
        << fmt::format(
               "[PG 0 (default_pg) Rank {}] Process group watchdog thread terminated "
               "with exception: [Rank {}] Watchdog caught collective operation timeout: ",
               r, r)
        << fmt::format(fmt::runtime(work), seq_of(r), 600060 + r % 97) << '\n';
    out << "Exception raised from checkTimeout at "
           "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):\n";
    // Frames until this rank's share of the size is written.
    const uint64_t share = target * static_cast<uint64_t>(r + 1) / static_cast<uint64_t>(ranks);
    for (int f = 0; static_cast<uint64_t>(out.tellp()) < share; ++f) {
      out << fmt::format(
          "frame #{}: c10d::ProcessGroupNCCL::watchdogHandler() + 0x{:x} (0x7f{:010x} in "
          "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)\n",
          f, 0x213 + f * 0x40, 0x3a2b1c0d + f * 0x100);
    }
  }
  out.close();
  return out ? fs::file_size(path) : 0;
}

enum class Timed { kIngest, kAnalyzeHang, kTotal };

Sample Measure(const std::string& path, Timed timed) {
  Sample s;
  auto readers = MakeDefaultTextReaders(std::nullopt);
  if (!readers.ok()) {
    std::snprintf(s.note, sizeof s.note, "%s", readers.status().message().c_str());
    return s;
  }
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  auto run = Ingest({path}, readers->readers, IngestOptions());
  auto t1 = Clock::now();
  const double cpu1 = CpuSeconds();
  if (!run.ok()) {
    std::snprintf(s.note, sizeof s.note, "%s", run.status().message().c_str());
    return s;
  }
  for (const InputFileInfo& f : run->files) s.bytes += f.bytes;
  s.lines = run->hang.events.size();
  s.ingest_s = Seconds(t0, t1);
  s.wall_s = s.ingest_s;
  if (timed == Timed::kAnalyzeHang) {
    HangAnalysis h = AnalyzeHang(*run, HangDetectorOptions());
    s.wall_s = Seconds(t1, Clock::now());
    s.cpu_s = CpuSeconds() - cpu1;
    std::snprintf(s.note, sizeof s.note, "%s",
                  h.findings.empty() ? "no finding" : h.findings.front().message.c_str());
    s.ok = h.hang;
    return s;
  }
  if (timed == Timed::kTotal) {
    Analyses a = AnalyzeRun(*run, AnalysisOptions());
    auto t2 = Clock::now();
    Verdict v = DecideVerdict(*run, a);
    auto t3 = Clock::now();
    s.analyze_s = Seconds(t1, t2);
    s.verdict_s = Seconds(t2, t3);
    s.wall_s = Seconds(t0, t3);
    std::snprintf(s.note, sizeof s.note, "%s", v.summary.c_str());
  }
  s.cpu_s = CpuSeconds() - cpu0;
  s.ok = true;
  return s;
}

bool ParseArgs(int argc, char** argv, BenchOptions& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--keep") {
      o.keep = true;
    } else if ((a == "--ranks" || a == "--mb" || a == "--repeat") && v != nullptr) {
      int n = std::atoi(v);
      ++i;
      if (n <= 0 || (a == "--repeat" && n < 3) || (a == "--ranks" && n < 2)) return false;
      (a == "--ranks" ? o.ranks : a == "--mb" ? o.mb : o.repeat) = n;
    } else if (a == "--dir" && v != nullptr) {
      o.dir = v;
      o.keep = true;
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

int Main(int argc, char** argv) {
  BenchOptions o;
  if (!ParseArgs(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: hang_log_bench [--ranks N] [--mb N] [--repeat N>=3] [--dir PATH] "
                 "[--keep]\n");
    return 2;
  }
  if (o.dir.empty()) {
    o.dir = bench::MakeTempDir("laggard-hang-bench");
    if (o.dir.empty()) {
      std::fprintf(stderr, "hang_log_bench: mkdtemp: %s\n", std::strerror(errno));
      return 1;
    }
  }
  fs::create_directories(o.dir);
  const std::string log = o.dir + "/watchdog.log";
  const int culprit = o.ranks * 7 / 10;
  fmt::print("hang_log_bench: {} ranks' watchdog lines, rank {} one collective behind\n", o.ranks,
             culprit);
  fmt::print("machine: {} CPUs, {}; load average {} at start; {}\n",
             std::thread::hardware_concurrency(), CpuModel(), LoadAverage(), MallocHugePages());
  auto g0 = Clock::now();
  const uint64_t size = WriteLog(log, o.ranks, o.mb, culprit);
  if (size == 0) {
    std::fprintf(stderr, "hang_log_bench: cannot write %s\n", log.c_str());
    return 1;
  }
  malloc_trim(0);
  fmt::print("data in {} ({:.1f} MB), generated in {:.1f} s; {} rounds\n\n", log,
             static_cast<double>(size) / 1e6, Seconds(g0, Clock::now()), o.repeat);

  using M = bench::Measurement<Sample>;
  std::vector<M> ms = {
      {"(a) baseline: read + split lines", [&] { return bench::SplitLines<Sample>(log); }},
      {"(b) Ingest (diagnose's text readers)", [&] { return Measure(log, Timed::kIngest); }},
      {"(c) AnalyzeHang alone", [&] { return Measure(log, Timed::kAnalyzeHang); }},
      {"(d) total: Ingest + AnalyzeRun + verdict", [&] { return Measure(log, Timed::kTotal); }},
  };
  std::vector<bench::RoundsRow<Sample>> rows = bench::RunRounds(ms, o.repeat);
  fmt::print("\n");
  // Mlines/s for the line split only (the others take hang lines, not
  // lines); AnalyzeHang reads no bytes.
  bench::PrintRoundsTable(rows, {true, false, false, false}, {true, true, false, true}, 42);
  const Sample& b = rows[1].s;
  const Sample& d = rows[3].s;
  fmt::print("\nhang lines taken: {} ({} per rank)\n", b.lines,
             static_cast<double>(b.lines) / o.ranks);
  if (d.ok) {
    fmt::print("(d) split (best round): Ingest {:.3f} s, AnalyzeRun {:.3f} s, verdict {:.3f} s\n",
               d.ingest_s, d.analyze_s, d.verdict_s);
    fmt::print("verdict: {}\n", d.note);
  }
  if (rows[2].s.ok) fmt::print("hang finding: {}\n", rows[2].s.note);
  if (!bench::g_rss_reset_works) {
    fmt::print("WARNING: peak RSS could not be reset per child; peaks include the parent's\n");
  }
  if (!o.keep) fs::remove_all(o.dir);
  return 0;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) { return laggard::Main(argc, argv); }
