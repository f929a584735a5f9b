// JSON Lines step records, one object per line, keys as in field_names.h:
//
//   {"rank": 3, "step": 120, "step_time_ms": 812.3, "host": "node-a", "local_rank": 3}
//   {"rank": 3, "step": 121, "duration": "0.81s", "timestamp": "2024-05-01T12:00:01Z"}
//
// Parsed with simdjson On-Demand, one line at a time into a reused padded
// buffer. A line that is not an object with step and duration (and a rank,
// unless the file name gives one) is counted as jsonl.bad_line.

#include <simdjson.h>

#include <cmath>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/field_names.h"
#include "ingest/common/json_line.h"
#include "ingest/common/sniff.h"
#include "ingest/step_logs/step_log_readers.h"

namespace laggard {
namespace {

namespace od = simdjson::ondemand;

struct LineFields {
  std::optional<int64_t> rank;
  std::optional<int64_t> step;
  std::optional<DurationNs> duration;
  bool duration_explicit = false;  // from a duration-named key, not plain "time"
  bool duration_bad = false;
  TimeUnit unit = TimeUnit::kSeconds;
  std::optional<TimeNs> start;
  std::optional<std::string> host;
  std::optional<int64_t> gpu;
  std::optional<int64_t> stage;
  std::optional<int64_t> dp_rank;
  std::optional<std::string_view> compute;  // the value's text, as written
  std::optional<TimeUnit> compute_unit;     // from the key
  StepCpuText cpu;                          // CPU time, run-queue wait, probe, as written
};

std::optional<int64_t> IntValue(od::value v) {
  od::json_type type;
  if (v.type().get(type)) return std::nullopt;
  if (type == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) return i;
    double d;
    // 3.0 or 1e3 is an integer; 1e19 is out of range (and casting it is UB).
    if (!v.get_double().get(d) && d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d)) {
      return static_cast<int64_t>(d);
    }
    return std::nullopt;
  }
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    return ParseInt<int64_t>(s);
  }
  return std::nullopt;
}

// Text of a number or string value (numbers as their raw JSON token).
std::optional<std::string_view> ScalarText(od::value v) {
  od::json_type type;
  if (v.type().get(type)) return std::nullopt;
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    return s;
  }
  if (type == od::json_type::number) return Trim(v.raw_json_token());
  return std::nullopt;
}

// Fills `out` from one object; false when the line is not a JSON object.
bool ReadObject(od::document& doc, LineFields& out, std::string& why) {
  od::object obj;
  if (doc.get_object().get(obj)) {
    why = "not a JSON object";
    return false;
  }
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) {
      why = "malformed key";
      return false;
    }
    FieldName name = ClassifyFieldName(key);
    od::value value;
    if (field.value().get(value)) {
      why = "malformed value";
      return false;
    }
    switch (name.field) {
      case StepField::kRank: out.rank = IntValue(value); break;
      case StepField::kStep: out.step = IntValue(value); break;
      case StepField::kGpu: out.gpu = IntValue(value); break;
      case StepField::kStage: out.stage = IntValue(value); break;
      case StepField::kDpRank: out.dp_rank = IntValue(value); break;
      case StepField::kHost:
        if (auto s = ScalarText(value)) out.host = std::string(*s);
        break;
      case StepField::kStart:
        if (auto s = ScalarText(value)) out.start = ParseTimestamp(*s);
        break;
      case StepField::kDuration:
      case StepField::kAmbiguousTime: {
        bool is_explicit = name.field == StepField::kDuration;
        if (out.duration_explicit && !is_explicit) break;  // keep the better key
        if (out.duration && out.duration_explicit) break;  // first explicit key wins
        auto s = ScalarText(value);
        TimeUnit unit = TimeUnit::kSeconds;
        auto d = s ? ParseDurationValue(*s, name.unit, unit) : std::nullopt;
        out.duration = d;
        out.duration_bad = !d;
        out.duration_explicit = is_explicit;
        out.unit = unit;
        break;
      }
      case StepField::kCompute:
        if (!out.compute) {
          // null: not measured. Another non-scalar is kept as its token, so
          // that it is reported, not silently dropped.
          od::json_type type;
          if (!value.type().get(type) && type == od::json_type::null) break;
          out.compute = ScalarText(value).value_or(Trim(value.raw_json_token()));
          out.compute_unit = name.unit;
        }
        break;
      case StepField::kCpu:
      case StepField::kCpuWait:
      case StepField::kCpuProbe: {
        int which = CpuFieldOf(name.field);
        auto& text = out.cpu.text[which];
        od::json_type type;
        if (text || (!value.type().get(type) && type == od::json_type::null)) break;
        text = ScalarText(value).value_or(Trim(value.raw_json_token()));
        out.cpu.unit[which] = name.unit;
        break;
      }
      case StepField::kNone: break;
    }
  }
  return true;
}

