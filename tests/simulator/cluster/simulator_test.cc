// Tests of the cluster simulator (src/simulator/cluster/cluster.h, run_writer.h):
// the run directory it writes is deterministic, every fault leaves its mark
// in the files a user would look at (and only there), the healthy control
// has none, the physics of synchronous training holds across step logs and
// traces, and truth.json says what was injected. Files are read back with
// plain string parsing and nlohmann::json, independent of laggard's readers.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "cli/app.h"
#include "simulator/cluster/cluster.h"
#include "simulator/run_writer.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_util::ReadFile;
using testing_util::TempDir;

struct Sim {
  TempDir dir;
  sim::RunSummary summary;
  json truth;
  std::string File(const std::string& rel) const { return ReadFile(dir.File(rel)); }
};

sim::ClusterScenario Small(int nodes = 2, int gpus = 4, int steps = 60) {
  sim::ClusterScenario sc;
  sc.nodes = nodes;
  sc.gpus_per_node = gpus;
  sc.steps = steps;
  sc.seed = 7;
  sc.kernels_per_step = 16;
  return sc;
}

sim::Fault F(const std::string& spec) {
  auto f = sim::ParseFaultSpec(spec);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? f.value() : sim::Fault();
}

sim::RunOutputOptions Outputs(int trace_steps = 2) {
  sim::RunOutputOptions o;
  o.trace_steps = trace_steps;
  o.threads = 2;
  return o;
}

void Write(Sim& s, const sim::ClusterScenario& sc, const sim::RunOutputOptions& o = Outputs()) {
  auto summary = sim::WriteClusterRun(sc, o, s.dir.path());
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  s.summary = summary.value();
  s.truth = json::parse(s.File("truth.json"));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Fields(const std::string& line, char sep = ' ') {
  std::vector<std::string> out;
  if (sep == ' ') {
    std::istringstream in(line);
    for (std::string w; in >> w;) out.push_back(w);
  } else {
    for (std::string_view f : Split(line, sep)) out.emplace_back(Trim(f));
  }
  return out;
}

// dmon rows of one GPU: column name -> value, for rows while the job ran
// (fb > 1000 MB).
std::vector<std::map<std::string, double>> DmonRows(const Sim& s, const std::string& host,
                                                    int gpu) {
  auto lines = Lines(s.File(host + "/nvidia-smi-dmon.txt"));
  std::vector<std::string> cols = Fields(lines.at(0).substr(1));  // "Date Time gpu pwr ..."
  std::vector<std::map<std::string, double>> rows;
  for (size_t i = 2; i < lines.size(); ++i) {
    auto f = Fields(lines[i]);
    EXPECT_EQ(f.size(), cols.size()) << lines[i];
    if (f.size() != cols.size() || std::stoi(f[2]) != gpu) continue;
    std::map<std::string, double> row;
    for (size_t c = 2; c < cols.size(); ++c) row[cols[c]] = f[c] == "-" ? -1 : std::stod(f[c]);
    if (row["fb"] > 1000) rows.push_back(row);
  }
  return rows;
}

// The -q block of GPU `gpu` (the text between its "GPU 0000..." line and the next).
std::string QueryBlock(const Sim& s, const std::string& host, int gpu) {
  std::string text = s.File(host + "/nvidia-smi-q.txt");
  size_t at = 0;
  for (int i = 0; i <= gpu; ++i) at = text.find("\nGPU 00000000:", at + 1);
  size_t end = text.find("\nGPU 00000000:", at + 1);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string QueryValue(const std::string& block, const std::string& label, size_t from = 0) {
  size_t at = block.find(label, from);
  if (at == std::string::npos) return "";
  size_t colon = block.find(':', at);
  size_t nl = block.find('\n', colon);
  return std::string(Trim(block.substr(colon + 1, nl - colon - 1)));
}

// query CSV rows of one GPU: header name -> text value.
std::vector<std::map<std::string, std::string>> CsvRows(const Sim& s, const std::string& host,
                                                        int gpu) {
  auto lines = Lines(s.File(host + "/nvidia-smi-query.csv"));
  auto header = Fields(lines.at(0), ',');
  std::vector<std::map<std::string, std::string>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto f = Fields(lines[i], ',');
    EXPECT_EQ(f.size(), header.size()) << lines[i];
    if (f.size() != header.size() || f[1] != std::to_string(gpu)) continue;
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size(); ++c) row[header[c]] = f[c];
    rows.push_back(row);
  }
  return rows;
}

// ibstat: CA name -> (State, Rate).
std::map<std::string, std::pair<std::string, std::string>> Ibstat(const Sim& s,
                                                                  const std::string& host) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::string ca;
  for (const std::string& line : Lines(s.File(host + "/ibstat.txt"))) {
    std::string_view t = Trim(line);
    if (StartsWith(t, "CA '")) ca = std::string(t.substr(4, t.size() - 5));
    if (StartsWith(t, "State: ")) out[ca].first = std::string(t.substr(7));
    if (StartsWith(t, "Rate: ")) out[ca].second = std::string(t.substr(6));
  }
  return out;
}

double AvgBusBw(const Sim& s, const std::string& name) {
  for (const std::string& line : Lines(s.File("nccl-tests/all_reduce_perf_" + name + ".txt"))) {
    if (StartsWith(line, "# Avg bus bandwidth")) return std::stod(line.substr(line.find(':') + 1));
  }
  ADD_FAILURE() << "no average in " << name;
  return 0;
}

// Step log of a rank: step times in seconds.
std::vector<double> StepTimes(const Sim& s, int rank, int gpus_per_node) {
  std::vector<double> out;
  for (const std::string& line :
       Lines(s.File(fmt::format("node-{:02d}/rank-{}.log", rank / gpus_per_node, rank)))) {
    size_t at = line.find("time ");
    out.push_back(std::stod(line.substr(at + 5)));
  }
  return out;
}

double Mean(const std::vector<double>& v, size_t from = 0) {
  if (v.size() <= from) return 0;
  return std::accumulate(v.begin() + static_cast<long>(from), v.end(), 0.0) /
         static_cast<double>(v.size() - from);
}

// One rank's trace: per profiled step, compute kernel time, NCCL kernel
// time, data loader time, ProfilerStep start (host clock, ns) and duration.
struct TraceStats {
  std::vector<double> compute_us, nccl_us, dataloader_us, step_dur_us;
  std::vector<int64_t> step_start_ns;
  std::vector<int64_t> last_nccl_end_ns;  // host clock
};

