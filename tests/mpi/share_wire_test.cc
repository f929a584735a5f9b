#include "mpi/share_wire.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/readers.h"
#include "model/wire.h"
#include "mpi/shares.h"
#include "test_paths.h"

namespace laggard {
namespace {

const std::string kData = std::string(LAGGARD_SOURCE_DIR) + "/tests/data";

struct ReadAll {
  IngestPlan plan;
  std::vector<IngestFileResult> results;
};

// Every file under tests/data (real jobs' logs and traces, hang logs, Flight
// Recorder dumps), read as Ingest() reads them.
ReadAll ReadTestData() {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  TraceReaderSet traces = MakeDefaultTraceReaders();
  IngestOptions options;
  auto plan = PlanIngest({kData}, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  std::vector<uint32_t> all(plan->files().size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  auto results = ReadIngestFiles(*plan, readers->readers, traces.readers, options, all);
  return {std::move(plan.value()), std::move(results)};
}

TEST(ShareWireTest, RealFilesRoundTripThroughShares) {
  ReadAll a = ReadTestData();
  ReadAll b = ReadTestData();
  ASSERT_GT(a.plan.files().size(), 20u);
  // The same files once more, through three shares' messages.
  std::vector<std::optional<int32_t>> rank;
  for (size_t i = 0; i < b.plan.files().size(); ++i) {
    EXPECT_EQ(b.plan.bytes()[i], std::filesystem::file_size(b.plan.files()[i]));
    rank.push_back(b.plan.RankOfPath(i));
  }
  std::vector<std::optional<IngestFileResult>> slots(b.results.size());
  for (const std::vector<uint32_t>& share : AssignShares(b.plan.bytes(), rank, 3)) {
    std::vector<IngestFileResult> mine;
    for (uint32_t f : share) mine.push_back(std::move(b.results[f]));
    std::string message = EncodeShare(share, mine);
    Status s = DecodeShare(message, slots);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    ASSERT_TRUE(slots[i].has_value()) << a.plan.files()[i];
    EXPECT_EQ(slots[i]->format, a.results[i].format) << a.plan.files()[i];
    EXPECT_EQ(slots[i]->bytes, a.results[i].bytes);
    EXPECT_EQ(slots[i]->records, a.results[i].records);
    std::string original, decoded;
    EncodeBuilder(a.results[i].builder, original);
    EncodeBuilder(slots[i]->builder, decoded);
    EXPECT_EQ(decoded, original) << a.plan.files()[i];
  }
}

TEST(ShareWireTest, DamageIsAnErrorNotACrash) {
  ReadAll a = ReadTestData();
  std::vector<uint32_t> share = {0, 1, 2};
  std::vector<IngestFileResult> mine;
  for (uint32_t f : share) mine.push_back(std::move(a.results[f]));
  std::string message = EncodeShare(share, mine);
  for (size_t cut = 0; cut < message.size(); cut += 1 + message.size() / 200) {
    std::vector<std::optional<IngestFileResult>> slots(a.results.size());
    EXPECT_FALSE(DecodeShare(std::string_view(message).substr(0, cut), slots).ok()) << cut;
  }
  std::vector<std::optional<IngestFileResult>> slots(a.results.size());
  EXPECT_FALSE(DecodeShare("LGSX", slots).ok());
  ASSERT_TRUE(DecodeShare(message, slots).ok());
  Status twice = DecodeShare(message, slots);
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("given by two shares"), std::string::npos) << twice.message();
  std::vector<std::optional<IngestFileResult>> too_few(2);
  Status past = DecodeShare(message, too_few);
  EXPECT_NE(past.message().find("past the 2 files listed"), std::string::npos) << past.message();
}

TEST(ShareWireTest, AnEmptyShareTakesPart) {
  std::vector<IngestFileResult> none;
  std::string message = EncodeShare({}, none);
  std::vector<std::optional<IngestFileResult>> slots(3);
  EXPECT_TRUE(DecodeShare(message, slots).ok());
  EXPECT_FALSE(slots[0] || slots[1] || slots[2]);
}

}  // namespace
}  // namespace laggard
