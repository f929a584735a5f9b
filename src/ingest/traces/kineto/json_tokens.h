// JSON tokens, the Kineto reader's second stage: a lexer over the subset of
// JSON Kineto writes, on raw bytes, and the decoders of the raw tokens it
// finds (and that simdjson's raw_json_token returns: trailing blanks
// included).
//
//   Flat*            the end of a string, number or literal, of a flat array
//                    of them, of a member's key; the next member; a grid /
//                    block triple. Each returns the byte after what it read,
//                    or nullptr to give up: the subset is strings, numbers,
//                    literals and flat arrays, and anything outside it (a
//                    nested value where none is expected, a control or
//                    non-ASCII byte where simdjson's stage 1 could reject
//                    it, a malformed token) is left to simdjson On-Demand,
//                    so that what is read never depends on which path read
//                    it. `c` is below `end` on entry.
//   DecodeString     a string token's content, unescaped when it must be
//   ParseMicrosToNs  (traces/common/json_scalars.h) us as decimal text -> ns
//   ParseIntToken    an integer token, or a string holding one
//
// Called by the event tokenizer (event_tokenizer.h) for each event it
// reads, and by the parser (kineto_parser.h) for the tokens it converts.
// Inline here where they run per token; the rest is in json_tokens.cc.
// Every Flat* helper reads up to 32 bytes past `end` (the buffer is
// padded).
//
// Thread-safety: pure functions.

#ifndef LAGGARD_INGEST_TRACES_KINETO_JSON_TOKENS_H_
#define LAGGARD_INGEST_TRACES_KINETO_JSON_TOKENS_H_

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "base/text.h"
#include "ingest/traces/common/json_scalars.h"
#include "ingest/traces/kineto/byte_scanner.h"

