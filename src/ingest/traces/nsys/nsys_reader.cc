#include "ingest/traces/nsys/nsys_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/traces/common/kernel_names.h"
#include "ingest/traces/common/step_marker.h"
#include "ingest/traces/common/trace_builder.h"
#include "ingest/traces/nsys/export_facts.h"
#include "ingest/traces/nsys/launch_calls.h"
#include "ingest/traces/nsys/sqlite_db.h"

namespace laggard {
namespace {

using nsys_sqlite::ColumnOrNull;
using nsys_sqlite::ColumnsOf;
using nsys_sqlite::Db;
using nsys_sqlite::ExportFacts;
using nsys_sqlite::ForEachRow;
using nsys_sqlite::Has;
using nsys_sqlite::IntAt;
using nsys_sqlite::kNvtxTable;
using nsys_sqlite::LaunchCalls;
using nsys_sqlite::OpenReadOnly;
using nsys_sqlite::QueryResult;
using nsys_sqlite::Quote;
using nsys_sqlite::ReadExportFacts;
using nsys_sqlite::Stmt;
using nsys_sqlite::TColumnOrNull;
using nsys_sqlite::TextAt;

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// Times on or past this are taken as ns since the epoch already (1973-03-03);
// capture-relative times are seconds to days.
constexpr TimeNs kEpochTimesFrom = 100'000'000'000'000'000;

constexpr std::string_view kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";

// StringIds lookups by primary key (a rowid search, no scan).
class StringIds {
 public:
  explicit StringIds(sqlite3* db, bool present) {
    if (!present) return;
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT value FROM StringIds WHERE id = ?", -1, &raw, nullptr) ==
        SQLITE_OK) {
      lookup_.reset(raw);
    } else {
      sqlite3_finalize(raw);
    }
  }

  std::optional<std::string> Get(int64_t id) {
    if (!lookup_) return std::nullopt;
    sqlite3_stmt* s = lookup_.get();
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, id);
    std::optional<std::string> value;
    if (sqlite3_step(s) == SQLITE_ROW) {
      if (auto text = TextAt(s, 0)) value = std::string(*text);
    }
    sqlite3_reset(s);
    return value;
  }

  // A name column's value: an integer is a StringIds id, text is the name.
  std::optional<std::string> Resolve(sqlite3_stmt* row, int col) {
    if (auto id = IntAt(row, col)) return Get(*id);
    if (auto text = TextAt(row, col)) return std::string(*text);
    return std::nullopt;
  }

 private:
  Stmt lookup_;
};

// CUPTI_ACTIVITY_MEMCPY_KIND (ENUM_CUDA_MEMCPY_OPER in the export).
std::string_view MemcpyName(std::optional<int64_t> kind) {
  static constexpr std::array<std::string_view, 14> kNames{"Memcpy",
                                                           "Memcpy HtoD",
                                                           "Memcpy DtoH",
                                                           "Memcpy HtoA",
                                                           "Memcpy AtoH",
                                                           "Memcpy AtoA",
                                                           "Memcpy AtoD",
                                                           "Memcpy DtoA",
                                                           "Memcpy DtoD",
                                                           "Memcpy HtoH",
                                                           "Memcpy PtoP",
                                                           "Memcpy HtoD (unified)",
                                                           "Memcpy DtoH (unified)",
                                                           "Memcpy DtoD (unified)"};
  if (!kind || *kind < 0 || *kind >= static_cast<int64_t>(kNames.size())) return kNames[0];
  return kNames[static_cast<size_t>(*kind)];
}

// The step number of an NVTX range text, when the whole (trimmed) text is
// "ProfilerStep#N", "step N", "step_N", "StepN", "iteration N" or
// "iteration_N", in any case. "train_step 3" or "step 3 forward" are not
// steps: a nested range must not count its step twice.
std::optional<int64_t> StepOfRangeText(std::string_view text) {
  text = Trim(text);
  if (text.size() > 40) return std::nullopt;
  for (std::string_view prefix : {"profilerstep#", "iteration", "step"}) {
    if (text.size() <= prefix.size() || !EqualsIgnoreCase(text.substr(0, prefix.size()), prefix)) {
      continue;
    }
    std::string_view rest = text.substr(prefix.size());
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '_' || rest.front() == '#' ||
                             rest.front() == ':' || rest.front() == '=')) {
      rest.remove_prefix(1);
    }
    if (rest.empty() || rest.size() > 18) return std::nullopt;
    for (char c : rest) {
      if (!IsDigit(c)) return std::nullopt;
    }
    return ParseInt<int64_t>(rest);
  }
  return std::nullopt;
}

