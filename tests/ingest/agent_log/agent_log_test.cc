// The agent-log reader (ingest/agent_log/agent_log.cc) on hand-written hardware.jsonl
// lines: every record kind, the sniffing contest with the generic readers,
// the host rules and a corruption suite. (The agent's own output is read
// back in agent_test.cc: AgentLogTest.)

#include <gtest/gtest.h>

#include "ingest/readers.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

constexpr TimeNs kT0 = 1'714'564'800'000'000'000;  // 2024-05-01T12:00:00Z

const char* kGood =
    R"({"record":"gpu_info","time":"2024-05-01T12:00:00.000Z","host":"node-1","gpu":0,"uuid":"GPU-a","bus_id":"00000000:18:00.0","name":"NVIDIA H100 80GB HBM3","max_sm_clock_mhz":1980,"max_mem_clock_mhz":2619,"default_power_limit_w":700,"pcie_gen_max":5,"pcie_width_max":16,"nvlink_total":18}
{"record":"gpu_sample","time":"2024-05-01T12:00:00.000Z","host":"node-1","gpu":0,"uuid":"GPU-a","temp_c":45,"sm_clock_mhz":1980,"mem_clock_mhz":2619,"power_w":350.5,"power_limit_w":700,"util_pct":97,"mem_util_pct":41,"pcie_gen":5,"pcie_width":16,"pcie_tx_mb_s":1.25,"pcie_rx_mb_s":3.5,"clock_events":0,"ecc_uncorrected_volatile":0,"nvlink_up":18}
{"record":"gpu_sample","time":"2024-05-01T12:00:01.000Z","host":"node-1","gpu":0,"uuid":"GPU-a","temp_c":91,"sm_clock_mhz":1410,"power_w":690,"power_limit_w":700,"clock_events":96,"ecc_uncorrected_volatile":2,"nvlink_up":18}
{"record":"gpu_xid","time":"2024-05-01T12:00:01.000Z","host":"node-1","gpu":0,"uuid":"GPU-a","xid":79}
{"record":"gpu_lost","time":"2024-05-01T12:00:02.000Z","host":"node-1","gpu":1,"uuid":"GPU-b"}
{"record":"ib_port","time":"2024-05-01T12:00:00.000Z","host":"node-1","ca":"mlx5_0","port":1,"state":"Active","phys_state":"LinkUp","rate_gbps":400,"width":4,"link_layer":"InfiniBand","counters":{"port_xmit_data":4000,"symbol_error":0}}
{"record":"ib_port","time":"2024-05-01T12:00:01.000Z","host":"node-1","ca":"mlx5_0","port":1,"state":"Active","phys_state":"LinkUp","rate_gbps":200,"width":2,"link_layer":"InfiniBand"}
{"record":"ib_port","time":"2024-05-01T12:00:02.000Z","host":"node-1","ca":"mlx5_0","port":1,"state":"Active","phys_state":"LinkUp","rate_gbps":400,"width":4,"link_layer":"InfiniBand"}
{"record":"net_link","time":"2024-05-01T12:00:00.000Z","host":"node-1","iface":"eth0","speed_mbps":25000,"operstate":"up"}
{"record":"net_link","time":"2024-05-01T12:00:03.000Z","host":"node-1","iface":"eth0","operstate":"down"}
)";