class JsonlStepReader final : public TextReader {
 public:
  std::string_view name() const override { return "jsonl"; }

  int Sniff(std::string_view head) const override {
    // The first non-blank line decides. It may be cut by the head's end, or
    // be a whole file's only line: judged only if it parses whole.
    std::string_view line = FirstNonBlankHeadLine(head);
    if (line.empty() || line.front() != '{' || line.back() != '}') return kSniffNo;
    od::parser parser;
    simdjson::padded_string padded(line);
    od::document doc;
    if (parser.iterate(padded).get(doc)) return kSniffNo;
    LineFields f;
    std::string why;
    if (!ReadObject(doc, f, why)) return kSniffNo;
    return f.step && (f.duration || f.duration_bad) ? kSniffSure : kSniffNo;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    JsonLineParser parser;
    std::string_view line;
    uint64_t taken = 0;
    uint32_t units_seen = 0;
    while (lines.Next(line)) {
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      uint64_t n = lines.line_number();
      LineFields f;
      std::string why;
      od::document doc;
      bool ok = parser.Start(t, doc) && ReadObject(doc, f, why);
      if (ok && !f.step) why = "no integer step";
      else if (ok && !f.duration) why = f.duration_bad ? "duration is not a time" : "no duration";
      if (!ok || !f.step || !f.duration) {
        if (why.empty()) why = "malformed JSON";
        ctx.diag().Add(DiagCode::kJsonlBadLine, ctx.path, n,
                       fmt::format("{}: {}", why, Printable(t, 100)));
        continue;
      }
      units_seen |= 1u << static_cast<unsigned>(f.unit);
      DurationNs compute = ParseComputeField(ctx, n, f.compute, f.compute_unit);
      if (!AddParsedStep(ctx, n, f.rank, *f.step, f.duration, f.start, compute)) continue;
      ++taken;
      AddStepCpuFields(ctx, n, f.rank, *f.step, f.cpu);
      int64_t r = f.rank ? *f.rank : ctx.rank_from_path.value_or(-1);
      if (r < 0 || r > kMaxRank) continue;
      if (f.host) ctx.out->SetHost(static_cast<int32_t>(r), *f.host, ctx.path, n);
      auto role = [](std::optional<int64_t> v) -> std::optional<int32_t> {
        if (!v || *v < 0 || *v > kMaxRank) return std::nullopt;
        return static_cast<int32_t>(*v);
      };
      if (f.stage || f.dp_rank)
        ctx.out->SetRole(static_cast<int32_t>(r), role(f.stage), role(f.dp_rank));
      if (f.gpu && *f.gpu >= 0 && *f.gpu < 1024)
        ctx.out->SetLocalGpu(static_cast<int32_t>(r), static_cast<int32_t>(*f.gpu), ctx.path, n);
    }
    if (__builtin_popcount(units_seen) > 1) {
      ctx.diag().Add(DiagCode::kMixedUnits, ctx.path, 0,
                     "durations are written in more than one unit; each was converted");
    }
    return taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeJsonlStepReader() { return std::make_unique<JsonlStepReader>(); }

}  // namespace laggard
