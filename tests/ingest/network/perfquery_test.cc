// The perfquery reader (src/ingest/network/perfquery.cc) through the standard
// ingest, as `laggard diagnose` reads it: `perfquery` and `perfquery -x`
// blocks as rdma-core prints them, several ports in one file, pdsh / dshbak
// captures of many hosts, older short names, saturated 32-bit counters, and
// damaged input with the diagnostics it must count. The shared corpus holds
// no perfquery capture; the test checks that the reader claims none of its
// files.

#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

// `perfquery -C mlx5_0 -P 1` on a ConnectX-7 (rdma-core 4x): PortCounters,
// the 32-bit data counters saturated after a day of training.
const char kStandard[] =
    "# Port counters: Lid 75 port 1 (CapMask: 0x5A00)\n"
    "PortSelect:......................1\n"
    "CounterSelect:...................0x0000\n"
    "SymbolErrorCounter:..............0\n"
    "LinkErrorRecoveryCounter:........0\n"
    "LinkDownedCounter:...............0\n"
    "PortRcvErrors:...................0\n"
    "PortRcvRemotePhysicalErrors:.....0\n"
    "PortRcvSwitchRelayErrors:........0\n"
    "PortXmitDiscards:................3\n"
    "PortXmitConstraintErrors:........0\n"
    "PortRcvConstraintErrors:.........0\n"
    "CounterSelect2:..................0x00\n"
    "LocalLinkIntegrityErrors:........0\n"
    "ExcessiveBufferOverrunErrors:....0\n"
    "QP1Dropped:......................0\n"
    "VL15Dropped:.....................0\n"
    "PortXmitData:....................4294967295\n"
    "PortRcvData:.....................4294967295\n"
    "PortXmitPkts:....................2861953409\n"
    "PortRcvPkts:.....................2861950211\n"
    "PortXmitWait:....................19038211\n";

// `perfquery -x -C mlx5_0 -P 1`: PortCountersExtended with the additional
// counters (CapMask2 bit 1).
std::string Extended(int lid, uint64_t xmit_words, uint64_t wait, int port = 1) {
  return fmt::format(
      "# Port extended counters: Lid {} port {} (CapMask: 0x5A00 CapMask2: 0x0000002)\n"
      "PortSelect:......................{}\n"
      "CounterSelect:...................0x0000\n"
      "PortXmitData:....................{}\n"
      "PortRcvData:.....................{}\n"
      "PortXmitPkts:....................177451\n"
      "PortRcvPkts:.....................177398\n"
      "PortUnicastXmitPkts:.............177451\n"
      "PortUnicastRcvPkts:..............177398\n"
      "PortMulticastXmitPkts:...........0\n"
      "PortMulticastRcvPkts:............0\n"
      "CounterSelect2:..................0x00\n"
      "SymbolErrorCounter:..............12\n"
      "LinkErrorRecoveryCounter:........1\n"
      "LinkDownedCounter:...............0\n"
      "PortRcvErrors:...................0\n"
      "PortRcvRemotePhysicalErrors:.....0\n"
      "PortRcvSwitchRelayErrors:........0\n"
      "PortXmitDiscards:................0\n"
      "PortXmitConstraintErrors:........0\n"
      "PortRcvConstraintErrors:.........0\n"
      "LocalLinkIntegrityErrors:........0\n"
      "ExcessiveBufferOverrunErrors:....0\n"
      "VL15Dropped:.....................0\n"
      "PortXmitWait:....................{}\n"
      "QP1Dropped:......................0\n",
      lid, port, port, xmit_words, xmit_words + 7, wait);
}

Run IngestText(const TempDir& dir, const std::string& name, const std::string& content) {
  return IngestPaths({WriteFile(dir.File(name), content)});
}

std::vector<uint64_t> BadLines(const Run& run) {
  std::vector<uint64_t> lines;
  for (const DiagExample& e : run.diagnostics.examples(DiagCode::kNetBadRecord))
    lines.push_back(e.line);
  return lines;
}

const IbPortCounters* FindCounters(const Run& run, int64_t lid,
                                   std::optional<std::string> host = std::nullopt) {
  for (const IbPortCounters& c : run.network.port_counters) {
    if (c.lid == lid && (!host || c.host == host)) return &c;
  }
  return nullptr;
}

// ---------------------------------------------------------------- formats