TEST(AgentLogReaderTest, EveryRecordKindIsRead) {
  TempDir dir;
  laggard::Run run = IngestPaths({WriteFile(dir.File("hardware.jsonl"), kGood)});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "agent_log");
  EXPECT_EQ(run.files[0].records, 10u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  ASSERT_EQ(run.hardware.gpus.size(), 2u);
  const GpuRecord& g = run.hardware.gpus[0];
  EXPECT_EQ(g.host, "node-1");
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.uuid, "GPU-a");
  EXPECT_EQ(g.bus_id, "00000000:18:00.0");
  EXPECT_EQ(g.facts.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.facts.max_sm_clock_mhz, 1980);
  EXPECT_EQ(g.facts.max_mem_clock_mhz, 2619);
  EXPECT_EQ(g.facts.default_power_limit_w, 700);
  EXPECT_EQ(g.facts.enforced_power_limit_w, 700);  // the same in every sample
  EXPECT_EQ(g.facts.pcie_gen_max, 5);
  EXPECT_EQ(g.facts.pcie_width_max, 16);
  EXPECT_EQ(g.facts.pcie_gen_current, 5);
  EXPECT_EQ(g.facts.nvlink_total, 18);
  EXPECT_EQ(g.facts.nvlink_up, 18);
  EXPECT_EQ(g.facts.ecc_uncorrected_volatile, 2);  // the largest count
  EXPECT_EQ(g.facts.xids, std::vector<int64_t>{79});
  EXPECT_FALSE(g.facts.lost_at_ns);
  EXPECT_FALSE(g.time_is_approximate);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].time_ns, kT0);
  EXPECT_EQ(g.samples[0].temp_c, 45);
  EXPECT_EQ(g.samples[0].mem_util_pct, 41);
  EXPECT_EQ(g.samples[0].pcie_tx_mb_s, 1.25);
  EXPECT_EQ(g.samples[0].pcie_width, 16);
  EXPECT_EQ(g.samples[0].src.line, 2u);
  EXPECT_EQ(g.samples[1].time_ns, kT0 + 1'000'000'000);
  EXPECT_EQ(g.samples[1].sm_clock_mhz, 1410);
  EXPECT_EQ(g.samples[1].clock_events, 96u);
  EXPECT_FALSE(g.samples[1].mem_clock_mhz);  // absent, not 0
  const GpuRecord& lost = run.hardware.gpus[1];
  EXPECT_EQ(lost.facts.lost_at_ns, kT0 + 2'000'000'000);
  EXPECT_TRUE(lost.samples.empty());

  ASSERT_EQ(run.network.ib_ports.size(), 1u);
  const IbPort& p = run.network.ib_ports[0];
  EXPECT_EQ(p.host, "node-1");
  EXPECT_EQ(p.ca, "mlx5_0");
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.state, "Active");
  EXPECT_EQ(p.rate_gbps, 200);  // the worst reading of the file
  EXPECT_EQ(p.width, 2);
  EXPECT_EQ(p.src.line, 7u);
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  EXPECT_EQ(run.network.eth_links[0].link_detected, false);  // it went down
  EXPECT_EQ(run.network.eth_links[0].src.line, 10u);
}

TEST(AgentLogReaderTest, SniffBeatsTheGenericReadersAndClaimsNothingElse) {
  auto set = MakeDefaultTextReaders(std::nullopt);
  ASSERT_TRUE(set.ok());
  const TextReader* agent_log = nullptr;
  int best_other = 0;
  for (const TextReader* r : set->readers) {
    if (r->name() == "agent_log") agent_log = r;
    else best_other = std::max(best_other, r->Sniff(kGood));
  }
  ASSERT_NE(agent_log, nullptr);
  EXPECT_EQ(agent_log->Sniff(kGood), 100);
  EXPECT_LT(best_other, 100);
  EXPECT_EQ(agent_log->Sniff(R"({"rank":3,"step":1,"step_time_s":0.8})"
                             "\n"),
            0);
  EXPECT_EQ(agent_log->Sniff("rank 3, step 1, time 0.8s\n"), 0);
  EXPECT_EQ(agent_log->Sniff(R"({"record":"tpu_sample","time":"x"})"
                             "\n"),
            0);
  // A first line cut by the sniff window still counts by its prefix.
  EXPECT_EQ(agent_log->Sniff(R"({"record":"gpu_sample","time":"2024-05-01T12:00:00.000Z","ho)"),
            100);
}

TEST(AgentLogReaderTest, HostComesFromThePathWhenTheLineHasNone) {
  TempDir dir;
  std::string text = R"({"record":"gpu_sample","time":"2024-05-01T12:00:00Z","gpu":2,"temp_c":50})"
                     "\n"
                     R"({"record":"gpu_sample","time":"2024-05-01T12:00:01Z","gpu":2,"temp_c":51})"
                     "\n";
  WriteFile(dir.File("node-9/hardware.jsonl"), text);
  laggard::Run run = IngestPaths({dir.path()});  // run/node-9/...: the directory names the host
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  EXPECT_EQ(run.hardware.gpus[0].host, "node-9");
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwNoHost), 0u);

  TempDir other;
  laggard::Run bare = IngestPaths({WriteFile(other.File("hardware.jsonl"), text)});
  ASSERT_EQ(bare.hardware.gpus.size(), 1u);
  EXPECT_FALSE(bare.hardware.gpus[0].host);
  EXPECT_EQ(bare.diagnostics.count(DiagCode::kHwNoHost), 1u);  // once per file
}

TEST(AgentLogReaderTest, ChangingPowerLimitStaysPerSample) {
  TempDir dir;
  std::string text =
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:00Z","host":"h","gpu":0,"power_limit_w":700,"nvlink_up":18})"
      "\n"
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:01Z","host":"h","gpu":0,"power_limit_w":400,"nvlink_up":17})"
      "\n";
  laggard::Run run = IngestPaths({WriteFile(dir.File("hardware.jsonl"), text)});
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  const GpuRecord& g = run.hardware.gpus[0];
  // The limit in force is the latest sample's; the change stays in the samples.
  EXPECT_EQ(g.facts.enforced_power_limit_w, 400);
  EXPECT_FALSE(g.facts.nvlink_up);
  EXPECT_EQ(g.samples[0].power_limit_w, 700);
  EXPECT_EQ(g.samples[1].power_limit_w, 400);
}

