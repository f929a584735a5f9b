// Small string helpers shared by every stage. Pure functions, no allocation
// unless the return type is std::string.

#ifndef LAGGARD_BASE_TEXT_H_
#define LAGGARD_BASE_TEXT_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace laggard {

inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline char ToLowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A table cell without surrounding blanks and one pair of double quotes
// around it: " \"node-1\" " -> node-1.
inline std::string_view TrimQuotes(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = Trim(s.substr(1, s.size() - 2));
  return s;
}

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLowerAscii(a[i]) != ToLowerAscii(b[i])) return false;
  }
  return true;
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}
inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string ToLower(std::string_view s);

// Case-insensitive substring search; npos when absent.
size_t FindIgnoreCase(std::string_view haystack, std::string_view needle, size_t from = 0);

// Whole-string integer / floating-point parses (surrounding blanks allowed).
template <typename Int>
std::optional<Int> ParseInt(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  Int v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}
std::optional<double> ParseDouble(std::string_view s);

std::vector<std::string_view> Split(std::string_view s, char sep);

// The words of `s`: its runs of non-blank characters (IsSpace), in order.
std::vector<std::string_view> SplitBlanks(std::string_view s);
// The same into `out` (cleared first), so that a caller splitting every row
// of a file reuses one vector's storage.
void SplitBlanks(std::string_view s, std::vector<std::string_view>& out);

// `s` read as a number when it is only ASCII digits, min_len to max_len of
// them ("06" -> 6 with 2..2); nullopt otherwise.
std::optional<int> ParseFixedDigits(std::string_view s, size_t min_len, size_t max_len);

// Replaces bytes that are not printable ASCII with '?' and cuts the result to
// max_len characters (adding "..."), for quoting input in messages.
std::string Printable(std::string_view s, size_t max_len = 120);

// "node-2" < "node-10": digit runs compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b);

// `s` with & < > " as HTML entities.
std::string EscapeHtml(std::string_view s);

// A Linux CPU list ("0-3,8,10-11", as /proc/<pid>/status and sysfs print
// it) as its CPUs, ascending and unique; nullopt when it is not one, or
// names more than max_cpus CPUs or a CPU above max_cpu.
std::optional<std::vector<int32_t>> ParseCpuList(std::string_view text, size_t max_cpus = 4096,
                                                 int32_t max_cpu = 1 << 20);

// "127.0.0.1:9401" / "[::1]:9401" / ":9401" (loopback) -> host, port.
bool ParseHostPort(std::string_view text, std::string& host, int& port);

}  // namespace laggard

#endif  // LAGGARD_BASE_TEXT_H_
