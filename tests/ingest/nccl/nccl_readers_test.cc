// The NCCL readers: nccl-tests output, NCCL_DEBUG=INFO logs and
// `nvidia-smi topo -m`, on the real corpus files, synthetic variants of each
// format and a corruption suite (diagnostic counts and line numbers).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "ingest/nccl/nccl_debug.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

std::string CorpusFile(const std::string& rel) {
  return std::string(LAGGARD_CORPUS_DIR) + "/" + rel;
}

#define REQUIRE_CORPUS(rel)                                                          \
  do {                                                                               \
    if (!std::filesystem::exists(CorpusFile(rel))) {                                 \
      GTEST_SKIP() << "corpus file " << CorpusFile(rel)                              \
                   << " absent (LAGGARD_CORPUS_DIR has no shared corpus); skipping"; \
    }                                                                                \
  } while (0)

// What one reader made of one file: the builder holds network() and diag().
struct Outcome {
  uint64_t taken = 0;
  RunBuilder builder;
  NetworkData& net() { return builder.network(); }
  uint64_t count(DiagCode c) { return builder.diagnostics().count(c); }
  std::vector<uint64_t> lines(DiagCode c) {
    std::vector<uint64_t> out;
    for (const DiagExample& e : builder.diagnostics().examples(c)) out.push_back(e.line);
    return out;
  }
};

void ReadText(const TextReader& reader, const std::string& text, Outcome& out,
              std::optional<std::string> host_from_path = std::nullopt,
              const std::string& name = "input.txt") {
  TempDir dir;
  std::string path = WriteFile(dir.File(name), text);
  auto source = OpenByteSource(path);
  ASSERT_TRUE(source.ok());
  LineReader lines(**source);
  ReaderContext ctx;
  ctx.path = path;
  ctx.host_from_path = std::move(host_from_path);
  ctx.out = &out.builder;
  out.taken = reader.Read(lines, ctx);
}

const TextReader& TestsReader() {
  static auto r = MakeNcclTestsReader();
  return *r;
}
const TextReader& DebugReader() {
  static auto r = MakeNcclDebugReader();
  return *r;
}
const TextReader& TopoReader() {
  static auto r = MakeNvidiaSmiTopoReader();
  return *r;
}

const NcclRankInfo* FindProcess(const NetworkData& net, int64_t pid, int32_t dev) {
  for (const NcclRankInfo& r : net.nccl_ranks) {
    if (r.pid == pid && r.cuda_device == dev) return &r;
  }
  return nullptr;
}

const NcclRankInfo* FindRank(const NetworkData& net, int32_t rank) {
  for (const NcclRankInfo& r : net.nccl_ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

// ---------------------------------------------------------------- nccl-tests

TEST(NcclTestsCorpusTest, KubeflowRunHas24RanksOnTwelveHostsAndItsAverage) {
  REQUIRE_CORPUS("nccl_tests/all_reduce_perf_24rank_12node_A800_kubeflow.txt");
  std::string path = CorpusFile("nccl_tests/all_reduce_perf_24rank_12node_A800_kubeflow.txt");
  laggard::Run run = IngestPaths({path});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "nccl-tests");
  ASSERT_EQ(run.network.nccl_tests.size(), 1u);
  const NcclTestRun& t = run.network.nccl_tests[0];
  EXPECT_EQ(t.collective, "all_reduce");  // from the file name
  EXPECT_EQ(t.threads, 1);
  EXPECT_EQ(t.gpus_per_thread, 1);
  EXPECT_EQ(t.warmup_iters, 50);
  EXPECT_EQ(t.iters, 50);
  EXPECT_EQ(t.src.line, 1u);
  ASSERT_EQ(t.ranks.size(), 24u);
  std::set<std::string> hosts;
  for (const NcclTestRank& r : t.ranks) hosts.insert(r.host);
  EXPECT_EQ(hosts.size(), 12u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.ranks[0].host, "kubeflow-nccl-test-3-master-0");
  EXPECT_EQ(t.ranks[0].pid, 1164);
  EXPECT_EQ(t.ranks[0].group, 0);
  EXPECT_EQ(t.ranks[0].device, 0);
  EXPECT_EQ(t.ranks[0].bus_id, "0x10");
  EXPECT_EQ(t.ranks[0].gpu_name, "NVIDIA A800-SXM4-80GB");
  EXPECT_EQ(t.ranks[23].rank, 23);
  EXPECT_EQ(t.ranks[23].host, "kubeflow-nccl-test-3-worker-10");
  EXPECT_EQ(t.ranks[23].device, 1);
  EXPECT_EQ(t.ranks[23].bus_id, "0x8f");
  ASSERT_EQ(t.rows.size(), 3u);
  const NcclTestRow& r0 = t.rows[0];
  EXPECT_EQ(r0.size_bytes, 536870912);
  EXPECT_EQ(r0.count, 134217728);
  EXPECT_EQ(r0.type, "float");
  EXPECT_EQ(r0.redop, "sum");
  EXPECT_EQ(r0.root, std::nullopt);  // -1: no root
  EXPECT_DOUBLE_EQ(*r0.oop_time_us, 24942);
  EXPECT_DOUBLE_EQ(*r0.oop_algbw_gbps, 21.52);
  EXPECT_DOUBLE_EQ(*r0.oop_busbw_gbps, 41.26);
  EXPECT_EQ(r0.oop_wrong, 0);
  EXPECT_DOUBLE_EQ(*r0.ip_time_us, 24966);
  EXPECT_DOUBLE_EQ(*r0.ip_busbw_gbps, 41.22);
  EXPECT_EQ(r0.ip_wrong, 0);
  EXPECT_EQ(r0.src.line, 32u);
  EXPECT_EQ(t.rows[2].size_bytes, 2147483648);
  EXPECT_DOUBLE_EQ(*t.rows[2].ip_busbw_gbps, 42.34);
  EXPECT_EQ(t.out_of_bounds, 0);
  ASSERT_TRUE(t.avg_busbw_gbps);
  EXPECT_DOUBLE_EQ(*t.avg_busbw_gbps, 41.6967);
  EXPECT_TRUE(t.errors.empty());
  EXPECT_EQ(t.host_from_path, std::nullopt);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 0u);
}

