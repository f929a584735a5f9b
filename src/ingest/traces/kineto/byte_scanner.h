// The byte scanner of the Kineto reader, its first stage: SIMD kernels over
// raw bytes that know JSON's string syntax and nothing else.
//
//   bracket indexers   the offsets of every { [ } ] outside strings, 64 bytes
//                      a step, strings and escapes tracked across blocks like
//                      simdjson's stage 1 (AVX-512BW with a carry-less
//                      multiply, AVX2, SSE2 or scalar; ActiveIndexer() picks
//                      the best the CPU runs, LAGGARD_KINETO_SCAN=avx2|sse2|
//                      scalar forces a slower one)
//   Find*              the first byte of a class in [c, end): the stops of a
//                      string, of a number or literal, outside a string
//   SameBytes*         whether two runs of at most 32 bytes are equal
//
// The trace tokenizer (trace_tokenizer.h) indexes the stream with the
// indexers to frame each event; the JSON token stage (json_tokens.h) and
// the event tokenizer (event_tokenizer.h) use the Find* and SameBytes*
// helpers. They are inline here because they run per byte or per token on
// the hottest path of the project; only the indexers, called per 64 KiB,
// are out of line (byte_scanner.cc).
//
// Every helper that reads past `end` says how far (at most 32 bytes): its
// callers hand it buffers padded at least that far (the reader pads by 64).
//
// Thread-safety: pure functions; ActiveIndexer() chooses once per process.

#ifndef LAGGARD_INGEST_TRACES_KINETO_BYTE_SCANNER_H_
#define LAGGARD_INGEST_TRACES_KINETO_BYTE_SCANNER_H_

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LAGGARD_KINETO_X86 1
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "base/text.h"
#include "ingest/traces/common/json_scalars.h"

namespace laggard::kineto {

// The bytes past the data every buffer the Kineto reader scans carries
// (blanks): more than any helper here reads ahead, and simdjson's padding.
inline constexpr size_t kPadBytes = 64;

// Where a bracket indexer is between two calls over one stream.
struct ScanState {
  uint64_t in_string = 0;     // all ones when the previous block ended inside a string
  uint64_t prev_escaped = 0;  // 1 when the next byte is escaped
};

// Characters escaped by a backslash (simdjson's odd-length-run trick): in
// `\\\"` the quote is escaped, in `\\"` it is not.
inline uint64_t FindEscaped(uint64_t backslash, uint64_t& prev_escaped) {
  if (backslash == 0) {
    uint64_t escaped = prev_escaped;
    prev_escaped = 0;
    return escaped;
  }
  backslash &= ~prev_escaped;
  uint64_t follows_escape = backslash << 1 | prev_escaped;
  constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
  uint64_t odd_sequence_starts = backslash & ~kEvenBits & ~follows_escape;
  uint64_t sequences_starting_on_even_bits;
  prev_escaped =
      __builtin_add_overflow(odd_sequence_starts, backslash, &sequences_starting_on_even_bits);
  uint64_t invert_mask = sequences_starting_on_even_bits << 1;
  return (kEvenBits ^ invert_mask) & follows_escape;
}

// Bit i set when an odd number of bits at or below i are set in x: with x
// the unescaped quotes, the bytes inside strings (opening quote included).
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Appends the offsets (base + bit) of the brackets outside strings.
inline uint32_t* EmitBrackets(uint64_t quote, uint64_t backslash, uint64_t brackets, ScanState& st,
                              uint32_t base, uint32_t* out) {
  uint64_t escaped = FindEscaped(backslash, st.prev_escaped);
  uint64_t in_string = PrefixXor(quote & ~escaped) ^ st.in_string;
  st.in_string = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
  brackets &= ~in_string;
  while (brackets != 0) {
    *out++ = base + static_cast<uint32_t>(__builtin_ctzll(brackets));
    brackets &= brackets - 1;
  }
  return out;
}

// Each indexer reads `nblocks` whole blocks of 64 bytes at p and appends the
// offsets (from p) of the brackets outside strings to `out`, at most 64 per
// block; returns the end of what it wrote.
using BracketIndexer = uint32_t* (*)(const char* p, size_t nblocks, ScanState& st, uint32_t* out);

struct Indexer {
  BracketIndexer fn;
  const char* name;  // "avx512", "avx2", "sse2", "scalar"
};

// The best indexer the CPU runs, or the one LAGGARD_KINETO_SCAN names.
const Indexer& ActiveIndexer();

// Every indexer this CPU runs, fastest first (for tests: each must index
// alike).
std::span<const Indexer> RunnableIndexers();

// The first '"' or '\\' in [c, end), or nullptr. Reads up to 15 bytes past
// `end`.
inline const char* FindQuoteOrBackslash(const char* c, const char* end) {
#if defined(LAGGARD_KINETO_X86)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; c < end; c += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    unsigned mask = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
    if (mask != 0) {
      const char* hit = c + __builtin_ctz(mask);
      return hit < end ? hit : nullptr;
    }
  }
  return nullptr;
#else
  for (; c < end; ++c) {
    if (*c == '"' || *c == '\\') return c;
  }
  return nullptr;
#endif
}

// The first byte in [c, end) that ends the plain part of a JSON string: '"',
// '\\', a control character (< 0x20) or a non-ASCII byte (>= 0x80); nullptr
// when there is none. Reads up to 15 bytes past `end`.
inline const char* FindStringStop(const char* c, const char* end) {
#if defined(LAGGARD_KINETO_X86)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; c < end; c += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    // Signed compare: bytes >= 0x80 are negative, so below 0x20 too.
    __m128i stop =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmplt_epi8(v, space));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
    if (mask != 0) {
      const char* hit = c + __builtin_ctz(mask);
      return hit < end ? hit : nullptr;
    }
  }
  return nullptr;
