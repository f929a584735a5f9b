// trace_ingest_bench: how fast laggard reads Kineto / torch.profiler traces,
// per core, against the bare JSON parser over the same bytes.
//
// The data is two ranks' traces of >= --size-gb GB each (1.05 by default),
// generated with the simulator (kernels, cpu_op and cuda_runtime events,
// ac2g flows, NCCL kernels with their args, record_param_comms), plain, and
// rank 0 gzipped as torch.profiler writes it (export_chrome_trace to a .gz
// path: Python's gzip.open, i.e. zlib at level 9), into a temporary directory that is
// deleted at the end (--dir keeps it where you say, --keep keeps it). Each
// measurement runs in its own forked child, whose peak-RSS mark is reset at
// the start, so every peak is that measurement's own:
//   read        read(2) of the file in 512 KiB chunks into one buffer: the
//               I/O floor (page cache to user space)
//   (a) ceiling the bare parser: simdjson over every event of traceEvents,
//               read in the reader's 512 KiB chunks, events found by line
//               (the simulator writes one per line), every member visited
//               and every string unescaped; On-Demand twice: with the
//               front-end kernel a baseline build gets (simdjson's
//               "builtin", fallback on x86-64 with Debian's library) and
//               with the best one this CPU runs (icelake / haswell:
//               ondemand_ceiling.cc compiled for it; stage 1 is the
//               library's runtime-dispatched kernel in both); DOM with the
//               runtime-dispatched best kernel of this CPU
//   (b) ingest  Ingest() of one plain trace, threads=1
//   (c) ingest  Ingest() of the same trace gzipped, threads=1 (rates in
//               decompressed JSON), decoded on the reading thread ("inline")
//               and on a helper thread ahead of it (IngestOptions::
//               gzip_decode_ahead, on when a core is spare); with "inflate only" (laggard's gzip
//               stream, isa-l's igzip, read to the end, nothing parsed),
//               zlib's streaming inflate of the same file and, when built with
//               libdeflate, libdeflate's whole-buffer decode of the same
//               file into a pre-faulted buffer (a decoder ceiling)
//   (d) scaling the two plain traces, threads=1 and threads=2
// GB are 10^9 bytes. The files sit in the page cache after generation, so
// the numbers are parse speed, not disk speed. Times are the best of
// --repeat rounds (5; other work on the machine only ever slows a run down),
// each round running every row once, with the median round's GB/s per CPU
// beside them; peak RSS is the highest of them. "CPU s" is user + system
// time of the child; GB/s per core = bytes / CPU s, which other jobs on the
// machine disturb less than wall time. "steal" is the share of the VM's CPU
// time the hypervisor gave to other guests while a row ran (/proc/stat):
// it slows wall time, the 2-core row above all.
//
// --gzip-level N compresses with zlib at level N instead of 9 (6: gzip's
// default; 1: the simulator's own .gz, the slowest to inflate).
//
// --reuse (with --dir) reads the traces a previous run left there instead of
// generating them again (the same --size-gb), so that two runs back to back
// (say, one with LAGGARD_KINETO_EVENTS=ondemand LAGGARD_KINETO_SCAN=avx2,
// the reader's earlier path, and one without) measure the same bytes.
//
// Usage: trace_ingest_bench [--size-gb X] [--repeat N] [--dir PATH] [--keep]
//                           [--reuse] [--skip-gz] [--gzip-level 1-9]

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#ifdef LAGGARD_BENCH_LIBDEFLATE
#include <libdeflate.h>
#endif
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "ondemand_ceiling.h"

#include "base/stats/robust_stats.h"
#include "ingest/common/input_file.h"
#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "ingest/traces/kineto/kineto_reader.h"
#include "simulator/writers/kineto_traces.h"

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
using bench::StealSeconds;

constexpr size_t kChunkBytes = 512 << 10;  // the Kineto reader's read size

struct BenchOptions {
  double size_gb = 1.05;
  int repeat = 5;
  std::string dir;  // "" -> a fresh temporary directory
  bool keep = false;
  bool skip_gz = false;
  bool reuse = false;  // --dir's traces from an earlier run, if there
  int gzip_level = 9;  // zlib level of rank 0's .gz (torch.profiler's)
};