TEST(NcclTestsCorpusTest, AzureH200RunReadsNcclVersionAndOneSize) {
  REQUIRE_CORPUS("nccl_tests/all_reduce_perf_8xH200_single_8G_azure_nccl2.19.3.txt");
  laggard::Run run =
      IngestPaths({CorpusFile("nccl_tests/all_reduce_perf_8xH200_single_8G_azure_nccl2.19.3.txt")});
  EXPECT_EQ(run.files[0].format, "nccl-tests");
  ASSERT_EQ(run.network.nccl_tests.size(), 1u);
  const NcclTestRun& t = run.network.nccl_tests[0];
  EXPECT_EQ(t.collective, "all_reduce");
  EXPECT_EQ(t.nccl_version, "2.19.3");
  EXPECT_EQ(t.warmup_iters, 5);
  EXPECT_EQ(t.iters, 10);
  ASSERT_EQ(t.ranks.size(), 8u);
  for (const NcclTestRank& r : t.ranks) {
    EXPECT_EQ(r.host, "test-h200-deb");
    EXPECT_EQ(r.bus_id, "0x00");
    EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  }
  EXPECT_EQ(t.ranks[7].pid, 23697);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].size_bytes, 8589934592);
  EXPECT_EQ(t.rows[0].count, 2147483648);
  EXPECT_DOUBLE_EQ(*t.rows[0].oop_busbw_gbps, 476.96);
  EXPECT_DOUBLE_EQ(*t.rows[0].ip_busbw_gbps, 476.98);
  EXPECT_DOUBLE_EQ(*t.avg_busbw_gbps, 476.967);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

const char kNewFormatTwoRuns[] =
    "# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg "
    "iters: 1 validation: 1 graph: 0 unalign: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  41000 on     node-a device  0 [0000:1b:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  41000 on     node-a device  1 [0000:43:00] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)\n"
    "           8             2     float     sum      -1    10.12    0.00    0.00      0    "
    "9.98    0.00    0.00      0\n"
    "          16             4     float     sum      -1  1.2e+05    0.00    0.00  1e+06    "
    "9.95    0.00    0.00      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.001 \n"
    "#\n"
    "# Collective test concluded: all_reduce_perf\n"
    "#\n"
    "$ mpirun -np 2 ./build/all_gather_perf -b 8 -e 8 -c 0\n"
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 "
    "validation: 0\n"
    "#\n"
    "# Using devices\n"
    "#   Rank  0 Pid   1428 on node-b device  0 [0x00] NVIDIA A10G\n"
    "#   Rank  1 Pid   1429 on node-c device  0 [0x00] NVIDIA A10G\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "           8             1     float    none      -1    12.00    0.00    0.00    N/A    "
    "11.00    0.00    0.00    N/A\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.002\n";

TEST(NcclTestsReaderTest, EachHeaderStartsANewRun) {
  Outcome o;
  ReadText(TestsReader(), kNewFormatTwoRuns, o);
  ASSERT_EQ(o.net().nccl_tests.size(), 2u);
  const NcclTestRun& a = o.net().nccl_tests[0];
  EXPECT_EQ(a.collective, "all_reduce");
  EXPECT_EQ(a.nccl_version, "2.26.2");  // nccl-library=22602
  EXPECT_EQ(a.src.line, 1u);
  EXPECT_EQ(a.gpus_per_thread, 2);
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[1].bus_id, "0000:43:00");
  EXPECT_EQ(a.ranks[1].gpu_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(a.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*a.rows[1].oop_time_us, 120000);  // "1.2e+05"
  EXPECT_EQ(a.rows[1].oop_wrong, 1000000);           // "%g" of 1000000
  EXPECT_DOUBLE_EQ(*a.avg_busbw_gbps, 0.001);

  const NcclTestRun& b = o.net().nccl_tests[1];
  EXPECT_EQ(b.collective, "all_gather");  // from the mpirun command line
  EXPECT_EQ(b.src.line, 19u);
  EXPECT_EQ(b.nccl_version, std::nullopt);
  ASSERT_EQ(b.ranks.size(), 2u);
  EXPECT_EQ(b.ranks[0].group, std::nullopt);  // rank lines before nccl-tests 2.11
  EXPECT_EQ(b.ranks[1].host, "node-c");
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.rows[0].redop, "none");
  EXPECT_EQ(b.rows[0].oop_wrong, std::nullopt);  // N/A: validation off
  EXPECT_EQ(b.rows[0].ip_wrong, std::nullopt);
  EXPECT_DOUBLE_EQ(*b.rows[0].ip_time_us, 11.0);
  EXPECT_EQ(o.taken, 2u + 3u + 4u);  // runs + rows + ranks
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 0u);
}

TEST(NcclTestsReaderTest, AlltoallTableWithDashesInRedopAndRoot) {
  Outcome o;
  ReadText(TestsReader(),
           "# nThread 1 nGpus 8 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
           "#       size         count      type   redop    root     time   algbw   busbw "
           "#wrong     time   algbw   busbw #wrong\n"
           "        1024            32     float       -       -    23.71    0.04    0.04      "
           "0    22.90    0.04    0.04      0\n"
           "        2048            64     float    none      -1    24.10    0.08    0.07      "
           "0    23.50    0.09    0.08      0\n",
           o, "node-x", "alltoall_perf.out");
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  const NcclTestRun& t = o.net().nccl_tests[0];
  EXPECT_EQ(t.collective, "alltoall");  // from the file name
  EXPECT_EQ(t.host_from_path, "node-x");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].redop, std::nullopt);
  EXPECT_EQ(t.rows[0].root, std::nullopt);
  EXPECT_EQ(t.rows[1].redop, "none");
  EXPECT_DOUBLE_EQ(*t.rows[1].oop_busbw_gbps, 0.07);
  EXPECT_EQ(o.count(DiagCode::kNetNoHost), 0u);
}

TEST(NcclTestsReaderTest, OldErrorColumnAndMissingRedopAreReadByName) {
  Outcome o;
  ReadText(TestsReader(),
           "# nThread 1 nGpus 4 minBytes 0 maxBytes 48 step: 48(bytes) warmup iters: 5 iters: 20 "
           "validation: 1\n"
           "#\n"
           "# Using devices\n"
           "#   Rank  0 Pid  87569 on    seville device  0 [0xbc] Tesla V100-SXM3-32GB\n"
           "#\n"
           "#                                             out-of-place                       "
           "in-place\n"
           "#       size         count    type     time   algbw   busbw  error     time   algbw "
           "  busbw  error\n"
           "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
           "(GB/s)\n"
           "           0             0   float    57.30    0.00    0.00  0e+00    57.09    0.00 "
           "   0.00  0e+00\n"
           "          48             1   float    57.46    0.00    0.00  2e-07    57.40    0.00 "
           "   0.00  0e+00\n",
           o);
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  const NcclTestRun& t = o.net().nccl_tests[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1].size_bytes, 48);
  EXPECT_EQ(t.rows[1].redop, std::nullopt);
  EXPECT_EQ(t.rows[1].oop_wrong, std::nullopt);  // "error" is not a count of wrong values
  EXPECT_DOUBLE_EQ(*t.rows[1].oop_time_us, 57.46);
  EXPECT_DOUBLE_EQ(*t.rows[1].ip_time_us, 57.40);
  EXPECT_EQ(t.ranks[0].host, "seville");
  EXPECT_EQ(t.collective, "unknown");  // no binary, no test line, file name input.txt
}