TraceStats Trace(const Sim& s, int rank, int gpus_per_node) {
  TraceStats t;
  std::string host = fmt::format("node-{:02d}", rank / gpus_per_node);
  for (const auto& e : fs::directory_iterator(s.dir.File(host))) {
    std::string name = e.path().filename().string();
    if (!StartsWith(name, fmt::format("rank-{}.", rank)) || !EndsWith(name, ".pt.trace.json"))
      continue;
    json doc = json::parse(ReadFile(e.path().string()));
    int64_t base = doc["baseTimeNanoseconds"];
    std::vector<std::pair<double, double>> steps;  // (ts, dur)
    std::vector<std::tuple<double, double, bool>> kernels;
    std::vector<std::pair<double, double>> loaders;
    for (const json& ev : doc["traceEvents"]) {
      if (ev.value("ph", "") != "X") continue;
      std::string n = ev.value("name", "");
      if (StartsWith(n, "ProfilerStep#")) steps.emplace_back(ev["ts"], ev["dur"]);
      else if (ev.value("cat", "") == "kernel")
        kernels.emplace_back(ev["ts"], ev["dur"], ev["args"].contains("Seq"));
      else if (StartsWith(n, "enumerate(DataLoader)")) loaders.emplace_back(ev["ts"], ev["dur"]);
    }
    std::sort(steps.begin(), steps.end());
    for (auto [ts, dur] : steps) {
      double c = 0, n = 0, d = 0, nccl_end = 0;
      for (auto [kts, kdur, nccl] : kernels) {
        if (kts >= ts && kts < ts + dur) (nccl ? n : c) += kdur;
        if (nccl && kts >= ts && kts < ts + dur) nccl_end = std::max(nccl_end, kts + kdur);
      }
      t.last_nccl_end_ns.push_back(base + std::llround(nccl_end * 1000));
      for (auto [lts, ldur] : loaders) {
        if (lts >= ts && lts < ts + dur) d += ldur;
      }
      t.compute_us.push_back(c);
      t.nccl_us.push_back(n);
      t.dataloader_us.push_back(d);
      t.step_dur_us.push_back(dur);
      t.step_start_ns.push_back(base + std::llround(ts * 1000));
    }
  }
  return t;
}

std::map<std::string, std::string> ReadTree(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file())
      files[fs::relative(e.path(), root).string()] = ReadFile(e.path().string());
  }
  return files;
}

TEST(SimulatorTest, SameSeedWritesIdenticalFiles) {
  sim::ClusterScenario sc = Small(2, 4, 40);
  sc.faults = {F("thermal@node-01:2:0.2"), F("nic_degraded@node-00:mlx5_1")};
  Sim a, b, c;
  Write(a, sc);
  Write(b, sc);
  auto ta = ReadTree(a.dir.path()), tb = ReadTree(b.dir.path());
  ASSERT_EQ(ta.size(), tb.size());
  EXPECT_GT(ta.size(), 30u);
  for (const auto& [name, content] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(tb[name] == content) << name << " differs between two runs with the same seed";
  }
  sc.seed = 8;
  Write(c, sc);
  EXPECT_NE(c.File("node-00/rank-0.log"), a.File("node-00/rank-0.log"));
}

// The golden cases (tests/golden/sim_*) rely on this: every fault kind at
// once, so each kind's draws and its own healthy-control run (several faults
// run one control per fault, on threads) are covered, written with one
// thread and with four.
TEST(SimulatorTest, SameSeedWritesIdenticalFilesWithEveryFaultKindAndAnyThreadCount) {
  sim::ClusterScenario sc = Small(4, 4, 60);
  sc.nodes_per_switch = 2;
  for (const char* spec :
       {"thermal@node-00:0:25%", "power_cap@node-00:1:25%", "clocks_locked@node-00:2:25%",
        "pcie_downgrade@node-00:3:50%", "nvlink_down@node-01:0", "slow_kernel@rank5:25%",
        "nic_degraded@node-01:mlx5_1:50%", "ib_port_down@node-02:mlx5_2", "socket_fallback@node-03",
        "shared_switch_congestion@node-02..node-03:50%,period=20,duration=5",
        "host_cpu_contention@node-02:25%", "data_loader_stall@rank9:25%",
        "periodic_interference@rank10:100%,period=20", "pipeline_stage_imbalance@stage3:25%",
        "sequence_length_imbalance@all:25%"}) {
    sc.faults.push_back(F(spec));
  }
  sim::RunOutputOptions one = Outputs(), four = Outputs();
  one.threads = 1;
  four.threads = 4;
  Sim a, b;
  Write(a, sc, one);
  Write(b, sc, four);
  auto ta = ReadTree(a.dir.path()), tb = ReadTree(b.dir.path());
  ASSERT_EQ(ta.size(), tb.size());
  EXPECT_EQ(a.truth["faults"].size(), 15u);
  for (const auto& [name, content] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(tb[name] == content)
        << name << " differs between 1 and 4 writer threads with the same seed";
  }
}

TEST(SimulatorTest, RunDirectoryHasEveryFileOfTheLayout) {
  Sim s;
  Write(s, Small(3, 2, 30));
  for (const char* host : {"node-00", "node-01", "node-02"}) {
    for (const char* f :
         {"nvidia-smi-dmon.txt", "nvidia-smi-query.csv", "nvidia-smi-q.txt", "nvidia-smi-topo.txt",
          "nvidia-smi-nvlink.txt", "ibstat.txt", "ethtool-eth0.txt", "perfquery.txt"}) {
      EXPECT_TRUE(fs::exists(s.dir.File(std::string(host) + "/" + f))) << host << "/" << f;
    }
  }
  for (int r = 0; r < 6; ++r)
    EXPECT_TRUE(fs::exists(s.dir.File(fmt::format("node-{:02d}/rank-{}.log", r / 2, r))));
  for (const char* f :
       {"nccl-tests/all_reduce_perf_node-00.txt", "nccl-tests/all_reduce_perf_node-00_node-01.txt",
        "nccl-tests/all_reduce_perf_node-00_node-02.txt",
        "nccl-tests/all_reduce_perf_node-01_node-02.txt", "nccl-debug.log", "switch-map.csv",
        "truth.json"}) {
    EXPECT_TRUE(fs::exists(s.dir.File(f))) << f;
  }
  // One trace per rank, in its host's directory.
  int traces = 0;
  for (const auto& e : fs::recursive_directory_iterator(s.dir.path())) {
    traces += EndsWith(e.path().string(), ".pt.trace.json") ? 1 : 0;
  }
  EXPECT_EQ(traces, 6);
  EXPECT_EQ(s.File("switch-map.csv"),
            "host,switch\nnode-00,leaf-00\nnode-01,leaf-00\nnode-02,leaf-00\n");
  // Real layouts: the dmon header, the article's step line, nccl-tests' table.
  auto dmon = Lines(s.File("node-00/nvidia-smi-dmon.txt"));
  EXPECT_EQ(dmon[0].rfind("#Date        Time         gpu    pwr  gtemp  mtemp     sm    mem", 0),
            0u);
  EXPECT_EQ(dmon[1].rfind("#YYYYMMDD    HH:MM:SS     Idx      W      C      C      %      %", 0),
            0u);
  EXPECT_EQ(dmon[2].size(), dmon[0].size());
  std::string line = Lines(s.File("node-01/rank-3.log"))[5];
  EXPECT_EQ(line.rfind("rank 3, step 5, time ", 0), 0u) << line;
  EXPECT_EQ(line.size(), std::string("rank 3, step 5, time 0.0000s").size()) << line;
  std::string nt = s.File("nccl-tests/all_reduce_perf_node-00_node-01.txt");
  EXPECT_NE(nt.find("#  Rank  3 Group  0 Pid"), std::string::npos);
  EXPECT_NE(nt.find("  1073741824     268435456     float     sum      -1"), std::string::npos);
  EXPECT_NE(s.File("node-02/nvidia-smi-topo.txt").find("GPU0\t X \tNV18\tPIX\t"),
            std::string::npos);
}