TEST(PerfqueryTest, StandardBlockKeepsWaitAndErrorsAndListsSaturatedDataCounters) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "perfquery.txt", kStandard);
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "perfquery");
  EXPECT_EQ(run.files[0].records, 1u);
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  const IbPortCounters& c = run.network.port_counters[0];
  EXPECT_EQ(c.lid, 75);
  EXPECT_EQ(c.port, 1);
  EXPECT_FALSE(c.extended);
  EXPECT_EQ(c.src.line, 1u);
  EXPECT_EQ(c.xmit_wait_ticks, 19038211);
  EXPECT_EQ(c.xmit_discards, 3);
  EXPECT_EQ(c.symbol_errors, 0);
  EXPECT_EQ(c.xmit_pkts, 2861953409);
  // 4294967295 is where a 32-bit counter stops: not a value.
  EXPECT_FALSE(c.xmit_data_bytes.has_value());
  EXPECT_FALSE(c.rcv_data_bytes.has_value());
  EXPECT_EQ(c.saturated, (std::vector<std::string>{"PortXmitData", "PortRcvData"}));
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 1u);  // a bare file names no host
}

TEST(PerfqueryTest, ExtendedBlockGivesBytesAsFourTimesTheWords) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "pq.txt", Extended(76, 160038479872ull, 1872365));
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  const IbPortCounters& c = run.network.port_counters[0];
  EXPECT_TRUE(c.extended);
  EXPECT_EQ(c.lid, 76);
  EXPECT_EQ(c.xmit_data_bytes, 4 * 160038479872LL);
  EXPECT_EQ(c.rcv_data_bytes, 4 * (160038479872LL + 7));
  EXPECT_EQ(c.xmit_pkts, 177451);
  EXPECT_EQ(c.xmit_wait_ticks, 1872365);
  EXPECT_EQ(c.symbol_errors, 12);
  EXPECT_EQ(c.link_error_recoveries, 1);
  EXPECT_EQ(c.link_downed, 0);
  EXPECT_TRUE(c.saturated.empty());
}

TEST(PerfqueryTest, StandardAndExtendedBlocksOfOnePortMakeOneRecordWith64BitValues) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "pq.txt", std::string(kStandard) + Extended(75, 1000, 555));
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  const IbPortCounters& c = run.network.port_counters[0];
  EXPECT_TRUE(c.extended);
  EXPECT_EQ(c.xmit_data_bytes, 4000);  // the extended value replaces the saturated one
  EXPECT_EQ(c.xmit_wait_ticks, 555);   // 64-bit wins over 32-bit
  EXPECT_EQ(c.xmit_discards, 0);
  EXPECT_TRUE(c.saturated.empty());
  // The other order: the 32-bit block does not overwrite.
  laggard::Run rev = IngestText(dir, "rev.txt", Extended(75, 1000, 555) + kStandard);
  ASSERT_EQ(rev.network.port_counters.size(), 1u);
  EXPECT_EQ(rev.network.port_counters[0].xmit_wait_ticks, 555);
  EXPECT_EQ(rev.network.port_counters[0].xmit_data_bytes, 4000);
}

TEST(PerfqueryTest, ASaturatedCounterPrintedAgainReadableIsNoLongerListed) {
  TempDir dir;
  // Found by fuzzing: a second, readable PortXmitData of the same block.
  laggard::Run run = IngestText(dir, "pq.txt",
                                "# Port counters: Lid 12 port 1 (CapMask: 0x5A00)\n"
                                "XmtData:.........................4294967295\n"
                                "PortXmitData:....................123\n"
                                "PortRcvData:.....................4294967295\n");
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  const IbPortCounters& c = run.network.port_counters[0];
  EXPECT_EQ(c.xmit_data_bytes, 492);
  EXPECT_EQ(c.saturated,
            (std::vector<std::string>{"PortRcvData"}));  // named as PortCounters names it
}

TEST(PerfqueryTest, OneBlockPerPortInOneFile) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 8; ++i) text += Extended(10 + i, 1000000 + i, 100 + i);
  laggard::Run run = IngestText(dir, "pq.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const IbPortCounters* c = FindCounters(run, 10 + i);
    ASSERT_NE(c, nullptr) << i;
    EXPECT_EQ(c->xmit_wait_ticks, 100 + i);
    EXPECT_EQ(c->src.line, 1u + 26u * static_cast<uint64_t>(i));
  }
}

