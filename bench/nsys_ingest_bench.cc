// nsys_ingest_bench: how fast laggard reads an Nsight Systems SQLite export,
// per core, against a bare SQLite scan of the same tables.
//
// The export is generated in the real schema of the corpus's nsys export
// (--schema, by default LAGGARD_CORPUS_DIR/nsys_sqlite/cuckoo_hash_report1
// .sqlite: nsys 2023.1.2, export schema 3.1.2): every CREATE TABLE / INDEX of
// that file, its page size, and the rows of its small tables (StringIds,
// TARGET_INFO_*, META_DATA_*, ENUM_*...), then --rows kernel rows (10 M by
// default: ~200 kernel names, NCCL among them, over 8 streams, names as
// StringIds ids as nsys writes them), one cudaLaunchKernel runtime row per
// kernel and one other runtime call (cudaEventRecord, ...) per 4 kernels,
// and a ProfilerStep#N NVTX range per 2,000 kernels (the corpus export has
// no NVTX_EVENTS table; it is created with the columns nsys 2023 writes).
// The file sits in a temporary directory deleted at the end (--dir keeps it
// where you say, --keep keeps it, --reuse reads one a previous run left).
//
// Each measurement runs in its own forked child with its own peak-RSS mark:
//   read          read(2) of the whole file in 1 MiB chunks: the page-cache floor
//   (a) kernels   bare SQLite: SELECT of the columns laggard reads from
//                 CUPTI_ACTIVITY_KIND_KERNEL, every value fetched: the ceiling
//   (a) runtime   bare SQLite: SELECT correlationId, globalTid, start of
//                 CUPTI_ACTIVITY_KIND_RUNTIME (what linking launches needs)
//   (a) both      the two scans above, one after the other
//   (a) old join  bare SQLite: the query the reader ran before (KERNEL LEFT
//                 JOIN a GROUP BY of RUNTIME by correlationId and process)
//   (b) ingest    Ingest() of the export, threads=1: kernels, launch links,
//                 NVTX steps, the whole RankTrace
// Rates are kernel rows per CPU second (user + system of the child), and
// M rows/s against wall time. Every row runs once per round, --repeat rounds
// (3 at least); the table prints min / median / max CPU s over the rounds,
// the highest peak RSS, its bytes per kernel row, and "steal": the share of
// the VM's CPU time the hypervisor gave to other guests while the row ran.
//
// Usage: nsys_ingest_bench [--rows N] [--repeat N] [--schema PATH] [--dir PATH]
//                          [--keep] [--reuse]

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench_child.h"

#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::CpuModel;
using bench::CpuSeconds;
using bench::g_rss_reset_works;
using bench::LoadAverage;
using bench::Seconds;

constexpr int kStreams = 8;
constexpr int kKernelsPerStep = 2000;
constexpr int kOtherCallEvery = 4;  // one non-launch runtime call per 4 kernels

struct BenchOptions {
  uint64_t rows = 10'000'000;
  int repeat = 3;
  std::string schema;
  std::string dir;  // "" -> a fresh temporary directory
  bool keep = false;
  bool reuse = false;
};

struct Sample {
  bool ok = false;
  double wall_s = 0;
  double cpu_s = 0;
  uint64_t bytes = 0;
  uint64_t rows = 0;  // kernel rows (scan, ingest), or 0
  uint64_t ops = 0;   // ops + steps in the RankTrace (ingest)
  long peak_rss_kb = 0;
  char note[256] = {};
};

Sample Failed(const std::string& why) {
  Sample s;
  std::snprintf(s.note, sizeof s.note, "%s", why.c_str());
  return s;
}

// --- The generated export ---------------------------------------------------

class Sql {
 public:
  explicit Sql(sqlite3* db) : db_(db) {}
  bool Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return true;
    error_ = fmt::format("{}: {}", sql.substr(0, 80), err != nullptr ? err : "?");
    sqlite3_free(err);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  sqlite3* db_;
  std::string error_;
};

struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
  bool Step() {
    bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    return ok;
  }
};