// Reads the activity tables of one export into a RankTrace.
class ActivityReader {
 public:
  ActivityReader(sqlite3* db, const ExportFacts& facts, ReaderContext& ctx)
      : db_(db),
        facts_(facts),
        ctx_(ctx),
        strings_(db, Has(facts.info.tables, "StringIds")),
        trace_(ctx.out->names()) {}

  // Rows read from activity tables (good or bad).
  uint64_t rows() const { return rows_; }
  const std::vector<std::string>& failures() const { return failures_; }

  void ChooseClock() {
    const NsysExportInfo& info = facts_.info;
    if (!info.session_start_ns || info.times_normalized) return;
    for (std::string_view table : {kKernelTable, kMemcpyTable, kMemsetTable, kNvtxTable}) {
      if (!Has(info.tables, table)) continue;
      std::optional<int64_t> first;
      ForEachRow(db_, fmt::format("SELECT \"start\" FROM {} LIMIT 1", Quote(table)),
                 [&](sqlite3_stmt* s) { first = IntAt(s, 0); });
      if (first && *first >= kEpochTimesFrom) return;  // already on the epoch
      if (first) break;
    }
    offset_ns_ = *info.session_start_ns;
  }

  void ReadKernels() {
    if (!Has(facts_.info.tables, kKernelTable)) return;
    std::vector<std::string> cols = ColumnsOf(db_, kKernelTable);
    // The op's name: the demangled one, as Kineto shows it; older or
    // hand-made exports may only have a short, mangled or plain name.
    // The short name is fetched by rowid for the few kernels whose demangled
    // name classifies as nothing (a column less on every row).
    std::string name_col = "NULL";
    for (std::string_view c : {"demangledName", "shortName", "mangledName", "name"}) {
      if (Has(cols, c)) {
        name_col = "t." + Quote(c);
        break;
      }
    }
    if (Has(cols, "demangledName") && Has(cols, "shortName")) PrepareAltName();
    std::string shape_cols;
    for (std::string_view c : {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"}) {
      shape_cols += ", " + TColumnOrNull(cols, c);
    }
    const LaunchMatch launch = PrepareLaunches(cols);
    std::string sql =
        fmt::format("SELECT t.\"start\", t.\"end\", {}, {}, {}, NULL, t.rowid, {}{} FROM {} AS t",
                    TColumnOrNull(cols, "deviceId"), TColumnOrNull(cols, "streamId"), name_col,
                    LaunchCols(cols), shape_cols, Quote(kKernelTable));
    ReadTable(kKernelTable, sql, launch, [&](sqlite3_stmt* s, TraceOp& op) {
      const KernelKind& kind = KernelKindOf(s, 4);
      op.name = kind.name;
      op.cls = kind.cls;
      op.shape = ShapeOf(s, 9);
      if (op.cls == OpClass::kCommunication) {
        CollectiveCall call;
        call.start_ns = op.start_ns;
        call.dur_ns = op.dur_ns;
        call.kernel = kind.name;
        call.collective = kind.collective;
        call.offset = static_cast<uint64_t>(IntAt(s, 6).value_or(0));
        trace_.AddCollective(call);
      }
    });
  }

  void ReadMemcpy() {
    if (!Has(facts_.info.tables, kMemcpyTable)) return;
    std::vector<std::string> cols = ColumnsOf(db_, kMemcpyTable);
    const LaunchMatch launch = PrepareLaunches(cols);
    std::string sql =
        fmt::format("SELECT t.\"start\", t.\"end\", {}, {}, {}, NULL, t.rowid, {} FROM {} AS t",
                    TColumnOrNull(cols, "deviceId"), TColumnOrNull(cols, "streamId"),
                    TColumnOrNull(cols, "copyKind"), LaunchCols(cols), Quote(kMemcpyTable));
    std::array<std::optional<uint32_t>, 16> ids;
    ReadTable(kMemcpyTable, sql, launch, [&](sqlite3_stmt* s, TraceOp& op) {
      std::optional<int64_t> kind = IntAt(s, 4);
      size_t slot = (kind && *kind >= 0 && *kind < 15) ? static_cast<size_t>(*kind) : 15;
      if (!ids[slot]) ids[slot] = ctx_.out->names().Intern(MemcpyName(kind));
      op.name = *ids[slot];
      op.cls = OpClass::kMemcpy;
    });
  }

  void ReadMemset() {
    if (!Has(facts_.info.tables, kMemsetTable)) return;
    std::vector<std::string> cols = ColumnsOf(db_, kMemsetTable);
    const LaunchMatch launch = PrepareLaunches(cols);
    std::string sql =
        fmt::format("SELECT t.\"start\", t.\"end\", {}, {}, NULL, NULL, t.rowid, {} FROM {} AS t",
                    TColumnOrNull(cols, "deviceId"), TColumnOrNull(cols, "streamId"),
                    LaunchCols(cols), Quote(kMemsetTable));
    uint32_t name = ctx_.out->names().Intern("Memset");
    ReadTable(kMemsetTable, sql, launch, [&](sqlite3_stmt*, TraceOp& op) {
      op.name = name;
      op.cls = OpClass::kMemset;
    });
  }

  void ReadSteps() {
    if (!Has(facts_.info.tables, kNvtxTable)) {
      if (!ctx_.step_marker.empty()) {
        ctx_.diag().Add(DiagCode::kTraceNoStepMarker, ctx_.path, 0,
                        fmt::format("no NVTX_EVENTS table, so no range named '{}' (--step-marker)",
                                    ctx_.step_marker));
      }
      return;
    }
    std::vector<std::string> cols = ColumnsOf(db_, kNvtxTable);
    if (!Has(cols, "start") || !Has(cols, "end")) return;
    std::string sql = fmt::format(
        "SELECT \"start\", \"end\", {}, {} FROM {} WHERE \"end\" IS NOT NULL AND \"end\" > "
        "\"start\"",
        ColumnOrNull(cols, "text"), ColumnOrNull(cols, "textId"), Quote(kNvtxTable));
    // A range's step by the built-in names, and with --step-marker whether
    // it is the marker and the number it carries.
    const std::string_view marker = ctx_.step_marker;
    struct Steps {
      std::optional<int64_t> builtin;
      std::optional<MarkedStep> marked;
    };
    auto steps_of_text = [&](std::string_view text) {
      Steps st{StepOfRangeText(text), std::nullopt};
      if (!marker.empty()) st.marked = MatchStepMarker(marker, Trim(text));
      return st;
    };
    std::unordered_map<int64_t, Steps> steps_of_text_id;
    StepRanges& steps = trace_.steps();
    QueryResult r = ForEachRow(db_, sql, [&](sqlite3_stmt* s) {
      ++rows_;
      Steps st;
      if (auto text = TextAt(s, 2)) {
        st = steps_of_text(*text);
      } else if (auto id = IntAt(s, 3)) {
        auto it = steps_of_text_id.find(*id);
        if (it == steps_of_text_id.end()) {
          std::optional<std::string> value = strings_.Get(*id);
          it = steps_of_text_id.emplace(*id, value ? steps_of_text(*value) : Steps{}).first;
        }
        st = it->second;
      }
      if (!st.builtin && !st.marked) return;
      auto start = Shift(IntAt(s, 0));
      auto end = Shift(IntAt(s, 1));
      if (!start || !end) return;
      if (st.builtin) steps.AddBuiltin(*st.builtin, *start, *end);
      if (st.marked) steps.AddMarked(MarkerRange{st.marked->number, *start, *end});
    });
    if (r.error) failures_.push_back(fmt::format("{}: {}", kNvtxTable, *r.error));
    if (!marker.empty() && !steps.marked()) {
      ctx_.diag().Add(DiagCode::kTraceNoStepMarker, ctx_.path, 0,
                      fmt::format("no NVTX range named '{}' (--step-marker); {} built-in step "
                                  "ranges used",
                                  marker, steps.builtin_ranges()));
    }
  }

  // The trace of the rows read: each table is (nearly always) in start
  // order already, a run the builder sorts only when it is not; one range
  // per step, the earliest (a step range pushed on two threads, or in two
  // domains, is the same step).
  // The host-side gaps, once the trace's device is set.
  void AttributeLaunchGaps(RankTrace& trace) { trace_.AttributeLaunchGaps(trace); }

  RankTrace Finish() {
    launches_.reset();  // the activity tables are read: free the index first
    RankTrace trace = trace_.Finish(/*shift_ns=*/0, RepeatedSteps::kEarliest);
    for (const auto& [table, bad] : bad_) {
      ctx_.diag().Add(DiagCode::kTraceBadEvent, ctx_.path, 0,
                      fmt::format("{} {} row(s) with missing, reversed or out-of-range "
                                  "start/end, e.g. {}",
                                  bad.count, table, bad.example),
                      bad.count);
    }
    trace.events_total = rows_;
    return trace;
  }

 private:
  struct KernelKind {
    uint32_t name = 0;
    OpClass cls = OpClass::kOtherCompute;
    uint32_t collective = 0;
  };
  struct BadRows {
    uint64_t count = 0;
    std::string example;
  };

  std::optional<TimeNs> Shift(std::optional<int64_t> t) const {
    if (!t) return std::nullopt;
    TimeNs out = 0;
    if (__builtin_add_overflow(*t, offset_ns_, &out)) return std::nullopt;
    return out;
  }

  // How the rows of an activity table find their launch call: by
  // correlationId within the same process when both tables say which
  // (RUNTIME.globalTid and the op's globalPid carry the pid in bits 24-55),
  // by correlationId alone when neither does or the op table does not.
  enum class LaunchMatch { kNone, kSameProcess, kAnyProcess };

  // Reads the runtime calls once (the first table with a correlationId).
  LaunchMatch PrepareLaunches(const std::vector<std::string>& cols) {
    if (!Has(facts_.info.tables, kRuntimeTable) || !Has(cols, "correlationId")) {
      return LaunchMatch::kNone;
    }
    if (!launches_) {
      launches_.emplace();
      std::vector<std::string> rc = ColumnsOf(db_, kRuntimeTable);
      runtime_usable_ = Has(rc, "correlationId") && Has(rc, "start");
      if (runtime_usable_) {
        // The dense index is sized by the largest rowid, bounded by the file
        // size (as in Reserve): a forged rowid cannot make it outgrow the file.
        int64_t max_rowid = std::max<int64_t>(MaxRowid(kRuntimeTable).value_or(0), 0);
        uint64_t hint = std::min(static_cast<uint64_t>(max_rowid), facts_.file_bytes / 16);
        QueryResult r =
            launches_->Read(db_, std::string(kRuntimeTable), Has(rc, "globalTid"), hint);
        if (r.error) failures_.push_back(fmt::format("{}: {}", kRuntimeTable, *r.error));
      }
    }
    if (!runtime_usable_) return LaunchMatch::kNone;
    return !launches_->by_pid() || Has(cols, "globalPid") ? LaunchMatch::kSameProcess
                                                          : LaunchMatch::kAnyProcess;
  }

  // Columns 7 and 8 of ReadTable's query: correlationId and globalPid.
  static std::string LaunchCols(const std::vector<std::string>& cols) {
    return fmt::format("{}, {}", TColumnOrNull(cols, "correlationId"),
                       TColumnOrNull(cols, "globalPid"));
  }

  std::optional<int64_t> LaunchStart(sqlite3_stmt* s, LaunchMatch match) const {
    if (match == LaunchMatch::kNone) return std::nullopt;
    std::optional<int64_t> corr = IntAt(s, 7);
    if (!corr) return std::nullopt;
    if (match == LaunchMatch::kAnyProcess) return launches_->FindAnyProcess(*corr);
    std::optional<int64_t> pid = IntAt(s, 8);
    if (pid) *pid >>= 24;  // globalPid: the pid sits in bits 24-55
    return launches_->Find(pid, *corr);
  }

  // "grid 132x1x1 block 128x1x1" from the six columns from `col`, interned;
  // kNoShape when one is missing or past kMaxShapes distinct shapes.
  uint32_t ShapeOf(sqlite3_stmt* s, int col) {
    LaunchShape d{};
    for (int i = 0; i < 6; ++i) {
      std::optional<int64_t> v = IntAt(s, col + i);
      if (!v || *v < 0) return kNoShape;
      d[static_cast<size_t>(i)] = *v;
    }
    return trace_.Shape(d);
  }

  // Columns of `sql`: 0 start, 1 end, 2 deviceId, 3 streamId, then the
  // table's own (4, 5), 6 rowid, 7 correlationId and 8 pid (LaunchCols),
  // then the table's own again. `fill` sets name and class.
  template <typename Fill>
  void ReadTable(std::string_view table, const std::string& sql, LaunchMatch launch, Fill&& fill) {
    Reserve(table);
    QueryResult r = ForEachRow(db_, sql, [&](sqlite3_stmt* s) {
      ++rows_;
      auto start = Shift(IntAt(s, 0));
      auto end = Shift(IntAt(s, 1));
      // A span over 292 years (start -9e18, end 9e18) has no int64 duration.
      DurationNs dur = 0;
      if (!start || !end || *end < *start || __builtin_sub_overflow(*end, *start, &dur)) {
        BadRows& bad = bad_[std::string(table)];
        if (bad.count++ == 0) {
          bad.example = fmt::format("rowid {}", IntAt(s, 6).value_or(0));
        }
        return;
      }
      TraceOp op;
      op.start_ns = *start;
      op.dur_ns = dur;
      if (auto dev = IntAt(s, 2); dev && *dev >= 0 && *dev <= INT16_MAX) {
        op.device = static_cast<int16_t>(*dev);
      }
      if (auto stream = IntAt(s, 3); stream && *stream >= 0 && *stream <= INT32_MAX) {
        op.stream = static_cast<int32_t>(*stream);
      }
      fill(s, op);
      trace_.AddOpLaunchedAt(op, Shift(LaunchStart(s, launch)));
    });
    if (r.error) failures_.push_back(fmt::format("{}: {}", table, *r.error));
    trace_.EndOpRun();
  }

  // Room for the table's rows, by its largest rowid (a b-tree descent, not a
  // scan); bounded by the file size so that a forged rowid cannot make it
  // allocate more than the file could hold.
  void Reserve(std::string_view table) {
    std::optional<int64_t> max_rowid = MaxRowid(table);
    if (!max_rowid || *max_rowid <= 0) return;
    uint64_t bound = facts_.file_bytes / 16;  // an nsys row takes far more than 16 bytes
    uint64_t rows = std::min(static_cast<uint64_t>(*max_rowid), bound);
    trace_.ReserveLaunchedOps(rows);
  }

  void PrepareAltName() {
    sqlite3_stmt* raw = nullptr;
    std::string sql =
        fmt::format("SELECT \"shortName\" FROM {} WHERE rowid = ?", Quote(kKernelTable));
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) == SQLITE_OK) {
      alt_name_.reset(raw);
    } else {
      sqlite3_finalize(raw);
    }
  }

  // The short name of the kernel row `rowid` (a rowid search), resolved.
  std::optional<std::string> AltName(std::optional<int64_t> rowid) {
    if (!alt_name_ || !rowid) return std::nullopt;
    sqlite3_stmt* s = alt_name_.get();
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, *rowid);
    std::optional<std::string> name;
    if (sqlite3_step(s) == SQLITE_ROW) name = strings_.Resolve(s, 0);
    sqlite3_reset(s);
    return name;
  }

  std::optional<int64_t> MaxRowid(std::string_view table) {
    std::optional<int64_t> max_rowid;
    ForEachRow(db_, fmt::format("SELECT max(rowid) FROM {}", Quote(table)),
               [&](sqlite3_stmt* s) { max_rowid = IntAt(s, 0); });
    return max_rowid;
  }

  // Name, class and collective of the kernel in row `s`, cached by the
  // name's StringIds id (or text): a trace has millions of launches of a few
  // hundred kernels.
  const KernelKind& KernelKindOf(sqlite3_stmt* s, int name_col) {
    const bool by_id = sqlite3_column_type(s, name_col) == SQLITE_INTEGER;
    const int64_t id = by_id ? sqlite3_column_int64(s, name_col) : 0;
    std::string text;
    if (by_id) {
      if (auto it = by_id_.find(id); it != by_id_.end()) return it->second;
    } else {
      text = std::string(TextAt(s, name_col).value_or(""));
      if (auto it = by_text_.find(text); it != by_text_.end()) return it->second;
    }
    std::string name = by_id ? strings_.Get(id).value_or(fmt::format("<StringIds {}>", id))
                             : (text.empty() ? std::string("<unnamed kernel>") : text);
    KernelKind kind;
    kind.name = ctx_.out->names().Intern(name);
    kind.cls = ClassifyKernelName(name, ctx_.comm_kernels);
    if (kind.cls == OpClass::kOtherCompute) {
      // The short name is what nsys itself shows; give it a say when the
      // demangled one matched nothing.
      if (auto alt = AltName(IntAt(s, 6))) kind.cls = ClassifyKernelName(*alt, ctx_.comm_kernels);
    }
    if (kind.cls == OpClass::kCommunication) {
      kind.collective = ctx_.out->names().Intern(CollectiveFromKernel(name));
    }
    if (by_id) return by_id_.emplace(id, kind).first->second;
    return by_text_.emplace(std::move(text), kind).first->second;
  }

  sqlite3* db_;
  const ExportFacts& facts_;
  ReaderContext& ctx_;
  StringIds strings_;
  TraceBuilder trace_;
  TimeNs offset_ns_ = 0;
  uint64_t rows_ = 0;
  std::map<std::string, BadRows> bad_;
  std::vector<std::string> failures_;
  std::unordered_map<int64_t, KernelKind> by_id_;
  Stmt alt_name_;                        // a kernel row's shortName by rowid
  std::optional<LaunchCalls> launches_;  // read by the first PrepareLaunches
  bool runtime_usable_ = false;
  std::unordered_map<std::string, KernelKind> by_text_;
};