TEST(SimulatorTest, HealthyControlHasNoFaultMarks) {
  Sim s;
  Write(s, Small(2, 8, 150));
  EXPECT_EQ(s.truth["expected"]["status"], "no_straggler");
  EXPECT_TRUE(s.truth["faults"].empty());
  EXPECT_NEAR(s.truth["step_time_increase"].get<double>(), 0, 1e-9);
  for (const char* host : {"node-00", "node-01"}) {
    for (int g = 0; g < 8; ++g) {
      auto rows = DmonRows(s, host, g);
      ASSERT_GT(rows.size(), 100u);
      for (const auto& r : rows) {
        EXPECT_LT(r.at("gtemp"), 80) << host << " GPU " << g;
        EXPECT_EQ(r.at("pclk"), 1980) << host << " GPU " << g;
        EXPECT_EQ(r.at("tviol"), 0);
        EXPECT_EQ(r.at("pviol"), 0);
      }
      std::string q = QueryBlock(s, host, g);
      EXPECT_EQ(QueryValue(q, "HW Thermal Slowdown"), "Not Active");
      EXPECT_EQ(QueryValue(q, "SW Power Cap"), "Not Active");
      EXPECT_EQ(QueryValue(q, "Current Power Limit"), "700.00 W");
      EXPECT_EQ(QueryValue(q, "Current", q.find("Link Width")), "16x");
    }
    for (const auto& [ca, st] : Ibstat(s, host)) {
      EXPECT_EQ(st.first, "Active") << ca;
      EXPECT_TRUE(st.second == "400" || (ca == "mlx5_8" && st.second == "100"))
          << ca << " " << st.second;
    }
    EXPECT_EQ(s.File(std::string(host) + "/nvidia-smi-nvlink.txt").find("inactive"),
              std::string::npos);
  }
  std::string nccl = s.File("nccl-debug.log");
  EXPECT_EQ(nccl.find("NET/Socket"), std::string::npos);
  EXPECT_EQ(nccl.find("SHM/"), std::string::npos);
  EXPECT_NE(nccl.find("via NET/IB/0/GDRDMA"), std::string::npos);
  EXPECT_NEAR(AvgBusBw(s, "node-00_node-01"), AvgBusBw(s, "node-00"),
              0.05 * AvgBusBw(s, "node-00"));
}

TEST(SimulatorTest, ThermalGpuThrottlesItsRankComputesLongestAndWaitsLeast) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 200);
  sc.faults = {F("thermal@node-01:2:0.25")};
  Write(s, sc);
  // nvidia-smi: hot, throttled, slowdown reported; the other GPUs are not.
  auto hot = DmonRows(s, "node-01", 2);
  auto cool = DmonRows(s, "node-01", 1);
  ASSERT_GT(hot.size(), 50u);
  const auto& h = hot[hot.size() - 5];
  const auto& c = cool[cool.size() - 5];
  EXPECT_GE(h.at("gtemp"), 90);
  EXPECT_LT(c.at("gtemp"), 80);
  EXPECT_LT(h.at("pclk"), 1700);
  EXPECT_EQ(c.at("pclk"), 1980);
  EXPECT_EQ(h.at("tviol"), 1);
  auto csv = CsvRows(s, "node-01", 2);
  EXPECT_EQ(csv[csv.size() - 2]["clocks_event_reasons.active"], "0x0000000000000068");
  EXPECT_EQ(QueryValue(QueryBlock(s, "node-01", 2), "HW Thermal Slowdown"), "Active");
  EXPECT_EQ(QueryValue(QueryBlock(s, "node-01", 1), "HW Thermal Slowdown"), "Not Active");
  EXPECT_LT(std::stoi(QueryValue(QueryBlock(s, "node-01", 2), "GPU T.Limit Temp")), -2);
  // Traces: rank 6 computes ~25% longer and spends the least time in NCCL.
  std::vector<double> compute(8), nccl(8);
  for (int r = 0; r < 8; ++r) {
    TraceStats t = Trace(s, r, 4);
    ASSERT_EQ(t.compute_us.size(), 2u);
    compute[static_cast<size_t>(r)] = Mean(t.compute_us);
    nccl[static_cast<size_t>(r)] = Mean(t.nccl_us);
  }
  for (int r = 0; r < 8; ++r) {
    if (r == 6) continue;
    EXPECT_GT(compute[6], 1.15 * compute[static_cast<size_t>(r)]) << r;
    EXPECT_LT(nccl[6] * 1.5, nccl[static_cast<size_t>(r)]) << r;
  }
  // Step logs: synchronised, and the whole job slowed.
  auto t0 = StepTimes(s, 0, 4), t6 = StepTimes(s, 6, 4);
  for (size_t i = 0; i < t0.size(); ++i)
    EXPECT_NEAR(t0[i], t6[i], 0.003) << "step " << i;  // < 0.5%
  // Truth.
  const json& e = s.truth["expected"];
  EXPECT_EQ(e["status"], "straggler");
  ASSERT_EQ(e["culprits"].size(), 1u);
  EXPECT_EQ(e["culprits"][0]["rank"], 6);
  EXPECT_EQ(e["culprits"][0]["host"], "node-01");
  EXPECT_EQ(e["culprits"][0]["gpu"], 2);
  EXPECT_EQ(e["cause_class"], "compute_slow");
  EXPECT_EQ(e["cause"], "thermal");
  const json& f = s.truth["faults"][0];
  EXPECT_EQ(f["injected_step"], 0);
  EXPECT_GT(f["onset_step"].get<int>(), 5);  // the GPU has to heat up first
  EXPECT_NEAR(f["effect"]["compute_slowdown"].get<double>(), 0.25, 0.05);
  EXPECT_GT(f["effect"]["step_time_increase"].get<double>(), 0.1);
  EXPECT_GE(f["hardware"]["temp_c"].get<double>(), 89);
  EXPECT_GT(s.summary.mean_step_s, s.summary.healthy_mean_step_s * 1.1);
}