TEST(NcclTestsReaderTest, PerIterationAndTimestampColumnsDoNotShiftValues) {
  Outcome o;
  ReadText(TestsReader(),
           "# Collective test starting: reduce_scatter_perf\n"
           "# nThread 1 nGpus 1 minBytes 1024 maxBytes 1024 step: 2(factor) warmup iters: 1 "
           "iters: 2 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
           "#       size         count      type   redop    root     time   algbw   busbw  "
           "#wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min "
           "   i_max    i_p99    i_cv%           timestamp\n"
           "        1024           256     float     sum      -1    30.10    0.03    0.03       0 "
           "   29.00    31.00    31.00     1.20    29.80    0.03    0.03       0    29.10    "
           "30.50    30.50     0.90  2025-01-02 10:11:12\n",
           o);
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  const NcclTestRun& t = o.net().nccl_tests[0];
  EXPECT_EQ(t.collective, "reduce_scatter");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*t.rows[0].ip_time_us, 29.80);
  EXPECT_EQ(t.rows[0].ip_wrong, 0);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 0u);
}

TEST(NcclTestsReaderTest, LauncherPrefixesAreRemoved) {
  Outcome o;
  ReadText(TestsReader(),
           "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup "
           "iters: 5 iters: 20 validation: 1\n"
           "[1,0]<stdout>:#  Rank  0 Group  0 Pid   1164 on node-a device  0 [0x10] NVIDIA A100\n"
           "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw "
           "  busbw #wrong     time   algbw   busbw #wrong\n"
           "[1,0]<stdout>:           8             2     float     sum      -1    10.00    0.00 "
           "   0.00      0    10.00    0.00    0.00      0\n"
           "0:           16             4     float     sum      -1    11.00    0.00    0.00      "
           "0    11.00    0.00    0.00      0\n"
           "[1,0]<stdout>:# Avg bus bandwidth    : 0.5 \n",
           o);
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  const NcclTestRun& t = o.net().nccl_tests[0];
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].host, "node-a");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1].size_bytes, 16);
  EXPECT_DOUBLE_EQ(*t.avg_busbw_gbps, 0.5);
}

TEST(NcclTestsReaderTest, FailureOutputIsKeptAsErrorsOfTheRun) {
  Outcome o;
  ReadText(TestsReader(),
           "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 "
           "validation: 1\n"
           "#  Rank  0 Group  0 Pid    77 on node-a device  0 [0x10] NVIDIA A800\n"
           "#  Rank  1 Group  0 Pid    78 on node-b device  0 [0x10] NVIDIA A800\n"
           "node-b:78:90 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
           "10.0.0.1<43211> failed : Connection refused\n"
           "node-b: Test NCCL failure common.cu:1005 'unhandled system error / '\n"
           " .. node-b pid 78: Test failure common.cu:891\n"
           "# Out of bounds values : 3 FAILED\n",
           o, std::nullopt, "sendrecv_perf.txt");
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  const NcclTestRun& t = o.net().nccl_tests[0];
  EXPECT_EQ(t.collective, "sendrecv");
  EXPECT_TRUE(t.rows.empty());
  EXPECT_EQ(t.out_of_bounds, 3);
  ASSERT_EQ(t.errors.size(), 4u);
  EXPECT_NE(t.errors[0].find("NCCL WARN socketStartConnect"), std::string::npos);
  EXPECT_EQ(t.errors[1], "node-b: Test NCCL failure common.cu:1005 'unhandled system error / '");
  EXPECT_EQ(t.errors[3], "# Out of bounds values : 3 FAILED");
  // The WARN line is also an NCCL log line of process node-b:78 [0].
  ASSERT_EQ(o.net().nccl_ranks.size(), 1u);
  EXPECT_EQ(o.net().nccl_ranks[0].host, "node-b");
  ASSERT_EQ(o.net().nccl_ranks[0].warnings.size(), 1u);
}

TEST(NcclTestsReaderTest, NcclInfoLinesInsideTheOutputDescribeProcesses) {
  Outcome o;
  ReadText(TestsReader(),
           "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 "
           "validation: 1\n"
           "#   Rank  0 Pid   1428 on ip-10-0-139-244 device  0 [0x00] NVIDIA A10G\n"
           "ip-10-0-139-244:1428:1428 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.139.244<0>\n"
           "ip-10-0-139-244:1428:1428 [0] NCCL INFO Using network Socket\n"
           "ip-10-0-139-244:1428:1440 [0] NCCL INFO comm 0x7f6f48000dc0 rank 0 nranks 1 cudaDev 0 "
           "busId 1e0 - Init COMPLETE\n"
           "#       size         count      type   redop     time   algbw   busbw  error     time "
           "  algbw   busbw  error\n"
           "ip-10-0-139-244:1428:1428 [0] NCCL INFO Launch mode Parallel\n"
           "           8             2     float     sum     4.17    0.00    0.00  0e+00     0.58 "
           "   0.01    0.00  0e+00\n",
           o);
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  EXPECT_EQ(o.net().nccl_tests[0].rows.size(), 1u);
  ASSERT_EQ(o.net().nccl_ranks.size(), 1u);
  const NcclRankInfo& p = o.net().nccl_ranks[0];
  EXPECT_EQ(p.host, "ip-10-0-139-244");
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.nranks, 1);
  EXPECT_EQ(p.net, "Socket");
  EXPECT_EQ(p.nics, std::vector<std::string>{"eth0:10.0.139.244<0>"});
  EXPECT_EQ(o.taken, 1u + 1u + 1u + 1u);  // run, rank, row, NCCL process
}

TEST(NcclTestsReaderTest, OutputWithoutRankLinesTakesItsHostFromThePathOrNotesNone) {
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "           8             2     float     sum      -1    10.00    0.00    0.00      0    "
      "10.00    0.00    0.00      0\n";
  Outcome with_host;
  ReadText(TestsReader(), text, with_host, "gpu-node-3");
  EXPECT_EQ(with_host.net().nccl_tests[0].host_from_path, "gpu-node-3");
  EXPECT_EQ(with_host.count(DiagCode::kNetNoHost), 0u);
  Outcome without;
  ReadText(TestsReader(), text + text, without);
  EXPECT_EQ(without.net().nccl_tests.size(), 2u);      // the second header follows a table
  EXPECT_EQ(without.count(DiagCode::kNetNoHost), 1u);  // once per file
}

