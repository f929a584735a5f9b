#include "ingest/traces/kineto/kineto_reader.h"
#include "ingest/traces/common/kernel_names.h"
#include "ingest/traces/common/step_marker.h"

#include <simdjson.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LAGGARD_KINETO_X86 1
#endif

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/input_file.h"

namespace laggard {
namespace {
namespace od = simdjson::ondemand;

// Raw keys and values of Kineto traces, in one place.
namespace kineto {
constexpr std::string_view kTraceEvents = "traceEvents";
constexpr std::string_view kDistributedInfo = "distributedInfo";
constexpr std::string_view kDeviceProperties = "deviceProperties";
constexpr std::string_view kBaseTime = "baseTimeNanoseconds";
constexpr std::string_view kHostName = "host_name";  // top level (Meta job metadata)
constexpr std::string_view kHostname = "hostname";
constexpr std::string_view kHost = "host";
// distributedInfo
constexpr std::string_view kRank = "rank";
constexpr std::string_view kWorldSize = "world_size";
constexpr std::string_view kBackend = "backend";
// event
constexpr std::string_view kPh = "ph";
constexpr std::string_view kCat = "cat";
constexpr std::string_view kName = "name";
constexpr std::string_view kTs = "ts";
constexpr std::string_view kDur = "dur";
constexpr std::string_view kPid = "pid";
constexpr std::string_view kTid = "tid";
constexpr std::string_view kArgs = "args";
constexpr std::string_view kPhComplete = "\"X\"";
// event args
constexpr std::string_view kDevice = "device";
constexpr std::string_view kStream = "stream";
constexpr std::string_view kCollectiveName = "Collective name";
constexpr std::string_view kInMsgNelems = "In msg nelems";
constexpr std::string_view kGroupSize = "Group size";
constexpr std::string_view kProcessGroupName = "Process Group Name";
constexpr std::string_view kProcessGroupId = "Process Group ID";
constexpr std::string_view kSeq = "Seq";
constexpr std::string_view kExternalId = "External id";
constexpr std::string_view kExternalIdLegacy = "external id";
constexpr std::string_view kInputDims = "Input Dims";
constexpr std::string_view kCorrelation = "correlation";  // kernel <-> its runtime launch call
constexpr std::string_view kGrid = "grid";                // [x, y, z] of a kernel
constexpr std::string_view kBlock = "block";
// names
constexpr std::string_view kProfilerStep = "ProfilerStep#";
constexpr std::string_view kRecordParamComms = "record_param_comms";
}  // namespace kineto

constexpr size_t kChunkBytes = 512 << 10;      // read at a time (stays in L2 while used)
constexpr size_t kSliceBlocks = 1024;          // 64-byte blocks indexed at a time
constexpr size_t kMaxEventBytes = 8 << 20;     // larger events are skipped
constexpr size_t kMaxCaptureBytes = 64 << 20;  // top-level members kept (distributedInfo)
constexpr size_t kMaxGapBytes = 1 << 20;       // garbage between events checked at once
constexpr size_t kPad = 64;
constexpr size_t kMaxShapes = 4096;            // distinct launch shapes per file, then kNoShape
// The per-op lists (ops, launch calls) of a big trace: past kGrowFrom
// entries a list reserves kGrowTo at once. That is address space only (the
// pages are touched as it fills), and it spares the copy and the page
// faults of every doubling on the way, a tenth of a .gz ingest here.
constexpr size_t kGrowFrom = 1 << 16;
constexpr size_t kGrowTo = 1 << 22;
static_assert(kPad >= simdjson::SIMDJSON_PADDING, "the buffer must carry simdjson's padding");
// |ts| and ts + dur bound (us): keeps base + ts + dur in int64 ns (4e15 us is
// the year 2096).
constexpr int64_t kMaxAbsTimeUs = 4'000'000'000'000'000;
constexpr int64_t kMaxBaseNs = 4'000'000'000'000'000'000;

// ---------------------------------------------------------------------------
// Bracket indexer: the offsets of every { [ } ] outside strings, 64 bytes a
// step, with strings and escapes tracked like simdjson's stage 1.

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

// Each indexer reads `nblocks` whole blocks at p and writes at most 64
// offsets per block.
using BracketIndexer = uint32_t* (*)(const char* p, size_t nblocks, ScanState& st, uint32_t* out);

uint32_t* IndexBracketsScalar(const char* p, size_t nblocks, ScanState& st, uint32_t* out) {
  for (size_t b = 0; b < nblocks; ++b, p += 64) {
    uint64_t quote = 0, backslash = 0, brackets = 0;
    for (int i = 0; i < 64; ++i) {
      uint64_t bit = uint64_t{1} << i;
      char c = p[i];
      if (c == '"')
        quote |= bit;
      else if (c == '\\')
        backslash |= bit;
      else if (c == '{' || c == '[' || c == '}' || c == ']')
        brackets |= bit;
    }
    out = EmitBrackets(quote, backslash, brackets, st, static_cast<uint32_t>(64 * b), out);
  }
  return out;
}

#if defined(LAGGARD_KINETO_X86)
// Masks of one 16-byte lane, shifted to its place in the 64-bit block masks.
inline void Sse2Lane(const char* p, int lane, uint64_t& q, uint64_t& bs, uint64_t& br) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * lane));
  const __m128i f = _mm_or_si128(v, _mm_set1_epi8(0x20));
  const __m128i brk =
      _mm_or_si128(_mm_cmpeq_epi8(f, _mm_set1_epi8('{')), _mm_cmpeq_epi8(f, _mm_set1_epi8('}')));
  auto mask = [](__m128i m) {
    return static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(m)));
  };
  q |= mask(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) << (16 * lane);
  bs |= mask(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))) << (16 * lane);
  br |= mask(brk) << (16 * lane);
}

// '[' | 0x20 == '{' and ']' | 0x20 == '}': one compare finds both kinds.
uint32_t* IndexBracketsSse2(const char* p, size_t nblocks, ScanState& st, uint32_t* out) {
  for (size_t b = 0; b < nblocks; ++b, p += 64) {
    uint64_t q = 0, bs = 0, br = 0;
    Sse2Lane(p, 0, q, bs, br);
    Sse2Lane(p, 1, q, bs, br);
    Sse2Lane(p, 2, q, bs, br);
    Sse2Lane(p, 3, q, bs, br);
    out = EmitBrackets(q, bs, br, st, static_cast<uint32_t>(64 * b), out);
  }
  return out;
}

__attribute__((target("avx2"))) uint32_t* IndexBracketsAvx2(const char* p, size_t nblocks,
                                                            ScanState& st, uint32_t* out) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m256i fold = _mm256_set1_epi8(0x20);
  for (size_t b = 0; b < nblocks; ++b, p += 64) {
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    __m256i flo = _mm256_or_si256(lo, fold);
    __m256i fhi = _mm256_or_si256(hi, fold);
    uint64_t q = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, quote))) |
                 static_cast<uint64_t>(
                     static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, quote))))
                     << 32;
    uint64_t bs = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, backslash))) |
                  static_cast<uint64_t>(
                      static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, backslash))))
                      << 32;
    __m256i blo = _mm256_or_si256(_mm256_cmpeq_epi8(flo, open), _mm256_cmpeq_epi8(flo, close));
    __m256i bhi = _mm256_or_si256(_mm256_cmpeq_epi8(fhi, open), _mm256_cmpeq_epi8(fhi, close));
    uint64_t br = static_cast<uint32_t>(_mm256_movemask_epi8(blo)) |
                  static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(bhi))) << 32;
    out = EmitBrackets(q, bs, br, st, static_cast<uint32_t>(64 * b), out);
  }
  return out;
}
// AVX-512BW: one compare per character class gives the block's mask at
// once, and the quote mask's prefix XOR is one carry-less multiply.
__attribute__((target("avx512f,avx512bw,pclmul"))) uint32_t* IndexBracketsAvx512(
    const char* p, size_t nblocks, ScanState& st, uint32_t* out) {
  const __m512i quote = _mm512_set1_epi8('"');
  const __m512i backslash = _mm512_set1_epi8('\\');
  const __m512i open = _mm512_set1_epi8('{');
  const __m512i close = _mm512_set1_epi8('}');
  const __m512i fold = _mm512_set1_epi8(0x20);
  const __m128i all_ones = _mm_set1_epi8(-1);
  for (size_t b = 0; b < nblocks; ++b, p += 64) {
    __m512i v = _mm512_loadu_si512(p);
    __m512i f = _mm512_or_si512(v, fold);
    uint64_t q = _mm512_cmpeq_epi8_mask(v, quote);
    uint64_t bs = _mm512_cmpeq_epi8_mask(v, backslash);
    uint64_t br = _mm512_cmpeq_epi8_mask(f, open) | _mm512_cmpeq_epi8_mask(f, close);
    uint64_t escaped = FindEscaped(bs, st.prev_escaped);
    __m128i x = _mm_set_epi64x(0, static_cast<long long>(q & ~escaped));
    uint64_t in_string =
        static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_clmulepi64_si128(x, all_ones, 0))) ^
        st.in_string;
    st.in_string = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    br &= ~in_string;
    const auto base = static_cast<uint32_t>(64 * b);
    while (br != 0) {
      *out++ = base + static_cast<uint32_t>(__builtin_ctzll(br));
      br &= br - 1;
    }
  }
  return out;
}
#endif

// The first '"' or '\\' in [c, end), or nullptr. Reads up to 15 bytes past
// `end` (the read buffer is padded).
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
// when there is none. Reads up to 15 bytes past `end` (the buffer is padded).
inline const char* FindStringStop(const char* c, const char* end) {
#if defined(LAGGARD_KINETO_X86)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; c < end; c += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    // Signed compare: bytes >= 0x80 are negative, so below 0x20 too.
    __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
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
// bytes past `end` (the buffer is padded).
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
        _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(f, _mm_set1_epi8('}')), _mm_cmpeq_epi8(f, _mm_set1_epi8('{'))),
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

struct Indexer {
  BracketIndexer fn;
  const char* name;
};

// The best indexer the CPU runs; LAGGARD_KINETO_SCAN=avx2|sse2|scalar forces
// a slower one (to test each path on one machine).
const Indexer& ActiveIndexer() {
  static const Indexer indexer = [] {
    const char* forced = std::getenv("LAGGARD_KINETO_SCAN");
    std::string_view want = forced != nullptr ? forced : "";
    if (want == "scalar") return Indexer{IndexBracketsScalar, "scalar"};
#if defined(LAGGARD_KINETO_X86)
    __builtin_cpu_init();
    if (want.empty() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("pclmul")) {
      return Indexer{IndexBracketsAvx512, "avx512"};
    }
    if (want != "sse2" && __builtin_cpu_supports("avx2")) return Indexer{IndexBracketsAvx2, "avx2"};
    return Indexer{IndexBracketsSse2, "sse2"};
#else
    return Indexer{IndexBracketsScalar, "scalar"};
#endif
  }();
  return indexer;
}

// Events go to the flat walker first unless LAGGARD_KINETO_EVENTS=ondemand
// (every event through simdjson On-Demand: to compare the two paths).
bool FlatEventsEnabled() {
  static const bool enabled = [] {
    const char* forced = std::getenv("LAGGARD_KINETO_EVENTS");
    return forced == nullptr || std::string_view(forced) != "ondemand";
  }();
  return enabled;
}

// Whether [c, end) starts with the literal `lit` (length known at compile
// time, so the compare is inlined).
template <size_t N>
inline bool At(const char* c, const char* end, const char (&lit)[N]) {
  return end - c >= static_cast<ptrdiff_t>(N - 1) && std::memcmp(c, lit, N - 1) == 0;
}

// JSON whitespace: space, \t, \n, \r (one compare for printable bytes).
inline bool IsBlank(char c) {
  constexpr uint64_t kBlanks =
      (uint64_t{1} << ' ') | (uint64_t{1} << '\t') | (uint64_t{1} << '\n') | (uint64_t{1} << '\r');
  auto u = static_cast<unsigned char>(c);
  return u <= ' ' && ((kBlanks >> u) & 1) != 0;
}

// ---------------------------------------------------------------------------
// Small parsers of raw JSON tokens (as simdjson's raw_json_token returns them:
// trailing blanks included).

std::string_view TrimToken(std::string_view t) {
  while (!t.empty() && IsBlank(t.back())) t.remove_suffix(1);
  return t;
}

bool IsJsonString(std::string_view t) {
  return t.size() >= 2 && t.front() == '"' && t.back() == '"';
}

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

