#include "base/text.h"

#include <algorithm>
#include <cmath>

namespace laggard {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLowerAscii(c);
  return out;
}

size_t FindIgnoreCase(std::string_view haystack, std::string_view needle, size_t from) {
  if (needle.empty()) return from <= haystack.size() ? from : std::string_view::npos;
  if (needle.size() > haystack.size()) return std::string_view::npos;
  for (size_t i = from; i + needle.size() <= haystack.size(); ++i) {
    if (EqualsIgnoreCase(haystack.substr(i, needle.size()), needle)) return i;
  }
  return std::string_view::npos;
}

std::optional<double> ParseDouble(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Printable(std::string_view s, size_t max_len) {
  std::string out;
  out.reserve(std::min(s.size(), max_len) + 3);
  for (char c : s) {
    if (out.size() >= max_len) {
      out += "...";
      return out;
    }
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : (c == '\t' ? ' ' : '?'));
  }
  return out;
}

std::vector<std::string_view> SplitBlanks(std::string_view s) {
  std::vector<std::string_view> out;
  SplitBlanks(s, out);
  return out;
}

void SplitBlanks(std::string_view s, std::vector<std::string_view>& out) {
  out.clear();
  size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && IsSpace(s[p])) ++p;
    size_t start = p;
    while (p < s.size() && !IsSpace(s[p])) ++p;
    if (p > start) out.push_back(s.substr(start, p - start));
  }
}

std::optional<int> ParseFixedDigits(std::string_view s, size_t min_len, size_t max_len) {
  if (s.size() < min_len || s.size() > max_len) return std::nullopt;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
  }
  return ParseInt<int>(s);
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9') ++ei;
      while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9') ++ej;
      std::string_view na(a.data() + i, ei - i), nb(b.data() + j, ej - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei, j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string EscapeHtml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::optional<std::vector<int32_t>> ParseCpuList(std::string_view text, size_t max_cpus,
                                                 int32_t max_cpu) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  std::vector<int32_t> out;
  for (std::string_view part : Split(text, ',')) {
    size_t dash = part.find('-');
    std::optional<int32_t> lo = ParseInt<int32_t>(part.substr(0, dash));
    std::optional<int32_t> hi =
        dash == std::string_view::npos ? lo : ParseInt<int32_t>(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > max_cpu || part.front() == '+' ||
        (dash != std::string_view::npos && dash + 1 < part.size() && part[dash + 1] == '+'))
      return std::nullopt;
    if (static_cast<size_t>(*hi - *lo) + 1 > max_cpus - std::min(out.size(), max_cpus))
      return std::nullopt;
    for (int32_t c = *lo; c <= *hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool ParseHostPort(std::string_view text, std::string& host, int& port) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  auto p = ParseInt<int>(text.substr(colon + 1));
  if (!p || *p < 0 || *p > 65535) return false;
  host = h.empty() ? "127.0.0.1" : std::string(h);
  port = *p;
  return true;
}

}  // namespace laggard
