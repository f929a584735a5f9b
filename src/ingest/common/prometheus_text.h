// Prometheus text exposition format (version 0.0.4), one line at a time:
// the tokenizer under the dcgm-exporter reader (dcgm_exporter.cc), also
// used by the agent's tests to read back what it serves on /metrics.
//
//   # HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
//   # TYPE DCGM_FI_DEV_GPU_TEMP gauge
//   DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-...",Hostname="node-1"} 45 1700000000000
//
// Accepted, as the Prometheus and OpenMetrics parsers accept them:
//   - blanks (space, tab) between tokens, around labels and after commas; a
//     trailing comma before '}'; a trailing '\r';
//   - label values with the escapes \\ \" \n (any other escape is an error);
//   - values NaN, +Inf, -Inf, Inf (any case) and decimal / exponent floats;
//   - an optional timestamp: an integer is Prometheus' milliseconds since the
//     epoch, a number with a fraction or exponent is OpenMetrics' seconds;
//   - an OpenMetrics exemplar (" # {...} value") after the value, ignored;
//   - Prometheus 3 quoted names: {"metric.name", "label.name"="v"};
//   - "# HELP name doc" (doc unescaped: \\ and \n), "# TYPE name type",
//     "# EOF", any other "#" line as a comment.
// Rejected, with a reason: names with characters outside [a-zA-Z0-9_:]
// (labels: [a-zA-Z0-9_]) or starting with a digit, an unterminated label
// set or value, a duplicate label name, a value that is not a number,
// trailing text.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_INGEST_COMMON_PROMETHEUS_TEXT_H_
#define LAGGARD_INGEST_COMMON_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace laggard::prom {

struct Label {
  std::string name;
  std::string value;  // unescaped
};

enum class LineKind : uint8_t { kBlank, kComment, kHelp, kType, kSample, kEof };

struct Line {
  LineKind kind = LineKind::kBlank;
  std::string metric;                   // kSample, kHelp, kType
  std::vector<Label> labels;            // kSample, in input order
  double value = 0;                     // kSample; may be NaN or +-Inf
  std::optional<int64_t> timestamp_ms;  // kSample, when the line has one
  std::string text;                     // kHelp: docstring (unescaped); kType: the type

  // The value of label `name`, or nullptr.
  const std::string* FindLabel(std::string_view name) const;
};

// Parses one line (without its '\n'). Returns true and fills `out`, reusing
// its buffers, or false with the reason in `error` (`out` is then
// unspecified).
bool ParseLine(std::string_view line, Line& out, std::string& error);

// Whether `name` is a metric name the legacy format writes unquoted:
// [a-zA-Z_:][a-zA-Z0-9_:]*. Labels: [a-zA-Z_][a-zA-Z0-9_]*.
bool IsLegacyMetricName(std::string_view name);
bool IsLegacyLabelName(std::string_view name);

// Formats a value as the format writes it: "NaN", "+Inf", "-Inf", or the
// shortest decimal that reads back to the same double.
std::string FormatValue(double value);

// Appends `value` with \\, \" and \n escaped.
void AppendEscapedLabelValue(std::string& out, std::string_view value);

// One sample line (no '\n'), the inverse of ParseLine: names that are not
// legacy names are quoted (Prometheus 3 syntax).
std::string FormatSample(std::string_view metric, const std::vector<Label>& labels, double value,
                         std::optional<int64_t> timestamp_ms = std::nullopt);

}  // namespace laggard::prom

#endif  // LAGGARD_INGEST_COMMON_PROMETHEUS_TEXT_H_