// The ~200 kernel names: GEMMs, elementwise and reduction kernels, and NCCL.
std::vector<std::string> KernelNames() {
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) {
    names.push_back(
        fmt::format("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{}x{}x64_warpgroupsize1x1x1_"
                    "execute_segment_k_off_kernel__5x_cublas",
                    64 << (i % 3), 64 << (i % 4)));
  }
  for (int i = 0; i < 80; ++i) {
    names.push_back(fmt::format(
        "void at::native::vectorized_elementwise_kernel<4, "
        "at::native::BinaryFunctor<c10::BFloat16, "
        "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, "
        "at::detail::Array<char*, {}>>(int, at::native::BinaryFunctor<...>, "
        "at::detail::Array<char*, {}>)",
        i, i + 3));
  }
  for (int i = 0; i < 40; ++i) {
    names.push_back(
        fmt::format("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                    "at::native::func_wrapper_t<"
                    "float, at::native::sum_functor<float, float, float>::operator()>, unsigned "
                    "int, float, {}>>"
                    "(at::native::ReduceOp<float, ...>)",
                    i));
  }
  for (const char* c :
       {"AllReduce_Sum_bf16_RING_LL", "AllReduce_Sum_f32_RING_SIMPLE", "AllGather_RING_LL",
        "ReduceScatter_Sum_bf16_RING_LL", "SendRecv", "Broadcast_RING_LL"}) {
    for (int i = 0; i < 3; ++i) {
      names.push_back(
          fmt::format("ncclDevKernel_{}(ncclDevKernelArgsStorage<{}ul>)", c, 4096 << i));
    }
  }
  return names;
}

std::string ShortName(const std::string& name) {
  size_t start = name.rfind("void ", 0) == 0 ? 5 : 0;
  size_t end = name.find_first_of("<(", start);
  return name.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Tables whose rows the generated export copies from the schema file: all but
// the activity tables it writes itself.
bool CopiesRows(const std::string& table) {
  for (const char* t : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
                        "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS",
                        "OSRT_API", "OSRT_CALLCHAINS", "PROFILER_OVERHEAD"}) {
    if (table == t) return false;
  }
  return true;
}

// What the generated export takes from the schema file.
struct SchemaFile {
  std::vector<std::pair<std::string, std::string>> objects;  // name, CREATE sql
  int64_t page_size = 4096;
  int64_t max_string_id = 0;
  int64_t global_pid = 283534665187328;  // the corpus export's
};

bool ReadSchemaFile(const std::string& schema, SchemaFile& out) {
  sqlite3* src = nullptr;
  if (sqlite3_open_v2(schema.c_str(), &src, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(src);
    return false;
  }
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(src,
                     "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN "
                     "('table', 'index') ORDER BY type DESC",
                     -1, &q, nullptr);
  while (q != nullptr && sqlite3_step(q) == SQLITE_ROW) {
    out.objects.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)),
                             reinterpret_cast<const char*>(sqlite3_column_text(q, 1)));
  }
  sqlite3_finalize(q);
  auto one = [&](const char* sql, int64_t& value) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(src, sql, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
      value = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  };
  one("PRAGMA page_size", out.page_size);
  one("SELECT max(id) FROM StringIds", out.max_string_id);
  one("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1", out.global_pid);
  sqlite3_close(src);
  return !out.objects.empty();
}