// The content of a JSON string token ("..." with its quotes), unescaped into
// `scratch` only when it holds a backslash. nullopt when not a string.
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
      case '"':
        scratch += '"';
        break;
      case '\\':
        scratch += '\\';
        break;
      case '/':
        scratch += '/';
        break;
      case 'b':
        scratch += '\b';
        break;
      case 'f':
        scratch += '\f';
        break;
      case 'n':
        scratch += '\n';
        break;
      case 'r':
        scratch += '\r';
        break;
      case 't':
        scratch += '\t';
        break;
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
      default:
        return std::nullopt;
    }
  }
  return std::string_view(scratch);
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

// An integer token (or a string holding one); "3.0" is accepted, "3.5" not.
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

// ---------------------------------------------------------------------------
// Classification.

// Backend execution ranges of c10d collectives ("gloo:all_reduce").
bool IsBackendCommAnnotation(std::string_view name) {
  return StartsWith(name, "gloo:") || StartsWith(name, "nccl:") || StartsWith(name, "mpi:") ||
         StartsWith(name, "ucc:") || StartsWith(name, "xccl:");
}

// Runtime / driver calls that put work on a GPU queue (cudaLaunchKernel,
// cudaLaunchKernelExC, cuLaunchKernel, cudaGraphLaunch, hipExtModuleLaunchKernel,
// cudaMemcpyAsync, hipMemcpyWithStream, cudaMemsetAsync, ...): the only
// runtime events read, for the host time each device op was launched.
bool IsLaunchCallName(std::string_view name) {
  // cudaLaunchKernel and the like (one per kernel) without a search.
  if (name.size() >= 10 && name.substr(4, 6) == "Launch") return true;
  return name.find("Launch") != std::string_view::npos ||
         name.find("Memcpy") != std::string_view::npos ||
         name.find("Memset") != std::string_view::npos;
}

bool IsCpuCommName(std::string_view name) {
  return IsBackendCommAnnotation(name) || StartsWith(name, "c10d::") ||
         name == kineto::kRecordParamComms || name.find("gloo") != std::string_view::npos;
}

// kRuntime (CUDA / HIP runtime and driver calls) is not taken either, but it
// shows that the trace had a GPU: without device ops such a trace was cut
// (or lost its GPU buffers), it is not a CPU-only trace.
enum class Cat : uint8_t {
  kUnseen,
  kIgnored,
  kRuntime,
  kKernel,
  kMemcpy,
  kMemset,
  kCpuOp,
  kAnnotation
};

Cat ClassifyCat(std::string_view tok) {
  tok = TrimToken(tok);
  if (!IsJsonString(tok)) return Cat::kIgnored;
  std::string_view c = tok.substr(1, tok.size() - 2);
  switch (c.size()) {
    case 6:
      if (c == "kernel" || c == "Kernel") return Cat::kKernel;
      if (c == "cpu_op" || c == "Memcpy" || c == "Memset") {
        return c[0] == 'c' ? Cat::kCpuOp : c[4] == 'c' ? Cat::kMemcpy : Cat::kMemset;
      }
      break;
    case 7:
      if (c == "Runtime") return Cat::kRuntime;
      break;
    case 8:
      if (c == "Operator") return Cat::kCpuOp;
      break;
    case 10:
      if (c == "gpu_memcpy") return Cat::kMemcpy;
      if (c == "gpu_memset") return Cat::kMemset;
      break;
    case 11:
      if (c == "cuda_driver") return Cat::kRuntime;
      break;
    case 12:
      if (c == "cuda_runtime") return Cat::kRuntime;
      break;
    case 15:
      if (c == "user_annotation") return Cat::kAnnotation;
      break;
    default:
      break;
  }
  return Cat::kIgnored;
}

bool IsDeviceCat(Cat c) { return c == Cat::kKernel || c == Cat::kMemcpy || c == Cat::kMemset; }

// Compares a raw key (simdjson's pointer just past the opening quote, inside
// a padded buffer) with `k`.
inline bool KeyIs(const char* raw, std::string_view k) {
  return std::memcmp(raw, k.data(), k.size()) == 0 && raw[k.size()] == '"';
}

// ---------------------------------------------------------------------------
// Flat events without simdjson. Most events that pass the prefilter (launch
// calls, kernels, memcpys) are objects of strings and numbers with one args
// object and at most the kernel's grid / block arrays. An exact walker over
// that subset of JSON reads them in one pass over their bytes; anything
// outside it (a non-ASCII or control byte, a nested value where none is
// expected, a malformed token) makes it give up, and the event goes to
// On-Demand, so what is read never depends on which path read it. The
// helpers return the end of what they read, or nullptr to give up; `c` is
// below `end` on entry.

inline const char* SkipBlanks(const char* c, const char* end) {
  while (c < end && IsBlank(*c)) ++c;
  return c;
}

// c is just past a string's opening quote: the byte after its closing quote.
// An escape takes the next byte whatever it is, as simdjson's stage 1 does
// (the raw token is kept; DecodeString checks escapes where one is decoded).
inline const char* FlatStringEnd(const char* c, const char* end) {
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

// The first byte outside a string that would start or end one ('"', '\\')
// or that simdjson's stage 1 could reject (a control byte other than a
// blank, a non-ASCII byte) in [c, end), or nullptr. Reads up to 15 bytes
// past `end` (the buffer is padded).
inline const char* FindOutsideStop(const char* c, const char* end) {
#if defined(LAGGARD_KINETO_X86)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; c < end; c += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    __m128i blank_ctl = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))),
        _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
    __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
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

// Whether the rest of an event, [c, end) from outside a string, is bytes
// simdjson's stage 1 accepts (strings closed, ASCII, no raw control byte in
// a string): an event the walker leaves early must still be one On-Demand
// would have parsed, since its stage 1 reads the whole event first.
inline bool FlatRestClean(const char* c, const char* end) {
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
[[gnu::noinline]] const char* FlatArrayEnd(const char* c, const char* end) {
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

// A scalar or an array of scalars.
[[gnu::always_inline]] inline const char* FlatValueEnd(const char* c, const char* end) {
  return *c == '[' ? FlatArrayEnd(c, end) : FlatScalarEnd(c, end);
}

// "[132, 1, 1]": three integers of 1 to 18 digits without sign or leading
// zero (what get_int64 reads alike; anything else is left to Dims3).
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

// The members the reader takes, by key (the raw key, as KeyIs compares it).
enum class Field : uint8_t {
  kOther,
  // event
  kPh,
  kCat,
  kName,
  kPid,
  kTid,
  kTs,
  kDur,
  kArgs,
  // args
  kDevice,
  kCorrelation,
  kGrid,
  kBlock,
  kStream,
  kCollectiveName,
  kInMsgNelems,
  kInputDims,
  kGroupSize,
  kProcessGroupName,
  kProcessGroupId,
  kSeq,
  kExternalId,
};

// k is just past the key's opening quote.
Field TopField(const char* k) {
  switch (k[0]) {
    case 'p':
      if (KeyIs(k, kineto::kPh)) return Field::kPh;
      if (KeyIs(k, kineto::kPid)) return Field::kPid;
      break;
    case 'c':
      if (KeyIs(k, kineto::kCat)) return Field::kCat;
      break;
    case 'n':
      if (KeyIs(k, kineto::kName)) return Field::kName;
      break;
    case 't':
      if (KeyIs(k, kineto::kTs)) return Field::kTs;
      if (KeyIs(k, kineto::kTid)) return Field::kTid;
      break;
    case 'd':
      if (KeyIs(k, kineto::kDur)) return Field::kDur;
      break;
    case 'a':
      if (KeyIs(k, kineto::kArgs)) return Field::kArgs;
      break;
    default:
      break;
  }
  return Field::kOther;
}

Field ArgField(const char* k) {
  switch (k[0]) {
    case 'd':
      if (KeyIs(k, kineto::kDevice)) return Field::kDevice;
      break;
    case 'c':
      if (KeyIs(k, kineto::kCorrelation)) return Field::kCorrelation;
      break;
    case 'g':
      if (KeyIs(k, kineto::kGrid)) return Field::kGrid;
      break;
    case 'b':
      if (KeyIs(k, kineto::kBlock)) return Field::kBlock;
      break;
    case 's':
      if (KeyIs(k, kineto::kStream)) return Field::kStream;
      break;
    case 'C':
      if (KeyIs(k, kineto::kCollectiveName)) return Field::kCollectiveName;
      break;
    case 'I':
      if (KeyIs(k, kineto::kInMsgNelems)) return Field::kInMsgNelems;
      if (KeyIs(k, kineto::kInputDims)) return Field::kInputDims;
      break;
    case 'G':
      if (KeyIs(k, kineto::kGroupSize)) return Field::kGroupSize;
      break;
    case 'P':
      if (KeyIs(k, kineto::kProcessGroupName)) return Field::kProcessGroupName;
      if (KeyIs(k, kineto::kProcessGroupId)) return Field::kProcessGroupId;
      break;
    case 'S':
      if (KeyIs(k, kineto::kSeq)) return Field::kSeq;
      break;
    case 'E':
      if (KeyIs(k, kineto::kExternalId)) return Field::kExternalId;
      break;
    case 'e':
      if (KeyIs(k, kineto::kExternalIdLegacy)) return Field::kExternalId;
      break;
    default:
      break;
  }
  return Field::kOther;
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
// low n bits set; reads 16 bytes at both (both are padded).
inline bool SameBytes16(const char* a, const char* b, uint32_t want) {
#if defined(LAGGARD_KINETO_X86)
  return (Equal16(a, b) & want) == want;
#else
  return std::memcmp(a, b, static_cast<size_t>(__builtin_popcount(want))) == 0;
#endif
}

// Whether the n bytes at a equal those at b, given want = the low min(n, 32)
// bits set; reads at least 32 bytes at both (both are padded).
inline bool SameBytes(const char* a, const char* b, size_t n, uint32_t want) {
#if defined(LAGGARD_KINETO_X86)
  if (((Equal16(a, b) | Equal16(a + 16, b + 16) << 16) & want) != want) return false;
  return n <= 32 || std::memcmp(a + 32, b + 32, n - 32) == 0;
#else
  (void)want;
  return std::memcmp(a, b, n) == 0;
#endif
}

// A member's leading bytes as one event had them, from the key's opening
// quote to its value ("\"stream\": "), up to 32 bytes: the next event of
// the same layout is compared with them instead of being tokenized. Equal
// bytes from a member's start parse the same, so a match says exactly what
// reading them would.
struct KeySlot {
  char bytes[32] = {};
  uint32_t want = 0;  // the low `len` bits: the bytes that must match
  uint8_t len = 0;    // 0: nothing learned (never matches)
  Field field = Field::kOther;

  void Learn(const char* key_quote, const char* value, Field f) {
    size_t n = static_cast<size_t>(value - key_quote);
    if (n > sizeof bytes) {
      len = 0;
      want = 0;
      return;
    }
    std::memset(bytes, 0, sizeof bytes);
    std::memcpy(bytes, key_quote, n);
    len = static_cast<uint8_t>(n);
    want = WantBits(n);
    field = f;
  }

  // Reads 32 bytes at q (the buffer is padded).
  bool Matches(const char* q) const { return len != 0 && SameBytes(q, bytes, len, want); }
};
constexpr size_t kMaxKeySlots = 32;  // members per object remembered
// One layout's members, by position (a fixed array: no bounds to track).
using KeySlots = std::array<KeySlot, kMaxKeySlots>;

// ---------------------------------------------------------------------------
// One event's fields, as raw tokens pointing into the read buffer.

struct EventFields {
  std::string_view ph, cat, name, ts, dur, pid, tid;
  std::string_view device, stream, coll_name, nelems, group_size, pg_name, pg_id, seq, ext_id;
  std::string_view correlation;
  std::optional<std::array<int64_t, 3>> grid, block;
  std::optional<int64_t> dims_product;
  Cat cat_kind = Cat::kUnseen;
  bool skip = false;  // ph, cat or name say the event is not needed
  bool name_plain = false;  // name is a string without escapes (seen by the walker)
  std::string_view unread;  // where a template puts the values the walker skips
};

// ---------------------------------------------------------------------------
// Event templates. Kineto writes every kernel (every launch call, ...) with
// the same keys in the same order, so once the walker has read one, the
// bytes between its values (keys, ": ", ", ", the args' braces) are known:
// the next event of its kind is read by comparing those bytes and finding
// only the values' ends. A template is learned from an event the walker read
// in full, and only from values whose reading never depends on their
// content (numbers, strings without escapes, grid / block triples), so that
// a match sets the same fields the walker would have set; any other byte
// sends the event back to the walker.

// The bytes among the 16 at c that are not number characters (digits, '.',
// '-'): bit i set for c[i].
inline unsigned NotNumberMask16(const char* c) {
#if defined(LAGGARD_KINETO_X86)
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
  __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));  // a digit: 0..9 unsigned
  __m128i number = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d),
                                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')),
                                             _mm_cmpeq_epi8(v, _mm_set1_epi8('-'))));
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
// it. Reads up to 15 bytes past `end` (the buffer is padded).
inline const char* NumberCharsEnd(const char* c, const char* end) {
  for (; c < end; c += 16) {
    if (unsigned other = NotNumberMask16(c); other != 0) {
      const char* hit = c + __builtin_ctz(other);
      return hit < end ? hit : end;
    }
  }
  return end;
}


// Where the walker puts the token of a member (nullptr: it only skips it).
std::string_view EventFields::*TokenMember(Field f) {
  switch (f) {
    case Field::kPh: return &EventFields::ph;
    case Field::kCat: return &EventFields::cat;
    case Field::kName: return &EventFields::name;
    case Field::kPid: return &EventFields::pid;
    case Field::kTid: return &EventFields::tid;
    case Field::kTs: return &EventFields::ts;
    case Field::kDur: return &EventFields::dur;
    case Field::kDevice: return &EventFields::device;
    case Field::kCorrelation: return &EventFields::correlation;
    case Field::kStream: return &EventFields::stream;
    case Field::kCollectiveName: return &EventFields::coll_name;
    case Field::kInMsgNelems: return &EventFields::nelems;
    case Field::kGroupSize: return &EventFields::group_size;
    case Field::kProcessGroupName: return &EventFields::pg_name;
    case Field::kProcessGroupId: return &EventFields::pg_id;
    case Field::kSeq: return &EventFields::seq;
    case Field::kExternalId: return &EventFields::ext_id;
    default: return nullptr;
  }
}

// One value of a template and the literal bytes after it.
struct TemplateHole {
  enum Kind : uint8_t { kNumber, kString, kDims3 };
  Kind kind = kNumber;
  // Where its token goes (EventFields::unread when the walker only skips it).
  std::string_view EventFields::*token = &EventFields::unread;
  std::optional<std::array<int64_t, 3>> EventFields::*dims = nullptr;  // kDims3
  uint16_t literal = 0;      // offset in EventTemplate::text
  uint16_t literal_len = 0;  // >= 1: a value always ends at a delimiter
  uint32_t literal_want = 0;  // WantBits(literal_len)
};

struct EventTemplate {
  static constexpr size_t kMaxHoles = 48;
  static constexpr size_t kMaxText = 2048;
  std::string text;  // the literals back to back, then 32 bytes of slack
  uint16_t lead_len = 0;  // the literal before the first value, at text[0]
  uint32_t lead_want = 0;  // WantBits(lead_len)
  bool reads_name = false;  // a hole is the name (a string without escapes)
  std::vector<TemplateHole> holes;  // empty: nothing learned
};

// A value the walker read, as the template learner sees it.
struct ReadValue {
  const char* begin;
  const char* end;
  Field field;
  bool dims3;  // a grid / block triple stored as such
};
enum class Extract { kOk, kMalformed };

struct CommMeta {  // what a record_param_comms CPU op says about its collective
  std::optional<int64_t> seq;
  std::string collective;  // canonical
  std::optional<uint32_t> group;
  std::optional<int64_t> nelems;
  std::optional<int32_t> group_size;
};

// Kernel names run to kilobytes, and one is looked up per device op: hash
// the length and three 32-byte windows (head, middle, tail), compare fully.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    if (s.size() <= 96) return std::hash<std::string_view>{}(s);
    uint64_t h = s.size() * 0x9E3779B97F4A7C15ULL;
    for (size_t at : {size_t{0}, s.size() / 2 - 16, s.size() - 32}) {
      for (size_t i = 0; i < 32; i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + at + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
      }
    }
    return static_cast<size_t>(h);
  }
};

