#include "ingest/traces/flight_recorder/flight_recorder_reader.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "ingest/common/input_file.h"
#include "ingest/common/sniff.h"
#include "ingest/traces/flight_recorder/pickle_reader.h"

namespace laggard {
namespace {

using pickle::Value;
using pickle::ValuePtr;

// The dump versions whose layout was checked (flight_recorder_reader.h).
constexpr std::string_view kKnownVersions[] = {"2.3", "2.4", "2.5", "2.6",
                                               "2.7", "2.8", "2.9", "2.10"};

// Top-level and entry keys only a dump writes, for sniffing.
constexpr std::string_view kPgStatusKey = "pg_status";
constexpr std::string_view kPgConfigKey = "pg_config";
constexpr std::string_view kSeqKey = "collective_seq_id";
constexpr std::string_view kProfilingNameKey = "profiling_name";

bool Contains(std::string_view head, std::string_view needle) {
  return head.find(needle) != std::string_view::npos;
}

int SniffDump(std::string_view head) {
  if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80 &&
      static_cast<uint8_t>(head[1]) >= 2 && static_cast<uint8_t>(head[1]) <= 5) {
    // A pickle: a dump's top-level dict names its keys within the first
    // bytes (version, pg_config first in every version).
    if (Contains(head, kPgConfigKey) || Contains(head, kPgStatusKey) ||
        (Contains(head, "entries") && Contains(head, kProfilingNameKey))) {
      return kSniffCertain;
    }
    return kSniffNo;
  }
  size_t i = StartsWith(head, "\xEF\xBB\xBF") ? 3 : 0;
  while (i < head.size() && IsSpace(head[i])) ++i;
  if (i >= head.size() || head[i] != '{') return kSniffNo;
  // JSON keys are sorted: "entries" (with its entries' keys) first, then
  // pg_config, pg_status, version. A Kineto trace may hold a pg_config too
  // (distributedInfo), never pg_status or an entry's collective_seq_id.
  if (Contains(head, "\"traceEvents\"") || Contains(head, "\"distributedInfo\"")) return kSniffNo;
  if (Contains(head, "\"pg_status\"") ||
      (Contains(head, "\"entries\"") && Contains(head, "\"collective_seq_id\"") &&
       Contains(head, "\"profiling_name\""))) {
    return kSniffCertain;
  }
  return kSniffNo;
}

// A JSON dump as the same value tree the pickle gives, built from
// nlohmann's SAX events; on a parse error the open containers stay as far
// as they got and are marked partial.
class JsonTreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  ValuePtr root;
  std::string error;
  size_t error_position = 0;

  bool null() override { return Scalar(Value::Kind::kNone); }
  bool boolean(bool v) override {
    if (!Scalar(Value::Kind::kBool)) return false;
    last_->b = v;
    return true;
  }
  bool number_integer(number_integer_t v) override {
    if (!Scalar(Value::Kind::kInt)) return false;
    last_->i = v;
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<uint64_t>(INT64_MAX)) {
      if (!Scalar(Value::Kind::kFloat)) return false;
      last_->f = static_cast<double>(v);
      return true;
    }
    if (!Scalar(Value::Kind::kInt)) return false;
    last_->i = static_cast<int64_t>(v);
    return true;
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (!Scalar(Value::Kind::kFloat)) return false;
    last_->f = v;
    return true;
  }
  bool string(string_t& v) override {
    if (!Scalar(Value::Kind::kString)) return false;
    last_->s = std::move(v);
    return true;
  }
  bool binary(binary_t&) override { return Fail("binary values are not JSON"); }
  bool start_object(std::size_t) override { return Open(Value::Kind::kDict); }
  bool key(string_t& k) override {
    key_ = std::make_shared<Value>();
    key_->kind = Value::Kind::kString;
    key_->s = std::move(k);
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Value::Kind::kList); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    if (error.empty()) {
      error = ex.what();
      error_position = position;
    }
    return false;
  }

  // Marks every container still open partial (after a failed parse).
  void CloseAll() {
    for (Value* v : open_) v->partial = true;
    open_.clear();
  }

 private:
  bool Fail(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  bool Add(ValuePtr v) {
    if (++nodes_ > pickle::kMaxNodes) return Fail("more values than the reader takes");
    last_ = v.get();
    if (open_.empty()) {
      if (root) return Fail("more than one value");
      root = std::move(v);
      return true;
    }
    Value* parent = open_.back();
    if (parent->kind == Value::Kind::kDict) {
      parent->dict.emplace_back(std::move(key_), std::move(v));
    } else {
      parent->items.push_back(std::move(v));
    }
    return true;
  }
  bool Scalar(Value::Kind kind) {
    auto v = std::make_shared<Value>();
    v->kind = kind;
    return Add(std::move(v));
  }
  bool Open(Value::Kind kind) {
    if (open_.size() >= pickle::kMaxDepth) return Fail("values nest too deep");
    auto v = std::make_shared<Value>();
    v->kind = kind;
    Value* raw = v.get();
    if (!Add(std::move(v))) return false;
    open_.push_back(raw);
    return true;
  }
  bool Close() {
    if (!open_.empty()) open_.pop_back();
    return true;
  }

  std::vector<Value*> open_;
  ValuePtr key_;
  Value* last_ = nullptr;
  uint64_t nodes_ = 0;
};