TEST(PerfqueryTest, OldShortNamesAndHeaderWithoutCapMask) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "pq.txt",
                                "# Port counters: Lid 936 port 1\n"
                                "PortSelect:......................1\n"
                                "CounterSelect:...................0x0000\n"
                                "SymbolErrors:....................4\n"
                                "LinkRecovers:....................0\n"
                                "LinkDowned:......................1\n"
                                "RcvErrors:.......................0\n"
                                "XmtDiscards:.....................2\n"
                                "XmtData:.........................905972985\n"
                                "RcvData:.........................2411533950\n"
                                "XmtPkts:.........................22945597\n"
                                "RcvPkts:.........................26264095\n");
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  const IbPortCounters& c = run.network.port_counters[0];
  EXPECT_EQ(c.lid, 936);
  EXPECT_EQ(c.symbol_errors, 4);
  EXPECT_EQ(c.link_downed, 1);
  EXPECT_EQ(c.xmit_discards, 2);
  EXPECT_EQ(c.xmit_data_bytes, 4 * 905972985LL);
  EXPECT_EQ(c.rcv_data_bytes, 4 * 2411533950LL);
  EXPECT_FALSE(c.xmit_wait_ticks.has_value());  // not printed: unknown, not 0
}

TEST(PerfqueryTest, PdshPrefixesSplitHosts) {
  TempDir dir;
  std::string text;
  for (const char* host : {"gpu-01", "gpu-02"}) {
    std::string block = Extended(host[5] == '1' ? 11 : 12, 5000, host[5] == '1' ? 70 : 900);
    size_t pos = 0;
    while (pos < block.size()) {
      size_t nl = block.find('\n', pos);
      text += std::string(host) + ": " + block.substr(pos, nl - pos + 1);
      pos = nl + 1;
    }
  }
  laggard::Run run = IngestText(dir, "all.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 2u);
  const IbPortCounters* a = FindCounters(run, 11, "gpu-01");
  const IbPortCounters* b = FindCounters(run, 12, "gpu-02");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->xmit_wait_ticks, 70);
  EXPECT_EQ(b->xmit_wait_ticks, 900);
  EXPECT_EQ(b->src.line, 27u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 0u);
}

TEST(PerfqueryTest, DshbakBlocksGiveTheirHosts) {
  TempDir dir;
  std::string text = "----------------\nnode-07\n----------------\n" + Extended(30, 10, 1) +
                     "----------------\nnode-08\n----------------\n" + Extended(31, 20, 2);
  laggard::Run run = IngestText(dir, "dshbak.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 2u);
  EXPECT_NE(FindCounters(run, 30, "node-07"), nullptr);
  EXPECT_NE(FindCounters(run, 31, "node-08"), nullptr);
}

TEST(PerfqueryTest, HostComesFromTheDirectoryLayout) {
  TempDir dir;
  WriteFile(dir.File("run/node-03/perfquery.txt"), Extended(40, 10, 1));
  laggard::Run run = IngestPaths({dir.File("run")});
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  EXPECT_EQ(run.network.port_counters[0].host, "node-03");
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 0u);
}

// ---------------------------------------------------------------- snapshots over time

// A sampling loop: `while sleep 10; do <date>; perfquery -x ...; done`.
std::string Snapshots(const std::vector<std::string>& dates) {
  std::string text;
  for (size_t i = 0; i < dates.size(); ++i) {
    text += dates[i] + "\n";
    text += Extended(75, 1000 * (i + 1), 10 * (i + 1));
    text += Extended(76, 2000 * (i + 1), 20 * (i + 1));
  }
  return text;
}

std::vector<const IbPortCounters*> OfLid(const Run& run, int64_t lid) {
  std::vector<const IbPortCounters*> out;
  for (const IbPortCounters& c : run.network.port_counters) {
    if (c.lid == lid) out.push_back(&c);
  }
  return out;
}

constexpr TimeNs kSec = 1'000'000'000;