TEST(SimulatorTest, PowerCapLowersTheEnforcedLimitAndTheClock) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 60);
  sc.faults = {F("power_cap@node-00:1:0.2,onset=20")};
  Write(s, sc);
  std::string q = QueryBlock(s, "node-00", 1);
  EXPECT_EQ(QueryValue(q, "Current Power Limit"), "415.00 W");
  EXPECT_EQ(QueryValue(q, "Default Power Limit"), "700.00 W");
  EXPECT_EQ(QueryValue(q, "SW Power Cap"), "Active");
  EXPECT_EQ(QueryValue(QueryBlock(s, "node-00", 0), "Current Power Limit"), "700.00 W");
  auto rows = CsvRows(s, "node-00", 1);
  EXPECT_EQ(rows[1]["enforced.power.limit [W]"], "700.00 W");  // before onset
  EXPECT_EQ(rows[rows.size() - 2]["enforced.power.limit [W]"], "415.00 W");
  EXPECT_EQ(rows[rows.size() - 2]["power.limit [W]"], "415.00 W");
  EXPECT_EQ(rows[rows.size() - 2]["clocks_event_reasons.active"], "0x0000000000000004");
  int mhz = std::stoi(rows[rows.size() - 2]["clocks.current.sm [MHz]"]);
  EXPECT_NEAR(mhz, 1980 / 1.2, 30);
  EXPECT_EQ(s.truth["expected"]["cause"], "power_cap");
  EXPECT_EQ(s.truth["faults"][0]["onset_step"], 20);
  EXPECT_EQ(s.truth["faults"][0]["hardware"]["power_limit_w"], 415);
}

TEST(SimulatorTest, ClocksLockedReportsApplicationsClocks) {
  Sim s;
  sim::ClusterScenario sc = Small(1, 4, 40);
  sc.faults = {F("clocks_locked@node-00:3:0.25")};
  Write(s, sc);
  std::string q = QueryBlock(s, "node-00", 3);
  EXPECT_EQ(QueryValue(q, "Applications Clocks Setting"), "Active");
  EXPECT_EQ(QueryValue(q, "Graphics", q.find("Applications Clocks\n")), "1575 MHz");
  EXPECT_EQ(DmonRows(s, "node-00", 3).back().at("pclk"), 1575);
  EXPECT_EQ(DmonRows(s, "node-00", 2).back().at("pclk"), 1980);
}

TEST(SimulatorTest, SlowKernelKeepsClocksButItsRankComputesLonger) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 40);
  sc.faults = {F("slow_kernel@rank5:0.3")};
  Write(s, sc);
  for (const auto& r : DmonRows(s, "node-01", 1)) EXPECT_EQ(r.at("pclk"), 1980);
  TraceStats slow = Trace(s, 5, 4), peer = Trace(s, 4, 4);
  EXPECT_NEAR(Mean(slow.compute_us) / Mean(peer.compute_us), 1.3, 0.05);
  EXPECT_LT(Mean(slow.nccl_us), Mean(peer.nccl_us));
  EXPECT_EQ(s.truth["expected"]["culprits"][0]["rank"], 5);
  EXPECT_EQ(s.truth["expected"]["cause"], "slow_kernel");
  EXPECT_EQ(s.truth["expected"]["cause_class"], "compute_slow");
}

TEST(SimulatorTest, NicDegradedShowsRate200AndHalvesItsPairsBandwidth) {
  Sim s;
  sim::ClusterScenario sc = Small(3, 2, 40);
  sc.faults = {F("nic_degraded@node-01:mlx5_1:0.5")};
  Write(s, sc);
  auto ib = Ibstat(s, "node-01");
  EXPECT_EQ(ib["mlx5_1"].second, "200");
  EXPECT_EQ(ib["mlx5_1"].first, "Active");
  EXPECT_EQ(ib["mlx5_0"].second, "400");
  EXPECT_EQ(Ibstat(s, "node-00")["mlx5_1"].second, "400");
  double good = AvgBusBw(s, "node-00_node-02");
  EXPECT_LT(AvgBusBw(s, "node-00_node-01"), 0.6 * good);
  EXPECT_LT(AvgBusBw(s, "node-01_node-02"), 0.6 * good);
  EXPECT_NEAR(AvgBusBw(s, "node-01"), AvgBusBw(s, "node-00"), 0.03 * AvgBusBw(s, "node-00"));
  const json& f = s.truth["faults"][0];
  EXPECT_EQ(f["cause_class"], "communication");
  EXPECT_EQ(f["culprits"]["nics"][0]["nic"], "mlx5_1");
  EXPECT_EQ(f["hardware"]["nic_rate_gbps"], 200);
  EXPECT_GT(f["effect"]["comm_slowdown"].get<double>(), 0.8);
  EXPECT_EQ(s.truth["expected"]["culprits"][0]["host"], "node-01");
}

TEST(SimulatorTest, SocketFallbackHostUsesNetSocket) {
  Sim s;
  sim::ClusterScenario sc = Small(3, 2, 30);
  sc.faults = {F("socket_fallback@node-02")};
  Write(s, sc);
  int socket_lines = 0;
  for (const std::string& line : Lines(s.File("nccl-debug.log"))) {
    bool socket = line.find("NET/Socket") != std::string::npos ||
                  line.find("Using network Socket") != std::string::npos;
    if (socket) {
      ++socket_lines;
      EXPECT_EQ(line.rfind("node-02:", 0), 0u) << line;
    }
    if (StartsWith(line, "node-02:")) {
      EXPECT_EQ(line.find("NET/IB : Using"), std::string::npos) << line;
    }
    if (StartsWith(line, "node-00:") && line.find("Using network") != std::string::npos) {
      EXPECT_NE(line.find("Using network IB"), std::string::npos);
    }
  }
  EXPECT_GT(socket_lines, 4);
  EXPECT_GT(s.truth["faults"][0]["effect"]["step_time_increase"].get<double>(), 0.5);
  EXPECT_LT(AvgBusBw(s, "node-00_node-02"), 20);
}

TEST(SimulatorTest, IbPortDownLeavesTheNicOutOfNccl) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 30);
  sc.faults = {F("ib_port_down@node-00:mlx5_2")};
  Write(s, sc);
  auto ib = Ibstat(s, "node-00");
  EXPECT_EQ(ib["mlx5_2"].first, "Down");
  EXPECT_EQ(ib["mlx5_2"].second, "10");
  EXPECT_EQ(ib["mlx5_3"].first, "Active");
  for (const std::string& line : Lines(s.File("nccl-debug.log"))) {
    if (line.find("NET/IB : Using") == std::string::npos) continue;
    if (StartsWith(line, "node-00:")) {
      EXPECT_EQ(line.find("mlx5_2:1"), std::string::npos) << line;
    } else {
      EXPECT_NE(line.find("mlx5_2:1"), std::string::npos) << line;
    }
  }
  EXPECT_LT(AvgBusBw(s, "node-00_node-01"), 0.6 * AvgBusBw(s, "node-00"));
}