// A cheap hash of a name's length and first, middle and last 8 bytes, for
// the lookup cache in front of the name table (cuBLAS kernel names differ in
// the middle: sm90_xmma_gemm_..._tilesize256x128x64_..._cublas; a collision
// costs one compare).
inline size_t QuickNameHash(std::string_view s) {
  uint64_t head = 0, mid = 0, tail = 0;
  if (s.size() >= 8) {
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&mid, s.data() + s.size() / 2 - 4, 8);
    std::memcpy(&tail, s.data() + s.size() - 8, 8);
  } else if (!s.empty()) {  // (an empty view may have no data pointer)
    std::memcpy(&head, s.data(), s.size());
  }
  uint64_t h = (s.size() * 0x9E3779B97F4A7C15ULL) ^ head;
  h = (h * 0xFF51AFD7ED558CCDULL) ^ mid;
  h = (h * 0xC4CEB9FE1A85EC53ULL) ^ tail;
  h *= 0xFF51AFD7ED558CCDULL;
  return static_cast<size_t>(h >> 40);
}

struct NameInfo {
  uint32_t id = 0;
  std::optional<OpClass> kernel_class;
  std::optional<uint32_t> kernel_collective;  // derived from the kernel name
  // The launch shape this kernel had last (a kernel keeps its grid and
  // block from launch to launch), and its id: saves the shape table lookup.
  std::array<int64_t, 6> last_shape{};
  std::optional<uint32_t> last_shape_id;
};

std::optional<int32_t> ToInt32(std::optional<int64_t> v) {
  if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*v);
}

// v.push_back(x), reserving kGrowTo at once when v is past kGrowFrom.
template <typename T>
inline void PushBig(std::vector<T>& v, const T& x) {
  if (v.size() == v.capacity() && v.size() >= kGrowFrom && v.capacity() < kGrowTo) {
    try {
      v.reserve(kGrowTo);
    } catch (const std::bad_alloc&) {
      // Where address space is committed up front (vm.overcommit_memory=2)
      // and short: the list grows by doubling instead.
    }
  }
  v.push_back(x);
}

