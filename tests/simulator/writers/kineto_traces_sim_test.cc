// Tests of the Kineto trace simulator (src/simulator/writers/kineto_traces.h): the
// files are the JSON torch.profiler writes, hold the events the scenario
// asks for, and obey the physics of synchronous training that the trace
// detector relies on. Parsed with nlohmann::json, independent of laggard's
// own readers.

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/writers/kineto_traces.h"
#include "test_util.h"

namespace laggard {
namespace {

using nlohmann::json;
using testing_util::ReadFile;
using testing_util::ReadGzip;
using testing_util::TempDir;

// One NCCL kernel, on the true clock (host clock minus the truth's offset).
struct CollectiveKernel {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t dur_ns = 0;
};

struct RankFile {
  json doc;
  int rank = 0;
  std::string host;
  int64_t clock_offset_ns = 0;
  std::map<int64_t, CollectiveKernel> collectives;  // by Seq
  std::vector<double> step_dur_us;                  // ProfilerStep#N, in order
  std::vector<double> gemm_dur_us;
  std::vector<double> dataloader_dur_us;
};

int64_t Ns(const json& us) { return std::llround(us.get<double>() * 1000); }

struct Traces {
  json truth;
  std::vector<RankFile> ranks;
};

Traces Load(const std::string& dir, bool gzip = false) {
  Traces t;
  t.truth = json::parse(ReadFile(dir + "/truth.json"));
  for (const json& f : t.truth["files"]) {
    RankFile rf;
    std::string path = dir + "/" + f["path"].get<std::string>();
    rf.doc = json::parse(gzip ? ReadGzip(path) : ReadFile(path));
    rf.rank = f["rank"];
    rf.host = f["host"];
    rf.clock_offset_ns = t.truth["clock_offsets_ns"][rf.host];
    int64_t base = rf.doc["baseTimeNanoseconds"];
    for (const json& e : rf.doc["traceEvents"]) {
      if (e["ph"] != "X") continue;
      std::string name = e["name"];
      if (e["cat"] == "kernel" && e["args"].contains("Seq")) {
        CollectiveKernel c;
        c.start_ns = base + Ns(e["ts"]) - rf.clock_offset_ns;
        c.dur_ns = Ns(e["dur"]);
        c.end_ns = c.start_ns + c.dur_ns;
        rf.collectives[e["args"]["Seq"].get<int64_t>()] = c;
      } else if (e["cat"] == "kernel" && name.find("gemm") != std::string::npos) {
        rf.gemm_dur_us.push_back(e["dur"]);
      } else if (name.rfind("ProfilerStep#", 0) == 0) {
        rf.step_dur_us.push_back(e["dur"]);
      } else if (name.rfind("enumerate(DataLoader)", 0) == 0) {
        rf.dataloader_dur_us.push_back(e["dur"]);
      }
    }
    t.ranks.push_back(std::move(rf));
  }
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

sim::TraceScenario Base(uint64_t seed) {
  sim::TraceScenario sc;
  sc.ranks = 16;
  sc.steps = 4;
  sc.kernels_per_step = 40;  // small files: the tests parse them with nlohmann::json
  sc.seed = seed;
  sc.max_clock_offset_ms = 5;
  return sc;
}

Traces Write(const sim::TraceScenario& sc, const TempDir& dir, bool gzip = false) {
  Status st = sim::WriteKinetoTraces(sc, dir.path(), gzip);
  EXPECT_TRUE(st.ok()) << st.message();
  return Load(dir.path(), gzip);
}

size_t Count(const json& doc, const std::string& key, const std::string& value) {
  return static_cast<size_t>(
      std::count_if(doc["traceEvents"].begin(), doc["traceEvents"].end(),
                    [&](const json& e) { return e.value(key, "") == value; }));
}

TEST(KinetoTracesSimTest, FilesHaveTheKinetoLayoutAndTheScenariosEventCounts) {
  TempDir dir;
  sim::TraceScenario sc = Base(1);
  sc.compute_slow = sim::ComputeSlowFault{5, 1.2};
  Traces t = Write(sc, dir);
  ASSERT_EQ(t.ranks.size(), 16u);
  size_t steps = 4, k = 40, c = 4;
  for (const RankFile& rf : t.ranks) {
    const json& d = rf.doc;
    EXPECT_EQ(d["schemaVersion"], 1);
    EXPECT_EQ(d["deviceProperties"].size(), 8u);
    EXPECT_EQ(d["distributedInfo"]["backend"], "nccl");
    EXPECT_EQ(d["distributedInfo"]["rank"], rf.rank);
    EXPECT_EQ(d["distributedInfo"]["world_size"], 16);
    EXPECT_EQ(d["distributedInfo"]["nccl_version"], "2.21.5");
    EXPECT_EQ(d["displayTimeUnit"], "ms");
    EXPECT_TRUE(d["baseTimeNanoseconds"].is_number_integer());
    EXPECT_EQ(Count(d, "cat", "kernel"), steps * (k + c));
    EXPECT_EQ(Count(d, "name", "record_param_comms"), steps * c);
    EXPECT_EQ(Count(d, "name", "cudaLaunchKernel"), steps * k);
    EXPECT_EQ(Count(d, "cat", "gpu_memcpy"), steps * 2);
    EXPECT_EQ(rf.step_dur_us.size(), steps);
    EXPECT_EQ(rf.collectives.size(), steps * c);
    EXPECT_EQ(rf.collectives.begin()->first, 1 + 100 * 4);  // Seq continues from earlier steps
    // Every launch flow ("s") has its kernel end ("f"), and the other way round.
    std::multiset<int64_t> starts, ends;
    for (const json& e : d["traceEvents"]) {
      if (e.value("cat", "") != "ac2g") continue;
      (e["ph"] == "s" ? starts : ends).insert(e["id"].get<int64_t>());
    }
    EXPECT_EQ(starts.size(), steps * (k + c + 2));
    EXPECT_EQ(starts, ends);
  }
  std::set<std::string> names;
  for (const json& e : t.ranks[0].doc["traceEvents"]) {
    if (e.value("name", "").rfind("ProfilerStep#", 0) == 0) names.insert(e["name"]);
  }
  EXPECT_EQ(names, (std::set<std::string>{"ProfilerStep#100", "ProfilerStep#101",
                                          "ProfilerStep#102", "ProfilerStep#103"}));
  EXPECT_EQ(t.truth["fault"], "compute_slow");
  EXPECT_EQ(t.truth["culprit_rank"], 5);
  EXPECT_EQ(t.truth["culprit_host"], "node-00");
}

TEST(KinetoTracesSimTest, NcclKernelCarriesTheCollectiveArgs) {
  TempDir dir;
  Traces t = Write(Base(2), dir);
  const json* nccl = nullptr;
  for (const json& e : t.ranks[3].doc["traceEvents"]) {
    if (e.value("cat", "") == "kernel" && e["args"].contains("Seq")) {
      nccl = &e;
      break;
    }
  }
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ((*nccl)["name"],
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  const json& a = (*nccl)["args"];
  EXPECT_EQ(a["Collective name"], "allreduce");
  EXPECT_EQ(a["dtype"], "BFloat16");
  EXPECT_EQ(a["Group size"], 16);
  EXPECT_EQ(a["In msg nelems"], a["Out msg nelems"]);
  EXPECT_EQ(a["Process Group Name"], "0");
  EXPECT_EQ(a["Process Group Ranks"], "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]");
  EXPECT_EQ(a["device"], 3);
  EXPECT_EQ((*nccl)["pid"], 3);
  EXPECT_EQ((*nccl)["tid"], a["stream"]);
}

TEST(KinetoTracesSimTest, CollectiveEndsAreSimultaneousOnTheTrueClock) {
  TempDir dir;
  sim::TraceScenario sc = Base(3);
  sc.compute_slow = sim::ComputeSlowFault{11, 1.2};
  Traces t = Write(sc, dir);
  // The offsets are real: some hosts disagree by milliseconds.
  std::vector<int64_t> offsets = sim::HostClockOffsetsNs(sc);
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_EQ(t.truth["clock_offsets_ns"]["node-01"], offsets[1]);
  EXPECT_GT(std::abs(offsets[0] - offsets[1]), 100'000);
  for (const auto& [seq, c0] : t.ranks[0].collectives) {
    for (const RankFile& rf : t.ranks) {
      EXPECT_NEAR(rf.collectives.at(seq).end_ns, c0.end_ns, 3'000)
          << "Seq " << seq << " rank " << rf.rank;
    }
  }
}

TEST(KinetoTracesSimTest, ComputeSlowCulpritArrivesLastAndWaitsLeastInEveryCollective) {
  TempDir dir;
  sim::TraceScenario sc = Base(4);
  sc.compute_slow = sim::ComputeSlowFault{11, 1.2};
  Traces t = Write(sc, dir);
  for (const auto& [seq, unused] : t.ranks[0].collectives) {
    const RankFile* latest = nullptr;
    const RankFile* shortest = nullptr;
    for (const RankFile& rf : t.ranks) {
      const CollectiveKernel& c = rf.collectives.at(seq);
      if (!latest || c.start_ns > latest->collectives.at(seq).start_ns) latest = &rf;
      if (!shortest || c.dur_ns < shortest->collectives.at(seq).dur_ns) shortest = &rf;
    }
    EXPECT_EQ(latest->rank, 11) << "Seq " << seq;
    EXPECT_EQ(shortest->rank, 11) << "Seq " << seq;
  }
  // Its GEMMs are 20% slower than a healthy peer's.
  EXPECT_NEAR(Median(t.ranks[11].gemm_dur_us) / Median(t.ranks[0].gemm_dur_us), 1.2, 0.02);
}

TEST(KinetoTracesSimTest, EndToEndStepTimesAreEqualAcrossRanks) {
  TempDir dir;
  sim::TraceScenario sc = Base(5);
  sc.compute_slow = sim::ComputeSlowFault{2, 1.2};
  Traces t = Write(sc, dir);
  for (size_t s = 0; s < 4; ++s) {
    double lo = 1e18, hi = 0;
    for (const RankFile& rf : t.ranks) {
      lo = std::min(lo, rf.step_dur_us[s]);
      hi = std::max(hi, rf.step_dur_us[s]);
    }
    EXPECT_LT((hi - lo) / lo, 0.005) << "step " << s;
  }
}

TEST(KinetoTracesSimTest,
     DataStallCulpritHasNormalKernelsAndArrivesLastAtEachStepsFirstCollective) {
  TempDir dir;
  sim::TraceScenario sc = Base(6);
  sc.data_stall = sim::DataStallFault{9, 0.2};
  Traces t = Write(sc, dir);
  EXPECT_EQ(t.truth["fault"], "data_stall");
  EXPECT_EQ(t.truth["culprit_rank"], 9);
  EXPECT_NEAR(Median(t.ranks[9].gemm_dur_us) / Median(t.ranks[0].gemm_dur_us), 1.0, 0.02);
  EXPECT_GT(Median(t.ranks[9].dataloader_dur_us), 200'000);
  EXPECT_LT(Median(t.ranks[0].dataloader_dur_us), 1'000);
  for (int64_t step = 100; step < 104; ++step) {
    int64_t seq = 1 + step * 4;  // the step's first all-reduce
    const CollectiveKernel& culprit = t.ranks[9].collectives.at(seq);
    for (const RankFile& rf : t.ranks) {
      if (rf.rank == 9) continue;
      const CollectiveKernel& c = rf.collectives.at(seq);
      EXPECT_GT(c.dur_ns, culprit.dur_ns + 150'000'000) << "victims wait ~0.2 s, Seq " << seq;
      EXPECT_LT(c.start_ns, culprit.start_ns);
    }
  }
}

TEST(KinetoTracesSimTest, NetworkSlowStretchesEveryTransferAndNamesNoCulprit) {
  TempDir healthy_dir, slow_dir;
  sim::TraceScenario sc = Base(7);
  Traces healthy = Write(sc, healthy_dir);
  sc.network_slow = sim::NetworkSlowFault{4};
  Traces slow = Write(sc, slow_dir);
  EXPECT_EQ(slow.truth["fault"], "network_slow");
  EXPECT_TRUE(slow.truth["culprit_rank"].is_null());
  EXPECT_EQ(healthy.truth["fault"], "none");
  EXPECT_TRUE(healthy.truth["culprit_rank"].is_null());
  // The last rank to arrive waits for no one: its NCCL kernel is the
  // transfer. 25 MiB buckets: ~0.48 ms healthy at 100 GB/s, ~1.9 ms slow.
  auto transfer_us = [](const Traces& t, int64_t seq) {
    int64_t m = INT64_MAX;
    for (const RankFile& rf : t.ranks) m = std::min(m, rf.collectives.at(seq).dur_ns);
    return static_cast<double>(m) / 1000;
  };
  for (int64_t seq = 402; seq <= 404; ++seq) {
    EXPECT_NEAR(transfer_us(healthy, seq), 20 + 2 * 15.0 / 16 * (25 << 20) / 100e3, 30) << seq;
    EXPECT_NEAR(transfer_us(slow, seq) - 20, 4 * (transfer_us(healthy, seq) - 20), 150) << seq;
  }
}

TEST(KinetoTracesSimTest, HealthyControlHasNoRankThatAlwaysArrivesLast) {
  TempDir dir;
  Traces t = Write(Base(8), dir);
  std::map<int, int> latest_count;
  for (const auto& [seq, unused] : t.ranks[0].collectives) {
    const RankFile* latest = &t.ranks[0];
    for (const RankFile& rf : t.ranks) {
      if (rf.collectives.at(seq).start_ns > latest->collectives.at(seq).start_ns) latest = &rf;
    }
    ++latest_count[latest->rank];
  }
  for (const auto& [rank, n] : latest_count) EXPECT_LT(n, 8) << "rank " << rank;
}

TEST(KinetoTracesSimTest, SameSeedWritesIdenticalFilesAndGzipHoldsTheSameBytes) {
  TempDir a, b, c, z;
  sim::TraceScenario sc = Base(9);
  sc.ranks = 4;
  sc.compute_slow = sim::ComputeSlowFault{1, 1.3};
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, a.path()).ok());
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, b.path()).ok());
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, z.path(), /*gzip=*/true).ok());
  sc.seed = 10;
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, c.path()).ok());
  for (int r = 0; r < 4; ++r) {
    std::string rel = "/" + sim::KinetoTracePath(sc, r);
    std::string first = ReadFile(a.path() + rel);
    ASSERT_GT(first.size(), 100'000u);
    EXPECT_TRUE(first == ReadFile(b.path() + rel)) << "rank " << r;
    EXPECT_FALSE(first == ReadFile(c.path() + rel)) << "rank " << r;
    // The gzip file differs only in its own name ("traceName").
    std::string unzipped = ReadGzip(z.path() + "/" + sim::KinetoTracePath(sc, r, /*gzip=*/true));
    size_t at = unzipped.find(".pt.trace.json.gz\"");
    ASSERT_NE(at, std::string::npos);
    unzipped.erase(at + 14, 3);
    EXPECT_TRUE(first == unzipped) << "rank " << r;
  }
  EXPECT_EQ(ReadFile(a.path() + "/truth.json"), ReadFile(b.path() + "/truth.json"));
}

TEST(KinetoTracesSimTest, BytesPerStepPredictsFileGrowth) {
  TempDir two, three;
  sim::TraceScenario sc = Base(11);
  sc.ranks = 2;
  sc.kernels_per_step = 400;
  sc.collectives_per_step = 8;
  sc.steps = 2;
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, two.path()).ok());
  sc.steps = 3;
  ASSERT_TRUE(sim::WriteKinetoTraces(sc, three.path()).ok());
  StatusOr<uint64_t> per_step = sim::KinetoBytesPerStep(sc);
  ASSERT_TRUE(per_step.ok());
  std::string rel = "/" + sim::KinetoTracePath(sc, 0);
  double growth = static_cast<double>(ReadFile(three.path() + rel).size()) -
                  static_cast<double>(ReadFile(two.path() + rel).size());
  EXPECT_NEAR(growth / static_cast<double>(*per_step), 1.0, 0.01);
  EXPECT_GT(*per_step, 400u * 1000);  // ~1 KB of events per kernel
}

