// Tests of the Kineto reader's byte scanner (ingest/traces/kineto/
// byte_scanner.h): every bracket indexer this CPU runs finds exactly the
// brackets outside strings, escapes and block boundaries included, and the
// Find* / SameBytes helpers stop where their contracts say.

#include "ingest/traces/kineto/byte_scanner.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace laggard::kineto {
namespace {

// The offsets of { [ } ] outside strings, byte by byte: what every indexer
// must find in valid JSON (backslashes only inside strings).
std::vector<uint32_t> ReferenceBrackets(std::string_view s) {
  std::vector<uint32_t> out;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[' || c == '}' || c == ']') {
      out.push_back(static_cast<uint32_t>(i));
    }
  }
  return out;
}

// Runs `indexer` over `text` (padded with blanks to whole blocks) in calls of
// `blocks_per_call` blocks, the scan state carried from call to call, as
// the trace tokenizer does from slice to slice.
std::vector<uint32_t> Index(const Indexer& indexer, std::string text, size_t blocks_per_call) {
  text.append((64 - text.size() % 64) % 64, ' ');
  std::vector<uint32_t> out(text.size() + 64);
  ScanState st;
  std::vector<uint32_t> all;
  for (size_t block = 0; block * 64 < text.size(); block += blocks_per_call) {
    size_t n = std::min(blocks_per_call, text.size() / 64 - block);
    uint32_t* end = indexer.fn(text.data() + 64 * block, n, st, out.data());
    for (uint32_t* q = out.data(); q < end; ++q)
      all.push_back(static_cast<uint32_t>(64 * block) + *q);
  }
  return all;
}

TEST(ByteScannerTest, EveryIndexerFindsTheBracketsOutsideStrings) {
  // Quotes escaped by odd runs of backslashes stay inside their string;
  // even runs end it. The strings hold brackets of every kind.
  const std::string text =
      R"J({"a\"{": [1, "\\\\"], "b": "}\\\"]", "c": [{"d": "\\"}, {"e": "[\"]\\\\\\\""}]})J"
      R"J(, {"name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",)J"
      R"J( "args": {"grid": [24, 1, 1], "block": [576, 1, 1]}})J";
  const std::vector<uint32_t> want = ReferenceBrackets(text);
  ASSERT_EQ(want.size(), 18u);
  ASSERT_FALSE(RunnableIndexers().empty());
  EXPECT_STREQ(RunnableIndexers().back().name, "scalar");
  for (const Indexer& indexer : RunnableIndexers()) {
    EXPECT_EQ(Index(indexer, text, 1), want) << indexer.name;
    EXPECT_EQ(Index(indexer, text, 1024), want) << indexer.name;
  }
}

TEST(ByteScannerTest, IndexersAgreeOnRandomJsonAcrossBlocksAndCalls) {
  // Random JSON-like text: brackets, commas and strings of plain bytes,
  // brackets, escaped quotes and runs of escaped backslashes, long enough
  // that strings and escape runs straddle 64-byte blocks.
  std::mt19937 rng(7);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int round = 0; round < 200; ++round) {
    std::string text;
    size_t pieces = 1 + pick(120);
    for (size_t i = 0; i < pieces; ++i) {
      switch (pick(4)) {
        case 0: text += "{[}],: 1"[pick(8)]; break;
        case 1: text += "\"\""; break;
        default: {
          text += '"';
          for (size_t j = pick(40); j > 0; --j) {
            switch (pick(6)) {
              case 0: text += "\\\""; break;
              case 1: text.append(2 * (1 + pick(3)), '\\'); break;
              case 2: text += "{[]}"[pick(4)]; break;
              default: text += static_cast<char>('a' + pick(26)); break;
            }
          }
          text += '"';
        }
      }
    }
    const std::vector<uint32_t> want = ReferenceBrackets(text);
    for (const Indexer& indexer : RunnableIndexers()) {
      EXPECT_EQ(Index(indexer, text, 1 + pick(3)), want) << indexer.name << " on " << text;
    }
  }
}