// What a child sends back through its pipe (plain data, fixed size).
struct Sample {
  bool ok = false;
  double wall_s = 0;
  double cpu_s = 0;
  uint64_t bytes = 0;   // decompressed JSON bytes
  uint64_t events = 0;  // events parsed (ceiling) or ops + steps taken (ingest)
  long peak_rss_kb = 0;
  char note[256] = {};
};

// One row of the table: what to run in a child, and the trace size its
// peak RSS is compared with (0: not compared).
struct Measurement {
  std::string name;
  std::function<Sample()> body;
  uint64_t file_bytes = 0;
};

struct Row {
  std::string name;
  Sample s;  // the best round (lowest CPU s, lowest wall s, highest peak RSS)
  uint64_t file_bytes = 0;
  // Every round's times, for the medians, and the CPU time the hypervisor
  // took from this VM's CPUs while the row ran (all rounds together).
  std::vector<double> cpu_s, wall_s;
  double steal_s = 0, ran_s = 0;  // steal, and the rows' wall time it fell in

  double median_cpu_s() const { return Median(cpu_s).value_or(0); }
  double median_wall_s() const { return Median(wall_s).value_or(0); }
};

// Runs every measurement once per round, `rounds` times, so that a burst of
// other work on the machine hits all rows alike, and keeps for each the
// lowest CPU time and the lowest wall time (of any round), the highest
// peak RSS, every round's times and the steal time around the rows.
std::vector<Row> RunRounds(const std::vector<Measurement>& ms, int rounds) {
  std::vector<Row> rows;
  for (const Measurement& m : ms) rows.push_back({m.name, Sample(), m.file_bytes});
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < ms.size(); ++i) {
      Row& row = rows[i];
      if (round > 0 && !row.s.ok) continue;  // failed: keep the first failure
      const double steal0 = StealSeconds();
      const auto t0 = Clock::now();
      Sample s = RunInChild<Sample>(ms[i].body);
      row.steal_s += StealSeconds() - steal0;
      row.ran_s += Seconds(t0, Clock::now());
      if (s.ok) {
        row.cpu_s.push_back(s.cpu_s);
        row.wall_s.push_back(s.wall_s);
      }
      if (!s.ok || round == 0) {
        row.s = s;
        continue;
      }
      long peak = std::max(row.s.peak_rss_kb, s.peak_rss_kb);
      double wall = std::min(row.s.wall_s, s.wall_s);
      if (s.cpu_s < row.s.cpu_s) row.s = s;
      row.s.peak_rss_kb = peak;
      row.s.wall_s = wall;
    }
    fmt::print("round {} of {} done, load average {}\n", round + 1, rounds, LoadAverage());
  }
  return rows;
}

Sample Failed(const std::string& why) {
  Sample s;
  std::snprintf(s.note, sizeof s.note, "%s", why.c_str());
  return s;
}

// A malloc'd buffer (not value-initialized, so pages are touched only when
// written), with simdjson's padding after `size` bytes.
struct ChunkBuffer {
  explicit ChunkBuffer(size_t size)
      : data(static_cast<char*>(std::malloc(size + simdjson::SIMDJSON_PADDING))) {}
  ~ChunkBuffer() { std::free(data); }
  ChunkBuffer(const ChunkBuffer&) = delete;
  ChunkBuffer& operator=(const ChunkBuffer&) = delete;
  char* data;
};

// read: the file in kChunkBytes reads into one buffer.
Sample ReadOnly(const std::string& path) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  ChunkBuffer buf(kChunkBytes);
  uint64_t sum = 0;
  int64_t bytes = bench::ReadThrough(path, buf.data, kChunkBytes, sum);
  if (bytes < 0) return Failed(fmt::format("open {}: {}", path, std::strerror(errno)));
  s.bytes = static_cast<uint64_t>(bytes);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  s.events = sum;
  s.ok = s.bytes > 0;
  return s;
}

// Inflate only: laggard's own byte source (isa-l igzip) read to the end.
Sample InflateOnly(const std::string& path) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  auto source = OpenByteSource(path);
  if (!source.ok()) return Failed(source.status().message());
  ChunkBuffer buf(kChunkBytes);
  for (;;) {
    size_t n = (*source)->Read(buf.data, kChunkBytes);
    if (n == 0) break;
    s.bytes += n;
  }
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  s.ok = s.bytes > 0 && !(*source)->damage();
  return s;
}