TEST(SimulatorTest, NvlinkDownShowsInactiveLinksAndShmConnections) {
  Sim s;
  sim::ClusterScenario sc = Small(1, 4, 30);
  sc.faults = {F("nvlink_down@node-00:3")};
  Write(s, sc);
  std::string nv = s.File("node-00/nvidia-smi-nvlink.txt");
  size_t gpu3 = nv.find("GPU 3:");
  EXPECT_EQ(nv.find("<inactive>"), nv.find("<inactive>", gpu3));
  EXPECT_NE(nv.find("Link 17: <inactive>", gpu3), std::string::npos);
  std::string topo = s.File("node-00/nvidia-smi-topo.txt");
  EXPECT_NE(topo.find("GPU3\tSYS\tSYS\tNODE\t X "), std::string::npos) << topo;
  std::string nccl = s.File("nccl-debug.log");
  EXPECT_NE(nccl.find("3[3] -> 0[0] via SHM/direct/direct"), std::string::npos);
  EXPECT_NE(nccl.find("0[0] -> 1[1] via P2P/IPC"), std::string::npos);
  EXPECT_LT(AvgBusBw(s, "node-00"), 50);
}

TEST(SimulatorTest, PcieDowngradeShowsAnX8Link) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 2, 30);
  sc.faults = {F("pcie_downgrade@node-01:0")};
  Write(s, sc);
  std::string q = QueryBlock(s, "node-01", 0);
  EXPECT_EQ(QueryValue(q, "Current", q.find("Link Width")), "8x");
  EXPECT_EQ(QueryValue(q, "Max", q.find("Link Width")), "16x");
  EXPECT_EQ(CsvRows(s, "node-01", 0).back()["pcie.link.width.current"], "8");
  EXPECT_EQ(CsvRows(s, "node-01", 1).back()["pcie.link.width.current"], "16");
  EXPECT_EQ(s.truth["faults"][0]["hardware"]["pcie_width"], 8);
  EXPECT_GT(s.truth["faults"][0]["effect"]["comm_slowdown"].get<double>(), 0.5);
}

TEST(SimulatorTest, DataLoaderStallIsAHostGapOnItsRank) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 40);
  sc.faults = {F("data_loader_stall@rank2:0.3")};
  Write(s, sc);
  TraceStats stalled = Trace(s, 2, 4), peer = Trace(s, 3, 4);
  EXPECT_NEAR(Mean(stalled.dataloader_us), 0.3 * 750e3, 0.2 * 0.3 * 750e3);
  EXPECT_LT(Mean(peer.dataloader_us), 1000);
  EXPECT_NEAR(Mean(stalled.compute_us), Mean(peer.compute_us), 0.05 * Mean(peer.compute_us));
  EXPECT_LT(DmonRows(s, "node-00", 2).back().at("sm"),
            DmonRows(s, "node-00", 3).back().at("sm") - 10);
  EXPECT_EQ(s.truth["expected"]["cause_class"], "host_stall");
  EXPECT_NEAR(s.truth["faults"][0]["effect"]["host_stall_s"].get<double>(), 0.225, 0.03);
}

TEST(SimulatorTest, SharedSwitchCongestionIsPeriodicOnOneSwitch) {
  Sim s;
  sim::ClusterScenario sc = Small(6, 1, 80);
  sc.nodes_per_switch = 2;
  sc.faults = {F("shared_switch_congestion@node-03..node-05:0.6,period=20,duration=5,onset=10")};
  auto o = Outputs();
  o.hardware = false;
  Write(s, sc, o);
  EXPECT_EQ(s.File("switch-map.csv"),
            "host,switch\nnode-00,leaf-00\nnode-01,leaf-00\nnode-02,leaf-01\nnode-03,leaf-02\nnode-"
            "04,leaf-02\n"
            "node-05,leaf-02\n");
  auto t = StepTimes(s, 0, 1);
  double quiet = Mean({t[20], t[21], t[22], t[23], t[24]}),
         busy = Mean({t[10], t[11], t[12], t[13], t[14]});
  EXPECT_GT(busy, quiet * 1.05);
  EXPECT_GT(Mean({t[30], t[31], t[32]}), quiet * 1.05);
  const json& f = s.truth["faults"][0];
  EXPECT_EQ(f["cause_class"], "external");
  EXPECT_EQ(f["period_steps"], 20);
  EXPECT_EQ(f["duration_steps"], 5);
  EXPECT_EQ(f["culprits"]["switch"], "leaf-02");
  EXPECT_EQ(f["culprits"]["hosts"], json({"node-03", "node-04", "node-05"}));
  EXPECT_EQ(s.truth["switches"]["leaf-02"].size(), 3u);
}

// PortXmitWait / PortXmitData of every port of a host's perfquery.txt, in
// its last snapshot (the whole run).
std::vector<double> WaitPerWord(const std::string& text) {
  std::vector<double> out;
  double data = 0;
  for (const std::string& l : Lines(text)) {
    if (!l.empty() && l[0] >= '0' && l[0] <= '9') out.clear();  // a snapshot's date line
    if (l.rfind("PortXmitData:", 0) == 0) data = std::stod(l.substr(l.find_last_of('.') + 1));
    if (l.rfind("PortXmitWait:", 0) == 0)
      out.push_back(std::stod(l.substr(l.find_last_of('.') + 1)) / data);
  }
  return out;
}