// Writes the export to `path`; "" or what went wrong.
std::string GenerateExport(const std::string& schema, const std::string& path, uint64_t rows) {
  SchemaFile file;
  if (!ReadSchemaFile(schema, file)) return fmt::format("cannot read the tables of {}", schema);
  const std::vector<std::pair<std::string, std::string>>& objects = file.objects;
  const int64_t page_size = file.page_size, max_string = file.max_string_id;
  const int64_t global_pid = file.global_pid;

  fs::remove(path);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return fmt::format("cannot create {}", path);
  }
  Sql sql(db);
  bool has_nvtx = false;
  bool ok = sql.Exec(fmt::format("PRAGMA page_size = {}", page_size)) &&
            sql.Exec("PRAGMA journal_mode = OFF") && sql.Exec("PRAGMA synchronous = OFF") &&
            sql.Exec(fmt::format("ATTACH DATABASE '{}' AS src", schema)) && sql.Exec("BEGIN");
  for (const auto& [name, create] : objects) {
    if (!ok) break;
    if (name == "NVTX_EVENTS") has_nvtx = true;
    ok = sql.Exec(create);
    if (ok && create.rfind("CREATE TABLE", 0) == 0 && CopiesRows(name)) {
      ok = sql.Exec(fmt::format("INSERT INTO main.\"{0}\" SELECT * FROM src.\"{0}\"", name));
    }
  }
  if (ok && !has_nvtx) {
    ok = sql.Exec(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT "
        "NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
        "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value "
        "INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, "
        "jsonTextId INTEGER, jsonText TEXT)");
  }
  std::vector<std::string> names = KernelNames();
  Stmt string_ins, kernel_ins, runtime_ins, nvtx_ins;
  ok = ok &&
       sqlite3_prepare_v2(db, "INSERT INTO StringIds VALUES (?, ?)", -1, &string_ins.s, nullptr) ==
           SQLITE_OK &&
       sqlite3_prepare_v2(
           db,
           "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
           "correlationId, globalPid, demangledName, shortName, mangledName, launchType, "
           "cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
           "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, "
           "gridId, sharedMemoryExecuted, sharedMemoryLimitConfig) VALUES (?1, ?2, 0, 1, ?3, ?4, "
           "?5, ?6, ?7, NULL, 0, 0, 32, ?8, 1, 1, ?9, 1, 1, 0, 49152, 0, 0, ?10, 65536, 0)",
           -1, &kernel_ins.s, nullptr) == SQLITE_OK &&
       sqlite3_prepare_v2(db,
                          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, "
                          "globalTid, correlationId, nameId, returnValue, callchainId) VALUES "
                          "(?1, ?2, 1, ?3, ?4, ?5, 0, NULL)",
                          -1, &runtime_ins.s, nullptr) == SQLITE_OK &&
       sqlite3_prepare_v2(db,
                          "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, "
                          "domainId) VALUES (?1, ?2, 59, ?3, ?4, 0)",
                          -1, &nvtx_ins.s, nullptr) == SQLITE_OK;
  // StringIds: each kernel's demangled and short name, and the runtime calls.
  int64_t next_id = max_string + 1;
  std::vector<int64_t> demangled(names.size()), short_id(names.size());
  auto add_string = [&](const std::string& value) {
    sqlite3_bind_int64(string_ins.s, 1, next_id);
    sqlite3_bind_text(string_ins.s, 2, value.c_str(), -1, SQLITE_TRANSIENT);
    ok = ok && string_ins.Step();
    return next_id++;
  };
  for (size_t i = 0; ok && i < names.size(); ++i) {
    demangled[i] = add_string(names[i]);
    short_id[i] = add_string(ShortName(names[i]));
  }
  const int64_t launch_name = add_string("cudaLaunchKernel_v7000");
  const int64_t other_names[] = {add_string("cudaEventRecord_v3020"),
                                 add_string("cudaStreamWaitEvent_v3020"),
                                 add_string("cudaMemsetAsync_v3020")};
  const int64_t tid = global_pid + 1234;  // the main thread: pid bits + tid
  uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  int64_t cpu_ns = 1'000'000'000, corr = 1;
  std::vector<int64_t> stream_free(kStreams, 0);
  int64_t step_start = cpu_ns;
  for (uint64_t k = 0; ok && k < rows; ++k) {
    if (k % kOtherCallEvery == 0) {
      int64_t dur = 2000 + static_cast<int64_t>(next() % 3000);
      sqlite3_bind_int64(runtime_ins.s, 1, cpu_ns);
      sqlite3_bind_int64(runtime_ins.s, 2, cpu_ns + dur);
      sqlite3_bind_int64(runtime_ins.s, 3, tid);
      sqlite3_bind_int64(runtime_ins.s, 4, corr++);
      sqlite3_bind_int64(runtime_ins.s, 5, other_names[k / kOtherCallEvery % 3]);
      ok = runtime_ins.Step();
      cpu_ns += dur + 500;
    }
    const int64_t launch = cpu_ns, launch_dur = 3000 + static_cast<int64_t>(next() % 4000);
    sqlite3_bind_int64(runtime_ins.s, 1, launch);
    sqlite3_bind_int64(runtime_ins.s, 2, launch + launch_dur);
    sqlite3_bind_int64(runtime_ins.s, 3, tid);
    sqlite3_bind_int64(runtime_ins.s, 4, corr);
    sqlite3_bind_int64(runtime_ins.s, 5, launch_name);
    ok = ok && runtime_ins.Step();
    cpu_ns += launch_dur + 1000;
    // A name by a skewed draw (a few kernels most of the time), its stream.
    size_t n = static_cast<size_t>(next() % names.size());
    if (next() % 4 != 0) n %= 24;
    int stream = static_cast<int>(next() % kStreams);
    int64_t start = std::max(launch + 5000, stream_free[static_cast<size_t>(stream)]);
    int64_t dur = 3000 + static_cast<int64_t>(next() % 60000);
    stream_free[static_cast<size_t>(stream)] = start + dur + 1000;
    sqlite3_bind_int64(kernel_ins.s, 1, start);
    sqlite3_bind_int64(kernel_ins.s, 2, start + dur);
    sqlite3_bind_int64(kernel_ins.s, 3, 7 + 4 * stream);
    sqlite3_bind_int64(kernel_ins.s, 4, corr++);
    sqlite3_bind_int64(kernel_ins.s, 5, global_pid);
    sqlite3_bind_int64(kernel_ins.s, 6, demangled[n]);
    sqlite3_bind_int64(kernel_ins.s, 7, short_id[n]);
    sqlite3_bind_int64(kernel_ins.s, 8, 1 + static_cast<int64_t>(n % 7) * 66);
    sqlite3_bind_int64(kernel_ins.s, 9, 128 << (n % 3));
    sqlite3_bind_int64(kernel_ins.s, 10, static_cast<int64_t>(k) + 3);
    ok = ok && kernel_ins.Step();
    if ((k + 1) % kKernelsPerStep == 0 || k + 1 == rows) {
      std::string text = fmt::format("ProfilerStep#{}", k / kKernelsPerStep);
      sqlite3_bind_int64(nvtx_ins.s, 1, step_start);
      sqlite3_bind_int64(nvtx_ins.s, 2, cpu_ns);
      sqlite3_bind_text(nvtx_ins.s, 3, text.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(nvtx_ins.s, 4, tid);
      ok = ok && nvtx_ins.Step();
      step_start = cpu_ns;
    }
    if ((k + 1) % 2'000'000 == 0) fmt::print("  {} M kernel rows written\n", (k + 1) / 1'000'000);
  }
  std::string error = ok ? "" : fmt::format("writing {}: {}", path, sqlite3_errmsg(db));
  if (ok && !sql.Exec("COMMIT")) error = sql.error();
  if (error.empty() && !sql.Exec("DETACH DATABASE src")) error = sql.error();
  if (!ok && error.empty()) error = sql.error();
  sqlite3_close_v2(db);  // freed once the statements are finalized
  return error;
}

