#include "ingest/step_logs/megatron_straggler.h"

#include <array>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard {
namespace {

// A field's key, the metric it gives, and whether it is the minimum.
struct FieldKey {
  std::string_view key;
  ToolMetric metric;
  bool min;
};

constexpr std::array kFields = {
    FieldKey{"MnRtt", ToolMetric::kRoundTripMs, true},
    FieldKey{"MxRtt", ToolMetric::kRoundTripMs, false},
    FieldKey{"MnPwr", ToolMetric::kPowerW, true},
    FieldKey{"MxPwr", ToolMetric::kPowerW, false},
    FieldKey{"MnTmp", ToolMetric::kTempC, true},
    FieldKey{"MxTmp", ToolMetric::kTempC, false},
    FieldKey{"MnUtl", ToolMetric::kUtilPct, true},
    FieldKey{"MxUtl", ToolMetric::kUtilPct, false},
    FieldKey{"MnClk", ToolMetric::kClockMhz, true},
    FieldKey{"MxClk", ToolMetric::kClockMhz, false},
    FieldKey{"MnDRtt", ToolMetric::kDataMs, true},
    FieldKey{"MxDRtt", ToolMetric::kDataMs, false},
    FieldKey{"MnEtpt", ToolMetric::kTflops, true},
    FieldKey{"MxEtpt", ToolMetric::kTflops, false},
};

// Above this a power reading is milliwatts: no GPU draws 5 kW.
constexpr double kMilliwattsAbove = 5000;

// The factor that takes `unit` to `metric`'s unit; nullopt when the unit is
// not one the metric is written in.
std::optional<double> UnitFactor(ToolMetric metric, std::string_view unit, double value) {
  switch (metric) {
    case ToolMetric::kRoundTripMs:
    case ToolMetric::kDataMs:
      if (unit == "ms") return 1.0;
      if (unit == "us") return 1e-3;
      if (unit == "s") return 1e3;
      return std::nullopt;
    case ToolMetric::kPowerW:
      if (unit == "mW") return 1e-3;
      if (unit == "W") return value > kMilliwattsAbove ? 1e-3 : 1.0;
      return std::nullopt;
    case ToolMetric::kTempC:
      if (unit == "C") return 1.0;
      return std::nullopt;
    case ToolMetric::kUtilPct:
      if (unit == "%") return 1.0;
      return std::nullopt;
    case ToolMetric::kClockMhz:
      if (unit == "MHz") return 1.0;
      return std::nullopt;
    case ToolMetric::kTflops:
      if (unit == "TF") return 1.0;
      return std::nullopt;
    case ToolMetric::kCount: break;
  }
  return std::nullopt;
}

bool IsNumberChar(char c) { return IsDigit(c) || c == '.' || c == '-' || c == '+'; }

// `<value><unit>/<rank>`: the value (not yet converted), its unit and rank;
// nullopt with `why` when it does not read so.
struct RawValue {
  double value = 0;
  std::string_view unit;
  int32_t rank = 0;
};
// Text after the rank (a logger's " (utils.py:1234)") is ignored when a
// blank sets it apart.
std::optional<RawValue> ReadValueRank(std::string_view text, std::string& why) {
  text = Trim(text);
  size_t digits = 0;
  while (digits < text.size() && IsNumberChar(text[digits])) ++digits;
  std::optional<double> v = ParseDouble(text.substr(0, digits));
  if (!v || !std::isfinite(*v) || *v < 0) {
    why = "value is not a plain decimal number of zero or more";
    return std::nullopt;
  }
  size_t slash = text.find('/', digits);
  if (slash == std::string_view::npos) {
    why = "no /rank";
    return std::nullopt;
  }
  std::string_view rank_text = text.substr(slash + 1);
  rank_text = rank_text.substr(0, std::min(rank_text.find(' '), rank_text.find('\t')));
  std::optional<int64_t> rank = ParseInt<int64_t>(rank_text);
  if (!rank || *rank < 0 || *rank > kMaxRank) {
    why = "rank is not a rank number";
    return std::nullopt;
  }
  return RawValue{*v, Trim(text.substr(digits, slash - digits)), static_cast<int32_t>(*rank)};
}

// "YYYY-MM-DD HH:MM:SS" in `text`, the logger's time of the report; "" when
// none.
std::string_view FindTimestamp(std::string_view text) {
  constexpr size_t kLen = 19;
  for (size_t i = 0; i + kLen <= text.size(); ++i) {
    std::string_view t = text.substr(i, kLen);
    bool ok = true;
    for (size_t k = 0; k < kLen && ok; ++k) {
      char c = t[k];
      if (k == 4 || k == 7) ok = c == '-';
      else if (k == 10) ok = c == ' ' || c == 'T';
      else if (k == 13 || k == 16) ok = c == ':';
      else ok = IsDigit(c);
    }
    if (ok) return t;
  }
  return {};
}

void BadField(ReaderContext& ctx, uint64_t line, std::string_view field, std::string_view why) {
  ctx.diag().Add(DiagCode::kToolReportBadField, ctx.path, line,
                 fmt::format("StragglerDetector field \"{}\": {}", Printable(field, 60), why));
}

}  // namespace

