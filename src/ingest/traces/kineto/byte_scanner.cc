#include "ingest/traces/kineto/byte_scanner.h"

#include <array>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace laggard::kineto {
namespace {

uint32_t* IndexBracketsScalar(const char* p, size_t nblocks, ScanState& st, uint32_t* out) {
  for (size_t b = 0; b < nblocks; ++b, p += 64) {
    uint64_t quote = 0, backslash = 0, brackets = 0;
    for (int i = 0; i < 64; ++i) {
      uint64_t bit = uint64_t{1} << i;
      char c = p[i];
      if (c == '"') quote |= bit;
      else if (c == '\\') backslash |= bit;
      else if (c == '{' || c == '[' || c == '}' || c == ']') brackets |= bit;
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
__attribute__((target("avx512f,avx512bw,pclmul"))) uint32_t* IndexBracketsAvx512(const char* p,
                                                                                 size_t nblocks,
                                                                                 ScanState& st,
                                                                                 uint32_t* out) {
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

constexpr Indexer kScalar{IndexBracketsScalar, "scalar"};
#if defined(LAGGARD_KINETO_X86)
constexpr Indexer kSse2{IndexBracketsSse2, "sse2"};
constexpr Indexer kAvx2{IndexBracketsAvx2, "avx2"};
constexpr Indexer kAvx512{IndexBracketsAvx512, "avx512"};

bool CpuRunsAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("pclmul");
}
bool CpuRunsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#endif

}  // namespace

const Indexer& ActiveIndexer() {
  static const Indexer indexer = [] {
    const char* forced = std::getenv("LAGGARD_KINETO_SCAN");
    std::string_view want = forced != nullptr ? forced : "";
    if (want == "scalar") return kScalar;
#if defined(LAGGARD_KINETO_X86)
    if (want.empty() && CpuRunsAvx512()) return kAvx512;
    if (want != "sse2" && CpuRunsAvx2()) return kAvx2;
    return kSse2;
#else
    return kScalar;
#endif
  }();
  return indexer;
}

std::span<const Indexer> RunnableIndexers() {
  static const auto runnable = [] {
    std::array<Indexer, 4> all{};
    size_t n = 0;
#if defined(LAGGARD_KINETO_X86)
    if (CpuRunsAvx512()) all[n++] = kAvx512;
    if (CpuRunsAvx2()) all[n++] = kAvx2;
    all[n++] = kSse2;
#endif
    all[n++] = kScalar;
    return std::pair{all, n};
  }();
  return std::span<const Indexer>(runnable.first.data(), runnable.second);
}

}  // namespace laggard::kineto