#else
  for (; c < end; ++c) {
    auto u = static_cast<unsigned char>(*c);
    if (u == '"' || u == '\\' || u < 0x20 || u >= 0x80) return c;
  }
  return nullptr;
#endif
}

// The end of a number or literal token at c: the first blank, control or
// non-ASCII byte, backslash, or one of , } ] : [ { " (where simdjson's stage
// 1 ends a scalar token); `end` when there is none before it. Reads up to 15
// bytes past `end`.
inline const char* FindScalarEnd(const char* c, const char* end) {
#if defined(LAGGARD_KINETO_X86)
  // v | 0x20 folds ] onto }, [ onto {, and maps only control bytes (already
  // stops) onto , : and ".
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i above_space = _mm_set1_epi8(0x21);
  for (; c < end; c += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    __m128i f = _mm_or_si128(v, fold);
    __m128i stop = _mm_or_si128(
        _mm_or_si128(_mm_cmplt_epi8(v, above_space), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(f, _mm_set1_epi8('}')),
                                  _mm_cmpeq_epi8(f, _mm_set1_epi8('{'))),
                     _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(f, _mm_set1_epi8(',')),
                                               _mm_cmpeq_epi8(f, _mm_set1_epi8(':'))),
                                  _mm_cmpeq_epi8(f, _mm_set1_epi8('"')))));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
    if (mask != 0) {
      const char* hit = c + __builtin_ctz(mask);
      return hit < end ? hit : end;
    }
  }
  return end;
#else
  for (; c < end; ++c) {
    auto u = static_cast<unsigned char>(*c);
    if (u <= 0x20 || u >= 0x80 || u == '\\' || u == ',' || u == ':' || u == '"' || u == '{' ||
        u == '}' || u == '[' || u == ']') {
      return c;
    }
  }
  return end;
#endif
}

using ::laggard::IsBlank;  // traces/common/json_scalars.h

// The first byte outside a string that would start or end one ('"', '\\')
// or that simdjson's stage 1 could reject (a control byte other than a
// blank, a non-ASCII byte) in [c, end), or nullptr. Reads up to 15 bytes
// past `end`.
inline const char* FindOutsideStop(const char* c, const char* end) {
#if defined(LAGGARD_KINETO_X86)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; c < end; c += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    __m128i blank_ctl = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
                                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))),
                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
    __m128i stop =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_andnot_si128(blank_ctl, _mm_cmplt_epi8(v, space)));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
    if (mask != 0) {
      const char* hit = c + __builtin_ctz(mask);
      return hit < end ? hit : nullptr;
    }
  }
  return nullptr;
#else
  for (; c < end; ++c) {
    auto u = static_cast<unsigned char>(*c);
    if (u == '"' || u == '\\' || u >= 0x80 || (u < 0x20 && !IsBlank(*c))) return c;
  }
  return nullptr;
#endif
}

// The bytes among the 16 at c that are not number characters (digits, '.',
// '-'): bit i set for c[i].
inline unsigned NotNumberMask16(const char* c) {
#if defined(LAGGARD_KINETO_X86)
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
  __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));  // a digit: 0..9 unsigned
  __m128i number = _mm_or_si128(
      _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d),
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')), _mm_cmpeq_epi8(v, _mm_set1_epi8('-'))));
  return ~static_cast<unsigned>(_mm_movemask_epi8(number)) & 0xFFFFu;
#else
  unsigned m = 0;
  for (unsigned i = 0; i < 16; ++i) {
    if (!IsDigit(c[i]) && c[i] != '.' && c[i] != '-') m |= 1u << i;
  }
  return m;
#endif
}

// The end of the run of number characters at c, or `end` when it reaches
// it. Reads up to 15 bytes past `end`.
inline const char* NumberCharsEnd(const char* c, const char* end) {
  for (; c < end; c += 16) {
    if (unsigned other = NotNumberMask16(c); other != 0) {
      const char* hit = c + __builtin_ctz(other);
      return hit < end ? hit : end;
    }
  }
  return end;
}

// The low min(n, 32) bits set.
constexpr uint32_t WantBits(size_t n) { return n >= 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1; }

#if defined(LAGGARD_KINETO_X86)
// Bit i set when a[i] == b[i], for the 16 bytes at a and b.
inline uint32_t Equal16(const char* a, const char* b) {
  return static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)))));
}
#endif

// Whether the n (at most 16) bytes at a equal those at b, given want = the
// low n bits set; reads 16 bytes at both.
inline bool SameBytes16(const char* a, const char* b, uint32_t want) {
#if defined(LAGGARD_KINETO_X86)
  return (Equal16(a, b) & want) == want;
#else
  return std::memcmp(a, b, static_cast<size_t>(__builtin_popcount(want))) == 0;
#endif
}

// Whether the n bytes at a equal those at b, given want = the low min(n, 32)
// bits set; reads at least 32 bytes at both.
inline bool SameBytes(const char* a, const char* b, size_t n, uint32_t want) {
#if defined(LAGGARD_KINETO_X86)
  if (((Equal16(a, b) | Equal16(a + 16, b + 16) << 16) & want) != want) return false;
  return n <= 32 || std::memcmp(a + 32, b + 32, n - 32) == 0;
#else
  (void)want;
  return std::memcmp(a, b, n) == 0;
#endif
}

}  // namespace laggard::kineto

#endif  // LAGGARD_INGEST_TRACES_KINETO_BYTE_SCANNER_H_
