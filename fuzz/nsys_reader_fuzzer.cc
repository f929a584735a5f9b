// Fuzzes the Nsight Systems SQLite reader (nsys_reader.h) at two levels,
// since random bytes are almost never an SQLite database:
//
//   (a) byte edits: the fuzzer builds, once, a small valid export with the
//       sqlite3 C API (512-byte pages, the tables and columns the reader
//       queries, a few realistic rows) and the input edits its bytes:
//         byte 0     flags: 1 lean schema (else modern), 2 cut the file,
//                    4 a rank in the path
//         bytes 1-2  (with flag 2) the length to cut the file to, LE16,
//                    modulo the file size + 1
//         then       (offset LE16 modulo the file size, new byte) triples;
//   (b) rows: an input that starts with "rows" is a little SQL-ish program
//       inserted into an export with the same schema and rows, e.g.
//         rows modern rank
//         kernel 1000 -5 0 7 10 'sm90_xmma'
//         string 10 '\xff\xfe not UTF-8'
//         nvtx 0 9223372036854775807 'step 3' NULL
//       one row a line: a table (kernel, memcpy, memset, nvtx, string, gpu,
//       session, meta, env, capture) and its values in the column order of
//       kColumns below; values are NULL, integers (bound as int64), reals,
//       'text' (raw bytes, '' for a quote), x'hex' blobs or bare words
//       (text). Missing values are NULL; rows SQLite refuses are skipped.
//
// Invariants, besides those of every trace (fuzz_support.h):
//   - both: no crash, no sanitizer report;
//   - (a) without edits or cut: exactly the seed export's trace;
//     (a) cut only: ops are a sub-multiset of the seed's, steps a subset;
//   - (b) the file is a valid export, so it always gives a trace, never
//     trace.unsupported or trace.truncated; every kernel / memcpy / memset
//     row is an op or one trace.bad_event (ops + bad events == rows); one
//     collective per communication kernel.

#include <sqlite3.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/traces/nsys/nsys_reader.h"

namespace laggard::fuzz {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

void ExecOrDie(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "seed export: %s\n%s\n", err != nullptr ? err : "?", sql);
    std::abort();
  }
}

// Columns as nsys writes them (2024.x for modern, 2021.x for lean), minus
// the NOT NULL constraints, so that rows with NULLs can be inserted.
constexpr const char* kModernSchema = R"sql(
  CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
  CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
  CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);
  CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
  CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT,
    nameEnum INTEGER, value TEXT);
  CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT,
    uuid TEXT, cuDevice INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER, shortName INTEGER, mangledName INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
    bytes INTEGER, copyKind INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
    value INTEGER, bytes INTEGER);
  CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,
    category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
    textId INTEGER, domainId INTEGER);

  INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.5.1.113'),
    ('EXPORT_SCHEMA_VERSION', '3.15.1'), ('EXPORT_PARAM_TIME_NORMALIZE', 'false');
  INSERT INTO META_DATA_CAPTURE VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', 'WORLD_SIZE="4"'),
    ('DEVICE_DISPLAY_NAME', 'node-b');
  INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '');
  INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'Local', 'Hostname', 619, 'node-a'),
    (1, 'Local', 'DeviceEnvironment', 610, 'HOME=/root;RANK=2;WORLD_SIZE=4;LOCAL_RANK=2');
  INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 'GPU-1', 0);
  INSERT INTO StringIds VALUES (10, 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n'), (11, 'gemm'),
    (12, 'void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>(Flash_fwd_params)'),
    (13, 'flash_fwd_kernel'),
    (14, 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
    (15, 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL'),
    (16, 'void at::native::vectorized_elementwise_kernel<4>(int)'), (17, 'elementwise'),
    (30, 'ProfilerStep#7');
  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
    (1000, 3000, 0, 1, 7, 1, 5, 10, 11, NULL), (3500, 5000, 0, 1, 7, 2, 5, 12, 13, NULL),
    (5200, 9000, 0, 1, 13, 3, 5, 14, 15, NULL), (9100, 9200, 0, 1, 7, 4, 5, 16, 17, NULL),
    (9500, 9400, 0, 1, 7, 6, 5, 16, 17, NULL);
  INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
    (500, 900, 0, 1, 7, 7, 5, 4096, 1), (9600, 9700, 0, 1, 7, 8, 5, 4096, 2);
  INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (400, 450, 0, 1, 7, 9, 5, 0, 1024);
  INSERT INTO NVTX_EVENTS VALUES
    (0, 5000, 59, NULL, NULL, NULL, NULL, 100, NULL, 30, 0),
    (5000, 10000, 59, NULL, NULL, NULL, 'step 8', 100, NULL, NULL, 0),
    (9000, NULL, 34, NULL, NULL, NULL, 'step 9', 100, NULL, NULL, 0);
)sql";

constexpr const char* kLeanSchema = R"sql(
  CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
  CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);
  CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, name INTEGER);
  CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, textId INTEGER);
  INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_VERSION', '2021.3.1.54');
  INSERT INTO StringIds VALUES (1, 'ncclKernel_AllGather_RING_LL_Sum_int8_t'),
    (2, 'sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize96x64x64'),
    (3, 'fmha_cutlassF_f16_aligned_64x64_rf_sm80'), (4, 'iteration 1'), (5, 'Iteration_2');
  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
    (2000, 2600, 1, 1, 20, 1, 1), (100, 400, 1, 1, 7, 2, 2), (500, 900, 1, 1, 7, 3, 3);
  INSERT INTO NVTX_EVENTS VALUES (50, 1000, 59, 4), (1000, 2700, 60, 5), (3000, NULL, 34, 4);
)sql";