TEST(SimulatorTest, PerfqueryCountersShowTheCongestedSwitchsHostsWaiting) {
  Sim s;
  sim::ClusterScenario sc = Small(6, 2, 80);
  sc.nodes_per_switch = 2;
  sc.faults = {F("shared_switch_congestion@node-04..node-05:0.5,period=20,duration=5,onset=0")};
  auto o = Outputs();
  o.hardware = false;
  Write(s, sc, o);
  std::string pq = s.File("node-00/perfquery.txt");
  auto lines = Lines(pq);
  // Every 10 steps a date line and one `perfquery -x` block per IB CA.
  ASSERT_EQ(lines.size(), 8u * (1u + 2u * 26u));
  EXPECT_EQ(lines[0].size(), 20u);
  EXPECT_EQ(lines[0].back(), 'Z');
  EXPECT_EQ(lines[1],
            "# Port extended counters: Lid 2 port 1 (CapMask: 0x5A00 CapMask2: 0x0000002)");
  EXPECT_EQ(lines[2], "PortSelect:......................1");
  EXPECT_EQ(lines[27],
            "# Port extended counters: Lid 3 port 1 (CapMask: 0x5A00 CapMask2: 0x0000002)");
  // The lids are ibstat's base lids.
  EXPECT_NE(s.File("node-00/ibstat.txt").find("Base lid: 3\n"), std::string::npos);
  // Quiet hosts wait ~4% of their sending time; the congested switch's hosts
  // wait 0.5 / 0.5 x 25% of the steps more.
  double quiet = 0, congested = 0;
  for (int n : {0, 1, 2, 3}) {
    for (double w : WaitPerWord(s.File(fmt::format("node-{:02d}/perfquery.txt", n))))
      quiet = std::max(quiet, w);
  }
  congested = 1e9;
  for (int n : {4, 5}) {
    for (double w : WaitPerWord(s.File(fmt::format("node-{:02d}/perfquery.txt", n))))
      congested = std::min(congested, w);
  }
  EXPECT_GT(congested, 3 * quiet);
  // The same seed without the fault: identical traffic, no extra wait.
  Sim h;
  sc.faults.clear();
  Write(h, sc, o);
  // (The fault slows the job, so the snapshots' times differ.)
  auto counters_only = [](const std::string& text) {
    std::string out;
    for (const std::string& l : Lines(text)) {
      if (l.empty() || l[0] < '0' || l[0] > '9') out += l + "\n";
    }
    return out;
  };
  EXPECT_EQ(counters_only(h.File("node-00/perfquery.txt")), counters_only(pq));
  EXPECT_LT(WaitPerWord(h.File("node-05/perfquery.txt"))[0], 1.5 * quiet);
}

TEST(SimulatorTest, PerfqueryCannotQueryADownPort) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 2, 20);
  sc.faults = {F("ib_port_down@node-01:mlx5_1")};
  auto o = Outputs();
  o.hardware = false;
  Write(s, sc, o);
  std::string pq = s.File("node-01/perfquery.txt");
  EXPECT_NE(pq.find("perfquery: iberror: failed: classportinfo query\n"), std::string::npos);
  EXPECT_EQ(Lines(pq).size(), 2u * (1u + 26u + 2u));  // two snapshots of 10 steps
}

TEST(SimulatorTest, PerfquerySnapshotsShowTheCongestionInTheIntervalsItIsActive) {
  Sim s;
  sim::ClusterScenario sc = Small(6, 2, 80);
  sc.nodes_per_switch = 2;
  sc.faults = {F("shared_switch_congestion@node-04..node-05:0.3,period=40,duration=10,onset=10")};
  auto o = Outputs();
  o.hardware = false;
  Write(s, sc, o);
  // Per host: timestamps and the wait / data of each interval, summed over ports.
  auto intervals = [&](int node) {
    std::vector<std::pair<std::string, double>> out;
    double wait = 0, data = 0, prev_wait = 0, prev_data = 0;
    std::string when;
    auto close = [&]() {
      if (when.empty()) return;
      out.emplace_back(when, (wait - prev_wait) / (data - prev_data));
      prev_wait = wait;
      prev_data = data;
      wait = data = 0;
    };
    for (const std::string& l : Lines(s.File(fmt::format("node-{:02d}/perfquery.txt", node)))) {
      if (!l.empty() && l[0] >= '0' && l[0] <= '9') {
        close();
        when = l;
      }
      if (l.rfind("PortXmitData:", 0) == 0) data += std::stod(l.substr(l.find_last_of('.') + 1));
      if (l.rfind("PortXmitWait:", 0) == 0) wait += std::stod(l.substr(l.find_last_of('.') + 1));
    }
    close();
    return out;
  };
  auto congested = intervals(4);
  ASSERT_EQ(congested.size(), 8u);
  for (size_t i = 1; i < congested.size(); ++i)
    EXPECT_LT(congested[i - 1].first, congested[i].first);
  auto quiet = intervals(0);
  ASSERT_EQ(quiet.size(), 8u);
  // Steps 10-19 and 50-59 are congested (0.3 / 0.7 of the sending time on
  // top of ~4%); the rest wait like everyone else, with noise.
  for (size_t i = 0; i < 8; ++i) {
    bool active = i == 1 || i == 5;
    if (active) {
      EXPECT_GT(congested[i].second, 3 * quiet[i].second) << i;
    } else {
      EXPECT_LT(congested[i].second, 3 * quiet[i].second) << i;
    }
  }
  // The interval noise: the quiet host's intervals differ.
  EXPECT_NE(quiet[2].second, quiet[3].second);
}

TEST(SimulatorTest, PeriodicInterferenceSlowsEveryPeriodthStep) {
  Sim s;
  sim::ClusterScenario sc = Small(1, 4, 60);
  sc.faults = {F("periodic_interference@rank1:0.5,period=15,onset=5")};
  auto o = Outputs();
  o.traces = false;
  Write(s, sc, o);
  auto t = StepTimes(s, 3, 4);
  for (int step : {5, 20, 35, 50})
    EXPECT_GT(t[static_cast<size_t>(step)], t[static_cast<size_t>(step + 1)] + 0.3);
  EXPECT_EQ(s.truth["faults"][0]["cause"], "gc_pause");
  EXPECT_EQ(s.truth["faults"][0]["period_steps"], 15);
}

TEST(SimulatorTest, ImbalanceFaultsNameAStageOrTheWholeJob) {
  Sim a, b;
  sim::ClusterScenario sc = Small(2, 4, 30);
  sc.pipeline_stages = 4;
  sc.faults = {F("pipeline_stage_imbalance@stage2:0.2")};
  Write(a, sc);
  EXPECT_EQ(a.truth["faults"][0]["culprits"]["ranks"], json({4, 5}));
  EXPECT_EQ(a.truth["expected"]["cause_class"], "imbalance");
  sc.faults = {F("sequence_length_imbalance:0.3")};
  Write(b, sc);
  EXPECT_EQ(b.truth["expected"]["status"], "job_wide");
  EXPECT_TRUE(b.truth["expected"]["culprits"].empty());
  // Compute differs widely between ranks within a step, with no fixed culprit.
  std::vector<TraceStats> traces;
  for (int r = 0; r < 8; ++r) traces.push_back(Trace(b, r, 4));
  for (size_t step = 0; step < 2; ++step) {
    double lo = 1e18, hi = 0;
    for (const TraceStats& t : traces) {
      lo = std::min(lo, t.compute_us[step]);
      hi = std::max(hi, t.compute_us[step]);
    }
    EXPECT_GT(hi / lo, 1.2) << "step " << step;
  }
}