TEST(AgentLogReaderTest, CorruptLinesAreCountedWithTheirLineAndTheRestIsRead) {
  TempDir dir;
  std::string text =
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:00Z","host":"h","gpu":0,"temp_c":50})"
      "\n"  // 1 ok
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:01Z","host":"h","gpu":0,"temp_c":"hot"})"
      "\n"  // 2 type
      R"({"record":"gpu_sample","time":"yesterday","host":"h","gpu":0,"temp_c":51})"
      "\n"  // 3 time
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:03Z","host":"h","temp_c":52})"
      "\n"  // 4 no gpu
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:04Z","host":"h","gpu":0,"temp_c":53,"fan_pct":40})"
      "\n"  // 5 ok + unknown key
      R"({"record":"tpu_sample","time":"2024-05-01T12:00:05Z","host":"h"})"
      "\n"  // 6 unknown kind
      R"({"time":"2024-05-01T12:00:06Z","host":"h","gpu":0})"
      "\n"              // 7 no record
      "garbage line\n"  // 8
      R"({"record":"ib_port","time":"2024-05-01T12:00:08Z","host":"h","port":1})"
      "\n"  // 9 no ca
      R"({"record":"gpu_xid","time":"2024-05-01T12:00:09Z","host":"h","gpu":0})"
      "\n"  // 10 no xid
      R"({"record":"gpu_sample","time":"2024-05-01T12:00:10Z","host":"h","gpu":0,"temp_c":54)";  // 11 truncated
  laggard::Run run = IngestPaths({WriteFile(dir.File("hardware.jsonl"), text)});
  EXPECT_EQ(run.files[0].format, "agent_log");
  EXPECT_EQ(run.files[0].records, 2u);
  ASSERT_EQ(run.hardware.gpus.size(), 1u);
  ASSERT_EQ(run.hardware.gpus[0].samples.size(), 2u);
  EXPECT_EQ(run.hardware.gpus[0].samples[1].temp_c, 53);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwBadRecord), 7u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kNetBadRecord), 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwUnknownField), 2u);  // fan_pct, tpu_sample
  std::vector<uint64_t> lines;
  for (const DiagExample& ex : run.diagnostics.examples(DiagCode::kHwBadRecord))
    lines.push_back(ex.line);
  EXPECT_EQ(lines, (std::vector<uint64_t>{2, 3, 4, 7, 8}));  // the first five examples
  EXPECT_EQ(run.diagnostics.examples(DiagCode::kNetBadRecord)[0].line, 9u);
  EXPECT_NE(
      run.diagnostics.examples(DiagCode::kHwBadRecord)[0].message.find("'temp_c' is not a number"),
      std::string::npos);
  EXPECT_NE(run.diagnostics.examples(DiagCode::kHwBadRecord)[1].message.find("not a timestamp"),
            std::string::npos);
}

TEST(AgentLogReaderTest, HostCpuAndProcessRecordsAreReadPerHost) {
  TempDir dir;
  std::string text =
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"h","procs_running":2,"procs_blocked":0,"cpu":[0,1],"busy":[0.02,1],"steal":[0,0.25],"probe_s":[9.2e-05,null],"speed":[1,null]})"
      "\n"
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","pid":4242,"ppid":1,"comm":"python3","cpu_share":0.98,"last_cpu":1,"cpus_allowed":"1,3-4","cmdline":"python3 -c while True: pass"})"
      "\n"
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","pid":31,"ppid":1,"comm":"python3","cpu_share":0.5,"last_cpu":1,"cpus_allowed":"0-1","rank":3,"cmdline":"python3 ddp_job.py"})"
      "\n"
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"g","procs_running":1})"
      "\n";
  laggard::Run run = IngestPaths({WriteFile(dir.File("hardware.jsonl"), text)});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "agent_log");
  EXPECT_EQ(run.files[0].records, 4u);
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwUnknownField), 0u);
  ASSERT_EQ(run.hardware.host_cpu.size(), 2u);  // by host
  const HostCpuLog& g = run.hardware.host_cpu[0];
  EXPECT_EQ(g.host, "g");
  ASSERT_EQ(g.rounds.size(), 1u);
  EXPECT_EQ(g.rounds[0].procs_running, 1);
  EXPECT_TRUE(g.rounds[0].cores.empty());
  const HostCpuLog& h = run.hardware.host_cpu[1];
  ASSERT_EQ(h.rounds.size(), 1u);
  EXPECT_EQ(h.rounds[0].time_ns, kT0);
  ASSERT_EQ(h.rounds[0].cores.size(), 2u);
  EXPECT_EQ(h.rounds[0].cores[1].cpu, 1);
  EXPECT_EQ(h.rounds[0].cores[1].busy, 1);
  EXPECT_EQ(h.rounds[0].cores[1].steal, 0.25);
  EXPECT_FALSE(h.rounds[0].cores[1].probe_s);  // null: not measured
  EXPECT_EQ(h.rounds[0].cores[0].probe_s, 9.2e-05);
  ASSERT_EQ(h.procs.size(), 2u);
  EXPECT_EQ(h.procs[0].pid, 4242);
  EXPECT_EQ(h.procs[0].ppid, 1);
  EXPECT_EQ(h.procs[0].cpus_allowed, (std::vector<int32_t>{1, 3, 4}));
  EXPECT_EQ(h.procs[0].cmdline, "python3 -c while True: pass");
  EXPECT_FALSE(h.procs[0].rank);
  EXPECT_EQ(h.procs[1].rank, 3);
  EXPECT_EQ(h.procs[1].src.line, 3u);
}