TEST(ByteScannerTest, ActiveIndexerIsOneTheCpuRuns) {
  bool found = false;
  for (const Indexer& indexer : RunnableIndexers()) found |= indexer.fn == ActiveIndexer().fn;
  EXPECT_TRUE(found) << ActiveIndexer().name;
}

// `s` followed by the padding the helpers may read.
std::string Padded(std::string_view s) { return std::string(s) + std::string(kPadBytes, ' '); }

TEST(ByteScannerTest, FindStringStopStopsAtQuoteBackslashControlAndNonAscii) {
  auto stop = [](std::string_view s) -> std::ptrdiff_t {
    std::string p = Padded(s);
    const char* hit = FindStringStop(p.data(), p.data() + s.size());
    return hit == nullptr ? -1 : hit - p.data();
  };
  EXPECT_EQ(stop("cudaLaunchKernel\", "), 16);
  EXPECT_EQ(stop("a long name without any stop at all in its first sixteen bytes\\n"), 62);
  EXPECT_EQ(stop("tab\there"), 3);
  EXPECT_EQ(stop("caf\xC3\xA9"), 3);
  EXPECT_EQ(stop("no stop here"), -1);
  // A stop past `end` (in the padding) is not one.
  std::string p = Padded("abc\"");
  EXPECT_EQ(FindStringStop(p.data(), p.data() + 3), nullptr);
  EXPECT_EQ(FindQuoteOrBackslash(p.data(), p.data() + 4), p.data() + 3);
}

TEST(ByteScannerTest, FindScalarEndStopsWhereStageOneEndsAToken) {
  auto end_of = [](std::string_view s, size_t len) -> std::ptrdiff_t {
    std::string p = Padded(s);
    return FindScalarEnd(p.data(), p.data() + len) - p.data();
  };
  EXPECT_EQ(end_of("1712195495505583.123, \"dur\"", 27), 20);
  EXPECT_EQ(end_of("true}", 5), 4);
  EXPECT_EQ(end_of("12]", 3), 2);
  EXPECT_EQ(end_of("1e3\"x\"", 6), 3);
  EXPECT_EQ(end_of("42 ", 3), 2);
  EXPECT_EQ(end_of("12345", 5), 5);  // none before end: end
}

TEST(ByteScannerTest, FindOutsideStopSkipsBlanksButNotOtherControlBytes) {
  std::string p = Padded(", \n\t\r 7}\x01");
  EXPECT_EQ(FindOutsideStop(p.data(), p.data() + 9), p.data() + 8);
  p = Padded(" , \"next\": 1");
  EXPECT_EQ(FindOutsideStop(p.data(), p.data() + 12), p.data() + 3);
  p = Padded(" 1, 2}");
  EXPECT_EQ(FindOutsideStop(p.data(), p.data() + 6), nullptr);
}

TEST(ByteScannerTest, NumberCharsEndAndSameBytes) {
  std::string p = Padded("-1712195495505583.123, ");
  EXPECT_EQ(NumberCharsEnd(p.data(), p.data() + 23), p.data() + 21);
  EXPECT_EQ(NotNumberMask16(p.data()) & 0xFFFF, 0u);  // 16 number characters
  const std::string a = Padded("\"External id\": 12, \"queued\": 0, \"device\": 0");
  std::string b = a;
  for (size_t n = 1; n <= 40; ++n) {
    EXPECT_TRUE(SameBytes(a.data(), b.data(), n, WantBits(n))) << n;
    if (n <= 16) {
      EXPECT_TRUE(SameBytes16(a.data(), b.data(), WantBits(n))) << n;
    }
  }
  b[37] = 'X';  // differs only past 32 bytes
  EXPECT_TRUE(SameBytes(a.data(), b.data(), 37, WantBits(37)));
  EXPECT_FALSE(SameBytes(a.data(), b.data(), 38, WantBits(38)));
  b[5] = 'X';
  EXPECT_TRUE(SameBytes16(a.data(), b.data(), WantBits(5)));
  EXPECT_FALSE(SameBytes16(a.data(), b.data(), WantBits(6)));
}

}  // namespace
}  // namespace laggard::kineto