TEST(SimulatorTest, TraceRanksWriteTracesForThoseRanksOnly) {
  auto list = sim::ParseRankList("5, 0-2,2", 8);
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list.value(), (std::vector<int>{0, 1, 2, 5}));
  for (const char* bad : {"8", "3-1", "-1", "a", "0-", "1,,2", ""})
    EXPECT_FALSE(sim::ParseRankList(bad, 8).ok()) << bad;

  Sim s;
  auto o = Outputs(2);
  o.trace_ranks = {1, 6};
  Write(s, Small(2, 4, 30), o);
  std::vector<std::string> traces;
  for (const auto& e : fs::recursive_directory_iterator(s.dir.path())) {
    std::string name = e.path().filename().string();
    if (EndsWith(name, ".pt.trace.json")) traces.push_back(name.substr(0, name.find('.')));
  }
  std::sort(traces.begin(), traces.end());
  EXPECT_EQ(traces, (std::vector<std::string>{"rank-1", "rank-6"}));
  EXPECT_EQ(s.truth["trace_window"]["ranks"], json::parse("[1, 6]"));
  // Every rank still logs its steps.
  for (int r = 0; r < 8; ++r)
    EXPECT_TRUE(fs::exists(s.dir.File(fmt::format("node-{:02d}/rank-{}.log", r / 4, r))));
  o.trace_ranks = {6, 1};  // not ascending
  EXPECT_FALSE(sim::WriteClusterRun(Small(2, 4, 30), o, s.dir.path()).ok());
}

TEST(SimulatorTest, StepLogsTracesAndSamplesShareOneTimeline) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 30);
  sc.max_clock_offset_ms = 5;
  auto o = Outputs(3);
  o.step_format = sim::StepLogFormat::kCsv;
  o.trace_first_step = 10;
  Write(s, sc, o);
  EXPECT_EQ(s.truth["trace_window"]["first_step"], 10);
  for (int rank : {0, 5}) {
    std::string host = fmt::format("node-{:02d}", rank / 4);
    auto lines = Lines(s.File(fmt::format("{}/rank-{}.csv", host, rank)));
    EXPECT_EQ(lines[0], "timestamp,host,rank,local_rank,step,step_time_ms");
    TraceStats t = Trace(s, rank, 4);
    ASSERT_EQ(t.step_start_ns.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      auto f = Fields(lines[static_cast<size_t>(11 + i)], ',');
      ASSERT_EQ(f[4], std::to_string(10 + i));
      // Same step start on the host clock (CSV has us, Kineto ns), same duration.
      double csv_start_s = std::stod(f[0]);
      EXPECT_NEAR(csv_start_s, static_cast<double>(t.step_start_ns[static_cast<size_t>(i)]) / 1e9,
                  2e-6);
      EXPECT_NEAR(std::stod(f[5]) * 1e3, t.step_dur_us[static_cast<size_t>(i)], 2.0);
    }
  }
  // Host clocks differ by the offsets in truth.json: the same collective ends
  // at the same true time on both hosts.
  int64_t off0 = s.truth["clock_offsets_ns"]["node-00"],
          off1 = s.truth["clock_offsets_ns"]["node-01"];
  EXPECT_NE(off0, off1);
  TraceStats a = Trace(s, 0, 4), b = Trace(s, 4, 4);
  for (size_t i = 0; i < 3; ++i) {
    int64_t end_a = a.last_nccl_end_ns[i] - off0, end_b = b.last_nccl_end_ns[i] - off1;
    EXPECT_LT(std::abs(end_a - end_b), 3'000) << "step " << i;  // the per-rank skew is below 2 us
  }
}

TEST(SimulatorTest, ComputeStepTimingShowsTheCulpritInStepLogs) {
  Sim s;
  sim::ClusterScenario sc = Small(2, 4, 30);
  sc.faults = {F("slow_kernel@node-01:1:0.2")};
  auto o = Outputs();
  o.step_timing = sim::StepTiming::kCompute;
  o.traces = false;
  Write(s, sc, o);
  double culprit = Mean(StepTimes(s, 5, 4), 5), peer = Mean(StepTimes(s, 4, 4), 5);
  EXPECT_NEAR(culprit / peer, 1.2, 0.04);
  EXPECT_EQ(s.truth["step_timing"], "compute");
}

