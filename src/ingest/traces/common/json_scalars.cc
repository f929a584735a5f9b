#include "ingest/traces/common/json_scalars.h"

#include <cmath>
#include <cstdlib>

namespace laggard {

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::optional<uint32_t> Hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return std::nullopt;
  uint32_t v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    else return std::nullopt;
  }
  return v;
}

std::optional<int64_t> ParseMicrosToNs(std::string_view tok) {
  // Kineto's own form, "3600654368.005" (whole us, '.', three decimals): at once.
  if (size_t n = tok.size(); n >= 5 && n <= 20 && tok[n - 4] == '.') {
    int64_t whole = 0;
    size_t i = 0;
    for (uint64_t eight = 0; i + 8 <= n - 4 && EightDigits(tok.data() + i, eight); i += 8) {
      whole = whole * 100000000 + static_cast<int64_t>(eight);
    }
    for (; i < n - 4 && IsDigit(tok[i]); ++i) whole = whole * 10 + (tok[i] - '0');
    if (i == n - 4 && IsDigit(tok[n - 3]) && IsDigit(tok[n - 2]) && IsDigit(tok[n - 1]) &&
        whole <= kMaxAbsTimeUs) {
      return whole * 1000 + (tok[n - 3] - '0') * 100 + (tok[n - 2] - '0') * 10 + (tok[n - 1] - '0');
    }
  }
  tok = TrimToken(tok);
  if (IsJsonString(tok)) tok = tok.substr(1, tok.size() - 2);
  if (tok.empty()) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (tok[0] == '-') neg = true, ++i;
  size_t int_begin = i;
  int64_t whole = 0;
  while (i < tok.size() && IsDigit(tok[i])) {
    whole = whole * 10 + (tok[i] - '0');
    if (whole > kMaxAbsTimeUs) return std::nullopt;
    ++i;
  }
  if (i == int_begin) return std::nullopt;
  int64_t frac_ns = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    size_t frac_begin = i;
    while (i < tok.size() && IsDigit(tok[i])) {
      if (frac_digits < 3) {
        frac_ns = frac_ns * 10 + (tok[i] - '0');
        ++frac_digits;
      } else if (frac_digits == 3) {
        round_up = tok[i] >= '5';
        ++frac_digits;
      }
      ++i;
    }
    if (i == frac_begin) return std::nullopt;
  }
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) {
    char buf[64];
    if (tok.size() >= sizeof buf) return std::nullopt;
    std::memcpy(buf, tok.data(), tok.size());
    buf[tok.size()] = '\0';
    char* end = nullptr;
    double v = std::strtod(buf, &end);
    if (end != buf + tok.size() || !std::isfinite(v) ||
        std::fabs(v) > static_cast<double>(kMaxAbsTimeUs)) {
      return std::nullopt;
    }
    return static_cast<int64_t>(std::llround(v * 1000.0));
  }
  if (i != tok.size()) return std::nullopt;
  while (frac_digits < 3) frac_ns *= 10, ++frac_digits;
  int64_t ns = whole * 1000 + frac_ns + (round_up ? 1 : 0);
  return neg ? -ns : ns;
}

}  // namespace laggard