// The tables of the row language: name in the input, table, columns given.
// The lean schema lacks some tables and names some columns differently.
struct RowTable {
  std::string_view key;
  const char* table;
  const char* modern_columns;
  const char* lean_columns;  // nullptr: no such table in the lean schema
};
constexpr RowTable kColumns[] = {
    {"kernel", "CUPTI_ACTIVITY_KIND_KERNEL",
     "start, end, deviceId, streamId, demangledName, shortName",
     "start, end, deviceId, streamId, name"},
    {"memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY", "start, end, deviceId, streamId, copyKind", nullptr},
    {"memset", "CUPTI_ACTIVITY_KIND_MEMSET", "start, end, deviceId, streamId", nullptr},
    {"nvtx", "NVTX_EVENTS", "start, end, text, textId", "start, end, textId"},
    {"string", "StringIds", "id, value", "id, value"},
    {"gpu", "TARGET_INFO_GPU", "id, cuDevice, name, busLocation, uuid", nullptr},
    {"session", "TARGET_INFO_SESSION_START_TIME", "utcEpochNs", nullptr},
    {"meta", "META_DATA_EXPORT", "name, value", nullptr},
    {"meta", "EXPORT_META_DATA", nullptr, "name, value"},
    {"env", "TARGET_INFO_SYSTEM_ENV", "name, value", nullptr},
    {"capture", "META_DATA_CAPTURE", "name, value", nullptr},
};

std::string Serialize(sqlite3* db) {
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db, "main", &size, 0);
  if (bytes == nullptr) std::abort();
  std::string out(reinterpret_cast<const char*>(bytes), static_cast<size_t>(size));
  sqlite3_free(bytes);
  return out;
}

// The bytes of an SQLite database holding `sql`, built in memory.
std::string BuildExport(const char* sql) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) std::abort();
  Db db(raw);
  ExecOrDie(raw, "PRAGMA page_size = 512;");
  ExecOrDie(raw, sql);
  return Serialize(raw);
}

// An in-memory database holding a copy of `image`, writable.
Db OpenImage(const std::string& image) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) std::abort();
  Db db(raw);
  auto* buf = static_cast<unsigned char*>(sqlite3_malloc64(image.size()));
  if (buf == nullptr) std::abort();
  std::memcpy(buf, image.data(), image.size());
  if (sqlite3_deserialize(raw, "main", buf, static_cast<sqlite3_int64>(image.size()),
                          static_cast<sqlite3_int64>(image.size()),
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) !=
      SQLITE_OK) {
    std::abort();
  }
  return db;
}

int64_t QueryInt(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) std::abort();
  Stmt stmt(raw);
  if (sqlite3_step(raw) != SQLITE_ROW) std::abort();
  return sqlite3_column_int64(raw, 0);
}

struct Seed {
  std::string image;
  std::vector<OpKey> ops;  // of the intact export
  std::string summary;     // of the intact export
};