std::string Clip(std::string_view s) { return Printable(s, 60); }

// Field readers: nullopt when absent or None (or, for times, 0 in JSON);
// `bad` set when present with the wrong type.
std::optional<int64_t> IntField(const Value& d, std::string_view key, bool& bad) {
  const Value* v = d.Get(key);
  if (v == nullptr || v->kind == Value::Kind::kNone) return std::nullopt;
  if (v->kind == Value::Kind::kInt) return v->i;
  if (v->kind == Value::Kind::kString) {
    if (auto n = ParseInt<int64_t>(Trim(v->s))) return n;
  }
  bad = true;
  return std::nullopt;
}
std::optional<double> NumberField(const Value& d, std::string_view key, bool& bad) {
  const Value* v = d.Get(key);
  if (v == nullptr || v->kind == Value::Kind::kNone) return std::nullopt;
  if (v->kind == Value::Kind::kFloat) return v->f;
  if (v->kind == Value::Kind::kInt) return static_cast<double>(v->i);
  bad = true;
  return std::nullopt;
}
std::optional<bool> BoolField(const Value& d, std::string_view key, bool& bad) {
  const Value* v = d.Get(key);
  if (v == nullptr || v->kind == Value::Kind::kNone) return std::nullopt;
  if (v->kind == Value::Kind::kBool) return v->b;
  bad = true;
  return std::nullopt;
}
std::optional<std::string> StringField(const Value& d, std::string_view key, bool& bad) {
  const Value* v = d.Get(key);
  if (v == nullptr || v->kind == Value::Kind::kNone) return std::nullopt;
  if (v->kind == Value::Kind::kString) return v->s;
  bad = true;
  return std::nullopt;
}