// The GPU of the trace: the device of more than half of the device ops;
// with no device ops, the export's only GPU.
std::optional<int32_t> DominantDevice(const RankTrace& trace, const NsysExportInfo& info) {
  std::map<int16_t, uint64_t> count;
  uint64_t total = 0;
  for (const TraceOp& op : trace.ops) {
    if (op.device < 0) continue;
    ++count[op.device];
    ++total;
  }
  for (const auto& [device, n] : count) {
    if (2 * n > total) return device;
  }
  if (total == 0 && info.gpus.size() == 1) {
    const NsysGpu& gpu = info.gpus.front();
    if (gpu.cuda_device) return gpu.cuda_device;
    if (gpu.id >= 0 && gpu.id <= INT32_MAX) return static_cast<int32_t>(gpu.id);
  }
  return std::nullopt;
}

class NsysTraceReader : public TraceReader {
 public:
  std::string_view name() const override { return "nsys-sqlite"; }

  // Any SQLite database (text readers are never offered a binary head):
  // Read() tells an export from the rest (trace.unsupported).
  int Sniff(std::string_view head) const override {
    return StartsWith(head, kSqliteMagic) ? kSniffPlausible : kSniffNo;
  }

  uint64_t Read(const std::string& path, ReaderContext& ctx) const override {
    Db db;
    auto facts = ReadExportFacts(path, db);
    if (!facts.ok()) {
      ctx.diag().Add(DiagCode::kTraceUnsupported, path, 0, facts.status().message());
      return 0;
    }
    ActivityReader builder(db.get(), *facts, ctx);
    builder.ChooseClock();
    builder.ReadKernels();
    builder.ReadMemcpy();
    builder.ReadMemset();
    builder.ReadSteps();

    std::vector<std::string> failures = facts->failures;
    failures.insert(failures.end(), builder.failures().begin(), builder.failures().end());
    if (!failures.empty() && builder.rows() == 0) {
      // Damaged before any activity row: nothing of this file is usable.
      ctx.diag().Add(DiagCode::kTraceUnsupported, path, 0,
                     fmt::format("damaged SQLite, no rows readable: {}", failures.front()));
      return 0;
    }
    RankTrace trace = builder.Finish();
    trace.file = ctx.file_index;
    trace.producer = "nsys";
    trace.host = facts->info.host;
    trace.device = DominantDevice(trace, facts->info);
    builder.AttributeLaunchGaps(trace);
    if (!failures.empty()) {
      trace.truncated = true;
      ctx.diag().Add(DiagCode::kTraceTruncated, path, 0,
                     fmt::format("damaged SQLite ({} table(s) cut short), rows before the damage "
                                 "were used: {}",
                                 failures.size(), failures.front()));
    }
    if (facts->env.rank) {
      trace.rank = facts->env.rank;
      trace.world_size = facts->env.world_size;
    } else if (ctx.rank_from_path) {
      trace.rank = ctx.rank_from_path;
    } else {
      ctx.diag().Add(DiagCode::kTraceNoRank, path, 0,
                     "no RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID in the captured environment "
                     "and none in the file name");
    }
    if (trace.ops.empty()) {
      ctx.diag().Add(DiagCode::kTraceNoEvents, path, 0,
                     !Has(facts->info.tables, kKernelTable)
                         ? "no CUPTI_ACTIVITY_KIND_KERNEL table (nsys writes only tables with "
                           "rows: was CUDA traced?)"
                         : "no usable kernel, memcpy or memset rows");
    }
    uint64_t taken = trace.ops.size() + trace.steps.size();
    ctx.out->AddTrace(std::move(trace));
    return taken;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeNsysTraceReader() { return std::make_unique<NsysTraceReader>(); }

StatusOr<NsysExportInfo> ReadNsysExportInfo(const std::string& path) {
  Db db;
  auto facts = ReadExportFacts(path, db);
  if (!facts.ok()) return facts.status();
  return std::move(facts->info);
}

}  // namespace laggard