// zlib's streaming inflate of the same file (what laggard used before
// isa-l), in the same chunk sizes: 256 KiB in, kChunkBytes out.
Sample ZlibInflate(const std::string& path) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return Failed(fmt::format("open {}: {}", path, std::strerror(errno)));
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return Failed("inflateInit2 failed");
  std::vector<unsigned char> in(256 << 10);
  ChunkBuffer out(kChunkBytes);
  int rc = Z_OK;
  bool eof = false;
  while (rc != Z_STREAM_END && !(eof && zs.avail_in == 0)) {
    if (zs.avail_in == 0) {
      ssize_t n = read(fd, in.data(), in.size());
      if (n <= 0) {
        eof = true;
        continue;
      }
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data);
    zs.avail_out = kChunkBytes;
    rc = inflate(&zs, Z_NO_FLUSH);
    s.bytes += kChunkBytes - zs.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
  }
  inflateEnd(&zs);
  close(fd);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  s.ok = rc == Z_STREAM_END;
  if (!s.ok) std::snprintf(s.note, sizeof s.note, "zlib inflate ended with %d", rc);
  return s;
}

#ifdef LAGGARD_BENCH_LIBDEFLATE
// libdeflate's whole-buffer gzip decode of the file, read into memory first
// and decoded into a buffer whose pages are touched before the clock starts:
// the decode work alone, for a streaming decoder would reuse one small buffer.
Sample LibdeflateDecode(const std::string& path, uint64_t json_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (gz.empty()) return Failed("cannot read " + path);
  std::vector<char> out(json_bytes + (1 << 20));  // value-initialized: every page touched
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (d == nullptr) return Failed("libdeflate_alloc_decompressor failed");
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  size_t in_used = 0, out_len = 0;
  libdeflate_result r = libdeflate_gzip_decompress_ex(d, gz.data(), gz.size(), out.data(),
                                                      out.size(), &in_used, &out_len);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  libdeflate_free_decompressor(d);
  if (r != LIBDEFLATE_SUCCESS)
    return Failed(fmt::format("libdeflate error {}", static_cast<int>(r)));
  s.bytes = out_len;
  s.ok = out_len == json_bytes && in_used == gz.size();
  if (!s.ok)
    std::snprintf(s.note, sizeof s.note, "decoded %zu of %llu bytes", out_len,
                  static_cast<unsigned long long>(json_bytes));
  return s;
}
#endif

void VisitDom(simdjson::dom::element el, uint64_t& sum) {
  switch (el.type()) {
    case simdjson::dom::element_type::OBJECT:
      for (auto field : simdjson::dom::object(el)) {
        sum += field.key.size();
        VisitDom(field.value, sum);
      }
      break;
    case simdjson::dom::element_type::ARRAY:
      for (auto child : simdjson::dom::array(el)) VisitDom(child, sum);
      break;
    case simdjson::dom::element_type::STRING: sum += std::string_view(el).size(); break;
    default: sum += 1; break;
  }
}

// kOnDemand visits every member; kIndex only iterates each piece and counts
// its events (simdjson's stage 1 plus a skip over the structure: the least
// any On-Demand parse does); kDom builds the tape (every number converted)
// with the runtime-dispatched kernel.
enum class Front { kOnDemand, kIndex, kDom };

// A copy of the On-Demand ceiling (ondemand_ceiling.h): the builtin one
// (the front end Debian's simdjson gives a baseline build), and the best
// one this CPU runs (what a -march build would get).
struct OnDemandCopy {
  bool (*piece)(const char* doc, size_t len, bool count_only, uint64_t& events, uint64_t& sum);
  const char* (*kernel)();
};

OnDemandCopy BuiltinOnDemand() {
  return {bench_baseline::OnDemandPiece, bench_baseline::OnDemandKernel};
}

OnDemandCopy BestOnDemand() {
#if defined(LAGGARD_BENCH_ISA_VARIANTS)
  // The checks cmake/isa_variants.cmake lists for the variants' flags.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3") && __builtin_cpu_supports("pclmul")) {
    if (__builtin_cpu_supports("x86-64-v4") && __builtin_cpu_supports("avx512vbmi") &&
        __builtin_cpu_supports("avx512vbmi2")) {
      return {bench_icelake::OnDemandPiece, bench_icelake::OnDemandKernel};
    }
    return {bench_haswell::OnDemandPiece, bench_haswell::OnDemandKernel};
  }