namespace laggard::kineto {

// Shared with the other trace readers (traces/common/json_scalars.h).
using ::laggard::AppendUtf8;
using ::laggard::EightDigits;
using ::laggard::Hex4;
using ::laggard::IsJsonString;
using ::laggard::kMaxAbsTimeUs;
using ::laggard::ParseMicrosToNs;
using ::laggard::TrimToken;

// Whether [c, end) starts with `lit` (a constant: the compare is inlined).
[[gnu::always_inline]] inline bool At(const char* c, const char* end, std::string_view lit) {
  return end - c >= static_cast<ptrdiff_t>(lit.size()) &&
         std::memcmp(c, lit.data(), lit.size()) == 0;
}

inline const char* SkipBlanks(const char* c, const char* end) {
  while (c < end && IsBlank(*c)) ++c;
  return c;
}

// c is just past a string's opening quote: the byte after its closing quote.
// An escape takes the next byte whatever it is, as simdjson's stage 1 does
// (the raw token is kept; DecodeString checks escapes where one is decoded).
[[gnu::always_inline]] inline const char* FlatStringEnd(const char* c, const char* end) {
  for (;;) {
    c = FindStringStop(c, end);
    if (c == nullptr) return nullptr;
    if (*c == '"') return c + 1;
    if (*c != '\\' || c + 1 >= end) return nullptr;  // control or non-ASCII byte
    auto next = static_cast<unsigned char>(c[1]);
    if (next < 0x20 || next >= 0x80) return nullptr;
    c += 2;
  }
}

// Whether the rest of an event, [c, end) from outside a string, is bytes
// simdjson's stage 1 accepts (strings closed, ASCII, no raw control byte in
// a string): an event the walker leaves early must still be one On-Demand
// would have parsed, since its stage 1 reads the whole event first.
[[gnu::always_inline]] inline bool FlatRestClean(const char* c, const char* end) {
  for (;;) {
    c = FindOutsideStop(c, end);
    if (c == nullptr) return true;
    if (*c != '"') return false;
    c = FlatStringEnd(c + 1, end);
    if (c == nullptr) return false;
  }
}

// A string, number or literal (its token is what On-Demand's raw_json_token
// gives without the trailing blanks). A number or literal must end at a
// blank, ',', '}' or ']': stage 1 reads `e"x"` as one token, for one, so a
// token that stops at anything else is left to On-Demand.
[[gnu::always_inline]] inline const char* FlatScalarEnd(const char* c, const char* end) {
  if (*c == '"') return FlatStringEnd(c + 1, end);
  const char* stop = FindScalarEnd(c, end);
  if (stop == c || stop >= end) return nullptr;
  char after = *stop;
  return IsBlank(after) || after == ',' || after == '}' || after == ']' ? stop : nullptr;
}

inline uint16_t Load2(const char* c) {
  uint16_t v;
  std::memcpy(&v, c, 2);
  return v;
}
constexpr uint16_t Pair(char a, char b) {
  return static_cast<uint16_t>(static_cast<unsigned char>(a) | static_cast<unsigned char>(b) << 8);
}

// q is at a member's opening quote: sets `key` (just past that quote) and
// returns the start of its value, after the ':' and blanks.
inline const char* FlatMemberValue(const char* q, const char* end, const char*& key) {
  if (q >= end || *q != '"') return nullptr;
  key = q + 1;
  q = FlatStringEnd(key, end);
  if (q == nullptr || end - q < 3) return nullptr;
  if (Load2(q) == Pair(':', ' ') && !IsBlank(q[2])) return q + 2;  // Kineto's ": "
  q = SkipBlanks(q, end);
  if (q >= end || *q != ':') return nullptr;
  q = SkipBlanks(q + 1, end);
  return q < end ? q : nullptr;
}

// q is just past a member's value: the next member's opening quote, or the
// byte after the object's '}' with `closed` set; nullptr otherwise.
inline const char* FlatNextMember(const char* q, const char* end, bool& closed) {
  if (end - q >= 3 && Load2(q) == Pair(',', ' ') && q[2] == '"') return q + 2;  // Kineto's ", "
  q = SkipBlanks(q, end);
  if (q >= end) return nullptr;
  if (*q == '}') {
    closed = true;
    return q + 1;
  }
  if (*q != ',') return nullptr;
  return SkipBlanks(q + 1, end);
}

// An array of scalars, at its '['.
[[gnu::noinline]] const char* FlatArrayEnd(const char* c, const char* end);

// A scalar or an array of scalars.
[[gnu::always_inline]] inline const char* FlatValueEnd(const char* c, const char* end) {
  return *c == '[' ? FlatArrayEnd(c, end) : FlatScalarEnd(c, end);
}

// "[132, 1, 1]": three integers of 1 to 18 digits without sign or leading
// zero (what get_int64 reads alike; anything else is left to On-Demand).
inline const char* FlatDims3(const char* c, const char* end, std::array<int64_t, 3>& out) {
  if (*c != '[') return nullptr;
  // Kineto's "[a, b, c]" (numbers of up to 8 digits) in one pass; anything
  // else (blanks elsewhere, longer numbers) the general loop below reads.
  if (end - c >= 10) {
    const char* d = c + 1;
    size_t i = 0;
    for (; i < 3; ++i) {
      const char* begin = d;
      int64_t v = 0;
      while (IsDigit(*d) && d - begin < 8) v = v * 10 + (*d++ - '0');
      if (d == begin || (d - begin > 1 && *begin == '0') || d >= end) break;
      out[i] = v;
      if (i < 2 ? Load2(d) != Pair(',', ' ') : *d != ']') break;
      d += i < 2 ? 2 : 1;
    }
    if (i == 3) return d;
  }
  c = SkipBlanks(c + 1, end);
  for (size_t i = 0; i < 3; ++i) {
    if (i > 0) {
      if (c >= end || *c != ',') return nullptr;
      c = SkipBlanks(c + 1, end);
    }
    const char* begin = c;
    while (c < end && IsDigit(*c)) ++c;
    size_t digits = static_cast<size_t>(c - begin);
    if (digits == 0 || digits > 18 || (digits > 1 && *begin == '0')) return nullptr;
    int64_t v = 0;
    for (const char* d = begin; d < c; ++d) v = v * 10 + (*d - '0');
    out[i] = v;
    c = SkipBlanks(c, end);
  }
  if (c >= end || *c != ']') return nullptr;
  return c + 1;
}

// The content of a JSON string token ("..." with its quotes), unescaped into
// `scratch` only when it holds a backslash. nullopt when not a string or
// when an escape is malformed; a lone surrogate decodes to U+FFFD.
std::optional<std::string_view> DecodeString(std::string_view tok, std::string& scratch);

// An integer token (or a string holding one); "3.0" is accepted, "3.5" not.
std::optional<int64_t> ParseIntToken(std::string_view tok);

}  // namespace laggard::kineto

#endif  // LAGGARD_INGEST_TRACES_KINETO_JSON_TOKENS_H_
