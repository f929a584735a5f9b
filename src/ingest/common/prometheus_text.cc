#include "ingest/common/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "base/text.h"

namespace laggard::prom {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A cursor over one line; every Parse* consumes what it read.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  bool done() const { return p_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[p_]; }
  void skip() { ++p_; }
  void SkipBlanks() {
    while (!done() && IsBlank(s_[p_])) ++p_;
  }
  std::string_view rest() const { return s_.substr(p_); }

  // [a-zA-Z_:][a-zA-Z0-9_:]* (metric) or without ':' (label).
  std::string_view Name(bool allow_colon) {
    size_t start = p_;
    while (!done()) {
      char c = s_[p_];
      bool ok = IsAlpha(c) || c == '_' || (allow_colon && c == ':') || (p_ > start && IsDigit(c));
      if (!ok) break;
      ++p_;
    }
    return s_.substr(start, p_ - start);
  }

  // A token up to the next blank.
  std::string_view Token() {
    size_t start = p_;
    while (!done() && !IsBlank(s_[p_])) ++p_;
    return s_.substr(start, p_ - start);
  }

  // A double-quoted string with \\ \" \n escapes, unescaped into `out`.
  bool Quoted(std::string& out, std::string& error) {
    out.clear();
    if (peek() != '"') {
      error = "expected '\"'";
      return false;
    }
    ++p_;
    while (!done()) {
      char c = s_[p_++];
      if (c == '"') return true;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (done()) break;
      char e = s_[p_++];
      if (e == '\\' || e == '"') {
        out.push_back(e);
      } else if (e == 'n') {
        out.push_back('\n');
      } else {
        error =
            std::string("invalid escape sequence '\\") + Printable(std::string_view(&e, 1)) + "'";
        return false;
      }
    }
    error = "unterminated quoted string";
    return false;
  }

 private:
  std::string_view s_;
  size_t p_ = 0;
};