#endif
  return BuiltinOnDemand();
}

// (a): simdjson over every event of traceEvents, fed as large documents the
// way simdjson is meant to be used: the file is read in kChunkBytes pieces
// like the reader does, and each piece's complete events (up to its last
// line break: the simulator writes one event per line) are parsed as one
// JSON array, '[' and ']' written over the bytes around them. Every member
// of every event is visited and every string unescaped.
Sample BareParser(const std::string& path, Front front, OnDemandCopy od_copy = BuiltinOnDemand()) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return Failed(fmt::format("open {}: {}", path, std::strerror(errno)));
  // data[0] is room for the '[' before the first event of a piece; the
  // unparsed tail of a piece moves to data + 1 before the next read.
  size_t cap = 1 + 2 * kChunkBytes;
  ChunkBuffer buf(cap);
  simdjson::dom::parser dom_parser;
  uint64_t sum = 0, errors = 0;
  size_t len = 0;  // bytes at data + 1
  bool in_events = false, done = false, eof = false;
  while (!done && !eof) {
    if (1 + len + kChunkBytes > cap) {  // an event longer than a chunk
      cap = 1 + len + kChunkBytes;
      ChunkBuffer bigger(cap);
      std::memcpy(bigger.data, buf.data, 1 + len);
      std::swap(buf.data, bigger.data);
    }
    ssize_t n = read(fd, buf.data + 1 + len, kChunkBytes);
    if (n <= 0) {
      eof = true;
      n = 0;
    }
    s.bytes += static_cast<uint64_t>(n);
    len += static_cast<size_t>(n);
    std::memset(buf.data + 1 + len, ' ', simdjson::SIMDJSON_PADDING);
    char* p = buf.data + 1;
    char* end = p + len;
    if (!in_events) {  // the header: up to the '[' of traceEvents
      std::string_view text(p, len);
      size_t key = text.find("\"traceEvents\"");
      size_t open_at = key == std::string_view::npos ? key : text.find('[', key);
      if (open_at == std::string_view::npos) continue;
      p += open_at + 1;
      in_events = true;
    }
    // The piece: whole lines, up to the line that closes traceEvents.
    char* last = static_cast<char*>(memrchr(p, '\n', static_cast<size_t>(end - p)));
    char* piece_end = eof ? end : last != nullptr ? last + 1 : p;
    std::string_view piece(p, static_cast<size_t>(piece_end - p));
    size_t close_at = piece.find("\n  ]");
    if (close_at != std::string_view::npos) {
      piece_end = p + close_at + 1;
      done = true;
    }
    char* e = piece_end;
    while (e > p && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r' || e[-1] == ',')) --e;
    if (e > p) {
      char* doc = p - 1;
      doc[0] = '[';
      *e = ']';  // over the ',' (or blank) after the last event
      size_t doc_len = static_cast<size_t>(e + 1 - doc);
      if (front != Front::kDom) {
        if (!od_copy.piece(doc, doc_len, front == Front::kIndex, s.events, sum)) ++errors;
      } else {
        simdjson::dom::element root;
        simdjson::dom::array events;
        if (dom_parser.parse(doc, doc_len, false).get(root) || root.get_array().get(events)) {
          ++errors;
        } else {
          for (simdjson::dom::element ev : events) {
            ++s.events;
            VisitDom(ev, sum);
          }
        }
      }
    }
    size_t rest = static_cast<size_t>(end - piece_end);
    std::memmove(buf.data + 1, piece_end, rest);
    len = rest;
  }
  while (!eof) {  // the footer: read, not parsed
    ssize_t n = read(fd, buf.data, kChunkBytes);
    if (n <= 0) break;
    s.bytes += static_cast<uint64_t>(n);
  }
  close(fd);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  s.ok = errors == 0 && s.events > 0 && sum > 0;
  if (errors > 0) {
    std::snprintf(s.note, sizeof s.note, "%llu pieces failed to parse",
                  static_cast<unsigned long long>(errors));
  }
  return s;
}