TEST(SimulatorTest, SeveralFaultsCombineAndTheLargestLeads) {
  Sim s;
  sim::ClusterScenario sc = Small(3, 2, 120);
  sc.faults = {F("slow_kernel@rank1:0.05"), F("socket_fallback@node-02"),
               F("host_cpu_contention@node-00:0.1")};
  Write(s, sc);
  ASSERT_EQ(s.truth["faults"].size(), 3u);
  EXPECT_EQ(s.truth["expected"]["cause"], "socket_fallback");
  EXPECT_EQ(s.truth["expected"]["fault_index"], 1);
  EXPECT_EQ(s.truth["faults"][2]["culprits"]["ranks"], json({0, 1}));
  EXPECT_EQ(s.truth["faults"][2]["cause_class"], "host_stall");
  // CPU contention on node-00: both its ranks wait in the data loader.
  for (int r : {0, 1}) EXPECT_GT(Mean(Trace(s, r, 2).dataloader_us), 20'000) << r;
  EXPECT_LT(Mean(Trace(s, 2, 2).dataloader_us), 1'000);
  // Each fault's effect is its own: the small kernel slowdown stays small.
  EXPECT_LT(s.truth["faults"][0]["effect"]["step_time_increase"].get<double>(), 0.06);
  EXPECT_GT(s.truth["faults"][1]["effect"]["step_time_increase"].get<double>(), 0.5);
}

TEST(SimulatorTest, DefaultTargetsAreDrawnFromTheSeed) {
  sim::ClusterScenario sc = Small(4, 4, 10);
  sc.faults = {F("thermal"), F("nic_degraded"), F("data_loader_stall")};
  ASSERT_TRUE(sim::ResolveScenario(&sc).ok());
  EXPECT_EQ(sc.faults[0].target.kind, sim::FaultTarget::Kind::kGpu);
  EXPECT_EQ(sc.faults[1].target.kind, sim::FaultTarget::Kind::kNic);
  EXPECT_EQ(sc.faults[2].target.kind, sim::FaultTarget::Kind::kRank);
  sim::ClusterScenario again = Small(4, 4, 10);
  again.faults = {F("thermal"), F("nic_degraded"), F("data_loader_stall")};
  ASSERT_TRUE(sim::ResolveScenario(&again).ok());
  EXPECT_EQ(sim::DescribeTarget(sc, sc.faults[0].target),
            sim::DescribeTarget(again, again.faults[0].target));
  EXPECT_EQ(sc.faults[2].target.rank, again.faults[2].target.rank);
}

TEST(SimulatorTest, FaultSpecsParseTargetsSeveritiesAndOptions) {
  sim::Fault f = F("thermal@node-01:5:0.2");
  EXPECT_EQ(f.kind, sim::FaultKind::kThermal);
  EXPECT_EQ(f.target.kind, sim::FaultTarget::Kind::kGpu);
  EXPECT_EQ(f.target.node, 1);
  EXPECT_EQ(f.target.index, 5);
  EXPECT_DOUBLE_EQ(*f.severity, 0.2);
  f = F("nic_degraded@3:mlx5_2:50%,onset=100,end=150");
  EXPECT_EQ(f.target.kind, sim::FaultTarget::Kind::kNic);
  EXPECT_EQ(f.target.node, 3);
  EXPECT_EQ(f.target.index, 2);
  EXPECT_DOUBLE_EQ(*f.severity, 0.5);
  EXPECT_EQ(f.onset_step, 100);
  EXPECT_EQ(*f.end_step, 150);
  f = F("socket_fallback@node-02");
  EXPECT_EQ(f.target.kind, sim::FaultTarget::Kind::kHost);
  EXPECT_FALSE(f.severity);
  f = F("shared_switch_congestion@node-01+node-03:0.4,period=30,duration=3");
  EXPECT_EQ(f.target.nodes, std::vector<int>({1, 3}));
  EXPECT_EQ(*f.period_steps, 30);
  EXPECT_EQ(f.duration_steps, 3);
  f = F("data_loader_stall@rank17");
  EXPECT_EQ(f.target.rank, 17);
  f = F("periodic_interference@all:2.0,period=100,cause=checkpoint");
  EXPECT_EQ(f.target.kind, sim::FaultTarget::Kind::kJob);
  EXPECT_EQ(f.cause, "checkpoint");
  f = F("slow_kernel:0.1");
  EXPECT_EQ(f.target.kind, sim::FaultTarget::Kind::kDefault);
  EXPECT_DOUBLE_EQ(*f.severity, 0.1);
  for (const char* bad :
       {"overheat@node-01", "thermal@node-01:x", "thermal:7", "thermal@node-01:5,onset",
        "thermal@node-01:5,bogus=1", "shared_switch_congestion@node-05..node-02"}) {
    EXPECT_FALSE(sim::ParseFaultSpec(bad).ok()) << bad;
  }
  // Targets outside the cluster are caught when resolved.
  for (const char* spec :
       {"thermal@node-09:1", "thermal@node-01:4", "data_loader_stall@rank99",
        "ib_port_down@node-01", "thermal@node-01:1:1.5", "pipeline_stage_imbalance@stage9"}) {
    sim::ClusterScenario sc = Small(2, 4, 10);
    sc.faults = {F(spec)};
    EXPECT_FALSE(sim::ResolveScenario(&sc).ok()) << spec;
  }
}

TEST(SimulatorTest, ScenarioFileSetsTheClusterFaultsAndOutputs) {
  sim::ClusterScenario sc;
  sim::RunOutputOptions o;
  std::string text = R"({
    "nodes": 3, "gpus_per_node": 2, "steps": 50, "seed": 11, "compute_ms": 500, "bucket_mib": 1024,
    "faults": ["thermal@node-01:1:0.3",
               {"kind": "nic_degraded", "target": "node-02:mlx5_0", "severity": 0.75, "onset_step": 10}],
    "outputs": {"step_format": "csv", "traces": false, "nccl_debug": false, "trace_ranks": "4,0-1"}
  })";
  ASSERT_TRUE(sim::ParseScenarioJson(text, &sc, &o).ok());
  EXPECT_EQ(sc.nodes, 3);
  EXPECT_EQ(sc.steps, 50);
  EXPECT_EQ(sc.seed, 11u);
  EXPECT_DOUBLE_EQ(sc.compute_ms, 500);
  EXPECT_EQ(sc.bucket_bytes, 1LL << 30);
  ASSERT_EQ(sc.faults.size(), 2u);
  EXPECT_EQ(sc.faults[1].kind, sim::FaultKind::kNicDegraded);
  EXPECT_EQ(sc.faults[1].onset_step, 10);
  EXPECT_DOUBLE_EQ(*sc.faults[1].severity, 0.75);
  EXPECT_EQ(o.step_format, sim::StepLogFormat::kCsv);
  EXPECT_FALSE(o.traces);
  EXPECT_FALSE(o.nccl_debug);
  EXPECT_TRUE(o.hardware);
  EXPECT_EQ(o.trace_ranks, (std::vector<int>{0, 1, 4}));
  sim::ClusterScenario sc2;
  for (const char* bad :
       {R"({"nodez": 3})", R"({"nodes": "3"})", R"({"faults": [7]})", "{", R"([1])",
        R"({"outputs": {"step_format": "xml"}})",
        R"({"nodes": 1, "gpus_per_node": 2, "outputs": {"trace_ranks": "0-2"}})"}) {
    EXPECT_FALSE(sim::ParseScenarioJson(bad, &sc2, &o).ok()) << bad;
  }
}

TEST(SimulatorTest, CliTraceRanksOutsideTheClusterIsAnError) {
  TempDir dir;
  std::string out_dir = dir.File("run");
  std::vector<const char*> argv = {"laggard", "simulate",      "--nodes", "1",  "--gpus-per-node",
                                   "2",       "--trace-ranks", "0-2",     "-o", out_dir.c_str()};
  std::ostringstream out, err;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err);
  EXPECT_EQ(rc, kExitNoInput);
  EXPECT_NE(err.str().find("--trace-ranks: rank list '0-2'"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(out_dir + "/truth.json"));
}

TEST(SimulatorTest, CliSimulateWritesTheRunAndReportsIt) {
  TempDir dir;
  std::string out_dir = dir.File("run");
  std::vector<std::string> args = {"laggard",
                                   "simulate",
                                   "--nodes",
                                   "2",
                                   "--gpus-per-node",
                                   "2",
                                   "--steps",
                                   "20",
                                   "--seed",
                                   "3",
                                   "--fault",
                                   "thermal@node-01:1:0.2",
                                   "--no-traces",
                                   "--step-format",
                                   "csv",
                                   "-o",
                                   out_dir};
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err);
  ASSERT_EQ(rc, kExitOk) << err.str();
  EXPECT_NE(out.str().find("4 ranks (2 nodes x 2 GPUs), 20 steps, seed 3"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("thermal@node-01:1:0.2"), std::string::npos);
  EXPECT_TRUE(fs::exists(out_dir + "/node-01/rank-3.csv"));
  EXPECT_TRUE(fs::exists(out_dir + "/truth.json"));
  EXPECT_FALSE(fs::exists(out_dir + "/node-01/rank-3.log"));
  std::ostringstream out2, err2;
  std::vector<std::string> bad = {"laggard",           "simulate", "--fault",
                                  "thermal@node-09:1", "-o",       out_dir};
  std::vector<const char*> argv2;
  for (const auto& a : bad) argv2.push_back(a.c_str());
  EXPECT_EQ(RunLaggard(static_cast<int>(argv2.size()), argv2.data(), out2, err2), kExitNoInput);
  EXPECT_NE(err2.str().find("node 9 is not in 0..7"), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace laggard
