#include "ingest/traces/kineto/json_tokens.h"

namespace laggard::kineto {

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