// --- Measurements ------------------------------------------------------------

Sample ReadOnly(const std::string& path) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  std::vector<char> buf(1 << 20);
  uint64_t sum = 0;
  int64_t bytes = bench::ReadThrough(path, buf.data(), buf.size(), sum);
  if (bytes < 0) return Failed(fmt::format("open {}: {}", path, std::strerror(errno)));
  s.bytes = static_cast<uint64_t>(bytes);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  s.ops = sum;
  s.ok = s.bytes > 0;
  return s;
}

// A bare scan: every column of every row fetched as an integer (summed, so
// that nothing is optimised away); the rows stepped, or ok = false.
uint64_t Scan(sqlite3* db, const char* sql, bool& ok) {
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &q, nullptr) != SQLITE_OK) {
    ok = false;
    return 0;
  }
  const int cols = sqlite3_column_count(q);
  uint64_t rows = 0, sum = 0;
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    ++rows;
    for (int c = 0; c < cols; ++c) sum += static_cast<uint64_t>(sqlite3_column_int64(q, c));
  }
  ok = ok && rc == SQLITE_DONE;
  sqlite3_finalize(q);
  return sum == 42 ? rows + 1 : rows;  // keeps the sum alive
}

constexpr const char* kKernelScan =
    "SELECT start, end, deviceId, streamId, demangledName, shortName, rowid, correlationId, "
    "globalPid, gridX, gridY, gridZ, blockX, blockY, blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL";
// The query laggard's reader ran before it scanned RUNTIME itself: KERNEL
// with each row's launch call joined in SQL.
constexpr const char* kJoinScan =
    "SELECT t.start, t.end, t.deviceId, t.streamId, t.demangledName, t.shortName, t.rowid, l.s, "
    "t.gridX, t.gridY, t.gridZ, t.blockX, t.blockY, t.blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL AS t "
    "LEFT JOIN (SELECT correlationId AS c, globalTid >> 24 AS p, min(start) AS s FROM "
    "CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL GROUP BY 1, 2) AS l ON l.c = "
    "t.correlationId AND l.p = (t.globalPid >> 24)";