std::string Summary(const TraceOutcome& o) {
  std::string s = fmt::format("taken {} traces {}", o.taken, o.run.traces.size());
  if (const RankTrace* t = o.trace()) {
    s += fmt::format(" rank {} world {} host {} device {} ops {} coll {} steps {}",
                     t->rank.value_or(-1), t->world_size.value_or(-1), t->host.value_or("-"),
                     t->device.value_or(-1), t->ops.size(), t->collectives.size(), t->steps.size());
    for (const TraceOp& op : t->ops) s += fmt::format(" {}+{}", op.start_ns, op.dur_ns);
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    if (uint64_t n = o.run.diagnostics.count(static_cast<DiagCode>(c))) {
      s += fmt::format(" {}={}", Describe(static_cast<DiagCode>(c)).name, n);
    }
  }
  return s;
}

TraceOutcome ReadAndCheck(const std::string& name, std::string_view content, bool rank_in_path) {
  static const std::unique_ptr<TraceReader> reader = MakeNsysTraceReader();
  std::string path = ScratchDir() + "/nsys/" + name;
  WriteFileOrDie(path, content);
  ExactBuffer head(content.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);
  TraceOutcome o =
      ReadTraceFile(*reader, path, rank_in_path ? std::optional<int32_t>(6) : std::nullopt);
  CheckTraceInvariants(o);
  return o;
}

const Seed& SeedExport(bool lean) {
  static const Seed* seeds = [] {
    auto* s = new Seed[2];
    for (int i = 0; i < 2; ++i) {
      s[i].image = BuildExport(i == 1 ? kLeanSchema : kModernSchema);
      TraceOutcome o = ReadAndCheck("seed.sqlite", s[i].image, false);
      if (o.trace() == nullptr || o.trace()->ops.empty()) {
        std::fprintf(stderr, "seed export gives no ops: %s\n", Summary(o).c_str());
        std::abort();
      }
      s[i].ops = SortedOpKeys(o.run);
      s[i].summary = Summary(o);
    }
    return s;
  }();
  return seeds[lean ? 1 : 0];
}

// (a) byte edits and cuts of a seed export.
void FuzzBytes(std::string_view input) {
  uint8_t flags = input.empty() ? 0 : static_cast<uint8_t>(input[0]);
  const bool lean = flags & 1, cut = flags & 2, rank_in_path = flags & 4;
  const Seed& seed = SeedExport(lean);
  std::string image = seed.image;
  size_t pos = 1;
  size_t cut_to = image.size();
  auto u16 = [&](size_t at) {
    return static_cast<size_t>(static_cast<uint8_t>(input[at])) |
           static_cast<size_t>(static_cast<uint8_t>(input[at + 1])) << 8;
  };
  if (cut && input.size() >= 3) {
    cut_to = u16(1) % (image.size() + 1);
    pos = 3;
  }
  size_t edits = 0;
  for (; pos + 3 <= input.size(); pos += 3, ++edits) {
    image[u16(pos) % image.size()] = input[pos + 2];
  }
  image.resize(cut_to);
  TraceOutcome o = ReadAndCheck("edited.sqlite", image, rank_in_path);
  if (edits > 0) return;
  if (cut_to == seed.image.size()) {
    if (!rank_in_path) {
      FUZZ_CHECK(Summary(o) == seed.summary, "intact seed read as\n{}\nnot\n{}", Summary(o),
                 seed.summary);
    }
    return;
  }
  FUZZ_CHECK(IsSubMultiset(SortedOpKeys(o.run), seed.ops),
             "export cut at byte {} of {} gives ops the intact one does not have", cut_to,
             seed.image.size());
}

// One token of a row line: the value to bind.
struct Value {
  enum Kind { kNull, kInt, kReal, kText, kBlob } kind = kNull;
  int64_t i = 0;
  double d = 0;
  std::string s;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits a row line into values (see the header comment).
std::vector<Value> ParseValues(std::string_view line) {
  std::vector<Value> values;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i >= line.size()) break;
    Value v;
    bool blob = (line[i] == 'x' || line[i] == 'X') && i + 1 < line.size() && line[i + 1] == '\'';
    if (line[i] == '\'' || blob) {
      i += blob ? 2 : 1;
      for (; i < line.size(); ++i) {
        if (line[i] == '\'') {
          if (i + 1 < line.size() && line[i + 1] == '\'') {
            v.s += '\'';
            ++i;
            continue;
          }
          ++i;
          break;
        }
        v.s += line[i];
      }
      v.kind = Value::kText;
      if (blob) {
        std::string bytes;
        for (size_t k = 0; k + 1 < v.s.size(); k += 2) {
          int hi = HexDigit(v.s[k]), lo = HexDigit(v.s[k + 1]);
          if (hi < 0 || lo < 0) break;
          bytes += static_cast<char>(hi << 4 | lo);
        }
        v.s = std::move(bytes);
        v.kind = Value::kBlob;
      }
      values.push_back(std::move(v));
      continue;
    }
    size_t end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r') ++end;
    std::string_view tok = line.substr(i, end - i);
    i = end;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v.i);
    if (EqualsIgnoreCase(tok, "null")) {
      v.kind = Value::kNull;
    } else if (ec == std::errc() && p == tok.data() + tok.size()) {
      v.kind = Value::kInt;
    } else {
      std::string text(tok);
      char* stop = nullptr;
      v.d = std::strtod(text.c_str(), &stop);
      if (!text.empty() && stop == text.c_str() + text.size()) {
        v.kind = Value::kReal;
      } else {
        v.kind = Value::kText;
        v.s = std::move(text);
      }
    }
    values.push_back(std::move(v));
  }
  return values;
}