TEST(NcclTestsReaderTest, SniffBeatsTheOtherReadersAndIgnoresOtherFormats) {
  auto sniff = [](std::string_view s) { return TestsReader().Sniff(s); };
  EXPECT_EQ(sniff("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"), 95);
  EXPECT_EQ(sniff("[1,0]<stdout>:# Collective test starting: all_reduce_perf\n"), 95);
  EXPECT_EQ(sniff("#  Rank  0 Group  0 Pid 1 on h device  0 [0x10] NVIDIA A800\n"), 90);
  EXPECT_EQ(sniff("rank 0, step 1, time 0.8s\nrank 0, step 2, time 0.8s\n"), 0);
  EXPECT_EQ(sniff("rank,step,step_time_ms\n0,1,812\n"), 0);
  EXPECT_EQ(sniff("host:1:2 [0] NCCL INFO Using network IB\n"), 0);
  EXPECT_EQ(sniff("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\n"), 0);
}

// ------------------------------------------------------ nccl-tests corruption

TEST(NcclTestsCorruptionTest, TruncatedTableKeepsCompleteRows) {
  std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "           8             2     float     sum      -1    10.00    0.00    0.00      0    "
      "10.00    0.00    0.00      0\n"
      "          16             4     float     sum      -1    11.00    0.00    0.00      0    "
      "11.00    0.00    0.00      0\n"
      "          32             8     float     sum      -1    12.00    0.0";  // cut
  Outcome o;
  ReadText(TestsReader(), text, o, "h");
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  EXPECT_EQ(o.net().nccl_tests[0].rows.size(), 2u);
  EXPECT_EQ(o.net().nccl_tests[0].avg_busbw_gbps, std::nullopt);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 1u);
  EXPECT_EQ(o.lines(DiagCode::kNetBadRecord), std::vector<uint64_t>{5});
}

TEST(NcclTestsCorruptionTest, GarbledValuesAreCountedWithTheirLines) {
  std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#  Rank  x Group  0 Pid 1 on h device 0 [0x1] GPU\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "   268435456       4194304     float    none      -1    XXXXX  XXX.XX  XXX.XX    N/A   "
      "XXXXXX  XXX.XX  XXX.XX      0\n"
      "          16             4     float     sum      -1    11.00    0.00    0.00    ??    "
      "11.00    0.00    0.00      0\n"
      "          32             8     float     sum      -1    12.00    0.00    0.00      0    "
      "12.00    0.00    0.00      0\n"
      "# Out of bounds values : many OK\n"
      "# Avg bus bandwidth    : nan\n";
  Outcome o;
  ReadText(TestsReader(), text, o, "h");
  ASSERT_EQ(o.net().nccl_tests.size(), 1u);
  const NcclTestRun& t = o.net().nccl_tests[0];
  EXPECT_TRUE(t.ranks.empty());
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].size_bytes, 32);
  EXPECT_EQ(t.out_of_bounds, std::nullopt);
  EXPECT_EQ(t.avg_busbw_gbps, std::nullopt);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 5u);
  EXPECT_EQ(o.lines(DiagCode::kNetBadRecord), (std::vector<uint64_t>{2, 4, 5, 7, 8}));
}

TEST(NcclTestsCorruptionTest, UnknownColumnsAreSkippedByName) {
  Outcome o;
  ReadText(TestsReader(),
           "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
           "#       size         count      type   redop    root   newcol     time   algbw   "
           "busbw #wrong     time   algbw   busbw #wrong\n"
           "           8             2     float     sum      -1      abc    10.00    1.00    "
           "2.00      0    10.50    3.00    4.00      0\n",
           o, "h");
  ASSERT_EQ(o.net().nccl_tests[0].rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*o.net().nccl_tests[0].rows[0].oop_busbw_gbps, 2.00);
  EXPECT_DOUBLE_EQ(*o.net().nccl_tests[0].rows[0].ip_busbw_gbps, 4.00);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 0u);
}

// ------------------------------------------------------------- NCCL_DEBUG logs

TEST(NcclDebugCorpusTest, BigscienceLogHas32RanksOnFourHosts) {
  REQUIRE_CORPUS("nccl_debug/bigscience_all_reduce_bench-a100-n4.txt");
  laggard::Run run =
      IngestPaths({CorpusFile("nccl_debug/bigscience_all_reduce_bench-a100-n4.txt")});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  const NetworkData& net = run.network;
  ASSERT_EQ(net.nccl_ranks.size(), 32u);
  std::set<std::string> hosts;
  std::set<int32_t> ranks;
  for (const NcclRankInfo& r : net.nccl_ranks) {
    ASSERT_TRUE(r.host);
    hosts.insert(*r.host);
    ASSERT_TRUE(r.rank);
    ranks.insert(*r.rank);
    EXPECT_EQ(r.nranks, 32);
    EXPECT_EQ(r.nccl_version, "2.10.3");  // the bare banner, printed once
    EXPECT_EQ(r.net, "IB");
    EXPECT_EQ(r.nics.size(), 4u);
    EXPECT_TRUE(r.warnings.empty());
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"jean-zay-iam37", "jean-zay-iam40", "jean-zay-iam41",
                                          "jean-zay-iam52"}));
  EXPECT_EQ(ranks.size(), 32u);
  const NcclRankInfo* r28 = FindRank(net, 28);
  ASSERT_NE(r28, nullptr);
  EXPECT_EQ(r28->host, "jean-zay-iam52");
  EXPECT_EQ(r28->pid, 263019);
  EXPECT_EQ(r28->cuda_device, 4);
  EXPECT_EQ(r28->bus_id, "88000");
  EXPECT_EQ(r28->nics[0], "hfi1_1:1/IB");
  ASSERT_EQ(r28->connections.size(), 4u);
  EXPECT_EQ(r28->connections[0].via, "P2P/IPC/read");
  EXPECT_EQ(r28->connections[0].to_rank, 29);
  EXPECT_EQ(r28->gdr, std::nullopt);  // only P2P: nothing said about GDR
  const NcclRankInfo* r24 = FindRank(net, 24);
  ASSERT_NE(r24, nullptr);
  ASSERT_EQ(r24->connections.size(), 8u);
  EXPECT_EQ(r24->connections[0].from_rank, 23);
  EXPECT_EQ(r24->connections[0].kind, "recv");
  EXPECT_EQ(r24->connections[0].via, "NET/IB/1");
  EXPECT_EQ(r24->connections[0].channel, 0);
  EXPECT_EQ(r24->gdr, false);  // network connections without /GDRDMA
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(run.total_steps(), 0u);
}