TEST(PerfquerySnapshotTest, IsoTimestampLinesGiveOneRecordPerPortAndSample) {
  TempDir dir;
  // date -u +%Y-%m-%dT%H:%M:%SZ, date -Is, and a fraction with an offset.
  laggard::Run run = IngestText(dir, "perfquery.log",
                                Snapshots({"2026-11-29T21:58:41Z", "2026-11-29T21:58:51,250+00:00",
                                           "2026-11-29T23:59:01+01:00"}));
  EXPECT_EQ(run.files[0].format, "perfquery");
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 0u);
  ASSERT_EQ(run.network.port_counters.size(), 6u);
  auto a = OfLid(run, 75);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0]->time_ns, 1795989521 * kSec);
  EXPECT_EQ(a[1]->time_ns, 1795989531 * kSec + 250'000'000);
  EXPECT_EQ(a[2]->time_ns, 1795993141 * kSec);
  EXPECT_EQ(a[0]->xmit_wait_ticks, 10);
  EXPECT_EQ(a[1]->xmit_wait_ticks, 20);
  EXPECT_EQ(a[2]->xmit_wait_ticks, 30);
  EXPECT_EQ(a[2]->xmit_data_bytes, 4 * 3000);
  EXPECT_EQ(a[1]->src.line, 1u + 1u + 2u * 26u + 1u);  // the header, after the second date line
  auto b = OfLid(run, 76);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2]->time_ns, 1795993141 * kSec);
  EXPECT_EQ(b[2]->xmit_wait_ticks, 60);
}

TEST(PerfquerySnapshotTest, EpochAndPlainDateTimestamps) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "perfquery.log",
                 Snapshots({"1795989521", "1795989531.5", "Sun Nov 29 21:59:01 UTC 2026",
                            "Sun Nov 29 21:59:11 2026"}));
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 0u);
  auto a = OfLid(run, 75);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0]->time_ns, 1795989521 * kSec);
  EXPECT_EQ(a[1]->time_ns, 1795989531 * kSec + 500'000'000);
  EXPECT_EQ(a[2]->time_ns, 1795989541 * kSec);
  EXPECT_EQ(a[3]->time_ns, 1795989551 * kSec);
  EXPECT_EQ(a[3]->xmit_wait_ticks, 40);
}

TEST(PerfquerySnapshotTest, FileWithoutTimestampsHasNoSnapshotTime) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "pq.txt", Extended(75, 1000, 10) + Extended(75, 2000, 20));
  ASSERT_EQ(run.network.port_counters.size(), 1u);  // one port, later values win, as before
  EXPECT_FALSE(run.network.port_counters[0].time_ns.has_value());
  EXPECT_EQ(run.network.port_counters[0].xmit_wait_ticks, 20);
}

TEST(PerfquerySnapshotTest, TimestampsPerHostOfADshbakCapture) {
  TempDir dir;
  std::string text = "----------------\nnode-07\n----------------\n2026-11-29T21:58:41Z\n" +
                     Extended(30, 10, 1) + "2026-11-29T21:58:51Z\n" + Extended(30, 20, 2) +
                     "----------------\nnode-08\n----------------\n2026-11-29T21:58:42Z\n" +
                     Extended(31, 10, 1);
  laggard::Run run = IngestText(dir, "dshbak.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 3u);
  auto a = OfLid(run, 30);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1]->host, "node-07");
  EXPECT_EQ(a[1]->time_ns, 1795989531 * kSec);
  const IbPortCounters* b = FindCounters(run, 31, "node-08");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->time_ns, 1795989522 * kSec);
}

TEST(PerfqueryCorruptionTest, MalformedTimestampLinesAreCountedAndTheirSamplesKeptUntimed) {
  TempDir dir;
  std::string text = Snapshots({"2026-11-29T21:58:41Z",            // 1
                                "2026-13-29T21:58:51Z",            // 54: month 13
                                "Mon Nov 29 21:59:01 UTC 2026",    // 107: Nov 29 2026 is a Sunday
                                "17959895x1",                      // 160
                                "Sun Nov 29 21:59:21 UTC 2026"});  // 213
  laggard::Run run = IngestText(dir, "perfquery.log", text);
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{54, 107, 160}));
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 3u);
  auto a = OfLid(run, 75);
  ASSERT_EQ(a.size(), 5u);  // every sample kept
  EXPECT_EQ(a[0]->time_ns, 1795989521 * kSec);
  EXPECT_FALSE(a[1]->time_ns.has_value());
  EXPECT_FALSE(a[3]->time_ns.has_value());
  EXPECT_EQ(a[3]->xmit_wait_ticks, 40);
  EXPECT_EQ(a[4]->time_ns, 1795989561 * kSec);
}

// ---------------------------------------------------------------- sniffing