constexpr const char* kRuntimeScan =
    "SELECT correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME";

Sample BareScan(const std::string& path, bool kernels, bool runtime, bool join = false) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  sqlite3* db = nullptr;
  bool ok = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK;
  if (ok && kernels) s.rows = Scan(db, join ? kJoinScan : kKernelScan, ok);
  if (ok && runtime) s.ops = Scan(db, kRuntimeScan, ok);
  std::string err = ok ? "" : sqlite3_errmsg(db);
  sqlite3_close(db);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  if (!ok) return Failed(err);
  s.ok = true;
  return s;
}

Sample IngestExport(const std::string& path, uint64_t kernel_rows) {
  auto steps = MakeDefaultTextReaders(std::nullopt);
  if (!steps.ok()) return Failed(steps.status().message());
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 1;
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = Clock::now();
  auto run = Ingest({path}, steps->readers, options, traces.readers);
  s.wall_s = Seconds(t0, Clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  if (!run.ok()) return Failed(run.status().message());
  if (run->traces.size() != 1) return Failed(fmt::format("{} traces", run->traces.size()));
  const RankTrace& t = run->traces[0];
  s.ops = t.ops.size() + t.steps.size();
  s.rows = kernel_rows;
  s.ok = t.ops.size() == kernel_rows && !t.steps.empty();
  std::snprintf(s.note, sizeof s.note, "%zu ops, %llu linked to their launch call, %zu steps",
                t.ops.size(), static_cast<unsigned long long>(t.launches_linked), t.steps.size());
  return s;
}

// --- The table ---------------------------------------------------------------

using Measurement = bench::Measurement<Sample>;
using Row = bench::RoundsRow<Sample>;

void PrintTable(const std::vector<Row>& rows, uint64_t kernel_rows) {
  fmt::print("{:<44} {:>9} {:>8} {:>19} {:>7} {:>9} {:>7} {:>6}\n", "measurement", "M rows/s",
             "M rows/s", "CPU s", "wall s", "peak RSS", "B/row", "steal");
  fmt::print("{:<44} {:>9} {:>8} {:>19} {:>7}\n", "", "per CPU", "wall", "min / median / max",
             "median");
  fmt::print("{:-<117}\n", "");
  for (const Row& r : rows) {
    if (!r.s.ok) {
      fmt::print("{:<44} failed: {}\n", r.name, r.s.note);
      continue;
    }
    const bench::Spread cpu = bench::SpreadOf(r.cpu_s), wall = bench::SpreadOf(r.wall_s);
    const double rows_m = static_cast<double>(kernel_rows) / 1e6;
    const double rss = static_cast<double>(r.s.peak_rss_kb) * 1024;
    std::string rate = r.s.rows > 0 ? fmt::format("{:.2f}", rows_m / cpu.min) : "-";
    std::string rate_wall = r.s.rows > 0 ? fmt::format("{:.2f}", rows_m / wall.median) : "-";
    if (r.s.rows == 0 && r.s.bytes > 0) {  // the read row: GB/s instead
      rate = fmt::format("{:.2f} GB/s", static_cast<double>(r.s.bytes) / cpu.min / 1e9);
      rate_wall = fmt::format("{:.2f}", static_cast<double>(r.s.bytes) / wall.median / 1e9);
    }
    fmt::print("{:<44} {:>9} {:>8} {:>19} {:>7.2f} {:>6.0f} MB {:>7.1f} {:>5.1f}%\n", r.name, rate,
               rate_wall, bench::SpreadText(r.cpu_s), wall.median, rss / 1e6,
               rss / static_cast<double>(kernel_rows), 100 * r.steal_share());
  }
}

bool ParseArgs(int argc, char** argv, BenchOptions& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--keep") {
      o.keep = true;
    } else if (a == "--reuse") {
      o.reuse = true;
    } else if ((a == "--rows" || a == "--repeat" || a == "--schema" || a == "--dir") &&
               (v = value()) != nullptr) {
      if (a == "--rows") o.rows = std::strtoull(v, nullptr, 10);
      if (a == "--repeat") o.repeat = std::atoi(v);
      if (a == "--schema") o.schema = v;
      if (a == "--dir") o.dir = v;
    } else {
      std::fprintf(stderr,
                   "usage: nsys_ingest_bench [--rows N] [--repeat N] [--schema PATH] [--dir PATH] "
                   "[--keep] [--reuse]\n");
      return false;
    }
  }
  if (o.rows == 0 || o.repeat < 3) {
    std::fprintf(stderr, "nsys_ingest_bench: --rows must be > 0 and --repeat >= 3\n");
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  BenchOptions o;
  if (!ParseArgs(argc, argv, o)) return 2;
  if (o.schema.empty())
    o.schema = std::string(LAGGARD_CORPUS_DIR) + "/nsys_sqlite/cuckoo_hash_report1.sqlite";
  if (!fs::exists(o.schema)) {
    std::fprintf(stderr,
                 "nsys_ingest_bench: no nsys export at %s to take the schema from (the "
                 "default is the shared corpus's, ../shared/corpus); pass --schema PATH\n",
                 o.schema.c_str());
    return 2;
  }
  std::string dir = o.dir.empty() ? bench::MakeTempDir("laggard-nsys-bench") : o.dir;
  if (dir.empty()) {
    std::perror("nsys_ingest_bench: mkdtemp");
    return 1;
  }
  fs::create_directories(dir);
  const std::string path = (fs::path(dir) / "rank0.sqlite").string();
  fmt::print("nsys_ingest_bench: {} kernel rows in the schema of {}\n", o.rows, o.schema);
  fmt::print("CPU: {} ({} cores), load average {}\n", CpuModel(),
             std::thread::hardware_concurrency(), LoadAverage());
  if (!(o.reuse && fs::exists(path))) {
    auto t0 = Clock::now();
    std::string err = GenerateExport(o.schema, path, o.rows);
    if (!err.empty()) {
      std::fprintf(stderr, "nsys_ingest_bench: %s\n", err.c_str());
      return 1;
    }
    fmt::print("generated {} ({:.2f} GB) in {:.1f} s\n", path, fs::file_size(path) / 1e9,
               Seconds(t0, Clock::now()));
  }
  const uint64_t rows = o.rows;
  std::vector<Measurement> ms = {
      {"read, whole file", [&] { return ReadOnly(path); }},
      {"(a) bare SQLite scan, KERNEL", [&] { return BareScan(path, true, false); }},
      {"(a) bare SQLite scan, RUNTIME",
       [&] {
         Sample s = BareScan(path, false, true);
         s.rows = rows;  // rated per kernel row, to add up with the kernel scan
         return s;
       }},
      {"(a) bare SQLite scans, KERNEL + RUNTIME", [&] { return BareScan(path, true, true); }},
      {"(a) bare SQL, KERNEL LEFT JOIN RUNTIME (old)",
       [&] { return BareScan(path, true, false, true); }},
      {"(b) laggard Ingest(), threads=1", [&] { return IngestExport(path, rows); }},
  };
  std::vector<Row> table = bench::RunRounds(ms, o.repeat);
  fmt::print("\n");
  PrintTable(table, rows);
  const Row& kernel = table[1];
  const Row& both = table[3];
  const Row& ingest = table[5];
  if (kernel.s.ok && both.s.ok && ingest.s.ok) {
    const double ingest_cpu = bench::SpreadOf(ingest.cpu_s).median;
    fmt::print(
        "\ningest / bare KERNEL scan: {:.2f}x CPU; ingest / bare KERNEL + RUNTIME scans: {:.2f}x "
        "CPU (medians)\n",
        ingest_cpu / bench::SpreadOf(kernel.cpu_s).median,
        ingest_cpu / bench::SpreadOf(both.cpu_s).median);
    fmt::print("ingest: {}\n", ingest.s.note);
  }
  if (!g_rss_reset_works) {
    fmt::print("note: peak RSS could not be reset per child; peaks include the parent's pages\n");
  }
  if (o.dir.empty() && !o.keep) fs::remove_all(dir);
  bool all_ok = std::all_of(table.begin(), table.end(), [](const Row& r) { return r.s.ok; });
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace laggard

int main(int argc, char** argv) { return laggard::Main(argc, argv); }