TEST(NcclDebugCorpusTest, SocketFallbackSnippetNamesSocketForRank15) {
  REQUIRE_CORPUS("nccl_debug/nccl_issue952_2node_socket_fallback_snippet.txt");
  laggard::Run run =
      IngestPaths({CorpusFile("nccl_debug/nccl_issue952_2node_socket_fallback_snippet.txt")});
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  const NetworkData& net = run.network;
  ASSERT_EQ(net.nccl_ranks.size(), 5u);
  const NcclRankInfo* r15 = FindProcess(net, 926, 7);
  ASSERT_NE(r15, nullptr);
  EXPECT_EQ(r15->host, "cluster_name");  // the log's "<cluster_name>", a redacted host
  EXPECT_EQ(r15->rank, 15);              // from its connections: no init line in the snippet
  EXPECT_EQ(r15->net, "Socket");
  EXPECT_EQ(r15->gdr, false);
  ASSERT_EQ(r15->connections.size(), 4u);
  EXPECT_EQ(r15->connections[0].via, "NET/Socket/3");
  EXPECT_EQ(r15->connections[0].kind, "send");
  EXPECT_EQ(r15->connections[0].channel, 3);
  const NcclRankInfo* r8 = FindProcess(net, 919, 0);
  ASSERT_NE(r8, nullptr);
  EXPECT_EQ(r8->rank, 8);
  EXPECT_EQ(r8->net, std::nullopt);  // only P2P lines
  EXPECT_EQ(r8->connections.size(), 7u);
  EXPECT_EQ(r8->src.line, 1u);
  EXPECT_EQ(FindProcess(net, 924, 5)->rank, 13);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NcclDebugCorpusTest, OldFormatGdrSnippetHasNoHostButTheRingOverRoce) {
  REQUIRE_CORPUS("nccl_debug/nccl_issue392_nccl2.5.7_ring_roce_gdr_snippet.txt");
  std::string path = CorpusFile("nccl_debug/nccl_issue392_nccl2.5.7_ring_roce_gdr_snippet.txt");
  laggard::Run run = IngestPaths({path});
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  ASSERT_EQ(run.network.nccl_ranks.size(), 1u);
  const NcclRankInfo& p = run.network.nccl_ranks[0];
  EXPECT_EQ(p.host, std::nullopt);
  EXPECT_EQ(p.pid, std::nullopt);
  EXPECT_EQ(p.cuda_device, 0);
  EXPECT_EQ(p.nccl_version, "2.5.7");
  EXPECT_EQ(p.rank, 0);  // "15[41000] -> 0[1b000] [receive]": this process is rank 0
  EXPECT_EQ(p.net, "IB");
  EXPECT_EQ(p.nics, std::vector<std::string>{"mlx5_0:1/RoCE"});
  ASSERT_EQ(p.connections.size(), 5u);
  EXPECT_EQ(p.connections[0].kind, "recv");
  EXPECT_EQ(p.connections[1].kind, "ring");
  EXPECT_EQ(p.connections[1].via, "P2P/IPC");
  EXPECT_EQ(p.connections[2].via, "direct shared memory");
  EXPECT_EQ(p.connections[3].channel, 1);
  EXPECT_EQ(p.gdr, false);  // NET/IB/0 without /GDRDMA
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 1u);

  // In a host directory the host comes from the path.
  TempDir dir;
  WriteFile(dir.File("node-07/nccl.log"), testing_util::ReadFile(path));
  laggard::Run placed = IngestPaths({dir.path()});
  ASSERT_EQ(placed.network.nccl_ranks.size(), 1u);
  EXPECT_EQ(placed.network.nccl_ranks[0].host, "node-07");
  EXPECT_EQ(placed.diagnostics.count(DiagCode::kNetNoHost), 0u);
}

TEST(NcclDebugReaderTest, RankAndConnectionsComeFromTheLargestCommunicator) {
  Outcome o;
  ReadText(DebugReader(),
           "node-a:11:11 [3] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
           "node-a:11:20 [3] NCCL INFO comm 0x55 rank 1 nranks 2 cudaDev 3 nvmlDev 3 busId 4c000 "
           "commId 0x1 - Init START\n"
           "node-a:11:20 [3] NCCL INFO Channel 00/0 : 1[3] -> 0[2] via P2P/CUMEM/read\n"
           "node-a:11:20 [3] NCCL INFO comm 0x55 rank 1 nranks 2 cudaDev 3 nvmlDev 3 busId 4c000 "
           "commId 0x1 - Init COMPLETE\n"
           "node-a:11:21 [3] NCCL INFO comm 0x66 rank 11 nRanks 16 nNodes 2 localRanks 8 "
           "localRank 3 MNNVL 0\n"
           "node-a:11:21 [3] NCCL INFO Channel 00/0 : 11[3] -> 12[4] via P2P/CUMEM/read\n"
           "node-a:11:21 [3] NCCL INFO Channel 01/1 : 3[3] -> 11[3] [receive] via "
           "NET/IB/2(3)/GDRDMA\n"
           "node-a:11:21 [3] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n"
           "node-a:11:21 [3] NCCL INFO ncclCommInitRankConfig comm 0x66 rank 11 nranks 16 cudaDev "
           "3 nvmlDev 3 busId 4c000 commId 0x2 - Init COMPLETE\n"
           "node-a:11:22 [3] NCCL INFO comm 0x77 rank 0 nranks 8 cudaDev 3 busId 4c000 - Init "
           "START\n"
           "node-a:11:22 [3] NCCL INFO Channel 00/0 : 0[3] -> 1[0] via P2P/CUMEM\n"
           "node-a:11:22 [3] NCCL INFO comm 0x77 rank 0 nranks 8 cudaDev 3 busId 4c000 - Init "
           "COMPLETE\n",
           o);
  ASSERT_EQ(o.net().nccl_ranks.size(), 1u);
  const NcclRankInfo& p = o.net().nccl_ranks[0];
  EXPECT_EQ(p.nccl_version, "2.19.3");
  EXPECT_EQ(p.rank, 11);
  EXPECT_EQ(p.nranks, 16);
  EXPECT_EQ(p.bus_id, "4c000");
  ASSERT_EQ(p.connections.size(), 2u);
  EXPECT_EQ(p.connections[0].to_rank, 12);
  EXPECT_EQ(p.connections[1].via, "NET/IB/2(3)/GDRDMA");
  EXPECT_EQ(p.connections[1].channel, 1);
  EXPECT_EQ(p.gdr, true);
  EXPECT_EQ(p.net, "IB");  // from the connection: no "Using network" line
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 0u);
}