TEST(PerfquerySniffTest, BeatsGenericReadersAndClaimsNothingElse) {
  auto reader = MakePerfqueryReader();
  EXPECT_EQ(reader->Sniff(kStandard), 95);
  EXPECT_EQ(reader->Sniff(Extended(1, 2, 3)), 95);
  EXPECT_EQ(reader->Sniff("2026-11-29T21:58:41Z\n" + Extended(1, 2, 3)), 95);
  EXPECT_EQ(reader->Sniff(""), 0);
  EXPECT_EQ(reader->Sniff("rank 0, step 1, time 0.8s\n"), 0);
  EXPECT_EQ(reader->Sniff("host,switch\nn1,leaf-1\n"), 0);
  EXPECT_EQ(reader->Sniff("CA 'mlx5_0'\n\tCA type: MT4129\n"), 0);
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 131 + 7) % 256));
  EXPECT_EQ(reader->Sniff(junk), 0);
  const std::string corpus(LAGGARD_CORPUS_DIR);
  if (!fs::exists(corpus)) GTEST_SKIP() << "shared corpus not found at " << corpus;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(corpus)) {
    if (!entry.is_regular_file()) continue;
    auto head = ReadHead(entry.path().string(), kSniffBytes);
    ASSERT_TRUE(head.ok());
    EXPECT_EQ(reader->Sniff(*head), 0) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 20);
}

// ---------------------------------------------------------------- corruption

TEST(PerfqueryCorruptionTest, GarbledValuesAreCountedAndTheRestKept) {
  TempDir dir;
  std::string text = Extended(50, 1000, 42);
  text.replace(text.find("PortXmitWait:....................42"), 35,
               "PortXmitWait:....................4x2");
  text.replace(text.find("SymbolErrorCounter:..............12"), 35,
               "SymbolErrorCounter:..............-1");
  laggard::Run run = IngestText(dir, "pq.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  const IbPortCounters& c = run.network.port_counters[0];
  EXPECT_FALSE(c.xmit_wait_ticks.has_value());
  EXPECT_FALSE(c.symbol_errors.has_value());
  EXPECT_EQ(c.xmit_data_bytes, 4000);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 2u);
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{13, 25}));
}

TEST(PerfqueryCorruptionTest, FailedQueriesGarbledLinesAndCutBlocksAreCounted) {
  TempDir dir;
  std::string text =
      "ibwarn: [4103] mad_rpc: _do_madrpc failed; dport (Lid 0)\n"   // 1
      "perfquery: iberror: failed: classportinfo query\n"            // 2
      "PortXmitWait:....................5\n"                         // 3: outside a block
      + Extended(60, 100, 7) +                                       // 4..29
      "this line is noise\n"                                         // 30
      "# Port extended counters: Lid 61 port 1 (CapMask: 0x5A00)\n"  // 31: cut
      "# Port counters: Lid 62 port 1\n"                             // 32
      "PortXmitWait:....................9\n"                         // 33
      "PortXmitData:....................99999999999999999999999\n";  // 34: too large
  laggard::Run run = IngestText(dir, "pq.txt", text);
  EXPECT_EQ(run.files[0].format, "perfquery");
  ASSERT_EQ(run.network.port_counters.size(), 2u);
  EXPECT_EQ(FindCounters(run, 60)->xmit_wait_ticks, 7);
  EXPECT_EQ(FindCounters(run, 62)->xmit_wait_ticks, 9);
  EXPECT_FALSE(FindCounters(run, 62)->xmit_data_bytes.has_value());
  EXPECT_EQ(FindCounters(run, 61), nullptr);
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{2, 3, 30, 31, 34}));
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 5u);
}

TEST(PerfqueryCorruptionTest, TruncatedFileKeepsCompleteCounters) {
  TempDir dir;
  std::string text = Extended(70, 100, 7) + Extended(71, 200, 8);
  text.resize(text.size() - 200);  // cut inside the second block, mid-line
  laggard::Run run = IngestText(dir, "pq.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 2u);
  EXPECT_EQ(FindCounters(run, 70)->xmit_wait_ticks, 7);
  const IbPortCounters* cut = FindCounters(run, 71);
  ASSERT_NE(cut, nullptr);
  EXPECT_EQ(cut->xmit_data_bytes, 800);
  EXPECT_FALSE(cut->xmit_wait_ticks.has_value());  // never printed
}

TEST(PerfqueryCorruptionTest, UnknownCountersOfNewerVersionsAreIgnored) {
  TempDir dir;
  std::string text = Extended(80, 100, 7);
  text += "PortLocalPhysicalErrors:.........3\n";
  laggard::Run run = IngestText(dir, "pq.txt", text);
  ASSERT_EQ(run.network.port_counters.size(), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 0u);
}

}  // namespace
}  // namespace laggard
