#include "analysis/hangs/hang_episodes.h"

#include <gtest/gtest.h>

namespace laggard {
namespace {

constexpr int64_t kSec = 1'000'000'000;

HangEvent At(uint32_t file, uint32_t line, std::optional<int64_t> secs) {
  HangEvent e;
  e.src = SourceRef{file, line};
  if (secs) e.yearless_time_ns = *secs * kSec;
  return e;
}

TEST(HangEpisodesTest, OneStopKeepsEveryLine) {
  std::vector<HangEvent> events = {At(0, 1, 100), At(0, 2, 160), At(1, 5, std::nullopt),
                                   At(1, 6, 700)};
  HangEpisodeChoice c = LatestHangEpisode(events);
  EXPECT_EQ(c.episodes(), 1u);
  EXPECT_EQ(c.chosen, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(c.first_yearless_ns, 100 * kSec);
}

TEST(HangEpisodesTest, LinesHoursApartAreTwoStopsAndTheLatestIsChosen) {
  // A log appended across a restart: the first stop at t=100 s, the second
  // three hours later; the later stop's lines come first in a second file.
  std::vector<HangEvent> events = {At(0, 1, 100),
                                   At(0, 2, 130),
                                   At(0, 3, std::nullopt),  // undated: after line 2
                                   At(0, 9, 100 + 3 * 3600),
                                   At(0, 10, std::nullopt),
                                   At(1, 1, 101 + 3 * 3600)};
  HangEpisodeChoice c = LatestHangEpisode(events);
  ASSERT_EQ(c.episodes(), 2u);
  EXPECT_EQ(c.chosen, (std::vector<size_t>{3, 4, 5}));
  ASSERT_EQ(c.earlier.size(), 1u);
  EXPECT_EQ(c.earlier[0].events, 3u);
  EXPECT_EQ(c.earlier[0].first_yearless_ns, 100 * kSec);
  EXPECT_EQ(c.earlier[0].last_yearless_ns, 130 * kSec);
  EXPECT_EQ(c.earlier[0].first.line, 1u);
  EXPECT_EQ(c.first_yearless_ns, (100 + 3 * 3600) * kSec);
}

TEST(HangEpisodesTest, UndatedLineBeforeAnyTimedLineJoinsTheFollowingOne) {
  std::vector<HangEvent> events = {At(0, 1, std::nullopt), At(0, 2, 10 * 3600), At(1, 1, 5)};
  HangEpisodeChoice c = LatestHangEpisode(events);
  ASSERT_EQ(c.episodes(), 2u);
  EXPECT_EQ(c.chosen, (std::vector<size_t>{0, 1}));
}

TEST(HangEpisodesTest, UndatedFileJoinsTheLatestStop) {
  std::vector<HangEvent> events = {At(0, 1, 5), At(1, 1, 10 * 3600), At(2, 4, std::nullopt)};
  HangEpisodeChoice c = LatestHangEpisode(events);
  EXPECT_EQ(c.chosen, (std::vector<size_t>{1, 2}));
}

TEST(HangEpisodesTest, GapAtTheThresholdIsOneStop) {
  std::vector<HangEvent> events = {At(0, 1, 0), At(0, 2, 3600)};
  EXPECT_EQ(LatestHangEpisode(events).episodes(), 1u);
  events[1].yearless_time_ns = 3601 * kSec;
  EXPECT_EQ(LatestHangEpisode(events).episodes(), 2u);
}

TEST(HangEpisodesTest, YearlessTextNamesMonthAndDay) {
  // Dec 6, 18:44:12: day 339 of a non-leap year (0-based).
  EXPECT_EQ(YearlessText(((339 * 24 + 18) * 3600 + 44 * 60 + 12) * kSec), "Dec 06 18:44:12");
  EXPECT_EQ(YearlessText(0), "Jan 01 00:00:00");
}

}  // namespace
}  // namespace laggard