TEST(NcclDebugReaderTest, OldInitLinesNameTheCommunicatorAfterItsConnections) {
  Outcome o;
  ReadText(DebugReader(),
           "h:5:5 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via P2P/IPC\n"
           "h:5:5 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1a000 - Init COMPLETE\n"
           "h:5:5 [0] NCCL INFO Channel 00 : 4[1a000] -> 5[1b000] via P2P/IPC\n"
           "h:5:5 [0] NCCL INFO comm 0x2 rank 4 nranks 8 cudaDev 0 busId 1a000 - Init COMPLETE\n",
           o, "h-path");
  ASSERT_EQ(o.net().nccl_ranks.size(), 1u);
  const NcclRankInfo& p = o.net().nccl_ranks[0];
  EXPECT_EQ(p.host, "h");  // the content wins over the path
  EXPECT_EQ(p.rank, 4);
  EXPECT_EQ(p.nranks, 8);
  ASSERT_EQ(p.connections.size(), 1u);
  EXPECT_EQ(p.connections[0].from_rank, 4);
  EXPECT_EQ(p.gdr, std::nullopt);
}

TEST(NcclDebugReaderTest, HungInitKeepsItsConnections) {
  Outcome o;
  ReadText(DebugReader(),
           "h:5:6 [1] NCCL INFO comm 0x1 rank 9 nranks 16 cudaDev 1 busId 1b000 - Init START\n"
           "h:5:6 [1] NCCL INFO Channel 00/0 : 9[1] -> 10[2] via SHM/direct/direct\n"
           "h:5:6 [1] NCCL INFO Channel 00/0 : 9[1] -> 1[1] [send] via NET/IB/0\n"
           "h:5:6 [1] NCCL INFO GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n",
           o);
  const NcclRankInfo& p = o.net().nccl_ranks.at(0);
  EXPECT_EQ(p.rank, 9);
  EXPECT_EQ(p.connections.size(), 2u);
  EXPECT_EQ(p.connections[0].via, "SHM/direct/direct");
  EXPECT_EQ(p.gdr, false);
}

TEST(NcclDebugReaderTest, SocketNicsWarningsAndLauncherPrefixes) {
  Outcome o;
  ReadText(DebugReader(),
           "[1,0]<stdout>:gpu-1:77:77 [0] NCCL INFO NET/IB : No device found.\n"
           "[1,0]<stdout>:gpu-1:77:77 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> "
           "[1]eth1:10.0.1.1<0>\n"
           "[1,0]<stdout>:gpu-1:77:77 [0] NCCL INFO Using network Socket\n"
           "gpu-2: gpu-2:88:99 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [RO]; "
           "OOB ibs2:10.1.0.5<0>\n"
           "gpu-2: gpu-2:88:99 [1] NCCL INFO Using network IBext\n"
           "[2024-11-20 10:11:12] gpu-2:88:99 [1] transport/net_ib.cc:1234 NCCL WARN NET/IB : Got "
           "completion from peer 10.1.0.6<45671> with status=12 opcode=0 len=0 vendor err 129\n"
           "gpu-2:88:99 [1] NCCL INFO GPU Direct RDMA Enabled for GPU 1 / HCA 0 (distance 4 <= 4), "
           "read 1 mode Default\n",
           o);
  ASSERT_EQ(o.net().nccl_ranks.size(), 2u);
  const NcclRankInfo& a = o.net().nccl_ranks[0];
  EXPECT_EQ(a.host, "gpu-1");
  EXPECT_EQ(a.net, "Socket");
  EXPECT_EQ(a.nics, (std::vector<std::string>{"eth0:10.0.0.1<0>", "eth1:10.0.1.1<0>"}));
  EXPECT_EQ(a.gdr, std::nullopt);
  const NcclRankInfo& b = o.net().nccl_ranks[1];
  EXPECT_EQ(b.host, "gpu-2");
  EXPECT_EQ(b.cuda_device, 1);
  EXPECT_EQ(b.net, "IBext");
  EXPECT_EQ(b.nics, (std::vector<std::string>{"mlx5_0:1/IB", "mlx5_3:1/IB"}));
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].rfind("NET/IB : Got completion from peer", 0), 0u);
  EXPECT_EQ(b.gdr, true);
  EXPECT_EQ(o.count(DiagCode::kNetNoHost), 0u);
}

TEST(NcclDebugReaderTest, SniffRanksHeadsDominatedByNcclLinesAboveStepLogs) {
  auto sniff = [](const std::string& s) { return DebugReader().Sniff(s); };
  std::string nccl = "h:1:1 [0] NCCL INFO Using network IB\n";
  std::string step = "rank 0, step 1, time 0.8s\n";
  EXPECT_EQ(sniff(nccl + nccl + step), 65);  // above text-log's 60
  EXPECT_EQ(sniff(nccl + step), 65);
  EXPECT_EQ(sniff(nccl + nccl + nccl + step + step + step + step), 40);  // below 60, above 5
  EXPECT_EQ(sniff(step + step), 0);
  EXPECT_EQ(sniff(nccl + step + step + step), 0);         // one line in passing
  EXPECT_EQ(sniff("NCCL version 2.19.3+cuda12.2\n"), 0);  // no line with a level
  EXPECT_EQ(sniff("# nThread 1 nGpus 1\n"), 0);
  EXPECT_EQ(sniff("\tGPU0\tGPU1\nGPU0\t X \tNV4\n"), 0);
}

// A training log started with NCCL_DEBUG=INFO: the NCCL reader claims it
// (NCCL lines dominate its head) and its text-log reader still reads the
// step lines, also those beyond the sniffed head.
TEST(NcclDebugReaderTest, TrainingLogDominatedByNcclLinesKeepsItsSteps) {
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    text += fmt::format(
        "node-a:100:100 [0] NCCL INFO Channel {:02}/0 : 0[0] -> 1[1] via "
        "P2P/CUMEM/read\n",
        i % 32);
  }
  text +=
      "node-a:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init "
      "COMPLETE\n";
  for (int s = 1; s <= 5; ++s) text += fmt::format("rank 0, step {}, time 0.8s\n", s);
  ASSERT_GT(text.size(), kSniffBytes);
  TempDir dir;
  laggard::Run run = IngestPaths({WriteFile(dir.File("train.log"), text)});
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  ASSERT_EQ(run.network.nccl_ranks.size(), 1u);
  EXPECT_EQ(run.network.nccl_ranks[0].rank, 0);
  EXPECT_EQ(run.network.nccl_ranks[0].connections.size(), 2000u);
  ASSERT_NE(run.FindRank(0), nullptr);
  EXPECT_EQ(run.FindRank(0)->steps.size(), 5u);
}