TEST(KinetoTracesSimTest, LegacyNcclNamesAndHeaderBaseTime) {
  TempDir dir;
  sim::TraceScenario sc = Base(12);
  sc.ranks = 40;
  sc.steps = 1;
  sc.kernels_per_step = 12;
  sc.collectives_per_step = 2;
  sc.legacy_nccl = true;
  sc.base_time_in_header = true;
  Traces t = Write(sc, dir);
  const json& d = t.ranks[33].doc;
  EXPECT_EQ(d["distributedInfo"]["nccl_version"], "2.17.1");
  // Kineto's newest layout: base time before the events.
  std::string text = ReadFile(dir.path() + "/" + t.truth["files"][33]["path"].get<std::string>());
  EXPECT_LT(text.find("\"baseTimeNanoseconds\""), text.find("\"traceEvents\""));
  int nccl = 0;
  for (const json& e : d["traceEvents"]) {
    if (e.value("cat", "") != "kernel" || !e["args"].contains("Seq")) continue;
    ++nccl;
    EXPECT_EQ(e["name"],
              "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
    EXPECT_EQ(e["args"]["dtype"], "Float");
    EXPECT_EQ(e["args"]["Group size"], 40);
    // PyTorch writes at most 30 ranks of a group.
    std::string ranks = e["args"]["Process Group Ranks"];
    EXPECT_TRUE(ranks.starts_with("[0, 1, 2, ") && ranks.ends_with(", 28, 29, ...]")) << ranks;
  }
  EXPECT_EQ(nccl, 2);
}

TEST(KinetoTracesSimTest, InvalidScenariosAreRejected) {
  TempDir dir;
  sim::TraceScenario sc = Base(13);
  sc.compute_slow = sim::ComputeSlowFault{16, 1.2};
  EXPECT_FALSE(sim::WriteKinetoTraces(sc, dir.path()).ok());
  sc = Base(13);
  sc.kernels_per_step = 4;
  EXPECT_FALSE(sim::WriteKinetoTraces(sc, dir.path()).ok());
  EXPECT_FALSE(sim::KinetoBytesPerStep(sc).ok());
  sc = Base(13);
  sc.clock_offsets_ns = {1, 2, 3};  // 2 nodes
  EXPECT_FALSE(sim::WriteKinetoTraces(sc, dir.path()).ok());
}

}  // namespace
}  // namespace laggard