void InsertRow(sqlite3* db, bool lean, std::string_view line) {
  size_t sp = line.find_first_of(" \t");
  std::string_view key = line.substr(0, sp);
  std::string_view rest = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  for (const RowTable& t : kColumns) {
    const char* cols = lean ? t.lean_columns : t.modern_columns;
    if (t.key != key || cols == nullptr) continue;
    int ncols = 1 + static_cast<int>(std::count(cols, cols + std::strlen(cols), ','));
    std::string marks = "?";
    for (int c = 1; c < ncols; ++c) marks += ", ?";
    std::string sql = fmt::format("INSERT INTO {} ({}) VALUES ({})", t.table, cols, marks);
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) std::abort();
    Stmt stmt(raw);
    std::vector<Value> values = ParseValues(rest);
    for (int c = 0; c < ncols && c < static_cast<int>(values.size()); ++c) {
      const Value& v = values[static_cast<size_t>(c)];
      switch (v.kind) {
        case Value::kNull: break;
        case Value::kInt: sqlite3_bind_int64(raw, c + 1, v.i); break;
        case Value::kReal: sqlite3_bind_double(raw, c + 1, v.d); break;
        case Value::kText:
          sqlite3_bind_text(raw, c + 1, v.s.data(), static_cast<int>(v.s.size()), SQLITE_TRANSIENT);
          break;
        case Value::kBlob:
          sqlite3_bind_blob(raw, c + 1, v.s.data(), static_cast<int>(v.s.size()), SQLITE_TRANSIENT);
          break;
      }
    }
    sqlite3_step(raw);  // a refused row (duplicate id, text id) is skipped
    return;
  }
}

// (b) rows inserted into a seed export.
void FuzzRows(std::string_view input) {
  size_t nl = input.find('\n');
  std::string_view header = input.substr(0, nl);
  const bool lean = header.find("lean") != std::string_view::npos;
  const bool rank_in_path = header.find("rank") != std::string_view::npos;
  Db db = OpenImage(SeedExport(lean).image);
  size_t pos = nl == std::string_view::npos ? input.size() : nl + 1;
  while (pos < input.size()) {
    size_t end = input.find('\n', pos);
    if (end == std::string_view::npos) end = input.size();
    InsertRow(db.get(), lean, input.substr(pos, end - pos));
    pos = end + 1;
  }
  int64_t rows =
      QueryInt(db.get(), lean ? "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"
                              : "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
                                " + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY)"
                                " + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET)");
  std::string image = Serialize(db.get());
  db.reset();
  TraceOutcome o = ReadAndCheck("rows.sqlite", image, rank_in_path);
  const RankTrace* t = o.trace();
  FUZZ_CHECK(t != nullptr && Count(o.run, DiagCode::kTraceUnsupported) == 0 &&
                 Count(o.run, DiagCode::kTraceTruncated) == 0,
             "valid export read as: {}", Summary(o));
  uint64_t bad = Count(o.run, DiagCode::kTraceBadEvent);
  FUZZ_CHECK(t->ops.size() + bad == static_cast<uint64_t>(rows),
             "{} activity rows, but {} ops + {} bad events", rows, t->ops.size(), bad);
  size_t comm = 0;
  for (const TraceOp& op : t->ops) comm += op.cls == OpClass::kCommunication;
  FUZZ_CHECK(t->collectives.size() == comm, "{} communication kernels, {} collectives", comm,
             t->collectives.size());
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(nsys_reader) {
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.substr(0, 4) == "rows") {
    FuzzRows(input);
  } else {
    FuzzBytes(input);
  }
  return 0;
}