TEST(NcclDebugReaderTest, LogWithAFewNcclLinesAndStepsBeyondTheHeadKeepsBoth) {
  std::string text =
      "node-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "node-a:100:100 [0] NCCL INFO NET/Plugin : No plugin found\n"
      "node-a:100:100 [0] NCCL INFO Using network IB\n";
  for (int i = 0; i < 3000; ++i) text += fmt::format("loading shard {} of 3000\n", i);
  for (int s = 1; s <= 5; ++s) text += fmt::format("rank 0, step {}, time 0.8s\n", s);
  TempDir dir;
  laggard::Run run = IngestPaths({WriteFile(dir.File("train.log"), text)});
  EXPECT_EQ(run.files[0].format, "nccl-debug");
  ASSERT_EQ(run.network.nccl_ranks.size(), 1u);
  EXPECT_EQ(run.network.nccl_ranks[0].net, "IB");
  ASSERT_NE(run.FindRank(0), nullptr);
  EXPECT_EQ(run.FindRank(0)->steps.size(), 5u);
}

TEST(NcclDebugReaderTest, TrainingLogWithAFewNcclLinesStaysATextLog) {
  std::string text = "node-a:100:100 [0] NCCL INFO Using network IB\n";
  for (int s = 1; s <= 5; ++s) text += fmt::format("rank 0, step {}, time 0.8s\n", s);
  TempDir dir;
  laggard::Run run = IngestPaths({WriteFile(dir.File("train.log"), text)});
  EXPECT_EQ(run.files[0].format, "text-log");
  EXPECT_EQ(run.FindRank(0)->steps.size(), 5u);
}

// ------------------------------------------------------ NCCL_DEBUG corruption

TEST(NcclDebugCorruptionTest, GarbledNcclLinesAreCountedWithTheirLines) {
  Outcome o;
  ReadText(DebugReader(),
           "h:1:1 [0] NCCL INFO Using network IB\n"
           "h:1:1 [0] NCCL IN\n"                                            // cut
           "h:1:1 [0] NCCL INFO Channel 00/0 : x[0] -> 1[1] via P2P/IPC\n"  // bad rank
           "h:1:1 [0] NCCL INFO comm 0x1 rank abc nranks 8 cudaDev 0 - Init COMPLETE\n"
           "h:1:1 [0] NCCL INFO comm 0x1 rank 9 nranks 8 cudaDev 0 - Init COMPLETE\n"  // 9 >= 8
           "h:1:1 [0] NCCL INFO NET/IB : Using [RO]; OOB eth0:10.0.0.1<0>\n"           // no devices
           "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [sideways] via P2P/IPC\n"
           "NCCL version \n"
           "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC\n"
           "some unrelated line\n",
           o);
  ASSERT_EQ(o.net().nccl_ranks.size(), 1u);
  const NcclRankInfo& p = o.net().nccl_ranks[0];
  EXPECT_EQ(p.net, "IB");
  EXPECT_EQ(p.rank, 0);  // from the one good connection
  EXPECT_EQ(p.connections.size(), 1u);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 7u);
  EXPECT_EQ(o.lines(DiagCode::kNetBadRecord),
            (std::vector<uint64_t>{2, 3, 4, 5, 6}));  // 5 examples
}

TEST(NcclDebugCorruptionTest, TruncatedLogKeepsWhatCameBefore) {
  std::string full =
      "h:1:1 [0] NCCL INFO comm 0x1 rank 2 nranks 4 cudaDev 0 busId 1000 - Init START\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[1] via P2P/IPC\n"
      "h:1:1 [0] NCCL INFO Channel 01/0 : 2[0] -> 3[1] via P2P/IPC\n";
  Outcome o;
  ReadText(DebugReader(), full.substr(0, full.size() - 20), o);
  const NcclRankInfo& p = o.net().nccl_ranks.at(0);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.connections.size(), 1u);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 1u);
  EXPECT_EQ(o.lines(DiagCode::kNetBadRecord), std::vector<uint64_t>{3});
}

// ---------------------------------------------------------- nvidia-smi topo -m