// Growable bytes without the zero fill of std::vector::resize.
class RawBuffer {
 public:
  char* data() { return data_.get(); }
  // Makes room for `size` bytes, keeping the first `keep`.
  void Reserve(size_t size, size_t keep) {
    if (size <= capacity_) return;
    std::unique_ptr<char[]> bigger(new char[size]);
    if (keep > 0) std::memcpy(bigger.get(), data_.get(), keep);
    data_ = std::move(bigger);
    capacity_ = size;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

// ---------------------------------------------------------------------------
// Reads one file in one of two modes. kDevice takes the device ops and the
// CPU-side facts they need (steps, record_param_comms); kCpu, run only when
// a kDevice pass found CPU events but no device op, takes the CPU ops. Most
// traces have GPUs, and their many CPU ops are then never decoded.

enum class Mode { kDevice, kCpu };

class KinetoFile {
 public:
  KinetoFile(std::unique_ptr<ByteSource> source, ReaderContext& ctx, Mode mode)
      : src_(std::move(source)),
        ctx_(ctx),
        mode_(mode),
        collecting_cpu_(mode == Mode::kCpu),
        marker_(ctx.step_marker),
        marker_prefix_(MarkerPrefix(ctx.step_marker)) {}

  void Run() {
    buf_.Reserve(kChunkBytes + kPad, 0);
    brackets_.reset(new uint32_t[kSliceBlocks * 64]);
    Refill(0);
    if (len_ >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
    if (!SkipWs()) {
      diag_.Add(DiagCode::kTraceUnsupported, ctx_.path, 0, "no JSON in the file");
      ReportDamage();
      return;
    }
    char c = *Ptr(pos_);
    if (c == '[') {
      ++pos_;
      array_format_ = true;
      saw_events_ = true;
      ParseEvents();
    } else if (c == '{') {
      ++pos_;
      ParseRootObject();
    } else {
      diag_.AddAtOffset(DiagCode::kTraceUnsupported, ctx_.path, pos_,
                        "not a Chrome trace: the file is not a JSON object or array");
      ReportDamage();
      return;
    }
    ReportDamage();
    if (!saw_events_ && !truncated_) {
      diag_.Add(DiagCode::kTraceUnsupported, ctx_.path, 0,
                "JSON object without a traceEvents array");
      return;
    }
    has_trace_ = true;
  }

  // A trace read to its end with CPU events but no device op and no runtime
  // call is CPU-only. One that ends early may have lost its GPU events (Kineto
  // writes CPU ops first), so it is CPU-only only when its header shows no
  // GPU: no deviceProperties entry and no NCCL / RCCL backend.
  bool NeedsCpuPass() const {
    if (mode_ != Mode::kDevice || !has_trace_ || !ops_.empty() || !saw_cpu_events_ ||
        saw_runtime_) {
      return false;
    }
    return (!truncated_ && !stopped_early_) || !gpu_job_;
  }

  // Adds the trace (if the file is one) and the diagnostics to ctx.out.
  // Returns the number of ops and steps taken.
  uint64_t Commit() {
    uint64_t taken = has_trace_ ? Finish() : 0;
    ctx_.diag().MergeFrom(diag_);
    return taken;
  }

 private:
  // -- Buffer: bytes [buf_off_, buf_off_ + len_) of the decompressed stream,
  // followed by kPad blanks.

  char* Ptr(uint64_t abs) { return buf_.data() + (abs - buf_off_); }
  uint64_t End() const { return buf_off_ + len_; }

  // Drops the bytes before `keep_from` and appends up to a chunk. Returns
  // false at the end of data.
  bool Refill(uint64_t keep_from) {
    if (eof_) return false;
    size_t drop = static_cast<size_t>(keep_from - buf_off_);
    if (drop > 0) {
      std::memmove(buf_.data(), buf_.data() + drop, len_ - drop);
      len_ -= drop;
      buf_off_ = keep_from;
    }
    buf_.Reserve(len_ + kChunkBytes + kPad, len_);
    size_t got = 0;
    while (got < kChunkBytes) {
      size_t n = src_->Read(buf_.data() + len_, kChunkBytes - got);
      if (n == 0) {
        eof_ = true;
        break;
      }
      len_ += n;
      got += n;
    }
    std::memset(buf_.data() + len_, ' ', kPad);
    return got > 0;
  }

  // Calls on_bracket(offset) for each bracket outside strings in
  // [scan, End()): whole blocks, and the tail too when at_eof. Returns false
  // when on_bracket stopped it; `scan` ends after the last block indexed.
  template <typename F>
  bool ScanBrackets(uint64_t& scan, ScanState& st, bool at_eof, F&& on_bracket) {
    const BracketIndexer index = ActiveIndexer().fn;
    for (;;) {
      size_t avail = static_cast<size_t>(End() - scan);
      size_t nblocks = std::min(avail / 64, kSliceBlocks);
      uint64_t base = scan;
      uint32_t* last = nullptr;
      if (nblocks > 0) {
        last = index(Ptr(scan), nblocks, st, brackets_.get());
        scan += 64 * nblocks;
      } else if (at_eof && avail > 0) {
        char tail[64];
        std::memset(tail, ' ', sizeof tail);
        std::memcpy(tail, Ptr(scan), avail);
        last = index(tail, 1, st, brackets_.get());
        scan = End();
      } else {
        return true;
      }
      for (const uint32_t* q = brackets_.get(); q < last; ++q) {
        if (!on_bracket(base + *q)) return false;
      }
    }
  }

  bool IsOpen(uint64_t at) { return (*Ptr(at) | 0x20) == '{'; }

  // -- Top level (scalar: a few small members around traceEvents).

  bool SkipWs() {
    for (;;) {
      while (pos_ < End() && IsBlank(*Ptr(pos_))) ++pos_;
      if (pos_ < End()) return true;
      if (!Refill(pos_)) return false;
    }
  }

  static void Capture(std::string*& cap, const char* p, size_t n) {
    if (cap == nullptr) return;
    if (cap->size() + n > kMaxCaptureBytes) {
      cap->clear();
      cap = nullptr;
      return;
    }
    cap->append(p, n);
  }

  // Skips the JSON value at pos_, appending its text to *cap (when given and
  // under kMaxCaptureBytes). False at the end of data.
  bool SkipValue(std::string* cap) {
    char c = *Ptr(pos_);
    if (c == '"') return SkipString(cap);
    if (c == '{' || c == '[') return SkipNested(cap);
    for (;;) {  // number, literal or garbage: up to a delimiter
      uint64_t p = pos_;
      while (p < End()) {
        char ch = *Ptr(p);
        if (ch == ',' || ch == '}' || ch == ']' || IsSpace(ch)) {
          Capture(cap, Ptr(pos_), p - pos_);
          pos_ = p;
          return true;
        }
        ++p;
      }
      Capture(cap, Ptr(pos_), p - pos_);
      pos_ = p;
      if (!Refill(pos_)) return false;
    }
  }

  bool SkipString(std::string* cap) {
    uint64_t p = pos_ + 1;
    bool escaped = false;
    for (;;) {
      while (p < End()) {
        char ch = *Ptr(p++);
        if (escaped) {
          escaped = false;
        } else if (ch == '\\') {
          escaped = true;
        } else if (ch == '"') {
          Capture(cap, Ptr(pos_), p - pos_);
          pos_ = p;
          return true;
        }
      }
      Capture(cap, Ptr(pos_), p - pos_);
      pos_ = p;
      if (!Refill(pos_)) return false;
    }
  }

  bool SkipNested(std::string* cap) {
    ScanState st;
    int64_t depth = 0;
    uint64_t scan = pos_;
    std::optional<uint64_t> end;
    auto on_bracket = [&](uint64_t at) {
      if (IsOpen(at)) {
        ++depth;
      } else if (--depth <= 0) {
        end = at + 1;
        return false;
      }
      return true;
    };
    for (;;) {
      bool at_eof = eof_;
      ScanBrackets(scan, st, at_eof, on_bracket);
      if (end) {
        Capture(cap, Ptr(pos_), *end - pos_);
        pos_ = *end;
        return true;
      }
      Capture(cap, Ptr(pos_), scan - pos_);
      pos_ = scan;
      if (at_eof) return false;
      Refill(pos_);
    }
  }

  void ParseRootObject() {
    std::string key_text, scratch;
    for (bool first = true;; first = false) {
      if (!SkipWs()) return Cut("in the top-level object");
      char c = *Ptr(pos_);
      if (c == '}') {
        ++pos_;
        root_closed_ = true;
        return;
      }
      if (!first) {
        if (c != ',') return Malformed("expected ',' or '}' between top-level members");
        ++pos_;
        if (!SkipWs()) return Cut("in the top-level object");
        c = *Ptr(pos_);
      }
      if (c != '"') return Malformed("expected a member name");
      key_text.clear();
      if (!SkipString(&key_text)) return Cut("in a top-level member name");
      auto key = DecodeString(key_text, scratch);
      if (!key) return Malformed("bad member name");
      std::string k(*key);
      if (!SkipWs()) return Cut("in the top-level object");
      if (*Ptr(pos_) != ':') return Malformed("expected ':' after a member name");
      ++pos_;
      if (!SkipWs()) return Cut("in the top-level object");
      if (k == kineto::kTraceEvents && *Ptr(pos_) == '[') {
        ++pos_;
        saw_events_ = true;
        if (!ParseEvents()) return;  // the cut is counted
        continue;
      }
      bool wanted = k == kineto::kDistributedInfo || k == kineto::kBaseTime ||
                    k == kineto::kHostName || k == kineto::kHostname ||
                    k == kineto::kDeviceProperties;
      std::string value;
      if (!SkipValue(wanted ? &value : nullptr)) return Cut("in top-level member \"" + k + "\"");
      if (wanted && !value.empty()) TakeMember(k, value);
    }
  }

  void TakeMember(const std::string& k, const std::string& text) {
    std::string scratch;
    if (k == kineto::kDeviceProperties) {
      if (text.find('{') != std::string::npos) gpu_job_ = true;  // one object per GPU
    } else if (k == kineto::kBaseTime) {
      auto v = ParseIntToken(text);
      if (v && *v >= 0 && *v <= kMaxBaseNs) base_ns_ = *v;
    } else if (k == kineto::kHostName || k == kineto::kHostname) {
      auto s = DecodeString(text, scratch);
      if (s && !s->empty()) top_host_ = std::string(*s);
    } else if (k == kineto::kDistributedInfo) {
      simdjson::padded_string padded(text);
      od::parser parser;
      od::document doc;
      od::object obj;
      if (parser.iterate(padded).get(doc) || doc.get_object().get(obj)) return;
      for (auto field_result : obj) {
        od::field field;
        if (std::move(field_result).get(field)) return;
        std::string_view key;
        if (field.unescaped_key().get(key)) return;
        std::string_view tok = field.value().raw_json_token();
        if (key == kineto::kRank) {
          auto r = ParseIntToken(tok);
          if (r && *r >= 0 && *r <= kMaxRank) dist_rank_ = static_cast<int32_t>(*r);
        } else if (key == kineto::kWorldSize) {
          auto w = ParseIntToken(tok);
          if (w && *w > 0 && *w <= int64_t{kMaxRank} + 1) world_size_ = static_cast<int32_t>(*w);
        } else if (key == kineto::kBackend) {
          auto b = DecodeString(tok, scratch);
          if (b && (b->find("nccl") != std::string_view::npos ||
                    b->find("rccl") != std::string_view::npos ||
                    b->find("xccl") != std::string_view::npos)) {
            gpu_job_ = true;
          }
        } else if (key == kineto::kHostname || key == kineto::kHostName || key == kineto::kHost) {
          auto s = DecodeString(tok, scratch);
          if (s && !s->empty()) dist_host_ = std::string(*s);
        }
      }
    }
  }

  void Cut(const std::string& where) {
    truncated_ = true;
    diag_.AddAtOffset(DiagCode::kTraceTruncated, ctx_.path, End(),
                      fmt::format("file ends at byte {} {}; {} complete events kept", End(), where,
                                  events_total_));
  }

  void Malformed(const std::string& what) {
    stopped_early_ = true;
    diag_.AddAtOffset(DiagCode::kTraceBadEvent, ctx_.path, pos_,
                      what + " (top-level JSON); the rest of the file is ignored");
  }

  void ReportDamage() {
    if (const auto& damage = src_->damage()) {
      diag_.AddAtOffset(damage->kind == StreamDamage::kTruncated ? DiagCode::kGzipTruncated
                                                                 : DiagCode::kGzipCorrupt,
                        ctx_.path, damage->compressed_offset, damage->message);
    }
  }

  // -- traceEvents: pos_ is just after '['. Returns true at the closing ']'
  // (pos_ after it), false at the end of data (a cut is counted).

  bool ParseEvents() {
    ScanState st;
    int64_t depth = 0;
    uint64_t scan = pos_;
    uint64_t gap_from = pos_;  // end of the previous event
    bool in_event = false;
    uint64_t event_start = 0;
    bool oversized = false;
    bool array_closed = false;

    auto on_bracket = [&](uint64_t at) {
      if (IsOpen(at)) {
        if (depth++ == 0) {
          CheckGap(gap_from, at);
          in_event = true;
          event_start = at;
          oversized = false;
        }
        return true;
      }
      if (depth == 0) {
        CheckGap(gap_from, at);
        array_closed = true;
        pos_ = at + 1;
        return false;
      }
      if (--depth == 0) {
        TakeSpan(event_start, at + 1, oversized);
        in_event = false;
        gap_from = at + 1;
      }
      return true;
    };

    for (;;) {
      bool at_eof = eof_;
      ScanBrackets(scan, st, at_eof, on_bracket);
      if (array_closed) return true;
      if (at_eof) {
        if (in_event) {
          truncated_ = true;
          events_lost_ = 1;
          diag_.AddAtOffset(DiagCode::kTraceTruncated, ctx_.path, End(),
                            fmt::format("file ends at byte {} inside the event that starts at byte "
                                        "{}; {} complete events kept, the rest of the trace is "
                                        "missing",
                                        End(), event_start, events_total_));
        } else if (!array_format_) {
          // The Array Format may end without its ']'; the Object Format may not.
          truncated_ = true;
          diag_.AddAtOffset(DiagCode::kTraceTruncated, ctx_.path, End(),
                            fmt::format("file ends at byte {} between events of traceEvents; {} "
                                        "complete events kept, the rest of the trace is missing",
                                        End(), events_total_));
        }
        pos_ = End();
        return false;
      }
      if (in_event && !oversized && scan - event_start > kMaxEventBytes) oversized = true;
      if (!in_event && scan - gap_from > kMaxGapBytes) {
        CheckGap(gap_from, scan);
        gap_from = scan;
      }
      uint64_t keep = scan;
      if (in_event && !oversized) keep = std::min(keep, event_start);
      if (!in_event) keep = std::min(keep, gap_from);
      Refill(keep);
    }
  }

  // Bytes between events must be blanks and a comma.
  void CheckGap(uint64_t from, uint64_t to) {
    if (from < buf_off_ || to <= from) return;
    const char* p = Ptr(from);
    if (to - from == 4 && std::memcmp(p, ",\n  ", 4) == 0) return;  // Kineto's, at once
    for (uint64_t i = 0; i < to - from; ++i) {
      char c = p[i];
      if (c != ',' && !IsBlank(c)) {
        ++events_total_;
        BadEvent(from + i, "unexpected data between events (not an object)");
        return;
      }
    }
  }

  // One complete top-level element of traceEvents: [start, end).
  void TakeSpan(uint64_t start, uint64_t end, bool oversized) {
    ++events_total_;
    if (oversized) {
      return BadEvent(start, fmt::format("event over {} MiB skipped", kMaxEventBytes >> 20));
    }
    const char* p = Ptr(start);
    if (*p != '{') return BadEvent(start, "event is an array, not an object");
    size_t n = static_cast<size_t>(end - start);
    if (!Wanted(p, n)) return;
    EventFields e;
    if (!flat_events_ || !ExtractFlat(p, p + n, e)) {
      od::document doc;
      od::object obj;
      if (parser_.iterate(p, n, n + kPad).get(doc) || doc.get_object().get(obj) ||
          ExtractEvent(obj, e) == Extract::kMalformed) {
        return BadEvent(start, "event is not valid JSON");
      }
    }
    if (e.skip) return;
    TakeEvent(e, start);
  }

  // The raw bytes every JSON string that decodes to a name the step marker
  // matches starts with: its opening quote and the marker up to the first
  // byte a writer may escape there (a quote or backslash; any byte may be
  // written as \uXXXX, which MarkerMayMatch allows for).
  static std::string MarkerPrefix(std::string_view marker) {
    return "\"" + std::string(marker.substr(0, marker.find_first_of("\"\\")));
  }

  // Whether the JSON string at p (its opening quote; the bytes run to the
  // event's end) may name the step marker: its bytes are the marker's until
  // the first escape. Names that pass are decoded and matched exactly.
  bool MarkerMayMatch(const char* p, const char* end) const {
    for (size_t i = 0; i < marker_prefix_.size(); ++i, ++p) {
      if (p >= end) return true;  // cut short: the full parse reports it
      if (i > 0 && *p == '\\') return true;
      if (*p != marker_prefix_[i]) return false;
    }
    return true;
  }

  // Whether a CPU-side event (cat cpu_op / user_annotation) named `name`
  // (the JSON token, quotes included) is needed.
  bool WantCpuEvent(Cat cat, std::string_view name_tok) const {
    std::string_view n = TrimToken(name_tok);
    if (!marker_.empty() && !n.empty() && MarkerMayMatch(n.data(), n.data() + n.size())) return true;
    if (n.size() >= 2) n = n.substr(1, n.size() - 2);
    if (StartsWith(n, kineto::kProfilerStep) || n == kineto::kRecordParamComms) return true;
    if (!collecting_cpu_) return false;
    return cat == Cat::kCpuOp || IsCpuCommName(n);
  }

  // What ph, cat and name (as far as seen) say: the event is needed (true),
  // not needed (false) or not known yet (nullopt). Also notes CPU and
  // runtime events for the CPU-only decision.
  std::optional<bool> Decide(std::string_view ph, Cat cat, std::string_view name) {
    if (!ph.empty() && ph != kineto::kPhComplete) return false;
    if (cat == Cat::kRuntime) {
      saw_runtime_ = true;
      if (mode_ != Mode::kDevice) return false;
      if (ph.empty() || name.empty()) return std::nullopt;
      return IsLaunchCallName(name);
    }
    if (cat == Cat::kIgnored) return false;
    if (ph.empty() || cat == Cat::kUnseen) return std::nullopt;
    if (IsDeviceCat(cat)) return mode_ == Mode::kDevice;
    saw_cpu_events_ = true;
    if (name.empty()) return std::nullopt;
    return WantCpuEvent(cat, name);
  }

  // The prefilter's fast path, for the exact layout Kineto and json.dumps
  // write: "ph": "?", "cat": "...", "name": "..." (q is at the first key).
  // nullopt when the event is laid out otherwise.
  //
  // A device op or launch call it finds wanted is left in resume_ for the
  // walker to go on from. The strings it read (cat, a launch call's name) end
  // at their first '"' with no escape, control or non-ASCII byte before it,
  // so they are the tokens the walker would have read, and the decisions the
  // walker would take on them are the ones taken here.
  std::optional<bool> WantedKinetoLayout(const char* q, const char* end) {
    if (!At(q, end, "\"ph\": \"") || end - q < 9 || q[8] != '"' || q[7] == '\\')
      return std::nullopt;
    if (q[7] != 'X') return false;  // a flow, instant or metadata event
    const char* const ph = q + 6;
    q += 9;
    if (!At(q, end, ", \"cat\": \"")) return std::nullopt;
    q += 9;  // the opening quote of the category
    const char* close = FindStringStop(q + 1, end);
    if (close == nullptr || *close != '"') return std::nullopt;
    const std::string_view cat_tok(q, static_cast<size_t>(close + 1 - q));
    Cat cat = ClassifyCat(cat_tok);
    if (cat == Cat::kRuntime) saw_runtime_ = true;
    if (cat == Cat::kIgnored || (cat == Cat::kRuntime && mode_ != Mode::kDevice)) return false;
    if (IsDeviceCat(cat)) {
      if (mode_ != Mode::kDevice) return false;
      resume_.Set(close + 1, 2, std::string_view(ph, 3), cat_tok, {}, cat);
      return true;
    }
    if (cat != Cat::kRuntime) saw_cpu_events_ = true;
    if (mode_ != Mode::kDevice) return true;
    q = close + 1;
    if (!At(q, end, ", \"name\": \"")) return std::nullopt;
    q += 10;  // the opening quote of the name
    if (cat == Cat::kRuntime) {  // a launch call, by its (unescaped) name
      const char* name_end = FindStringStop(q + 1, end);
      if (name_end == nullptr || *name_end != '"') return std::nullopt;
      if (!IsLaunchCallName(std::string_view(q + 1, static_cast<size_t>(name_end - q - 1)))) {
        return false;
      }
      resume_.Set(name_end + 1, 3, std::string_view(ph, 3), cat_tok,
                  std::string_view(q, static_cast<size_t>(name_end + 1 - q)), cat);
      return true;
    }
    if (!marker_.empty() && MarkerMayMatch(q, end)) return true;
    // The name's first byte picks the one literal to compare.
    switch (q + 1 < end ? q[1] : '\0') {
      case 'P':
        return At(q, end, "\"ProfilerStep#");
      case 'r':
        return At(q, end, "\"record_param_comms\"");
      case '\\':
        return true;
      default:
        return false;
    }
  }

  // Prefilter: walks the leading plain members of the event at p (p[0] is
  // '{') with an exact JSON tokenizer and returns false only when ph, cat or
  // name show the event is not needed; anything unusual (escapes in them, a
  // nested value before them) leaves the decision to the full parse.
  // Kineto writes ph, cat, name first, so ~80% of a GPU trace's events (CPU
  // ops, runtime calls, flows) never reach simdjson. Example: for
  //   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, ...}
  // in kDevice mode it reads ph (X: maybe), cat (cpu_op: depends on the
  // name), then only the name's first bytes (not ProfilerStep#, not
  // record_param_comms: skip).
  [[gnu::always_inline]] bool Wanted(const char* p, size_t n) {
    const char* const end = p + n;
    const char* q = p + 1;
    while (q < end && IsBlank(*q)) ++q;
    resume_.after = nullptr;
    if (std::optional<bool> fast = WantedKinetoLayout(q, end)) return *fast;
    return WantedOtherLayout(q, end);
  }

  // Wanted() for an event not in Kineto's layout; q is at its first member.
  [[gnu::noinline]] bool WantedOtherLayout(const char* q, const char* const end) {
    std::string_view ph, name;
    Cat cat = Cat::kUnseen;
    auto blanks = [&] {
      while (q < end && IsBlank(*q)) ++q;
    };
    // The end of the string starting at q (a quote); nullptr if unclosed.
    auto string_end = [&](bool& escapes) -> const char* {
      const char* c = FindQuoteOrBackslash(q + 1, end);
      escapes = c != nullptr && *c == '\\';
      if (!escapes) return c == nullptr ? nullptr : c + 1;
      for (; c < end; ++c) {  // rare: walk the escapes
        if (*c == '\\')
          ++c;
        else if (*c == '"')
          return c + 1;
      }
      return nullptr;
    };
    for (int member = 0; member < 8; ++member) {
      blanks();
      if (q >= end || *q != '"') return true;
      bool escapes = false;
      const char* key_end = string_end(escapes);
      if (key_end == nullptr || escapes) return true;
      std::string_view key(q + 1, static_cast<size_t>(key_end - q - 2));
      q = key_end;
      blanks();
      if (q >= end || *q != ':') return true;
      ++q;
      blanks();
      if (q >= end) return true;
      bool decisive = key == kineto::kPh || key == kineto::kCat || key == kineto::kName;
      const char* value_begin = q;
      if (*q == '"') {
        if (key == kineto::kName && cat != Cat::kUnseen && !ph.empty() && mode_ == Mode::kDevice &&
            !IsDeviceCat(cat) && cat != Cat::kRuntime) {
          // Only ProfilerStep#N and record_param_comms matter here: their
          // first bytes decide, whatever the rest of the name.
          size_t left = static_cast<size_t>(end - q);
          auto starts = [&](std::string_view lit) {
            return left >= lit.size() && std::memcmp(q, lit.data(), lit.size()) == 0;
          };
          saw_cpu_events_ = true;
          if (!marker_.empty() && MarkerMayMatch(q, end)) return true;
          return starts("\"ProfilerStep#") || starts("\"record_param_comms\"") || starts("\"\\");
        }
        const char* value_end = string_end(escapes);
        if (value_end == nullptr || (escapes && decisive)) return true;
        q = value_end;
      } else if (*q == '{' || *q == '[') {
        return true;
      } else {
        while (q < end && *q != ',' && *q != '}' && !IsBlank(*q)) ++q;
      }
      if (decisive) {
        std::string_view value(value_begin, static_cast<size_t>(q - value_begin));
        if (key == kineto::kPh)
          ph = value;
        else if (key == kineto::kCat)
          cat = ClassifyCat(value);
        else
          name = value;
        if (auto decided = Decide(ph, cat, name)) return *decided;
      }
      blanks();
      if (q >= end || *q != ',') return true;
      ++q;
    }
    return true;
  }

  // ExtractEvent without simdjson, for an event in the flat subset (see
  // FlatValueEnd): the same fields and the same decisions, member by member.
  // False when the event is outside the subset; `e` and the flags Decide
  // sets are then as they were, for On-Demand to start over.
  bool ExtractFlat(const char* p, const char* end, EventFields& e) {
    // A span the indexer closed with ']' is no object: On-Demand rejects it
    // whole, before reading a member.
    if (end[-1] != '}') return false;
    std::array<EventTemplate, 2>* templates = nullptr;
    if (resume_.after != nullptr) {
      templates = &templates_[TemplateKind(resume_.cat_kind)];
      for (size_t i = 0; i < templates->size(); ++i) {
        EventTemplate& t = (*templates)[i];
        if (t.holes.empty()) break;
        if (MatchTemplate(t, end, e)) {
          if (i > 0) std::swap((*templates)[0], t);  // the kind seen last first
          return true;
        }
        e = EventFields();
      }
      read_values_.clear();
      recording_ = true;
    }
    const bool saw_cpu = saw_cpu_events_, saw_runtime = saw_runtime_;
    const bool read = ExtractFlatMembers(p, end, e);
    if (recording_) {
      recording_ = false;
      if (read && !e.skip) LearnTemplate(end, *templates);
    }
    if (read) return true;
    saw_cpu_events_ = saw_cpu;
    saw_runtime_ = saw_runtime;
    e = EventFields();
    return false;
  }

  // Templates by the kind of event the prefilter resumes from.
  static size_t TemplateKind(Cat c) {
    switch (c) {
      case Cat::kKernel: return 1;
      case Cat::kMemcpy: return 2;
      case Cat::kMemset: return 3;
      default: return 0;  // launch calls
    }
  }

  // The event whose leading members the prefilter read (resume_), read
  // with template t: true and `e` set as ExtractFlatMembers would set it,
  // or false (and `e` half set) when a byte differs.
  bool MatchTemplate(const EventTemplate& t, const char* end, EventFields& e) {
    e.ph = resume_.ph;
    e.cat = resume_.cat;
    e.cat_kind = resume_.cat_kind;
    e.name = resume_.name;
    e.name_plain = !resume_.name.empty();
    const char* q = resume_.after;
    const char* const lit = t.text.data();
    if (end - q < t.lead_len || !SameBytes(q, lit, t.lead_len, t.lead_want)) return false;
    q += t.lead_len;
    for (const TemplateHole& h : t.holes) {
      const char* const v = q;
      if (h.kind == TemplateHole::kNumber) [[likely]] {
        // Past the end, q fails the literal's length check below.
        unsigned other = NotNumberMask16(q);
        q = other != 0 ? q + __builtin_ctz(other) : NumberCharsEnd(q + 16, end);
        if (q == v) return false;
      } else if (h.kind == TemplateHole::kString) {
        if (*q != '"') return false;
        q = FindStringStop(q + 1, end);
        if (q == nullptr || *q != '"') return false;
        ++q;
      } else {
        std::array<int64_t, 3> d{};
        q = FlatDims3(q, end, d);
        if (q == nullptr) return false;
        e.*h.dims = d;
      }
      e.*h.token = std::string_view(v, static_cast<size_t>(q - v));
      const char* const after = lit + h.literal;
      if (end - q < h.literal_len ||
          !(h.literal_len <= 16 ? SameBytes16(q, after, h.literal_want)
                                : SameBytes(q, after, h.literal_len, h.literal_want))) {
        return false;
      }
      q += h.literal_len;
    }
    if (t.reads_name) e.name_plain = true;
    return q == end;
  }

  // Learns the event the walker just read from resume_ (its values in
  // read_values_) as the first of `templates`, when every value is one a
  // template reads alike whatever its content.
  void LearnTemplate(const char* end, std::array<EventTemplate, 2>& templates) {
    if (read_values_.empty() || read_values_.size() > EventTemplate::kMaxHoles) return;
    EventTemplate t;
    t.holes.reserve(read_values_.size());
    const char* from = resume_.after;
    auto literal = [&](const char* to) -> std::optional<uint16_t> {
      if (to < from || t.text.size() + static_cast<size_t>(to - from) > EventTemplate::kMaxText) {
        return std::nullopt;
      }
      auto len = static_cast<uint16_t>(to - from);
      t.text.append(from, len);
      return len;
    };
    auto lead = literal(read_values_.front().begin);
    if (!lead) return;
    t.lead_len = *lead;
    t.lead_want = WantBits(*lead);
    for (size_t i = 0; i < read_values_.size(); ++i) {
      const ReadValue& r = read_values_[i];
      // Values whose reading depends on what they say: ph and cat (Decide),
      // a launch call's name (Decide), Input Dims (read per name).
      if (r.field == Field::kPh || r.field == Field::kCat || r.field == Field::kInputDims ||
          (r.field == Field::kName && resume_.cat_kind == Cat::kRuntime)) {
        return;
      }
      TemplateHole h;
      if (r.dims3) {
        h.kind = TemplateHole::kDims3;
        h.dims = r.field == Field::kGrid ? &EventFields::grid : &EventFields::block;
      } else if (*r.begin == '"') {
        if (FindStringStop(r.begin + 1, r.end) != r.end - 1) return;  // escapes
        h.kind = TemplateHole::kString;
      } else {
        if (r.begin == r.end || NumberCharsEnd(r.begin, r.end) != r.end) return;
        h.kind = TemplateHole::kNumber;
      }
      if (!r.dims3) {
        if (auto token = TokenMember(r.field)) h.token = token;
      }
      if (r.field == Field::kName) t.reads_name = true;
      from = r.end;
      h.literal = static_cast<uint16_t>(t.text.size());
      auto len = literal(i + 1 < read_values_.size() ? read_values_[i + 1].begin : end);
      if (!len || *len == 0) return;
      h.literal_len = *len;
      h.literal_want = WantBits(*len);
      t.holes.push_back(h);
    }
    t.text.append(32, '\0');  // SameBytes reads 32 bytes at a literal
    templates[1] = std::move(templates[0]);
    templates[0] = std::move(t);
  }

  bool ExtractFlatMembers(const char* p, const char* end, EventFields& e) {
    const char* q = nullptr;
    size_t first = 0;
    if (resume_.after != nullptr) {  // ph, cat (and name) read by the prefilter
      e.ph = resume_.ph;
      e.cat = resume_.cat;
      e.cat_kind = resume_.cat_kind;
      e.name = resume_.name;
      e.name_plain = !resume_.name.empty();  // read up to its first '"', no escape before
      first = resume_.members;
      bool closed = false;
      q = FlatNextMember(resume_.after, end, closed);
      if (q == nullptr) return false;
      if (closed) return q == end;
    } else {
      q = SkipBlanks(p + 1, end);
    }
    for (size_t i = first;; ++i) {
      Field field = Field::kOther;
      q = FlatKey(q, end, top_slots_, i, /*args=*/false, field);
      if (q == nullptr) return false;
      std::string_view* out = nullptr;
      switch (field) {
        case Field::kPh:
          out = &e.ph;
          break;
        case Field::kPid:
          out = &e.pid;
          break;
        case Field::kCat:
          out = &e.cat;
          break;
        case Field::kName:
          out = &e.name;
          break;
        case Field::kTs:
          out = &e.ts;
          break;
        case Field::kTid:
          out = &e.tid;
          break;
        case Field::kDur:
          out = &e.dur;
          break;
        default:
          break;
      }
      if (field == Field::kArgs) {
        if (*q != '{') return false;  // On-Demand reads such an event as one without args
        q = ExtractFlatArgs(q, end, e);
        if (q == nullptr) return false;
        // Kineto writes args last: the rest need not be walked (as ExtractEvent).
        if (!e.ph.empty() && !e.cat.empty() && !e.name.empty() && !e.ts.empty() &&
            !e.dur.empty()) {
          return FlatRestClean(q, end);
        }
      } else if (out != nullptr) {
        const char* v = q;
        const char* plain_end = nullptr;  // a name's closing quote, when it has no escape
        if (field == Field::kName && *q == '"') {
          const char* stop = FindStringStop(q + 1, end);
          if (stop != nullptr && *stop == '"') plain_end = stop;
        }
        q = plain_end != nullptr ? plain_end + 1 : FlatScalarEnd(q, end);  // the same end
        if (field == Field::kName) e.name_plain = plain_end != nullptr;
        if (q == nullptr) return false;
        *out = std::string_view(v, static_cast<size_t>(q - v));
        if (recording_) read_values_.push_back({v, q, field, false});
        if (field == Field::kCat) e.cat_kind = ClassifyCat(e.cat);
        if (field == Field::kPh || field == Field::kCat || field == Field::kName) {
          auto decided = Decide(e.ph, e.cat_kind, e.name);
          if (decided && !*decided) {
            e.skip = true;
            return FlatRestClean(q, end);
          }
        }
      } else {
        const char* v = q;
        q = FlatValueEnd(q, end);
        if (q == nullptr) return false;
        if (recording_) read_values_.push_back({v, q, field, false});
      }
      bool closed = false;
      q = FlatNextMember(q, end, closed);
      if (q == nullptr) return false;
      if (closed) return q == end;
    }
  }

  // ExtractArgs over the flat subset: q is at the args' '{'. Returns the
  // byte after its '}', or nullptr.
  const char* ExtractFlatArgs(const char* q, const char* end, EventFields& e) {
    std::string_view name = TrimToken(e.name);
    if (name.size() >= 2) name = name.substr(1, name.size() - 2);
    const bool want_dims = collecting_cpu_ && IsCpuCommName(name) && name != kineto::kRecordParamComms;
    const bool want_shape = IsDeviceCat(e.cat_kind);
    KeySlots& slots = args_slots_[e.cat_kind == Cat::kRuntime ? 0 : e.cat_kind == Cat::kKernel ? 1 : 2];
    q = SkipBlanks(q + 1, end);
    if (q < end && *q == '}') return q + 1;
    for (size_t i = 0;; ++i) {
      Field field = Field::kOther;
      q = FlatKey(q, end, slots, i, /*args=*/true, field);
      if (q == nullptr) return nullptr;
      std::string_view* out = nullptr;
      std::optional<std::array<int64_t, 3>>* dims = nullptr;
      switch (field) {
        case Field::kDevice:
          out = &e.device;
          break;
        case Field::kCorrelation:
          out = &e.correlation;
          break;
        case Field::kGrid:
          if (want_shape) dims = &e.grid;
          break;
        case Field::kBlock:
          if (want_shape) dims = &e.block;
          break;
        case Field::kStream:
          out = &e.stream;
          break;
        case Field::kCollectiveName:
          out = &e.coll_name;
          break;
        case Field::kInMsgNelems:
          out = &e.nelems;
          break;
        case Field::kInputDims:
          if (want_dims) return nullptr;  // nested arrays: FirstDimsProduct reads them
          break;
        case Field::kGroupSize:
          out = &e.group_size;
          break;
        case Field::kProcessGroupName:
          out = &e.pg_name;
          break;
        case Field::kProcessGroupId:
          out = &e.pg_id;
          break;
        case Field::kSeq:
          out = &e.seq;
          break;
        case Field::kExternalId:
          out = &e.ext_id;
          break;
        default:
          break;
      }
      const char* const v = q;
      if (dims != nullptr) {
        std::array<int64_t, 3> d{};
        q = FlatDims3(q, end, d);
        if (q == nullptr) return nullptr;
        *dims = d;
      } else if (out != nullptr) {
        q = FlatScalarEnd(q, end);
        if (q == nullptr) return nullptr;
        *out = std::string_view(v, static_cast<size_t>(q - v));
      } else {
        q = FlatValueEnd(q, end);
        if (q == nullptr) return nullptr;
      }
      if (recording_) read_values_.push_back({v, q, field, dims != nullptr});
      bool closed = false;
      q = FlatNextMember(q, end, closed);
      if (q == nullptr || closed) return q;
    }
  }

  // The member key at q (its opening quote), the i-th of its object: first
  // compared with the key the i-th member had in the last event of this
  // layout (Kineto writes every event of a kind with the same keys in the
  // same order), else read and remembered. Sets `field` and returns the
  // start of the value, or nullptr.
  [[gnu::always_inline]] const char* FlatKey(const char* q, const char* end, KeySlots& slots,
                                             size_t i, bool args, Field& field) {
    if (i < kMaxKeySlots) {
      const KeySlot& slot = slots[i];
      if (q + slot.len < end && slot.Matches(q) && !IsBlank(q[slot.len])) {
        field = slot.field;
        return q + slot.len;
      }
    }
    return ReadKey(q, end, slots, i, args, field);
  }

  // FlatKey's slow path: a key not seen at this position before.
  [[gnu::noinline]] const char* ReadKey(const char* q, const char* end, KeySlots& slots, size_t i,
                                        bool args, Field& field) {
    const char* k = nullptr;
    const char* v = FlatMemberValue(q, end, k);
    if (v == nullptr) return nullptr;
    field = args ? ArgField(k) : TopField(k);
    if (i < kMaxKeySlots) slots[i].Learn(q, v, field);
    return v;
  }

  Extract ExtractEvent(od::object& obj, EventFields& e) {
    od::object_iterator it, end;
    if (obj.begin().get(it) || obj.end().get(end)) return Extract::kMalformed;
    for (; it != end; ++it) {
      od::field field;
      if ((*it).get(field)) return Extract::kMalformed;
      const char* k = field.key().raw();
      od::value& v = field.value();
      bool decisive = false;
      switch (k[0]) {
        case 'p':
          if (KeyIs(k, kineto::kPh))
            e.ph = TrimToken(v.raw_json_token()), decisive = true;
          else if (KeyIs(k, kineto::kPid))
            e.pid = TrimToken(v.raw_json_token());
          break;
        case 'c':
          if (KeyIs(k, kineto::kCat)) {
            e.cat = TrimToken(v.raw_json_token());
            e.cat_kind = ClassifyCat(e.cat);
            decisive = true;
          }
          break;
        case 'n':
          if (KeyIs(k, kineto::kName)) e.name = TrimToken(v.raw_json_token()), decisive = true;
          break;
        case 't':
          if (KeyIs(k, kineto::kTs))
            e.ts = TrimToken(v.raw_json_token());
          else if (KeyIs(k, kineto::kTid))
            e.tid = TrimToken(v.raw_json_token());
          break;
        case 'd':
          if (KeyIs(k, kineto::kDur)) e.dur = TrimToken(v.raw_json_token());
          break;
        case 'a':
          if (KeyIs(k, kineto::kArgs)) {
            od::object args;
            if (v.get_object().get(args)) break;  // not an object: no args
            if (ExtractArgs(args, e) == Extract::kMalformed) return Extract::kMalformed;
            // Kineto writes args last: the rest need not be walked.
            if (!e.ph.empty() && !e.cat.empty() && !e.name.empty() && !e.ts.empty() &&
                !e.dur.empty()) {
              return Extract::kOk;
            }
          }
          break;
        default:
          break;
      }
      if (decisive) {
        auto decided = Decide(e.ph, e.cat_kind, e.name);
        if (decided && !*decided) {
          e.skip = true;
          return Extract::kOk;
        }
      }
    }
    return Extract::kOk;
  }

  Extract ExtractArgs(od::object& args, EventFields& e) {
    std::string_view name = TrimToken(e.name);
    if (name.size() >= 2) name = name.substr(1, name.size() - 2);
    bool want_dims = collecting_cpu_ && IsCpuCommName(name) && name != kineto::kRecordParamComms;
    bool want_shape = IsDeviceCat(e.cat_kind);
    od::object_iterator it, end;
    if (args.begin().get(it) || args.end().get(end)) return Extract::kMalformed;
    for (; it != end; ++it) {
      od::field field;
      if ((*it).get(field)) return Extract::kMalformed;
      const char* k = field.key().raw();
      od::value& v = field.value();
      std::string_view* out = nullptr;
      switch (k[0]) {
        case 'd':
          if (KeyIs(k, kineto::kDevice)) out = &e.device;
          break;
        case 'c':
          if (KeyIs(k, kineto::kCorrelation)) out = &e.correlation;
          break;
        case 'g':
          if (want_shape && KeyIs(k, kineto::kGrid)) e.grid = Dims3(v);
          break;
        case 'b':
          if (want_shape && KeyIs(k, kineto::kBlock)) e.block = Dims3(v);
          break;
        case 's':
          if (KeyIs(k, kineto::kStream)) out = &e.stream;
          break;
        case 'C':
          if (KeyIs(k, kineto::kCollectiveName)) out = &e.coll_name;
          break;
        case 'I':
          if (KeyIs(k, kineto::kInMsgNelems)) {
            out = &e.nelems;
          } else if (want_dims && KeyIs(k, kineto::kInputDims)) {
            e.dims_product = FirstDimsProduct(v);
          }
          break;
        case 'G':
          if (KeyIs(k, kineto::kGroupSize)) out = &e.group_size;
          break;
        case 'P':
          if (KeyIs(k, kineto::kProcessGroupName))
            out = &e.pg_name;
          else if (KeyIs(k, kineto::kProcessGroupId))
            out = &e.pg_id;
          break;
        case 'S':
          if (KeyIs(k, kineto::kSeq)) out = &e.seq;
          break;
        case 'E':
          if (KeyIs(k, kineto::kExternalId)) out = &e.ext_id;
          break;
        case 'e':
          if (KeyIs(k, kineto::kExternalIdLegacy)) out = &e.ext_id;
          break;
        default:
          break;
      }
      if (out != nullptr) *out = TrimToken(v.raw_json_token());
    }
    return Extract::kOk;
  }

  // "grid": [132, 1, 1] -> {132, 1, 1}; anything else (not 3 non-negative
  // integers) -> nullopt.
  static std::optional<std::array<int64_t, 3>> Dims3(od::value& v) {
    od::array a;
    if (v.get_array().get(a)) return std::nullopt;
    std::array<int64_t, 3> out{};
    size_t n = 0;
    for (auto d : a) {
      int64_t x = 0;
      if (n >= 3 || d.get_int64().get(x) || x < 0) return std::nullopt;
      out[n++] = x;
    }
    if (n != 3) return std::nullopt;
    return out;
  }

  // "Input Dims": [[8, 1024, 8816], [], ...] -> 8 * 1024 * 8816.
  static std::optional<int64_t> FirstDimsProduct(od::value& v) {
    od::array dims;
    if (v.get_array().get(dims)) return std::nullopt;
    for (auto first_result : dims) {
      od::array first;
      if (first_result.get_array().get(first)) return std::nullopt;
      int64_t product = 1;
      bool any = false;
      for (auto d : first) {
        int64_t x = 0;
        if (d.get_int64().get(x) || x < 0) return std::nullopt;
        if (__builtin_mul_overflow(product, x, &product)) return std::nullopt;
        any = true;
      }
      return any ? std::optional<int64_t>(product) : std::nullopt;
    }
    return std::nullopt;
  }

  void BadEvent(uint64_t offset, std::string message) {
    if (++bad_events_ <= Diagnostics::kMaxExamplesPerCode) {
      diag_.AddAtOffset(DiagCode::kTraceBadEvent, ctx_.path, offset, std::move(message));
    }
  }

  NameInfo& Name(std::string_view s) {
    NameCacheEntry& hit = name_cache_[QuickNameHash(s) & (kNameCacheSize - 1)];
    if (hit.key != nullptr && *hit.key == s) return *hit.info;
    auto it = names_.find(s);
    if (it == names_.end()) {
      NameInfo info;
      info.id = ctx_.out->names().Intern(s);
      it = names_.emplace(std::string(s), info).first;
    }
    hit = NameCacheEntry{&it->first, &it->second};
    return it->second;
  }

  uint32_t Intern(std::string_view s) { return Name(s).id; }

  std::optional<uint32_t> GroupOf(const EventFields& e) {
    if (!e.pg_name.empty()) {
      if (auto g = DecodeString(e.pg_name, scratch_)) return Intern(*g);
      return Intern(e.pg_name);  // a number written without quotes
    }
    if (!e.pg_id.empty()) {
      if (auto id = ParseIntToken(e.pg_id)) return Intern(std::to_string(*id));
    }
    return std::nullopt;
  }

  std::string CollectiveOf(const EventFields& e) {
    if (e.coll_name.empty()) return std::string();
    auto s = DecodeString(e.coll_name, scratch_);
    return s ? CanonicalCollective(*s, /*known_only=*/false) : std::string();
  }

  void TakeEvent(const EventFields& e, uint64_t offset) {
    if (e.ph != kineto::kPhComplete || e.cat_kind == Cat::kUnseen || e.cat_kind == Cat::kIgnored) {
      return;
    }
    if ((IsDeviceCat(e.cat_kind) || e.cat_kind == Cat::kRuntime) && mode_ != Mode::kDevice) return;
    if (e.cat_kind == Cat::kRuntime) return TakeLaunchCall(e, offset);
    std::optional<std::string_view> name;
    if (e.name_plain) {
      name = e.name.substr(1, e.name.size() - 2);
    } else if (!e.name.empty()) {
      name = DecodeString(e.name, name_scratch_);
    }
    if (!name) return BadEvent(offset, "event without a string \"name\"");
    std::optional<int64_t> ts = ParseMicrosToNs(e.ts);
    if (!ts) {
      return BadEvent(offset, e.ts.empty() ? std::string("event without \"ts\"")
                                           : fmt::format("\"ts\": {} is not a number", Clip(e.ts)));
    }
    std::optional<int64_t> dur = ParseMicrosToNs(e.dur);
    if (!dur) {
      return BadEvent(offset, e.dur.empty()
                                  ? std::string("complete event (ph X) without \"dur\"")
                                  : fmt::format("\"dur\": {} is not a number", Clip(e.dur)));
    }
    if (*dur < 0) return BadEvent(offset, fmt::format("negative \"dur\": {}", Clip(e.dur)));
    if (*ts + *dur > kMaxAbsTimeUs * 1000) {  // end + base would overflow int64 ns
      return BadEvent(offset, fmt::format("event ends past 4e15 us: \"ts\": {}, \"dur\": {}",
                                          Clip(e.ts), Clip(e.dur)));
    }

    if (IsDeviceCat(e.cat_kind)) return TakeDeviceOp(e, *name, *ts, *dur, offset);

    if (!marker_.empty()) {
      if (std::optional<MarkedStep> m = MatchStepMarker(marker_, *name)) {
        marker_ranges_.push_back(MarkerRange{m->number, *ts, *ts + *dur});
        return;
      }
    }
    if (StartsWith(*name, kineto::kProfilerStep)) {
      if (auto n = ParseInt<int64_t>(name->substr(kineto::kProfilerStep.size()))) {
        profiler_steps_.push_back(MarkerRange{*n, *ts, *ts + *dur});
      }
      return;
    }
    bool is_rpc = *name == kineto::kRecordParamComms;
    if (is_rpc && mode_ == Mode::kDevice) {
      if (auto ext = ParseIntToken(e.ext_id)) RememberCommMeta(*ext, e);
    }
    if (!collecting_cpu_) return;
    bool comm = IsCpuCommName(*name);
    if (e.cat_kind == Cat::kAnnotation && !comm) return;
    NameInfo& info = Name(*name);
    TraceOp op;
    op.start_ns = *ts;
    op.dur_ns = *dur;
    op.name = info.id;
    op.stream = ToInt32(ParseIntToken(e.tid)).value_or(-1);
    op.cls = comm ? OpClass::kCommunication : OpClass::kOtherCompute;
    op.device = -1;
    PushBig(cpu_ops_, op);
    if (!comm) return;
    int level = IsBackendCommAnnotation(*name) ? 0
                : is_rpc                       ? 1
                : StartsWith(*name, "c10d::")  ? 2
                                               : -1;
    if (level < 0) return;
    CollectiveCall c;
    c.start_ns = *ts;
    c.dur_ns = *dur;
    c.kernel = info.id;
    std::string coll = CollectiveOf(e);
    if (coll.empty() && !is_rpc) coll = CanonicalCollective(*name, /*known_only=*/false);
    c.collective = Intern(coll);
    c.group = GroupOf(e);
    c.seq = ParseIntToken(e.seq);
    c.nelems = ParseIntToken(e.nelems);
    if (!c.nelems) c.nelems = e.dims_product;
    c.group_size = ToInt32(ParseIntToken(e.group_size));
    c.offset = offset;
    cpu_collectives_[level].push_back(c);
  }

  // A launch call (cat cuda_runtime / cuda_driver / Runtime): its start and
  // correlation, matched to its device op in Finish(). A call without a
  // correlation launches nothing this trace can link (not an error).
  void TakeLaunchCall(const EventFields& e, uint64_t offset) {
    std::optional<int64_t> corr = ParseIntToken(e.correlation);
    if (!corr || *corr < 0 || *corr >= kNoCorrelation) return;
    std::optional<int64_t> ts = ParseMicrosToNs(e.ts);
    if (!ts || *ts > kMaxAbsTimeUs * 1000) {
      return BadEvent(offset, e.ts.empty() ? std::string("launch call without \"ts\"")
                                           : fmt::format("\"ts\": {} is not a number", Clip(e.ts)));
    }
    PushBig(launches_, LaunchCall{static_cast<uint32_t>(*corr), *ts});
  }

  // "grid 132x1x1 block 128x1x1", interned; kNoShape without both or past
  // kMaxShapes distinct shapes in this file.
  uint32_t ShapeOf(const EventFields& e, NameInfo& kernel) {
    if (!e.grid || !e.block) return kNoShape;
    const auto& g = *e.grid;
    const auto& b = *e.block;
    // Looked up by the numbers (once per kernel: the hot path), first in
    // what this kernel had last; the text is formatted once per distinct shape.
    ShapeKey key{g[0], g[1], g[2], b[0], b[1], b[2]};
    if (kernel.last_shape_id && kernel.last_shape == key) return *kernel.last_shape_id;
    uint32_t id = kNoShape;
    if (auto it = shapes_.find(key); it != shapes_.end()) {
      id = it->second;
    } else if (shapes_.size() < kMaxShapes) {
      id = ctx_.out->names().Intern(
          fmt::format("grid {}x{}x{} block {}x{}x{}", g[0], g[1], g[2], b[0], b[1], b[2]));
      shapes_.emplace(key, id);
    } else {
      return kNoShape;  // the table is full: not remembered either
    }
    kernel.last_shape = key;
    kernel.last_shape_id = id;
    return id;
  }

  void TakeDeviceOp(const EventFields& e, std::string_view name, int64_t ts, int64_t dur,
                    uint64_t offset) {
    NameInfo& info = Name(name);
    OpClass cls = OpClass::kOtherCompute;
    if (e.cat_kind == Cat::kMemcpy) {
      cls = OpClass::kMemcpy;
    } else if (e.cat_kind == Cat::kMemset) {
      cls = OpClass::kMemset;
    } else {
      if (!info.kernel_class) info.kernel_class = ClassifyKernelName(name, ctx_.comm_kernels);
      cls = e.coll_name.empty() ? *info.kernel_class : OpClass::kCommunication;
    }
    TraceOp op;
    op.start_ns = ts;
    op.dur_ns = dur;
    op.name = info.id;
    std::optional<int64_t> device = ParseIntToken(e.device);
    if (!device) device = ParseIntToken(e.pid);  // Kineto's GPU pid is the device
    op.device = device && *device >= 0 && *device <= INT16_MAX ? static_cast<int16_t>(*device) : -1;
    std::optional<int64_t> stream = ParseIntToken(e.stream);
    if (!stream) stream = ParseIntToken(e.tid);
    op.stream = ToInt32(stream).value_or(-1);
    op.cls = cls;
    op.shape = ShapeOf(e, info);
    PushBig(ops_, op);
    std::optional<int64_t> corr = ParseIntToken(e.correlation);
    PushBig(op_correlation_, corr && *corr >= 0 && *corr < kNoCorrelation
                                 ? static_cast<uint32_t>(*corr)
                                 : kNoCorrelation);
    if (cls != OpClass::kCommunication) return;

    CollectiveCall c;
    c.start_ns = ts;
    c.dur_ns = dur;
    c.kernel = info.id;
    std::string coll = CollectiveOf(e);
    if (coll.empty()) {
      if (!info.kernel_collective) info.kernel_collective = Intern(CollectiveFromKernel(name));
      c.collective = *info.kernel_collective;
    } else {
      c.collective = Intern(coll);
    }
    c.group = GroupOf(e);
    c.seq = ParseIntToken(e.seq);
    c.nelems = ParseIntToken(e.nelems);
    c.group_size = ToInt32(ParseIntToken(e.group_size));
    c.offset = offset;
    collectives_.push_back(c);
    collective_ext_.push_back(ParseIntToken(e.ext_id));
  }

  void RememberCommMeta(int64_t ext, const EventFields& e) {
    CommMeta m;
    m.seq = ParseIntToken(e.seq);
    m.group = GroupOf(e);
    m.nelems = ParseIntToken(e.nelems);
    m.group_size = ToInt32(ParseIntToken(e.group_size));
    m.collective = CollectiveOf(e);
    if (!m.seq && !m.group && !m.nelems && !m.group_size && m.collective.empty()) return;
    comm_meta_[ext] = std::move(m);
  }

  // The start of each device op's launch call (parallel to ops_, before
  // sorting), by correlation; the ops of a kCpu pass have none. Frees the
  // launch lists.
  std::vector<std::optional<TimeNs>> LinkLaunches(size_t n_ops) {
    std::vector<std::optional<TimeNs>> out;
    if (launches_.empty() || op_correlation_.size() != n_ops) return out;
    out.resize(n_ops);
    // CUPTI numbers correlations densely from 1: a table indexed by them
    // links in one pass (a sort plus a search per op took a tenth of the
    // ingest). Sparse ids fall back to sort + binary search.
    uint32_t max_corr = 0;
    for (const LaunchCall& l : launches_) max_corr = std::max(max_corr, l.correlation);
    if (max_corr <= 4 * launches_.size() + 65536) {
      constexpr TimeNs kUnset = std::numeric_limits<TimeNs>::min();
      std::vector<TimeNs> by_corr(static_cast<size_t>(max_corr) + 1, kUnset);
      for (const LaunchCall& l : launches_) {
        if (by_corr[l.correlation] == kUnset) by_corr[l.correlation] = l.start_ns;
      }
      for (size_t i = 0; i < n_ops; ++i) {
        uint32_t c = op_correlation_[i];
        if (c != kNoCorrelation && c <= max_corr && by_corr[c] != kUnset) out[i] = by_corr[c] + base_ns_;
      }
      std::vector<LaunchCall>().swap(launches_);
      std::vector<uint32_t>().swap(op_correlation_);
      return out;
    }
    std::sort(launches_.begin(), launches_.end(),
              [](const LaunchCall& a, const LaunchCall& b) { return a.correlation < b.correlation; });
    for (size_t i = 0; i < n_ops; ++i) {
      if (op_correlation_[i] == kNoCorrelation) continue;
      auto it = std::lower_bound(
          launches_.begin(), launches_.end(), op_correlation_[i],
          [](const LaunchCall& l, uint32_t c) { return l.correlation < c; });
      if (it != launches_.end() && it->correlation == op_correlation_[i]) out[i] = it->start_ns + base_ns_;
    }
    std::vector<LaunchCall>().swap(launches_);
    std::vector<uint32_t>().swap(op_correlation_);
    return out;
  }

  static std::string Clip(std::string_view s) {
    return std::string(s.substr(0, 40)) + (s.size() > 40 ? "..." : "");
  }

  uint64_t Finish() {
    RankTrace t;
    t.file = ctx_.file_index;
    t.producer = "kineto";
    if (mode_ == Mode::kCpu) {
      t.cpu_only = !cpu_ops_.empty();
      t.ops = std::move(cpu_ops_);
      for (auto& level : cpu_collectives_) {
        if (!level.empty()) {
          t.collectives = std::move(level);
          break;
        }
      }
    } else {
      t.ops = std::move(ops_);
      // What a kernel lacks (often "Seq"), its record_param_comms has: same External id.
      for (size_t i = 0; i < collectives_.size(); ++i) {
        if (!collective_ext_[i]) continue;
        auto it = comm_meta_.find(*collective_ext_[i]);
        if (it == comm_meta_.end()) continue;
        CollectiveCall& c = collectives_[i];
        const CommMeta& m = it->second;
        if (!c.seq) c.seq = m.seq;
        if (!c.group) c.group = m.group;
        if (!c.nelems) c.nelems = m.nelems;
        if (!c.group_size) c.group_size = m.group_size;
        if (ctx_.out->names().Get(c.collective).empty() && !m.collective.empty()) {
          c.collective = Intern(m.collective);
        }
      }
      t.collectives = std::move(collectives_);
    }
    const bool marked = !marker_ranges_.empty();
    t.steps = StepsOfMarkers(std::move(marked ? marker_ranges_ : profiler_steps_));
    if (!marker_.empty() && !marked) {
      diag_.Add(DiagCode::kTraceNoStepMarker, ctx_.path, 0,
                fmt::format("no range named '{}' (--step-marker); {} ProfilerStep#N steps used",
                            marker_, t.steps.size()));
    }
    for (TraceOp& op : t.ops) op.start_ns += base_ns_;
    for (CollectiveCall& c : t.collectives) c.start_ns += base_ns_;
    for (TraceStep& s : t.steps) s.start_ns += base_ns_, s.end_ns += base_ns_;
    std::vector<std::optional<TimeNs>> launch_ns = LinkLaunches(t.ops.size());
    SortOpsByStart(t.ops, launch_ns);
    std::stable_sort(
        t.collectives.begin(), t.collectives.end(),
        [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
    std::sort(t.steps.begin(), t.steps.end(),
              [](const TraceStep& a, const TraceStep& b) { return a.step < b.step; });

    if (dist_rank_)
      t.rank = dist_rank_;
    else if (ctx_.rank_from_path)
      t.rank = ctx_.rank_from_path;
    t.world_size = world_size_;
    if (dist_host_)
      t.host = dist_host_;
    else if (top_host_)
      t.host = top_host_;
    std::unordered_map<int16_t, uint64_t> per_device;
    for (const TraceOp& op : t.ops) {
      if (op.device >= 0) ++per_device[op.device];
    }
    uint64_t best = 0;
    for (const auto& [device, count] : per_device) {
      if (count > best || (count == best && t.device && device < *t.device)) {
        best = count;
        t.device = device;
      }
    }
    t.events_total = events_total_;
    t.events_lost = events_lost_;
    t.truncated = truncated_;
    AttributeLaunchGaps(t, launch_ns);

    if (bad_events_ > Diagnostics::kMaxExamplesPerCode) {
      uint64_t more = bad_events_ - Diagnostics::kMaxExamplesPerCode;
      diag_.Add(DiagCode::kTraceBadEvent, ctx_.path, 0, fmt::format("{} more bad events", more),
                more);
    }
    if (!t.rank) {
      diag_.Add(DiagCode::kTraceNoRank, ctx_.path, 0,
                "no distributedInfo.rank and no rank in the file name");
    }
    if (t.ops.empty() && t.steps.empty()) {
      diag_.Add(
          DiagCode::kTraceNoEvents, ctx_.path, 0,
          fmt::format("{} events, none of them a kernel, memcpy, memset or CPU op", events_total_));
    }
    uint64_t taken = t.ops.size() + t.steps.size();
    ctx_.out->AddTrace(std::move(t));
    return taken;
  }

  std::unique_ptr<ByteSource> src_;
  ReaderContext& ctx_;
  const Mode mode_;
  Diagnostics diag_;

  RawBuffer buf_;
  uint64_t buf_off_ = 0;
  size_t len_ = 0;
  bool eof_ = false;
  uint64_t pos_ = 0;
  std::unique_ptr<uint32_t[]> brackets_;
  od::parser parser_;

  bool has_trace_ = false;
  bool array_format_ = false;
  bool saw_events_ = false;
  bool root_closed_ = false;
  bool truncated_ = false;
  bool stopped_early_ = false;  // malformed JSON outside traceEvents
  bool gpu_job_ = false;        // deviceProperties lists a GPU, or the backend is NCCL-like
  uint64_t events_total_ = 0;
  uint64_t events_lost_ = 0;
  uint64_t bad_events_ = 0;
  bool saw_cpu_events_ = false;  // ph X events of cat cpu_op / user_annotation
  bool saw_runtime_ = false;     // ph X events of cat cuda_runtime / cuda_driver / Runtime

  int64_t base_ns_ = 0;
  std::optional<int32_t> dist_rank_;
  std::optional<int32_t> world_size_;
  std::optional<std::string> dist_host_, top_host_;

  const bool collecting_cpu_;
  std::vector<TraceOp> ops_;
  // CUPTI / roctracer correlation ids are 32-bit.
  static constexpr uint32_t kNoCorrelation = UINT32_MAX;
  std::vector<uint32_t> op_correlation_;  // parallel to ops_: args.correlation or kNoCorrelation
  struct LaunchCall {
    uint32_t correlation = 0;
    TimeNs start_ns = 0;  // base-relative, like every time while reading
  };
  std::vector<LaunchCall> launches_;
  using ShapeKey = std::array<int64_t, 6>;  // grid x, y, z, block x, y, z
  struct ShapeKeyHash {
    size_t operator()(const ShapeKey& k) const {
      uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the six values
      for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<ShapeKey, uint32_t, ShapeKeyHash> shapes_;  // launch shape -> NameTable id of its text
  std::vector<TraceOp> cpu_ops_;
  std::vector<CollectiveCall> collectives_;
  std::vector<std::optional<int64_t>> collective_ext_;  // parallel to collectives_
  std::vector<CollectiveCall> cpu_collectives_[3];   // backend ranges, record_param_comms, c10d::
  std::unordered_map<int64_t, CommMeta> comm_meta_;  // record_param_comms by External id
  // ProfilerStep#N ranges as read; a step's ranges on several threads are
  // one step (StepsOfMarkers).
  std::vector<MarkerRange> profiler_steps_;
  // --step-marker (ingest/traces/common/step_marker.h): its name, the bytes a JSON string
  // naming it starts with, and its ranges as read (used instead of
  // profiler_steps_ when there are any).
  const std::string_view marker_;
  const std::string marker_prefix_;
  std::vector<MarkerRange> marker_ranges_;
  std::unordered_map<std::string, NameInfo, NameHash, std::equal_to<>> names_;
  // The names looked up last, by QuickNameHash: a device op's name is one of
  // a few hundred, so most lookups end here, on one compare (the map's nodes
  // do not move, so the pointers stay valid).
  struct NameCacheEntry {
    const std::string* key = nullptr;
    NameInfo* info = nullptr;
  };
  static constexpr size_t kNameCacheSize = 512;
  std::array<NameCacheEntry, kNameCacheSize> name_cache_{};
  std::string scratch_, name_scratch_;
  const bool flat_events_ = FlatEventsEnabled();
  // The prefilter's place in the event it last found wanted (Wanted()), when
  // it read the leading members exactly as the walker does: the byte after
  // the last one, how many, and their tokens. after == nullptr: none.
  struct Resume {
    const char* after = nullptr;
    size_t members = 0;
    std::string_view ph, cat, name;
    Cat cat_kind = Cat::kUnseen;

    // Member by member: assigning a whole Resume compiled to a 65-byte
    // rep movsb through a temporary, once per launch call.
    void Set(const char* a, size_t m, std::string_view p, std::string_view c, std::string_view n,
             Cat k) {
      after = a;
      members = m;
      ph = p;
      cat = c;
      name = n;
      cat_kind = k;
    }
  };
  Resume resume_;
  KeySlots top_slots_;       // the last flat event's keys, in order
  KeySlots args_slots_[3];   // its args' keys: launch calls, kernels, other events
  // The last two layouts of each kind of event the prefilter resumes from
  // (TemplateKind), the one matched last first.
  std::array<std::array<EventTemplate, 2>, 4> templates_;
  bool recording_ = false;  // the walker notes its values in read_values_
  std::vector<ReadValue> read_values_;
};

// "key" followed by blanks and ':' somewhere in `head`.
bool HasKey(std::string_view head, std::string_view quoted_key) {
  for (size_t at = head.find(quoted_key); at != std::string_view::npos;
       at = head.find(quoted_key, at + 1)) {
    size_t i = at + quoted_key.size();
    while (i < head.size() && IsSpace(head[i])) ++i;
    if (i < head.size() && head[i] == ':') return true;
  }
  return false;
}

class KinetoTraceReader : public TraceReader {
 public:
  std::string_view name() const override { return "kineto"; }

  int Sniff(std::string_view head) const override {
    size_t i = 0;
    if (StartsWith(head, "\xEF\xBB\xBF")) i = 3;
    while (i < head.size() && IsSpace(head[i])) ++i;
    if (i >= head.size()) return 0;
    if (head[i] == '{') {
      if (HasKey(head, "\"traceEvents\"")) return 100;
      if (HasKey(head, "\"schemaVersion\"") || HasKey(head, "\"deviceProperties\"") ||
          HasKey(head, "\"distributedInfo\"")) {
        return 97;
      }
      return 0;
    }
    if (head[i] == '[') {
      size_t j = i + 1;
      while (j < head.size() && IsSpace(head[j])) ++j;
      if (j >= head.size() || head[j] != '{') return 0;
      // The first event: up to its first closing brace (args may nest; the
      // keys we look for come before or after, so look a little further).
      std::string_view first = head.substr(j, 4096);
      if (HasKey(first, "\"ph\"") && HasKey(first, "\"ts\"")) return 98;
      return 0;
    }
    return 0;
  }

  uint64_t Read(const std::string& path, ReaderContext& ctx) const override {
    std::unique_ptr<KinetoFile> file = ReadPass(path, ctx, Mode::kDevice);
    if (file == nullptr) return 0;
    if (file->NeedsCpuPass()) {
      if (std::unique_ptr<KinetoFile> cpu = ReadPass(path, ctx, Mode::kCpu)) return cpu->Commit();
    }
    return file->Commit();
  }

 private:
  static std::unique_ptr<KinetoFile> ReadPass(const std::string& path, ReaderContext& ctx,
                                              Mode mode) {
    auto source = OpenByteSource(path, ctx.gzip_decode);
    if (!source.ok()) {
      ctx.diag().Add(DiagCode::kFileUnreadable, path, 0, source.status().message());
      return nullptr;
    }
    auto file = std::make_unique<KinetoFile>(std::move(source.value()), ctx, mode);
    file->Run();
    return file;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeKinetoTraceReader() {
  return std::make_unique<KinetoTraceReader>();
}

std::string KinetoJsonImplementation() {
  return fmt::format(
      "event boundaries: {}, events: {}, simdjson stage 1: {}, simdjson on-demand: {}",
      ActiveIndexer().name, FlatEventsEnabled() ? "flat walker, else on-demand" : "on-demand",
      simdjson::get_active_implementation()->name(), simdjson::builtin_implementation()->name());
}

}  // namespace laggard