// The decompressed size of a one-member gzip file: the trailer's ISIZE is
// that size mod 2^32; of the sizes it allows, the one nearest `estimate`.
uint64_t GzipJsonBytes(const std::string& path, uint64_t estimate) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 4) return 0;
  in.seekg(-4, std::ios::end);
  unsigned char t[4] = {};
  in.read(reinterpret_cast<char*>(t), 4);
  uint64_t isize = t[0] | uint64_t{t[1]} << 8 | uint64_t{t[2]} << 16 | uint64_t{t[3]} << 24;
  uint64_t base = (estimate & ~uint64_t{0xFFFFFFFF}) | isize;
  uint64_t best = base;
  for (uint64_t c : {base - (uint64_t{1} << 32), base + (uint64_t{1} << 32)}) {
    auto dist = [&](uint64_t x) { return x > estimate ? x - estimate : estimate - x; };
    if (c <= (uint64_t{1} << 62) && dist(c) < dist(best)) best = c;
  }
  return best;
}

// (b), (c), (d): Ingest() with the reader set of `laggard diagnose`. Ingest
// reports a trace file's size on disk, so `json_bytes` (when not 0) gives
// the decompressed size of a .gz input.
Sample IngestFiles(const std::vector<std::string>& paths, int threads, uint64_t json_bytes = 0,
                   bool gzip_decode_ahead = true) {
  auto steps = MakeDefaultTextReaders(std::nullopt);
  if (!steps.ok()) return Failed(steps.status().message());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = threads;
  options.gzip_decode_ahead = gzip_decode_ahead;
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  auto run = Ingest(paths, steps->readers, options, traces.readers);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  if (!run.ok()) return Failed(run.status().message());
  for (const InputFileInfo& f : run->files) s.bytes += f.bytes;
  if (json_bytes != 0) s.bytes = json_bytes;
  for (const RankTrace& t : run->traces) s.events += t.ops.size() + t.steps.size();
  s.ok = run->traces.size() == paths.size() && s.events > 0;
  if (!s.ok) {
    std::snprintf(s.note, sizeof s.note, "%zu traces from %zu files", run->traces.size(),
                  paths.size());
  }
  return s;
}

double Gbps(const Sample& s, double seconds) {
  return seconds > 0 ? static_cast<double>(s.bytes) / seconds / 1e9 : 0;
}

// Steal time, as a share of the CPUs' time while the row's rounds ran.
double StealShare(const Row& r) {
  double cpus = std::max(1u, std::thread::hardware_concurrency());
  return r.ran_s > 0 ? r.steal_s / (r.ran_s * cpus) : 0;
}

std::string StealText(const Row& r) {
  double share = StealShare(r);
  return std::isnan(share) ? std::string("-") : fmt::format("{:.1f}%", 100 * share);
}

void PrintTable(const std::vector<Row>& rows) {
  fmt::print("{:<58} {:>8} {:>8} {:>8} {:>20} {:>8} {:>10} {:>9} {:>6}\n", "measurement", "GB/s",
             "GB/s", "GB/s", "CPU s", "wall s", "peak RSS", "RSS/size", "steal");
  fmt::print("{:<58} {:>8} {:>8} {:>8} {:>20}\n", "", "per CPU", "median", "wall",
             "min / median / max");
  fmt::print("{:-<143}\n", "");
  for (const Row& r : rows) {
    if (!r.s.ok) {
      fmt::print("{:<58} failed: {}\n", r.name, r.s.note);
      continue;
    }
    double rss_bytes = static_cast<double>(r.s.peak_rss_kb) * 1024;
    fmt::print("{:<58} {:>8.2f} {:>8.2f} {:>8.2f} {:>20} {:>8.2f} {:>7.0f} MB {:>9} {:>6}\n",
               r.name, Gbps(r.s, r.s.cpu_s), Gbps(r.s, r.median_cpu_s()), Gbps(r.s, r.s.wall_s),
               bench::SpreadText(r.cpu_s), r.s.wall_s, rss_bytes / 1e6,
               r.file_bytes > 0
                   ? fmt::format("{:.3f}", rss_bytes / static_cast<double>(r.file_bytes))
                   : "-",
               StealText(r));
  }
}