TEST(TopoCorpusTest, TwoGtx1080TiOnOneHostBridge) {
  REQUIRE_CORPUS("nvidia_smi/topo_m_2x1080ti_blog.txt");
  TempDir dir;
  WriteFile(dir.File("box-1/topo.txt"),
            testing_util::ReadFile(CorpusFile("nvidia_smi/topo_m_2x1080ti_blog.txt")));
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-topo");
  ASSERT_EQ(run.network.topologies.size(), 1u);
  const TopologyMatrix& m = run.network.topologies[0];
  EXPECT_EQ(m.host, "box-1");
  EXPECT_EQ(m.devices, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_EQ(m.link, (std::vector<std::vector<std::string>>{{"X", "PHB"}, {"PHB", "X"}}));
  EXPECT_EQ(m.cpu_affinity,
            (std::map<std::string, std::string>{{"GPU0", "0-11"}, {"GPU1", "0-11"}}));
  EXPECT_TRUE(m.numa_affinity.empty());  // N/A
  EXPECT_TRUE(m.nic_names.empty());
  EXPECT_EQ(m.src.line, 1u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(TopoCorpusTest, FourA10WithTwoNicsNamedByTheLegend) {
  REQUIRE_CORPUS("nvidia_smi/topo_m_4xA10_2nic_blog.txt");
  laggard::Run run = IngestPaths({CorpusFile("nvidia_smi/topo_m_4xA10_2nic_blog.txt")});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-topo");
  ASSERT_EQ(run.network.topologies.size(), 1u);
  const TopologyMatrix& m = run.network.topologies[0];
  EXPECT_EQ(m.host, std::nullopt);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetNoHost), 1u);
  EXPECT_EQ(m.devices,
            (std::vector<std::string>{"GPU0", "GPU1", "GPU2", "GPU3", "mlx5_0", "mlx5_1"}));
  EXPECT_EQ(m.nic_names,
            (std::map<std::string, std::string>{{"NIC0", "mlx5_0"}, {"NIC1", "mlx5_1"}}));
  ASSERT_EQ(m.link.size(), 6u);
  EXPECT_EQ(m.link[0][1], "SYS");
  EXPECT_EQ(m.link[4][5], "PIX");
  EXPECT_EQ(m.link[5][5], "X");  // "X " with a trailing space
  EXPECT_EQ(m.cpu_affinity.at("GPU3"), "0-127");
  EXPECT_EQ(m.numa_affinity.at("GPU3"), "0");
  EXPECT_EQ(m.cpu_affinity.count("NIC0"), 0u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(TopoCorpusTest, EightH100TabSeparatedWithEmptyCpuAffinity) {
  REQUIRE_CORPUS("nvidia_smi/topo_m_8xH100_della_pli_tabs.txt");
  laggard::Run run = IngestPaths({CorpusFile("nvidia_smi/topo_m_8xH100_della_pli_tabs.txt")});
  EXPECT_EQ(run.files[0].format, "nvidia-smi-topo");
  ASSERT_EQ(run.network.topologies.size(), 1u);
  const TopologyMatrix& m = run.network.topologies[0];
  ASSERT_EQ(m.devices.size(), 14u);
  EXPECT_EQ(m.devices[0], "GPU0");
  EXPECT_EQ(m.devices[8], "mlx5_0");
  EXPECT_EQ(m.devices[13], "mlx5_5");
  EXPECT_EQ(m.nic_names.size(), 6u);
  EXPECT_EQ(m.link[0][1], "NV18");
  EXPECT_EQ(m.link[0][8], "PIX");
  EXPECT_EQ(m.link[3][10], "PIX");  // GPU3 - NIC2
  EXPECT_EQ(m.link[10][3], "PIX");
  EXPECT_EQ(m.link[13][6], "PIX");  // NIC5 - GPU6
  EXPECT_EQ(m.link[7][7], "X");
  // GPU0-3 print an empty CPU affinity ("\t\t0\t\tN/A"): unknown, NUMA 0.
  EXPECT_EQ(m.cpu_affinity.count("GPU0"), 0u);
  EXPECT_EQ(m.numa_affinity.at("GPU0"), "0");
  EXPECT_EQ(m.cpu_affinity.at("GPU4"), "1");
  EXPECT_EQ(m.numa_affinity.at("GPU7"), "1");
  EXPECT_EQ(m.numa_affinity.size(), 8u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(TopoReaderTest, AnsiCodesAndTheExtraTabBeforeGpuNumaId) {
  Outcome o;
  ReadText(TopoReader(),
           "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
           "GPU0\t X \tNV18\tPXB\t0-63,128-191\t0\t\tN/A\n"
           "GPU1\tNV18\t X \tNODE\t64-127,192-255\t1\t\t2\n"
           "NIC0\tPXB\tNODE\t X \t\t\t\t\n"
           "\n"
           "Legend:\n"
           "\n"
           "  X    = Self\n"
           "  NV#  = Connection traversing a bonded set of # NVLinks\n"
           "\n"
           "NIC Legend:\n"
           "\n"
           "  NIC0: mlx5_bond_0\n",
           o, "n1");
  ASSERT_EQ(o.net().topologies.size(), 1u);
  const TopologyMatrix& m = o.net().topologies[0];
  EXPECT_EQ(m.devices, (std::vector<std::string>{"GPU0", "GPU1", "mlx5_bond_0"}));
  EXPECT_EQ(m.cpu_affinity.at("GPU1"), "64-127,192-255");
  EXPECT_EQ(m.numa_affinity.at("GPU1"), "1");
  EXPECT_EQ(m.link[2][0], "PXB");
  EXPECT_EQ(o.taken, 3u);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 0u);
}

TEST(TopoReaderTest, OldDriverNamesNicColumnsAndTwoMatricesInOneFile) {
  Outcome o;
  ReadText(TopoReader(),
           "        GPU0    mlx5_0  CPU Affinity\n"
           "GPU0     X      PHB     0-19\n"
           "mlx5_0  PHB      X      \n"
           "\n"
           "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
           "GPU0     X      NV4     0-7             0\n"
           "GPU1    NV4      X      8-15            1\n",
           o, "n2");
  ASSERT_EQ(o.net().topologies.size(), 2u);
  EXPECT_EQ(o.net().topologies[0].devices, (std::vector<std::string>{"GPU0", "mlx5_0"}));
  EXPECT_EQ(o.net().topologies[0].link[1][0], "PHB");
  EXPECT_EQ(o.net().topologies[1].src.line, 5u);
  EXPECT_EQ(o.net().topologies[1].numa_affinity.at("GPU1"), "1");
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 0u);
}

TEST(TopoReaderTest, SniffBeatsTheTextReadersAndIgnoresOtherFormats) {
  auto sniff = [](std::string_view s) { return TopoReader().Sniff(s); };
  EXPECT_EQ(sniff("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\n"), 90);
  EXPECT_EQ(sniff("        GPU0    GPU1\nGPU0     X      PHB\n"), 90);
  std::string report;
  for (int i = 0; i < 20; ++i) report += "some system report line\n";
  EXPECT_EQ(sniff(report + "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\n"), 40);
  EXPECT_EQ(sniff("GPU0 is hot\nGPU1 is cold\n"), 0);
  EXPECT_EQ(sniff("# nThread 1 nGpus 1 minBytes 8\n"), 0);
  EXPECT_EQ(sniff("h:1:1 [0] NCCL INFO Using network IB\n"), 0);
  EXPECT_EQ(sniff("rank,step,step_time_ms\n0,1,812\n"), 0);
}

// -------------------------------------------------------- topology corruption

TEST(TopoCorruptionTest, TruncatedMatrixKeepsCompleteRows) {
  std::string text =
      "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV4\tSYS\t0-7\t0\n"
      "GPU1\tNV4\t X \tSYS\t0-7\t0\n"
      "GPU2\tSYS\tSY";  // cut
  Outcome o;
  ReadText(TopoReader(), text, o, "n3");
  ASSERT_EQ(o.net().topologies.size(), 1u);
  const TopologyMatrix& m = o.net().topologies[0];
  EXPECT_EQ(m.link[1][0], "NV4");
  EXPECT_EQ(m.link[2][0], "");  // the cut row: unknown
  EXPECT_EQ(o.taken, 2u);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 2u);  // the cut row, and "2 of 3 rows"
  EXPECT_EQ(o.lines(DiagCode::kNetBadRecord), (std::vector<uint64_t>{4, 1}));
}

TEST(TopoCorruptionTest, GarbledCellsUnknownRowsAndExtraValuesAreCounted) {
  Outcome o;
  ReadText(TopoReader(),
           "\tGPU0\tGPU1\tCPU Affinity\n"
           "GPU0\t X \tN?V4\t0-7\n"        // garbled cell
           "GPU1\tNV4\t X \t0-7\textra\n"  // value beyond the columns (kept row)
           "GPU9\tNV4\t X \t0-7\n"         // not in the header
           "GPU1\tNV4\t X \t0-7\n"         // repeated
           "GPU0\t X \tNV4\tN/A\n"
           "  NIC0: \n",  // legend entry without a name
           o, "n4");
  const TopologyMatrix& m = o.net().topologies.at(0);
  EXPECT_EQ(m.link[0][1], "NV4");
  EXPECT_EQ(m.cpu_affinity.count("GPU0"), 0u);
  EXPECT_EQ(m.cpu_affinity.at("GPU1"), "0-7");
  EXPECT_EQ(o.taken, 2u);
  EXPECT_EQ(o.count(DiagCode::kNetBadRecord), 5u);
  EXPECT_EQ(o.lines(DiagCode::kNetBadRecord), (std::vector<uint64_t>{2, 3, 4, 5, 7}));
}

}  // namespace
}  // namespace laggard
