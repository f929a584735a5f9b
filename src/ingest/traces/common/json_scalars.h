// JSON scalars every trace reader decodes the same way: time stamps in
// microseconds as decimal text, \u escapes, token trimming. Used by the
// Kineto tokenizer and parser (kineto/json_tokens.h re-exports them) and by
// the torch legacy reader.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_INGEST_TRACES_COMMON_JSON_SCALARS_H_
#define LAGGARD_INGEST_TRACES_COMMON_JSON_SCALARS_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "base/text.h"

namespace laggard {

// JSON whitespace: space, \t, \n, \r (one compare for printable bytes).
inline bool IsBlank(char c) {
  constexpr uint64_t kBlanks =
      (uint64_t{1} << ' ') | (uint64_t{1} << '\t') | (uint64_t{1} << '\n') | (uint64_t{1} << '\r');
  auto u = static_cast<unsigned char>(c);
  return u <= ' ' && ((kBlanks >> u) & 1) != 0;
}

// |ts| and ts + dur bound (us): keeps base + ts + dur in int64 ns (4e15 us is
// the year 2096).
inline constexpr int64_t kMaxAbsTimeUs = 4'000'000'000'000'000;

inline std::string_view TrimToken(std::string_view t) {
  while (!t.empty() && IsBlank(t.back())) t.remove_suffix(1);
  return t;
}

inline bool IsJsonString(std::string_view t) {
  return t.size() >= 2 && t.front() == '"' && t.back() == '"';
}

// The eight ASCII digits at p as a number (SWAR: pairs, then quads, then
// the eight), or false when any of them is not a digit.
inline bool EightDigits(const char* p, uint64_t& out) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  // A digit has high nibble 3, and so has the digit + 6 (':' + 6 has 4).
  if (((v & 0xF0F0F0F0F0F0F0F0ULL) |
       (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) != 0x3333333333333333ULL) {
    return false;
  }
  v -= 0x3030303030303030ULL;  // p[0], the first digit, is the low byte
  v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;
  v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;
  out = (v * 10000 + (v >> 32)) & 0xFFFFFFFFULL;
  return true;
}

// Microseconds as JSON decimal text (or a string holding one) -> ns, exactly:
// "4458676983543.1836" is 4458676983543 us + 183.6 ns -> 4458676983543184 ns
// (rounded half up on the fourth decimal). Exponents go through strtod.
// nullopt when not a number or past kMaxAbsTimeUs.
std::optional<int64_t> ParseMicrosToNs(std::string_view tok);

// Code point `cp` appended to `out` as UTF-8.
void AppendUtf8(uint32_t cp, std::string& out);
// The four hex digits at s[i..i+4) as a number; nullopt when any is not one
// or s is shorter.
std::optional<uint32_t> Hex4(std::string_view s, size_t i);

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_JSON_SCALARS_H_