bool StragglerReportScanner::Offer(std::string_view line, uint64_t line_number,
                                   ReaderContext& ctx) {
  size_t at = line.find("MnRtt/Rnk:");
  if (at != std::string_view::npos) {
    MainLine(line, at, line_number, ctx);
    return true;
  }
  size_t etpt = line.find("Etpt(TF):");
  if (etpt == std::string_view::npos) return false;
  at = line.find("^^^^ Bottom");
  if (at == std::string_view::npos) at = line.find("^^^^ Top");
  if (at == std::string_view::npos) at = line.rfind("^^^^ ", etpt);
  if (at == std::string_view::npos) return false;
  RankList(line, at, line_number, ctx);
  return true;
}

void StragglerReportScanner::MainLine(std::string_view line, size_t at, uint64_t line_number,
                                      ReaderContext& ctx) {
  ToolReport report;
  report.when = std::string(FindTimestamp(line.substr(0, at)));
  report.src = ctx.Ref(line_number);
  bool any = false;
  std::string why;
  std::array<bool, kFields.size()> seen{};
  // Power as printed: read as NVML's mW when any value of the report is.
  std::array<std::optional<RawValue>, 2> power;  // min, max
  for (std::string_view field : Split(line.substr(at), '|')) {
    field = Trim(field);
    if (field.empty()) continue;
    size_t colon = field.find("/Rnk:");
    const FieldKey* key = nullptr;
    if (colon != std::string_view::npos) {
      for (const FieldKey& k : kFields) {
        if (k.key == Trim(field.substr(0, colon))) key = &k;
      }
    }
    if (!key) {
      BadField(ctx, line_number, field, "not one of the fields StragglerDetector prints");
      continue;
    }
    if (seen[key - kFields.data()]) {
      BadField(ctx, line_number, field, "given twice in the line; the first was kept");
      continue;
    }
    seen[key - kFields.data()] = true;
    std::optional<RawValue> raw = ReadValueRank(field.substr(colon + 5), why);
    if (!raw) {
      BadField(ctx, line_number, field, why);
      continue;
    }
    std::optional<double> factor = UnitFactor(key->metric, raw->unit, raw->value);
    if (!factor) {
      BadField(ctx, line_number, field, fmt::format("unit \"{}\" is not this field's", raw->unit));
      continue;
    }
    any = true;
    if (key->metric == ToolMetric::kPowerW && raw->unit == "W") {
      power[key->min ? 0 : 1] = raw;
      continue;
    }
    ToolExtremes& m = report.metric(key->metric);
    (key->min ? m.min : m.max) = RankValue{raw->value * *factor, raw->rank};
  }
  bool milliwatts = false;
  for (const auto& p : power) milliwatts |= p && p->value > kMilliwattsAbove;
  ToolExtremes& pw = report.metric(ToolMetric::kPowerW);
  if (power[0]) pw.min = RankValue{power[0]->value * (milliwatts ? 1e-3 : 1.0), power[0]->rank};
  if (power[1]) pw.max = RankValue{power[1]->value * (milliwatts ? 1e-3 : 1.0), power[1]->rank};
  // A Bottom/Top list below belongs to this line's report, read or not.
  last_read_ = any;
  if (any) reports_.push_back(std::move(report));
}

void StragglerReportScanner::RankList(std::string_view line, size_t at, uint64_t line_number,
                                      ReaderContext& ctx) {
  std::string_view rest = line.substr(at + 5);
  const bool bottom = StartsWith(rest, "Bottom");
  if (!bottom && !StartsWith(rest, "Top")) {
    BadField(ctx, line_number, rest, "neither the Bottom nor the Top list");
    return;
  }
  std::vector<std::string_view> words = SplitBlanks(rest.substr(0, rest.find(':')));
  // The count the line gives; -1 when it gives none.
  const int64_t count = words.size() > 1 ? ParseInt<int64_t>(words[1]).value_or(-1) : -1;
  if (reports_.empty() || !last_read_ ||
      !(bottom ? reports_.back().lowest_tflops : reports_.back().highest_tflops).empty()) {
    BadField(ctx, line_number, rest,
             reports_.empty() || last_read_ ? "a rank list with no report line before it"
                                            : "a rank list whose report line did not read");
    return;
  }
  std::vector<RankValue>& out =
      bottom ? reports_.back().lowest_tflops : reports_.back().highest_tflops;
  std::string why;
  for (std::string_view entry : Split(rest.substr(rest.find(':') + 1), ',')) {
    if (Trim(entry).empty()) continue;
    std::optional<RawValue> raw = ReadValueRank(entry, why);
    if (!raw || !(raw->unit.empty() || raw->unit == "TF")) {
      BadField(ctx, line_number, entry, raw ? "unit is not TF" : why);
      continue;
    }
    out.push_back(RankValue{raw->value, raw->rank});
  }
  if (count < 0) {
    BadField(ctx, line_number, rest.substr(0, rest.find(':')), "no count of ranks");
  } else if (count != static_cast<int64_t>(out.size())) {
    BadField(ctx, line_number, rest.substr(0, rest.find(':')),
             fmt::format("the list names {} ranks, {} read", count, out.size()));
  }
}

uint64_t StragglerReportScanner::Finish(ReaderContext& ctx) {
  uint64_t n = reports_.size();
  for (ToolReport& r : reports_) ctx.out->AddToolReport(std::move(r));
  reports_.clear();
  return n;
}

}  // namespace laggard
