#include "ingest/traces/kineto/json_tokens.h"

namespace laggard::kineto {
namespace {

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
    if (c >= '0' && c <= '9')
      v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= static_cast<uint32_t>(c - 'A' + 10);
    else
      return std::nullopt;
  }
  return v;
}

}  // namespace

const char* FlatArrayEnd(const char* c, const char* end) {
  c = SkipBlanks(c + 1, end);
  if (c < end && *c == ']') return c + 1;
  for (;;) {
    if (c >= end) return nullptr;
    c = FlatScalarEnd(c, end);
    if (c == nullptr) return nullptr;
    c = SkipBlanks(c, end);
    if (c >= end) return nullptr;
    if (*c == ']') return c + 1;
    if (*c != ',') return nullptr;
    c = SkipBlanks(c + 1, end);
  }
}

std::optional<std::string_view> DecodeString(std::string_view tok, std::string& scratch) {
  tok = TrimToken(tok);
  if (!IsJsonString(tok)) return std::nullopt;
  std::string_view s = tok.substr(1, tok.size() - 2);
  if (s.find('\\') == std::string_view::npos) return s;
  scratch.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\') {
      scratch += c;
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    switch (s[i]) {
      case '"': scratch += '"'; break;
      case '\\': scratch += '\\'; break;
      case '/': scratch += '/'; break;
      case 'b': scratch += '\b'; break;
      case 'f': scratch += '\f'; break;
      case 'n': scratch += '\n'; break;
      case 'r': scratch += '\r'; break;
      case 't': scratch += '\t'; break;
      case 'u': {
        auto cp = Hex4(s, i + 1);
        if (!cp) return std::nullopt;
        i += 4;
        uint32_t code = *cp;
        if (code >= 0xD800 && code <= 0xDBFF && i + 6 < s.size() && s[i + 1] == '\\' &&
            s[i + 2] == 'u') {
          auto lo = Hex4(s, i + 3);
          if (lo && *lo >= 0xDC00 && *lo <= 0xDFFF) {
            code = 0x10000 + ((code - 0xD800) << 10) + (*lo - 0xDC00);
            i += 6;
          }
        }
        if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;  // lone surrogate
        AppendUtf8(code, scratch);
        break;
      }
      default: return std::nullopt;
    }
  }
  return std::string_view(scratch);
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

std::optional<int64_t> ParseIntToken(std::string_view tok) {
  if (!tok.empty() && tok.size() <= 18) {  // plain digits (ids, devices, streams): at once
    int64_t v = 0;
    size_t i = 0;
    for (; i < tok.size() && IsDigit(tok[i]); ++i) v = v * 10 + (tok[i] - '0');
    if (i == tok.size()) return v;
  }
  tok = TrimToken(tok);
  if (IsJsonString(tok)) tok = tok.substr(1, tok.size() - 2);
  if (tok.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc()) return std::nullopt;
  std::string_view rest(end, static_cast<size_t>(tok.data() + tok.size() - end));
  if (rest.empty()) return v;
  if (rest[0] != '.') return std::nullopt;
  for (char c : rest.substr(1)) {
    if (c != '0') return std::nullopt;
  }
  return v;
}

}  // namespace laggard::kineto