TEST(AgentLogReaderTest, BadHostCpuRecordsAreCountedWithWhy) {
  TempDir dir;
  std::string text =
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"h","cpu":[0,1],"busy":[0.5]})"
      "\n"  // 1 lengths differ
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"h","cpu":[0],"busy":[1.5]})"
      "\n"  // 2 a share over 1
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"h","cpu":[0.5]})"
      "\n"  // 3 not a CPU number
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"h","cpu":"0"})"
      "\n"  // 4 not an array
      R"({"record":"host_cpu","time":"2024-05-01T12:00:00Z","host":"h","cpu":[0],"speed":["fast"]})"
      "\n"  // 5 a string in an array
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","cpu_share":1})"
      "\n"  // 6 no pid
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","pid":7,"cpu_share":-1})"
      "\n"  // 7 negative share
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","pid":7,"cpu_share":1,"cpus_allowed":"3-1"})"
      "\n"  // 8 not a CPU list
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","pid":7,"cpu_share":1,"rank":-2})"
      "\n"  // 9 not a rank
      R"({"record":"host_proc","time":"2024-05-01T12:00:00Z","host":"h","pid":7,"cpu_share":1})"
      "\n";  // 10 ok
  laggard::Run run = IngestPaths({WriteFile(dir.File("hardware.jsonl"), text)});
  EXPECT_EQ(run.files[0].records, 1u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwBadRecord), 9u);
  const auto& ex = run.diagnostics.examples(DiagCode::kHwBadRecord);
  ASSERT_GE(ex.size(), 5u);
  EXPECT_NE(ex[0].message.find("\"busy\" holds 1 values for 2 CPUs"), std::string::npos)
      << ex[0].message;
  EXPECT_NE(ex[1].message.find("cpu 0: a share outside [0, 1]"), std::string::npos);
  EXPECT_NE(ex[2].message.find("not a CPU number"), std::string::npos);
  EXPECT_NE(ex[3].message.find("'cpu' is not an array"), std::string::npos);
  EXPECT_NE(ex[4].message.find("not a number or null"), std::string::npos);
  ASSERT_EQ(run.hardware.host_cpu.size(), 1u);
  EXPECT_EQ(run.hardware.host_cpu[0].procs.size(), 1u);
}

TEST(AgentLogReaderTest, StepLinesInTheSameDirectoryAreNotHardwareRecords) {
  TempDir dir;
  WriteFile(dir.File("log/hardware.jsonl"), kGood);
  WriteFile(
      dir.File("log/steps.jsonl"),
      R"({"rank":0,"step":1,"step_time_s":0.8,"timestamp":"2024-05-01T12:00:00.000Z","host":"node-1","gpu":0,"phase_compute_s":0.7})"
      "\n"
      R"({"rank":1,"step":1,"step_time_s":0.9,"timestamp":"2024-05-01T12:00:00.000Z","host":"node-1","gpu":1})"
      "\n");
  laggard::Run run = IngestPaths({dir.File("log")});
  ASSERT_EQ(run.files.size(), 2u);
  EXPECT_EQ(run.files[0].format, "agent_log");
  EXPECT_EQ(run.files[1].format, "jsonl");
  EXPECT_EQ(run.diagnostics.count(DiagCode::kJsonlBadLine), 0u);
  EXPECT_EQ(run.diagnostics.count(DiagCode::kHwBadRecord), 0u);
  EXPECT_EQ(run.total_steps(), 2u);
  EXPECT_EQ(run.hardware.gpus.size(), 2u);
}

}  // namespace
}  // namespace laggard