bool ParseArgs(int argc, char** argv, BenchOptions& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--keep") {
      o.keep = true;
    } else if (a == "--skip-gz") {
      o.skip_gz = true;
    } else if (a == "--reuse") {
      o.reuse = true;
    } else if (a == "--size-gb" && (v = value()) != nullptr) {
      o.size_gb = std::atof(v);
      if (!(o.size_gb > 0)) return false;
    } else if (a == "--gzip-level" && (v = value()) != nullptr) {
      o.gzip_level = std::atoi(v);
      if (o.gzip_level < 1 || o.gzip_level > 9) return false;
    } else if (a == "--repeat" && (v = value()) != nullptr) {
      o.repeat = std::atoi(v);
      if (o.repeat <= 0) return false;
    } else if (a == "--dir" && (v = value()) != nullptr) {
      o.dir = v;
      o.keep = true;
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
                 "usage: trace_ingest_bench [--size-gb X] [--repeat N] [--dir PATH] [--keep] "
                 "[--reuse] [--skip-gz] [--gzip-level 1-9]\n");
    return 2;
  }
  if (o.dir.empty()) {
    o.dir = bench::MakeTempDir("laggard-trace-bench");
    if (o.dir.empty()) {
      std::fprintf(stderr, "trace_ingest_bench: mkdtemp: %s\n", std::strerror(errno));
      return 1;
    }
  }
  fs::create_directories(o.dir);
  const std::string plain_dir = o.dir + "/plain";

  // Two ranks of one node; a step of a mid-size model: 1,200 compute
  // kernels (each with its cpu_op, cudaLaunchKernel and ac2g flow) and 16
  // gradient buckets (NCCL kernel with its args, record_param_comms,
  // nccl:all_reduce). The compute_slow fault gives the trace a culprit.
  sim::TraceScenario sc;
  sc.ranks = 2;
  sc.gpus_per_node = 8;
  sc.kernels_per_step = 1200;
  sc.collectives_per_step = 16;
  sc.seed = 3;
  sc.compute_slow = sim::ComputeSlowFault{1, 1.15};
  auto per_step = sim::KinetoBytesPerStep(sc);
  if (!per_step.ok()) {
    std::fprintf(stderr, "trace_ingest_bench: %s\n", per_step.status().message().c_str());
    return 1;
  }
  sc.steps = static_cast<int>(std::ceil(o.size_gb * 1e9 / static_cast<double>(*per_step))) + 1;

  fmt::print(
      "trace_ingest_bench: 2 ranks x {} steps x {} kernels ({} NCCL) per step, "
      "{:.2f} MB per step per rank\n",
      sc.steps, sc.kernels_per_step, sc.collectives_per_step, static_cast<double>(*per_step) / 1e6);
  fmt::print("machine: {} CPUs, {}; load average {} at start; {}\n",
             std::thread::hardware_concurrency(), CpuModel(), LoadAverage(), MallocHugePages());
  fmt::print("kernels: {}\n", KinetoJsonImplementation());
#ifdef LAGGARD_BENCH_LIBDEFLATE
  fmt::print("libdeflate {} (decoder ceiling)\n", LIBDEFLATE_VERSION_STRING);
