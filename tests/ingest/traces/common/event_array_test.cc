// The bare-array event walk (ingest/traces/common/event_array.h) apart from
// any reader: events and their offsets, damage counted where it is, and the
// same result wherever the chunks fall.

#include "ingest/traces/common/event_array.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "model/run.h"

#include "string_source.h"

namespace laggard {
namespace {

using testing_util::StringSource;

// Takes each balanced {...} without nesting; records what it saw.
class RecordingSink : public EventSink {
 public:
  explicit RecordingSink(size_t pad) : pad_(pad) {}
  EventScan Event(std::string_view w, uint64_t start, size_t& end, std::string& why) override {
    for (size_t i = 1; i < w.size(); ++i) {
      if (w[i] == '{') {
        why = "nested";
        return EventScan::kBad;
      }
      if (w[i] == '}') {
        end = i + 1;
        // The padding promised past the event is readable.
        for (size_t k = 0; k < pad_; ++k) padding_sum += w.data()[end + k];
        events.push_back({start, std::string(w.substr(0, end))});
        return EventScan::kOk;
      }
    }
    return EventScan::kMore;
  }
  void BadEvent(uint64_t offset, const std::string& why) override { bad.push_back({offset, why}); }

  std::vector<std::pair<uint64_t, std::string>> events, bad;
  uint64_t padding_sum = 0;

