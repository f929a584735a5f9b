// Tests of the Kineto reader's JSON tokens (ingest/traces/kineto/
// json_tokens.h): the token decoders on the values Kineto and other
// writers put in traces, and the flat lexer's token ends, including where
// it must give up and leave the event to simdjson.

#include "ingest/traces/kineto/json_tokens.h"

#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace laggard::kineto {
namespace {

TEST(JsonTokensTest, MicrosecondsBecomeExactNanoseconds) {
  EXPECT_EQ(ParseMicrosToNs("3600654368.005"), 3600654368005);              // Kineto's fmtTs
  EXPECT_EQ(ParseMicrosToNs("1712195495505583.123"), 1712195495505583123);  // past a double
  EXPECT_EQ(ParseMicrosToNs("4458676983543.1836"), 4458676983543184);       // 4th decimal rounds
  EXPECT_EQ(ParseMicrosToNs("4458676983543.1834"), 4458676983543183);
  EXPECT_EQ(ParseMicrosToNs("7"), 7000);
  EXPECT_EQ(ParseMicrosToNs("2.5"), 2500);
  EXPECT_EQ(ParseMicrosToNs("-2.5"), -2500);
  EXPECT_EQ(ParseMicrosToNs("\"12.5\""), 12500);  // a string holding a number
  EXPECT_EQ(ParseMicrosToNs("1e3"), 1000000);
  EXPECT_EQ(ParseMicrosToNs("1.5 "), 1500);  // raw_json_token's trailing blank
  EXPECT_EQ(ParseMicrosToNs("abc"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs(""), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("12."), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("1.2.3"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("5000000000000000"), std::nullopt);  // past kMaxAbsTimeUs
  EXPECT_EQ(ParseMicrosToNs("5000000000000000.000"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("4000000000000000.000"), kMaxAbsTimeUs * 1000);
}

TEST(JsonTokensTest, IntegersTakeWholeValuesOnly) {
  EXPECT_EQ(ParseIntToken("42"), 42);
  EXPECT_EQ(ParseIntToken("42 "), 42);
  EXPECT_EQ(ParseIntToken("-4"), -4);
  EXPECT_EQ(ParseIntToken("\"17\""), 17);
  EXPECT_EQ(ParseIntToken("3.0"), 3);
  EXPECT_EQ(ParseIntToken("3.5"), std::nullopt);
  EXPECT_EQ(ParseIntToken("x"), std::nullopt);
  EXPECT_EQ(ParseIntToken(""), std::nullopt);
  EXPECT_EQ(ParseIntToken("99999999999999999999"), std::nullopt);  // past int64
}

TEST(JsonTokensTest, StringsDecodeOnlyWhenEscaped) {
  std::string scratch = "untouched";
  std::optional<std::string_view> s = DecodeString("\"plain\" ", scratch);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, "plain");
  EXPECT_EQ(scratch, "untouched");  // a view into the token, no copy
  EXPECT_EQ(DecodeString(R"J("a\"b\\c\/d\n\t")J", scratch), "a\"b\\c/d\n\t");
  EXPECT_EQ(DecodeString(R"J("caf\u00e9")J", scratch), "caf\xC3\xA9");
  EXPECT_EQ(DecodeString(R"J("\ud83d\ude00")J", scratch), "\xF0\x9F\x98\x80");  // a pair
  EXPECT_EQ(DecodeString(R"J("\ud800x")J", scratch), "\xEF\xBF\xBDx");          // lone: U+FFFD
  EXPECT_EQ(DecodeString(R"J("\q")J", scratch), std::nullopt);
  EXPECT_EQ(DecodeString(R"J("\u12")J", scratch), std::nullopt);
  EXPECT_EQ(DecodeString("17", scratch), std::nullopt);  // not a string
}

// `s` followed by the padding the flat lexer may read.
std::string Padded(std::string_view s) { return std::string(s) + std::string(kPadBytes, ' '); }

// Where a flat helper stopped in `s`: its offset, or -1 for nullptr.
template <typename F>
std::ptrdiff_t EndOf(std::string_view s, F&& f) {
  std::string p = Padded(s);
  const char* end = f(p.data(), p.data() + s.size());
  return end == nullptr ? -1 : end - p.data();
}

TEST(JsonTokensTest, FlatScalarsEndWhereSimdjsonEndsThem) {
  auto scalar = [](const char* c, const char* end) { return FlatScalarEnd(c, end); };
  EXPECT_EQ(EndOf(R"J("ab\"c", "x")J", scalar), 7);
  EXPECT_EQ(EndOf("123, ", scalar), 3);
  EXPECT_EQ(EndOf("true}", scalar), 4);
  EXPECT_EQ(EndOf("1e3\"x\"", scalar), -1);         // stage 1 reads one token: left to On-Demand
  EXPECT_EQ(EndOf("123", scalar), -1);              // no delimiter before the end
  EXPECT_EQ(EndOf("\"caf\xC3\xA9\"", scalar), -1);  // non-ASCII: left to On-Demand
  auto value = [](const char* c, const char* end) { return FlatValueEnd(c, end); };
  EXPECT_EQ(EndOf("[1, \"a\", 2.5], ", value), 13);
  EXPECT_EQ(EndOf("[], ", value), 2);
  EXPECT_EQ(EndOf("[[1]], ", value), -1);  // nested: left to On-Demand
}

TEST(JsonTokensTest, FlatMembersFollowKinetosSeparators) {
  const std::string p = Padded(R"J("stream": 7, "correlation" :12})J");
  const char* end = p.data() + p.size() - kPadBytes;
  const char* key = nullptr;
  const char* v = FlatMemberValue(p.data(), end, key);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(std::string_view(key, 6), "stream");
  EXPECT_EQ(*v, '7');
  bool closed = false;
  const char* next = FlatNextMember(v + 1, end, closed);
  ASSERT_NE(next, nullptr);
  EXPECT_FALSE(closed);
  EXPECT_EQ(*next, '"');
  v = FlatMemberValue(next, end, key);  // blanks before ':' too
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(std::string_view(v, 2), "12");
  next = FlatNextMember(v + 2, end, closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(next, end);
}

TEST(JsonTokensTest, GridAndBlockTriples) {
  auto dims = [](std::string_view s) -> std::optional<std::array<int64_t, 3>> {
    std::string p = Padded(s);
    std::array<int64_t, 3> d{};
    if (FlatDims3(p.data(), p.data() + s.size(), d) == nullptr) return std::nullopt;
    return d;
  };
  using D = std::array<int64_t, 3>;
  EXPECT_EQ(dims("[132, 1, 1], "), (D{132, 1, 1}));
  EXPECT_EQ(dims("[ 1,2 ,3 ]}"), (D{1, 2, 3}));  // other blanks: the general loop
  EXPECT_EQ(dims("[123456789012, 1, 1]}"), (D{123456789012, 1, 1}));
  EXPECT_EQ(dims("[01, 1, 1]}"), std::nullopt);  // get_int64 would read it otherwise
  EXPECT_EQ(dims("[1, 2]}"), std::nullopt);
  EXPECT_EQ(dims("[-1, 2, 3]}"), std::nullopt);
  EXPECT_EQ(dims("[1, 2, 3, 4]}"), std::nullopt);
}

}  // namespace
}  // namespace laggard::kineto