#endif
  auto g0 = Clock::now();
  const std::string trace0 = plain_dir + "/" + sim::KinetoTracePath(sc, 0);
  const std::string trace1 = plain_dir + "/" + sim::KinetoTracePath(sc, 1);
  const std::string gz0 = fmt::format("{}/rank-0.level-{}.pt.trace.json.gz", o.dir, o.gzip_level);
  const bool reused = o.reuse && fs::exists(trace0) && fs::exists(trace1);
  if (reused) {
    fmt::print("reusing the traces in {}\n", o.dir);
  } else if (Status st = sim::WriteKinetoTraces(sc, plain_dir); !st.ok()) {
    std::fprintf(stderr, "trace_ingest_bench: %s\n", st.message().c_str());
    return 1;
  }
  if (!o.skip_gz && !(reused && fs::exists(gz0))) {
    auto z0 = Clock::now();
    if (!GzipFile(trace0, gz0, o.gzip_level)) {
      std::fprintf(stderr, "trace_ingest_bench: cannot write %s\n", gz0.c_str());
      return 1;
    }
    fmt::print("gzipped rank 0 at level {} in {:.1f} s\n", o.gzip_level, Seconds(z0, Clock::now()));
  }
  const uint64_t size0 = fs::file_size(trace0);
  const uint64_t gz_json0 = o.skip_gz ? 0 : GzipJsonBytes(gz0, size0);
  malloc_trim(0);
  fmt::print("data in {}: {:.3f} + {:.3f} GB plain", o.dir, static_cast<double>(size0) / 1e9,
             static_cast<double>(fs::file_size(trace1)) / 1e9);
  if (!o.skip_gz) {
    fmt::print(", rank 0 gzipped {:.3f} GB (zlib -{}, {:.1f}x)",
               static_cast<double>(fs::file_size(gz0)) / 1e9, o.gzip_level,
               static_cast<double>(size0) / static_cast<double>(fs::file_size(gz0)));
  }
  fmt::print("; generated in {:.1f} s; best of {} rounds\n\n", Seconds(g0, Clock::now()), o.repeat);

  const uint64_t both = size0 + fs::file_size(trace1);
  std::vector<Measurement> ms;
  ms.push_back({"read: read(2) in 512 KiB chunks", [&] { return ReadOnly(trace0); }});
  const OnDemandCopy od_builtin = BuiltinOnDemand();
  const OnDemandCopy od_best = BestOnDemand();
  ms.push_back(
      {fmt::format("(a) ceiling: On-Demand ({}, builtin), every event", od_builtin.kernel()),
       [&] { return BareParser(trace0, Front::kOnDemand, od_builtin); }, size0});
  if (od_best.piece != od_builtin.piece) {
    ms.push_back(
        {fmt::format("(a) ceiling: On-Demand ({}, best here), every event", od_best.kernel()),
         [&] { return BareParser(trace0, Front::kOnDemand, od_best); }, size0});
  }
  ms.push_back({fmt::format("(a) On-Demand ({}), index + count only", od_builtin.kernel()),
                [&] { return BareParser(trace0, Front::kIndex, od_builtin); }, size0});
  if (od_best.piece != od_builtin.piece) {
    ms.push_back({fmt::format("(a) On-Demand ({}), index + count only", od_best.kernel()),
                  [&] { return BareParser(trace0, Front::kIndex, od_best); }, size0});
  }
  ms.push_back({"(a) ceiling: simdjson DOM, every event",
                [&] { return BareParser(trace0, Front::kDom); }, size0});
  ms.push_back(
      {"(b) Ingest, 1 plain trace, threads=1", [&] { return IngestFiles({trace0}, 1); }, size0});
  if (!o.skip_gz) {
    ms.push_back({"(c) inflate only (laggard's isa-l stream)", [&] { return InflateOnly(gz0); }});
    ms.push_back({"(c) zlib stream inflate, for comparison", [&] { return ZlibInflate(gz0); }});
#ifdef LAGGARD_BENCH_LIBDEFLATE
    ms.push_back({"(c) decoder ceiling: libdeflate, whole buffer",
                  [&] { return LibdeflateDecode(gz0, gz_json0); }});
#endif
    ms.push_back({"(c) Ingest, 1 .gz trace, threads=1, inline",
                  [&] { return IngestFiles({gz0}, 1, gz_json0, false); }, gz_json0});
    ms.push_back({"(c) Ingest, 1 .gz trace, threads=1, decoder thread",
                  [&] { return IngestFiles({gz0}, 1, gz_json0, true); }, gz_json0});
  }
  ms.push_back({"(d) Ingest, 2 plain traces, threads=1",
                [&] {
                  return IngestFiles({trace0, trace1}, 1);
                },
                both});
  ms.push_back({"(d) Ingest, 2 plain traces, threads=2",
                [&] {
                  return IngestFiles({trace0, trace1}, 2);
                },
                both});
  std::vector<Row> rows = RunRounds(ms, o.repeat);
  fmt::print("\n");
  PrintTable(rows);
  fmt::print("load average {} at the end\n", LoadAverage());
  if (!g_rss_reset_works) {
    fmt::print("WARNING: /proc/self/clear_refs not writable: peak RSS includes the parent's\n");
  }

  auto find = [&](const std::string& prefix) -> const Row* {
    for (const Row& row : rows) {
      if (row.name.rfind(prefix, 0) == 0 && row.s.ok) return &row;
    }
    return nullptr;
  };
  const Row* ceil_od = find("(a) ceiling: On-Demand (" + std::string(od_builtin.kernel()));
  const Row* ceil_od_best = find("(a) ceiling: On-Demand (" + std::string(od_best.kernel()));
  const Row* ceil_dom = find("(a) ceiling: simdjson DOM");
  const Row* plain = find("(b) Ingest");
  const Row* gz = find("(c) Ingest, 1 .gz trace, threads=1, inline");
  const Row* gz_ahead = find("(c) Ingest, 1 .gz trace, threads=1, decoder thread");
  const Row* two1 = find("(d) Ingest, 2 plain traces, threads=1");
  const Row* two2 = find("(d) Ingest, 2 plain traces, threads=2");
  auto verdict = [](bool met) { return met ? "met" : "NOT MET"; };
  auto best = [](const Row* r) { return Gbps(r->s, r->s.cpu_s); };
  auto median = [](const Row* r) { return Gbps(r->s, r->median_cpu_s()); };

  // Each target is judged on the best round (what the machine can do) and on
  // the median round (what a typical run of this hour gets).
  fmt::print("\ntargets (GB/s per core = bytes / CPU s; best round, then the median of {}):\n",
             o.repeat);
  if (plain != nullptr && ceil_od != nullptr && ceil_od_best != nullptr && ceil_dom != nullptr) {
    const Row* ceiling = ceil_od;
    for (const Row* c : {ceil_od_best, ceil_dom}) {
      if (best(c) > best(ceiling)) ceiling = c;
    }
    const double ratio = best(plain) / best(ceiling);
    const double ratio_median = median(plain) / median(ceiling);
    fmt::print(
        "  full ingest >= 60% of the bare parser (the fastest (a)): {:.0f}% ({:.2f} / "
        "{:.2f} GB/s), {}; median {:.0f}%, {}; vs On-Demand {} {:.0f}%, {} {:.0f}%, vs DOM "
        "{:.0f}%\n",
        100 * ratio, best(plain), best(ceiling), verdict(ratio >= 0.6), 100 * ratio_median,
        verdict(ratio_median >= 0.6), od_builtin.kernel(), 100 * best(plain) / best(ceil_od),
        od_best.kernel(), 100 * best(plain) / best(ceil_od_best),
        100 * best(plain) / best(ceil_dom));
  }
  if (plain != nullptr) {
    fmt::print(
        "  plain JSON >= 1 GB/s per core: {:.2f} GB/s ({:.2f} by wall), {}; median {:.2f}, {}\n",
        best(plain), Gbps(plain->s, plain->s.wall_s), verdict(best(plain) >= 1), median(plain),
        verdict(median(plain) >= 1));
    double rss = static_cast<double>(plain->s.peak_rss_kb) * 1024 / static_cast<double>(size0);
    fmt::print(
        "  peak RSS <= 0.25x the trace size: {:.3f}x ({:.0f} MB for {:.2f} GB, highest of "
        "the rounds), {}\n",
        rss, static_cast<double>(plain->s.peak_rss_kb) * 1024 / 1e6,
        static_cast<double>(size0) / 1e9, verdict(rss <= 0.25));
  }
  if (gz != nullptr) {
    fmt::print(
        "  .gz >= 1 GB/s of JSON per core: {:.2f} GB/s ({:.2f} by wall), {}; median {:.2f}, {}\n",
        best(gz), Gbps(gz->s, gz->s.wall_s), verdict(best(gz) >= 1), median(gz),
        verdict(median(gz) >= 1));
  }
  if (gz_ahead != nullptr) {
    fmt::print("  .gz with a decoder thread: {:.2f} GB/s per CPU, {:.2f} GB/s by wall\n",
               best(gz_ahead), Gbps(gz_ahead->s, gz_ahead->s.wall_s));
  }
  if (two1 != nullptr && two2 != nullptr) {
    const double speedup = two1->s.wall_s / two2->s.wall_s;
    const double speedup_median = two1->median_wall_s() / two2->median_wall_s();
    fmt::print(
        "  2 files on 2 cores >= 1.8x one core: {:.2f}x by wall time, {}; median {:.2f}x, {} "
        "(CPU s {:.2f} vs {:.2f}; steal while threads=2 ran: {})\n",
        speedup, verdict(speedup >= 1.8), speedup_median, verdict(speedup_median >= 1.8),
        two2->s.cpu_s, two1->s.cpu_s, StealText(*two2));
  }
  Row all;
  for (const Row& row : rows) all.steal_s += row.steal_s, all.ran_s += row.ran_s;
  if (!std::isnan(all.steal_s)) {
    fmt::print(
        "  the hypervisor took {:.2f} CPU s from this VM while the rows ran ({:.1f}% of its "
        "CPUs' time; wall times include it)\n",
        all.steal_s, 100 * StealShare(all));
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