 private:
  size_t pad_;
};

struct Walk {
  EventArrayRead read;
  std::vector<std::pair<uint64_t, std::string>> events, bad;
  uint64_t truncated_diags = 0, unsupported = 0, after_end = 0;
};

Walk WalkOf(const std::string& text, size_t chunk, size_t pad = 0) {
  StringSource source(text, chunk);
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = "trace.json";
  ctx.out = &builder;
  RecordingSink sink(pad);
  Walk w;
  w.read = ReadEventArray(source, ctx, sink, pad);
  w.events = sink.events;
  w.bad = sink.bad;
  w.truncated_diags = builder.diagnostics().count(DiagCode::kTraceTruncated);
  w.unsupported = builder.diagnostics().count(DiagCode::kTraceUnsupported);
  w.after_end = builder.diagnostics().count(DiagCode::kTraceBadEvent);
  return w;
}

TEST(EventArrayTest, EventsAndTheirOffsets) {
  Walk w = WalkOf("\xEF\xBB\xBF [ {\"a\":1},\n{\"b\":2} ]\n", 1 << 20);
  ASSERT_TRUE(w.read.is_array);
  EXPECT_EQ(w.read.events_total, 2u);
  ASSERT_EQ(w.events.size(), 2u);
  EXPECT_EQ(w.events[0], std::make_pair(uint64_t{6}, std::string("{\"a\":1}")));
  EXPECT_EQ(w.events[1], std::make_pair(uint64_t{15}, std::string("{\"b\":2}")));
  EXPECT_FALSE(w.read.truncated);
  EXPECT_EQ(w.truncated_diags, 0u);
}

TEST(EventArrayTest, NotAnArray) {
  Walk w = WalkOf("{\"traceEvents\": []}", 64);
  EXPECT_FALSE(w.read.is_array);
  EXPECT_EQ(w.unsupported, 1u);
  EXPECT_TRUE(w.events.empty());
}

TEST(EventArrayTest, StrayBytesAndBadEventsAreCountedAndSkipped) {
  // Stray 'x' between events; a bad event (nested) skipped to the next one.
  Walk w = WalkOf("[{\"a\":1}, x {\"b\":{\"c\":1}}, {\"d\":4}]", 1 << 20);
  ASSERT_EQ(w.events.size(), 2u);
  EXPECT_EQ(w.events[1].second, "{\"d\":4}");
  ASSERT_EQ(w.bad.size(), 2u);
  EXPECT_EQ(w.bad[0].first, 10u);
  EXPECT_NE(w.bad[0].second.find("'x' where an event should start"), std::string::npos);
  EXPECT_EQ(w.bad[1], std::make_pair(uint64_t{12}, std::string("nested")));
  EXPECT_EQ(w.read.events_total, 4u);
}

TEST(EventArrayTest, AVerticalTabIsNotJsonWhitespace) {
  Walk w = WalkOf("[{\"a\":1},\v{\"b\":2}]", 1 << 20);
  EXPECT_EQ(w.events.size(), 2u);
  ASSERT_EQ(w.bad.size(), 1u);
  EXPECT_EQ(w.bad[0].first, 9u);
}

TEST(EventArrayTest, ACutInsideAnEventKeepsTheEventsBeforeIt) {
  Walk w = WalkOf("[{\"a\":1}, {\"b\":", 3);
  EXPECT_EQ(w.events.size(), 1u);
  EXPECT_TRUE(w.read.truncated);
  EXPECT_EQ(w.read.events_lost, 1u);
  EXPECT_EQ(w.truncated_diags, 1u);
}

TEST(EventArrayTest, ACutBeforeTheClosingBracketLosesNoEvent) {
  Walk w = WalkOf("[{\"a\":1}, {\"b\":2}", 5);
  EXPECT_EQ(w.events.size(), 2u);
  EXPECT_TRUE(w.read.truncated);
  EXPECT_EQ(w.read.events_lost, 0u);
}

TEST(EventArrayTest, DataAfterTheArrayIsCountedOnce) {
  Walk w = WalkOf("[{\"a\":1}] trailing", 1 << 20);
  EXPECT_EQ(w.events.size(), 1u);
  EXPECT_EQ(w.after_end, 1u);
  EXPECT_FALSE(w.read.truncated);
}

TEST(EventArrayTest, AnEventOver1MiBIsBadWhereverTheChunksFall) {
  std::string big = "{\"x\":\"" + std::string(kMaxTraceEventBytes, 'y') + "\"}";
  std::string text = "[{\"a\":1}," + big + ",{\"b\":2}]";
  for (size_t chunk : {size_t{1} << 20, size_t{3} << 20, size_t{4093}}) {
    Walk w = WalkOf(text, chunk);
    ASSERT_EQ(w.events.size(), 2u) << chunk;
    EXPECT_EQ(w.events[1].second, "{\"b\":2}") << chunk;
    ASSERT_EQ(w.bad.size(), 1u) << chunk;
    EXPECT_EQ(w.bad[0], std::make_pair(uint64_t{9}, std::string("event over 1 MiB"))) << chunk;
  }
}

TEST(EventArrayTest, AnEventOfExactly1MiBIsTakenOneByteMoreIsNot) {
  auto event_of = [](size_t bytes) {
    return "{\"x\":\"" + std::string(bytes - 8, 'y') + "\"}";  // {"x":"…"}
  };
  ASSERT_EQ(event_of(kMaxTraceEventBytes).size(), kMaxTraceEventBytes);
  Walk exact = WalkOf("[" + event_of(kMaxTraceEventBytes) + "]", 1 << 20);
  EXPECT_EQ(exact.events.size(), 1u);
  EXPECT_TRUE(exact.bad.empty());
  Walk over = WalkOf("[" + event_of(kMaxTraceEventBytes + 1) + "]", 1 << 20);
  EXPECT_TRUE(over.events.empty());
  ASSERT_EQ(over.bad.size(), 1u);
  EXPECT_EQ(over.bad[0].second, "event over 1 MiB");
}

TEST(EventArrayTest, TheSameEventsWhateverTheChunkSize) {
  std::string text = "[";
  for (int i = 0; i < 200; ++i)
    text += (i ? ", " : "") + std::string("{\"i\":") + std::to_string(i) + "}";
  text += "]";
  Walk whole = WalkOf(text, 1 << 20, 64);
  ASSERT_EQ(whole.events.size(), 200u);
  for (size_t chunk : {1, 2, 7, 64}) {
    Walk w = WalkOf(text, chunk, 64);
    EXPECT_EQ(w.events, whole.events) << chunk;
    EXPECT_TRUE(w.bad.empty()) << chunk;
  }
}

}  // namespace
}  // namespace laggard