std::optional<double> ParseValue(std::string_view t) {
  std::string_view u = t;
  bool negative = false;
  if (!u.empty() && (u.front() == '+' || u.front() == '-')) {
    negative = u.front() == '-';
    u.remove_prefix(1);
  }
  if (EqualsIgnoreCase(u, "inf") || EqualsIgnoreCase(u, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (EqualsIgnoreCase(u, "nan")) {
    if (u.size() != t.size()) return std::nullopt;  // a sign before NaN, as Go refuses it
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Digits, '.', exponent only: from_chars would also take "nan(...)".
  if (u.empty()) return std::nullopt;
  for (char c : u) {
    if (!(IsDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return std::nullopt;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(u.data(), u.data() + u.size(), v);
  if (ec != std::errc() || end != u.data() + u.size()) return std::nullopt;
  return negative ? -v : v;
}

// Prometheus: integer milliseconds. OpenMetrics: seconds with a fraction.
std::optional<int64_t> ParseTimestamp(std::string_view t) {
  if (auto ms = ParseInt<int64_t>(t)) {
    if (!t.empty() && t.front() == '+') return std::nullopt;
    return ms;
  }
  auto s = ParseValue(t);
  if (!s || !std::isfinite(*s)) return std::nullopt;
  double ms = *s * 1000.0;
  if (!(ms > -9.2e18 && ms < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(std::llround(ms));
}

bool ParseComment(std::string_view line, Line& out) {
  // "#" then blanks then a keyword; anything else is a plain comment.
  Cursor c(line.substr(1));
  c.SkipBlanks();
  std::string_view word = c.Token();
  if (word == "EOF" && (c.SkipBlanks(), c.done())) {
    out.kind = LineKind::kEof;
    return true;
  }
  bool help = word == "HELP";
  if (!help && word != "TYPE") {
    out.kind = LineKind::kComment;
    return true;
  }
  c.SkipBlanks();
  std::string_view name = c.Token();
  if (name.empty()) {
    out.kind = LineKind::kComment;  // "# HELP" alone: a comment, as Prometheus treats it
    return true;
  }
  out.kind = help ? LineKind::kHelp : LineKind::kType;
  out.metric.assign(name);
  c.SkipBlanks();
  std::string_view text = c.rest();
  out.text.clear();
  if (help) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == 'n')) {
        out.text.push_back(text[i + 1] == 'n' ? '\n' : '\\');
        ++i;
      } else {
        out.text.push_back(text[i]);
      }
    }
  } else {
    out.text.assign(Trim(text));
  }
  return true;
}

// The label set after '{', up to and including '}'.
bool ParseLabels(Cursor& c, Line& out, size_t& n, bool& have_metric, std::string& error) {
  std::string name;
  while (true) {
    c.SkipBlanks();
    if (c.peek() == '}') {
      c.skip();
      return true;
    }
    if (c.done()) {
      error = "label set not closed with '}'";
      return false;
    }
    if (c.peek() == '"') {
      if (!c.Quoted(name, error)) return false;
      c.SkipBlanks();
      if (c.peek() != '=') {
        // {"metric.name", ...}: a quoted metric name, once, first.
        if (have_metric || n > 0) {
          error = "quoted name without '=' after the first item";
          return false;
        }
        out.metric = name;
        have_metric = true;
        if (c.peek() == ',') c.skip();
        else if (c.peek() != '}') {
          error = "expected ',' or '}' after the metric name";
          return false;
        }
        continue;
      }
    } else {
      std::string_view plain = c.Name(false);
      if (plain.empty()) {
        error = "expected a label name";
        return false;
      }
      name.assign(plain);
    }
    if (name.empty()) {
      error = "empty label name";
      return false;
    }
    c.SkipBlanks();
    if (c.peek() != '=') {
      error = "expected '=' after label " + Printable(name, 40);
      return false;
    }
    c.skip();
    c.SkipBlanks();
    if (n == out.labels.size()) out.labels.emplace_back();
    Label& label = out.labels[n];
    if (!c.Quoted(label.value, error)) return false;
    for (size_t i = 0; i < n; ++i) {
      if (out.labels[i].name == name) {
        error = "duplicate label " + Printable(name, 40);
        return false;
      }
    }
    label.name = name;
    ++n;
    c.SkipBlanks();
    if (c.peek() == ',') {
      c.skip();
    } else if (c.peek() != '}') {
      error = "expected ',' or '}' after a label value";
      return false;
    }
  }
}

bool ParseSample(std::string_view line, Line& out, std::string& error) {
  Cursor c(line);
  out.kind = LineKind::kSample;
  out.timestamp_ms.reset();
  bool have_metric = false;
  if (c.peek() != '{') {
    std::string_view name = c.Name(true);
    if (name.empty()) {
      error = "expected a metric name";
      return false;
    }
    out.metric.assign(name);
    have_metric = true;
  }
  size_t n = 0;
  bool blank = IsBlank(c.peek());
  c.SkipBlanks();
  if (c.peek() == '{') {
    c.skip();
    if (!ParseLabels(c, out, n, have_metric, error)) return false;
    blank = IsBlank(c.peek());
    c.SkipBlanks();
  }
  out.labels.resize(n);
  if (!have_metric || out.metric.empty()) {
    error = "no metric name";
    return false;
  }
  if (!blank && !c.done()) {
    error = "unexpected character after the metric name";
    return false;
  }
  std::string_view value = c.Token();
  if (value.empty()) {
    error = "no value";
    return false;
  }
  auto v = ParseValue(value);
  if (!v) {
    error = "value is not a number: \"" + Printable(value, 40) + "\"";
    return false;
  }
  out.value = *v;
  c.SkipBlanks();
  if (c.done() || c.peek() == '#') return true;  // '#': an OpenMetrics exemplar
  std::string_view ts = c.Token();
  auto t = ParseTimestamp(ts);
  if (!t) {
    error = "timestamp is not a number: \"" + Printable(ts, 40) + "\"";
    return false;
  }
  out.timestamp_ms = t;
  c.SkipBlanks();
  if (!c.done() && c.peek() != '#') {
    error = "unexpected text after the timestamp";
    return false;
  }
  return true;
}

void AppendName(std::string& out, std::string_view name, bool legacy) {
  if (legacy) {
    out += name;
    return;
  }
  out += '"';
  AppendEscapedLabelValue(out, name);
  out += '"';
}

}  // namespace

const std::string* Line::FindLabel(std::string_view name) const {
  for (const Label& l : labels) {
    if (l.name == name) return &l.value;
  }
  return nullptr;
}

bool ParseLine(std::string_view line, Line& out, std::string& error) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t i = 0;
  while (i < line.size() && IsBlank(line[i])) ++i;
  line.remove_prefix(i);
  if (line.empty()) {
    out.kind = LineKind::kBlank;
    return true;
  }
  if (line.front() == '#') return ParseComment(line, out);
  return ParseSample(line, out, error);
}

bool IsLegacyMetricName(std::string_view name) {
  if (name.empty() || IsDigit(name.front())) return false;
  for (char c : name) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '_' || c == ':')) return false;
  }
  return true;
}

bool IsLegacyLabelName(std::string_view name) {
  if (name.empty() || IsDigit(name.front())) return false;
  for (char c : name) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '_')) return false;
  }
  return true;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

std::string FormatSample(std::string_view metric, const std::vector<Label>& labels, double value,
                         std::optional<int64_t> timestamp_ms) {
  std::string out;
  bool legacy = IsLegacyMetricName(metric);
  if (legacy) out += metric;
  if (!labels.empty() || !legacy) {
    out += '{';
    bool first = true;
    if (!legacy) {
      AppendName(out, metric, false);
      first = false;
    }
    for (const Label& l : labels) {
      if (!first) out += ',';
      first = false;
      AppendName(out, l.name, IsLegacyLabelName(l.name));
      out += "=\"";
      AppendEscapedLabelValue(out, l.value);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += FormatValue(value);
  if (timestamp_ms) {
    out += ' ';
    out += std::to_string(*timestamp_ms);
  }
  return out;
}

}  // namespace laggard::prom