// "[0, 1, 2]" (ranks_str) or a list of ints -> ranks; nullopt when neither.
std::optional<std::vector<int32_t>> ParseRanks(const Value& v) {
  std::vector<int32_t> ranks;
  auto take = [&](int64_t r) {
    if (r < 0 || r > kMaxRank) return false;
    ranks.push_back(static_cast<int32_t>(r));
    return true;
  };
  if (v.is_sequence()) {
    for (const ValuePtr& item : v.items) {
      if (!item->is_int() || !take(item->i)) return std::nullopt;
    }
  } else if (v.is_string()) {
    std::string_view s = Trim(v.s);
    if (s.size() < 2 || s.front() != '[' || s.back() != ']') return std::nullopt;
    s = Trim(s.substr(1, s.size() - 2));
    if (!s.empty()) {
      for (std::string_view part : Split(s, ',')) {
        auto r = ParseInt<int64_t>(Trim(part));
        if (!r || !take(*r)) return std::nullopt;
      }
    }
  } else {
    return std::nullopt;
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// The number that ends a file name, extensions aside: dump_3.pkl -> 3.
std::optional<int32_t> TrailingNumber(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  std::string_view s = name;
  for (std::string_view ext : {".gz", ".json", ".pkl", ".pickle", ".bin"}) {
    if (EndsWith(s, ext)) s.remove_suffix(ext.size());
  }
  size_t end = s.size(), begin = end;
  while (begin > 0 && IsDigit(s[begin - 1])) --begin;
  if (begin == end || end - begin > 7) return std::nullopt;
  auto r = ParseInt<int64_t>(s.substr(begin));
  if (!r || *r > kMaxRank) return std::nullopt;
  return static_cast<int32_t>(*r);
}

// One dump's value tree -> the model.
class DumpMapper {
 public:
  DumpMapper(ReaderContext& ctx, std::string_view format) : ctx_(ctx) {
    dump_.file = ctx.file_index;
    dump_.format = std::string(format);
  }

  // Maps `top` into a dump in ctx.out->hang(); returns the records taken.
  uint64_t Map(const Value& top) {
    bool bad = false;
    if (auto v = StringField(top, "version", bad)) dump_.version = *v;
    if (std::find(std::begin(kKnownVersions), std::end(kKnownVersions), dump_.version) ==
        std::end(kKnownVersions)) {
      ctx_.diag().AddAtOffset(
          DiagCode::kHangDumpVersionUnknown, ctx_.path, 0,
          dump_.version.empty()
              ? std::string("dump without a version string; read as 2.10")
              : fmt::format("dump version \"{}\"; read as 2.10", Clip(dump_.version)));
    }
    if (auto v = StringField(top, "comm_lib_version", bad)) dump_.comm_lib_version = *v;
    if (auto v = StringField(top, "nccl_version", bad)) dump_.comm_lib_version = *v;
    bool rank_bad = false;
    std::optional<int64_t> own_rank = IntField(top, "rank", rank_bad);
    if (own_rank && *own_rank >= 0 && *own_rank <= kMaxRank) {
      dump_.rank = static_cast<int32_t>(*own_rank);
    } else if (ctx_.rank_from_path) {
      dump_.rank = ctx_.rank_from_path;
    } else {
      dump_.rank = TrailingNumber(ctx_.path);
    }
    if (!dump_.rank) {
      ctx_.diag().AddAtOffset(DiagCode::kHangDumpNoRank, ctx_.path, 0,
                              "no rank in the dump or its file name; kept without one");
    }
    if (const Value* config = top.Get("pg_config")) MapConfig(*config);
    if (const Value* status = top.Get("pg_status")) MapStatus(*status);
    if (const Value* entries = top.Get("entries")) MapEntries(*entries);
    if (top.Get("pg_config") == nullptr && (!dump_.status.empty() || !dump_.entries.empty())) {
      ctx_.diag().AddAtOffset(DiagCode::kHangDumpNoPgConfig, ctx_.path, 0,
                              "no pg_config: its groups are matched with other ranks' by id, "
                              "which each process counts on its own");
    }
    uint64_t taken = groups_ + dump_.status.size() + dump_.entries.size();
    ctx_.out->hang().dumps.push_back(std::move(dump_));
    return taken;
  }

  void SetTruncated() { dump_.truncated = true; }
  uint64_t cut_entries() const { return cut_entries_; }
  size_t entries_kept() const { return dump_.entries.size(); }

 private:
  void Bad(std::string message, uint64_t offset = 0) {
    ctx_.diag().AddAtOffset(DiagCode::kHangDumpBadEntry, ctx_.path, offset, std::move(message));
  }

  void MapConfig(const Value& config) {
    if (!config.is_dict())
      return Bad(fmt::format("pg_config is a {}, not a dict", pickle::KindName(config.kind)));
    for (const auto& [key, info] : config.dict) {
      if (!key->is_string() || !info->is_dict()) {
        Bad("pg_config record that is not a dict under a string name; skipped");
        continue;
      }
      if (info->partial) continue;  // cut inside it
      bool bad = false;
      ProcessGroupInfo g;
      g.id = StringField(*info, "name", bad).value_or(key->s);
      g.desc = StringField(*info, "desc", bad).value_or("");
      const Value* ranks = info->Get("ranks");
      std::optional<std::vector<int32_t>> parsed;
      if (ranks != nullptr) parsed = ParseRanks(*ranks);
      if (bad || !parsed) {
        Bad(
            fmt::format("pg_config[\"{}\"]: name / desc not strings or ranks not a list of ranks "
                        "(\"[0, 1]\"); skipped",
                        Clip(key->s)));
        continue;
      }
      g.ranks = std::move(*parsed);
      g.whole_world = g.ranks.empty();
      if (!g.ranks.empty()) g.size = static_cast<int32_t>(g.ranks.size());
      g.src = ctx_.Ref(0);
      ctx_.out->hang().groups.push_back(std::move(g));
      ++groups_;
    }
  }

  void MapStatus(const Value& status) {
    if (!status.is_dict())
      return Bad(fmt::format("pg_status is a {}, not a dict", pickle::KindName(status.kind)));
    for (const auto& [key, s] : status.dict) {
      if (!key->is_string() || !s->is_dict()) {
        Bad("pg_status record that is not a dict under a string group id; skipped");
        continue;
      }
      bool bad = false;
      GroupProgress p;
      p.pg_id = key->s;
      p.last_enqueued = IntField(*s, "last_enqueued_collective", bad);
      p.last_started = IntField(*s, "last_started_collective", bad);
      p.last_completed = IntField(*s, "last_completed_collective", bad);
      if (bad) {
        Bad(fmt::format("pg_status[\"{}\"]: a last_*_collective that is no integer; skipped",
                        Clip(key->s)));
        continue;
      }
      dump_.status.push_back(std::move(p));
    }
  }

  void MapEntries(const Value& entries) {
    if (!entries.is_sequence())
      return Bad(fmt::format("entries is a {}, not a list", pickle::KindName(entries.kind)));
    for (size_t k = 0; k < entries.items.size(); ++k) {
      const Value& e = *entries.items[k];
      if (e.partial) {
        ++cut_entries_;
        continue;
      }
      if (auto why = MapEntry(e)) Bad(fmt::format("entry {}: {}; skipped", k, *why), e.offset);
    }
  }

  // Returns why the entry was not taken, if it was not.
  std::optional<std::string> MapEntry(const Value& e) {
    if (!e.is_dict()) return fmt::format("a {}, not a dict", pickle::KindName(e.kind));
    bool bad = false;
    CollectiveRecord r;
    std::optional<int64_t> record_id = IntField(e, "record_id", bad);
    std::optional<std::string> op = StringField(e, "profiling_name", bad);
    if (bad || !record_id || !op)
      return std::string("no integer record_id or string profiling_name");
    r.record_id = *record_id;
    r.op = std::move(*op);
    // pg_id is the process's own id of the group (pg_status's key),
    // process_group[0] its name (pg_config's key): two counters that need
    // not agree (model/hang.h).
    std::optional<int64_t> pg_id = IntField(e, "pg_id", bad);
    if (const Value* pg = e.Get("process_group")) {
      if (!pg->is_sequence() || pg->items.size() != 2 || !pg->items[0]->is_string() ||
          !pg->items[1]->is_string()) {
        return std::string("process_group is not (name, desc)");
      }
      r.pg_name = pg->items[0]->s;
      r.pg_desc = pg->items[1]->s;
    }
    r.pg_id = pg_id ? std::to_string(*pg_id) : r.pg_name;
    r.collective_seq = IntField(e, "collective_seq_id", bad);
    r.p2p_seq = IntField(e, "p2p_seq_id", bad);
    r.op_id = IntField(e, "op_id", bad);
    auto time = [&](std::string_view key) -> std::optional<TimeNs> {
      std::optional<int64_t> t = IntField(e, key, bad);
      if (t && *t == 0) return std::nullopt;  // JSON's "not discovered"
      return t;
    };
    r.created_ns = time("time_created_ns");
    r.started_ns = time("time_discovered_started_ns");
    r.completed_ns = time("time_discovered_completed_ns");
    r.duration_ms = NumberField(e, "duration_ms", bad);
    r.timeout_ms = NumberField(e, "timeout_ms", bad);
    r.retired = BoolField(e, "retired", bad);
    r.is_p2p = BoolField(e, "is_p2p", bad);
    if (bad) return std::string("a seq, time, duration, timeout or flag of the wrong type");
    if (auto state = StringField(e, "state", bad)) {
      if (*state == "scheduled") {
        r.state = CollectiveState::kScheduled;
      } else if (*state == "started") {
        r.state = CollectiveState::kStarted;
      } else if (*state == "completed") {
        r.state = CollectiveState::kCompleted;
      } else {
        return fmt::format("state \"{}\" (not scheduled / started / completed)", Clip(*state));
      }
    }
    if (!Sizes(e.Get("input_sizes"), r.input_sizes) ||
        !Sizes(e.Get("output_sizes"), r.output_sizes)) {
      return std::string("input_sizes / output_sizes not lists of lists of ints");
    }
    if (!Strings(e.Get("input_dtypes"), r.input_dtypes) ||
        !Strings(e.Get("output_dtypes"), r.output_dtypes)) {
      return std::string("input_dtypes / output_dtypes not lists of strings");
    }
    if (bad) return std::string("state is not a string");
    if (const Value* frames = e.Get("frames")) {
      if (!frames->is_sequence()) return std::string("frames is not a list");
      for (const ValuePtr& f : frames->items) {
        if (!f->is_dict()) return std::string("a frame that is not a dict");
        StackFrame sf;
        sf.name = StringField(*f, "name", bad).value_or("");
        sf.file = StringField(*f, "filename", bad).value_or("");
        std::optional<int64_t> line = IntField(*f, "line", bad);
        if (bad) return std::string("a frame's name / filename / line of the wrong type");
        sf.line = line ? static_cast<int32_t>(std::clamp<int64_t>(*line, 0, INT32_MAX)) : 0;
        r.frames.push_back(std::move(sf));
      }
    }
    dump_.entries.push_back(std::move(r));
    return std::nullopt;
  }

  static bool Sizes(const Value* v, std::vector<std::vector<int64_t>>& out) {
    if (v == nullptr || v->kind == Value::Kind::kNone) return true;
    if (!v->is_sequence()) return false;
    for (const ValuePtr& arg : v->items) {
      if (!arg->is_sequence()) return false;
      std::vector<int64_t> dims;
      for (const ValuePtr& d : arg->items) {
        if (!d->is_int()) return false;
        dims.push_back(d->i);
      }
      out.push_back(std::move(dims));
    }
    return true;
  }
  static bool Strings(const Value* v, std::vector<std::string>& out) {
    if (v == nullptr || v->kind == Value::Kind::kNone) return true;
    if (!v->is_sequence()) return false;
    for (const ValuePtr& s : v->items) {
      if (!s->is_string()) return false;
      out.push_back(s->s);
    }
    return true;
  }

  ReaderContext& ctx_;
  FlightRecorderDump dump_;
  uint64_t groups_ = 0;
  uint64_t cut_entries_ = 0;
};

class FlightRecorderReader : public TraceReader {
 public:
  std::string_view name() const override { return "flight-recorder"; }

  // kSniffCertain: a head with a dump's own keys (pg_status, an entry's
  // collective_seq_id) is a dump, whatever else reads JSON; the Kineto
  // reader yields too (it wants traceEvents / schemaVersion / ...).
  int Sniff(std::string_view head) const override { return SniffDump(head); }

  uint64_t Read(const std::string& path, ReaderContext& ctx) const override {
    auto source = OpenByteSource(path, ctx.gzip_decode);
    if (!source.ok()) {
      ctx.diag().Add(DiagCode::kFileUnreadable, path, 0, source.status().message());
      return 0;
    }
    std::string data;
    char buf[1 << 16];
    while (size_t n = (*source)->Read(buf, sizeof buf)) {
      if (data.size() + n > kMaxDumpBytes) {
        ctx.diag().AddAtOffset(DiagCode::kHangDumpRefused, path, kMaxDumpBytes,
                               fmt::format("over {} MiB, more than any Flight Recorder dump; "
                                           "not read",
                                           kMaxDumpBytes >> 20));
        return 0;
      }
      data.append(buf, n);
    }
    CountStreamDamage(**source, path, ctx.diag());
    bool is_pickle = !data.empty() && static_cast<uint8_t>(data[0]) == 0x80;
    return is_pickle ? ReadPickle(data, ctx) : ReadJson(data, ctx);
  }

 private:
  static uint64_t ReadPickle(std::string_view data, ReaderContext& ctx) {
    pickle::UnpickleResult r = pickle::Unpickle(data);
    using Stop = pickle::UnpickleResult::Stop;
    if (r.stop == Stop::kForbidden) {
      ctx.diag().AddAtOffset(DiagCode::kHangDumpRefused, ctx.path, r.error_offset, r.error);
      return 0;
    }
    return MapTop(r.value, "pickle", r.stop != Stop::kNone, r.stop == Stop::kTruncated,
                  r.error_offset, r.error, ctx);
  }

  static uint64_t ReadJson(std::string_view data, ReaderContext& ctx) {
    JsonTreeBuilder b;
    bool ok = nlohmann::json::sax_parse(data.begin(), data.end(), &b,
                                        nlohmann::json::input_format_t::json, true);
    if (ok) return MapTop(b.root, "json", false, false, 0, "", ctx);
    b.CloseAll();
    size_t at = std::min(b.error_position, data.size());
    // nlohmann reports the position one past the byte it stopped at; a stop
    // with only blanks left is the end of the data.
    size_t byte = at > 0 ? at - 1 : 0;
    bool truncated =
        at >= data.size() || (Trim(data.substr(at)).empty() &&
                              b.error.find("unexpected end of input") != std::string::npos);
    std::string error = b.error.empty() ? std::string("invalid JSON") : Printable(b.error, 200);
    return MapTop(b.root, "json", true, truncated, truncated ? data.size() : byte, error, ctx);
  }

  static uint64_t MapTop(const ValuePtr& top, std::string_view format, bool stopped, bool truncated,
                         uint64_t offset, const std::string& error, ReaderContext& ctx) {
    if (!top || !top->is_dict()) {
      if (stopped) {
        ctx.diag().AddAtOffset(
            truncated ? DiagCode::kHangDumpTruncated : DiagCode::kHangDumpCorrupt, ctx.path, offset,
            error + "; nothing complete before it");
      } else {
        ctx.diag().AddAtOffset(DiagCode::kHangDumpRefused, ctx.path, 0,
                               fmt::format("the {} holds a {}, not a dump's dict", format,
                                           top ? pickle::KindName(top->kind) : "nothing"));
      }
      return 0;
    }
    DumpMapper m(ctx, format);
    if (stopped) m.SetTruncated();
    uint64_t taken = m.Map(*top);
    if (stopped) {
      const FlightRecorderDump& d = ctx.out->hang().dumps.back();
      ctx.diag().AddAtOffset(
          truncated ? DiagCode::kHangDumpTruncated : DiagCode::kHangDumpCorrupt, ctx.path, offset,
          fmt::format("{}; kept {} complete entries, {} group statuses{}", error, d.entries.size(),
                      d.status.size(),
                      m.cut_entries() > 0 ? fmt::format(", dropped {} cut entry", m.cut_entries())
                                          : std::string()));
    }
    return taken;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeFlightRecorderReader() {
  return std::make_unique<FlightRecorderReader>();
}

}  // namespace laggard
