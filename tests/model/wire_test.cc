// The wire form of RunBuilder (model/wire.h): every family of the model
// survives encode -> decode, a decoded builder merges, takes steps and
// finalizes like the original, frames concatenate, and damaged frames
// (cut, flipped, forged) give a "wire: ..." error instead of a crash.

#include "model/wire.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "model/run.h"
#include "test_paths.h"

namespace laggard {
namespace {

constexpr size_t kHeaderBytes = 16;  // "LGWB", version, payload length

// Steps of ranks 5, 2 and 9 (first seen in that order), some with start and
// compute times; rank 2 with host and GPU, rank 9 with a role, rank 11 with
// a host and no steps; unattributed steps of files 1 and 2.
void AddSteps(RunBuilder& b) {
  const TimeNs t0 = 1'706'860'208'000'000'000;
  uint32_t line = 1;
  for (int64_t step = 0; step < 4; ++step) {
    for (int32_t rank : {5, 2, 9}) {
      std::optional<TimeNs> start;
      if (step % 2 == 1) start = t0 + step * 1'000'000'000 + rank;
      b.AddStep(rank, step, 1'000'000'000 + rank * 1'000 + step, start, SourceRef{0, line++},
                rank == 5 ? 400'000'000 + step : 0);
    }
  }
  b.AddStep(2, 1, 1'000'002'001, std::nullopt, SourceRef{0, line++});  // a duplicate step
  b.SetHost(2, "node-a", "steps.log", 3);
  b.SetLocalGpu(2, 1, "steps.log", 3);
  b.SetRole(9, 1, 0);
  b.AddStepCpu(9, StepCpu{2, 300'000'000, 7'000'000, 250'000});
  b.AddStepCpu(9, StepCpu{1, std::nullopt, 5});
  b.SetHost(11, "node-b", "steps.log", 4);
  b.AddUnattributedStep(1, 0, 900'000'000, t0, SourceRef{1, 4}, 100);
  b.AddUnattributedStep(2, 0, 800'000'000, std::nullopt, SourceRef{2, 1});
  b.AddUnattributedStep(1, 1, 910'000'000, std::nullopt, SourceRef{1, 5});
}

void AddTraces(RunBuilder& b) {
  NameTable& names = b.names();
  RankTrace t{.file = 3, .rank = 2, .world_size = 16, .host = "node-a", .device = 1};
  t.groups.push_back(ProcessGroupInfo{"0", "default_pg", {0, 1, 2, 3}, 4, false, SourceRef{3, 0}});
  t.groups.push_back(ProcessGroupInfo{"1", "undefined", {}, std::nullopt, true, SourceRef{3, 2}});
  t.producer = "kineto";
  t.origin = TraceOrigin::kFileStart;
  t.alignment = ClockAlignment{0, 12'345, 678, 9};
  t.steps.push_back(TraceStep{7, 1'000, 5'000, 300, 100, 200});
  t.steps.push_back(TraceStep{8, 5'000, 9'000, 0, std::nullopt, std::nullopt});
  t.ops.push_back(TraceOp{1'100, 800, names.Intern("sm90_xmma_gemm_bf16"), 7, OpClass::kGemm, 1,
                          names.Intern("grid 132x1x1 block 128x1x1")});
  t.ops.push_back(TraceOp{2'000, 900, names.Intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), 13,
                          OpClass::kCommunication, 1, kNoShape});
  t.ops.push_back(
      TraceOp{3'000, 50, names.Intern("Memcpy DtoH"), 7, OpClass::kMemcpy, 1, kNoShape});
  t.collectives.push_back(
      CollectiveCall{2'000, 900, names.Intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"),
                     names.Intern("allreduce"), names.Intern("0"), 42, 1 << 20, 4, 123'456});
  t.collectives.push_back(CollectiveCall{6'000, 10, names.Intern("c10d::barrier"), names.Intern(""),
                                         std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                         777});
  t.events_total = 5'000;
  t.events_lost = 12;
  t.truncated = true;
  t.gpu_idle_ns = 300;
  t.idle_unlaunched_ns = 100;
  t.idle_queued_ns = 200;
  t.launches_linked = 2;
  b.AddTrace(t);
  RankTrace cpu;  // a CPU-only trace without rank
  cpu.file = 4;
  cpu.producer = "torch-legacy";
  cpu.cpu_only = true;
  cpu.ops.push_back(
      TraceOp{10, 20, names.Intern("aten::mm"), 4242, OpClass::kOtherCompute, -1, kNoShape});
  b.AddTrace(cpu);

  OpTimeline tl;
  tl.file = 5;
  tl.layout = ParallelLayout{2, 2, 1, 2, 1};
  tl.workers.push_back(TimelineWorker{ParallelCoord{1, 1, 0, 0}, true, 6});
  tl.workers.push_back(TimelineWorker{ParallelCoord{}, false, std::nullopt});
  tl.ops.push_back(
      TimelineOp{10'000, 2'000, 3, SourceRef{5, 77}, 0, 1, 0, 2, TimelineOpKind::kBackwardSend});
  tl.ops.push_back(
      TimelineOp{12'000, 500, 3, SourceRef{5, 90}, 1, -1, -1, 0, TimelineOpKind::kOptimizer});
  b.AddOpTimeline(tl);
  b.AddLayout(LayoutStatement{ParallelLayout{4, 2, 2, 1, 2}, LayoutSource::kProcessGroups,
                              SourceRef{6, 9}});
  ToolReport report;
  report.when = "2024-10-23 01:29:30";
  report.metric(ToolMetric::kRoundTripMs) = {RankValue{1446.49, 13}, RankValue{1570.32, 30}};
  report.metric(ToolMetric::kDataMs).max = RankValue{130.33, 23};
  report.lowest_tflops = {RankValue{560.82, 30}, RankValue{600.1, 2}};
  report.src = SourceRef{7, 3};
  b.AddToolReport(report);
}

GpuSample Sample(TimeNs t, double temp_c) {
  return GpuSample{.time_ns = t,
                   .temp_c = temp_c,
                   .mem_temp_c = temp_c + 8,
                   .sm_clock_mhz = 1'980,
                   .mem_clock_mhz = 2'619,
                   .power_w = 612.5,
                   .power_limit_w = 700,
                   .util_pct = 100,
                   .mem_util_pct = 43,
                   .pcie_rx_mb_s = 1'234.5,
                   .pcie_tx_mb_s = 987.25,
                   .pcie_gen = 5,
                   .pcie_width = 16,
                   .clock_events = clock_event::kSwPowerCap | clock_event::kHwThermalSlowdown,
                   .perf_state = 0,
                   .src = SourceRef{7, 12},
                   .gr_engine_active_pct = 97.5,
                   .sm_active_pct = 88.25,
                   .sm_occupancy_pct = 41,
                   .tensor_active_pct = 63,
                   .dram_active_pct = 55.5,
                   .nvlink_tx_mb_s = 21'000,
                   .nvlink_rx_mb_s = 20'500,
                   .nvlink_total_mb_s = 41'500,
                   .power_violation_ns = 1'000,
                   .thermal_violation_ns = 2'000,
                   .sync_boost_violation_ns = 3'000,
                   .board_limit_violation_ns = 4'000,
                   .low_util_violation_ns = 5'000,
                   .reliability_violation_ns = 6'000,
                   .power_brake_violation_ns = 7'000};
}

void AddGpu(RunBuilder& b) {
  GpuRecord g{.host = "node-a",
              .index = 1,
              .uuid = "GPU-5f1c3c4e-8d0e-4a1b-9d7e-0123456789ab",
              .bus_id = "00000000:18:00.0",
              .mig_instance = "1g.10gb/7"};
  GpuFacts f{.name = "NVIDIA H100 80GB HBM3",
             .serial = "1654922012345",
             .driver_version = "550.54.15",
             .max_sm_clock_mhz = 1'980,
             .max_mem_clock_mhz = 2'619,
             .app_sm_clock_mhz = 1'755,
             .default_power_limit_w = 700,
             .enforced_power_limit_w = 650,
             .min_power_limit_w = 200,
             .max_power_limit_w = 700,
             .slowdown_temp_c = 87,
             .shutdown_temp_c = 92,
             .max_operating_temp_c = 85,
             .pcie_gen_current = 4,
             .pcie_gen_max = 5,
             .pcie_gen_host_max = 5,
             .pcie_width_current = 8,
             .pcie_width_max = 16,
             .nvlink_up = 17,
             .nvlink_total = 18,
             .nvlink_speed_gb_s = 26.562,
             .ecc_uncorrected_volatile = 0,
             .ecc_uncorrected_aggregate = 2,
             .retired_pages_dbe = 1,
             .retired_pages_pending = false,
             .remapping_failure = true,
             .remapped_rows_uncorrectable = 3,
             .remapped_rows_pending = true,
             .xids = {79, 48},
             .diag_failed = true,
             .diag_messages = {"Memory bandwidth test failed", "PCIe replay count exceeded"},
             .src = SourceRef{7, 1},
             .lost_at_ns = 1'706'860'300'000'000'000};
  g.facts = f;
  g.samples.push_back(Sample(1'706'860'208'000'000'000, 71.5));
  g.samples.push_back(Sample(1'706'860'209'000'000'000, 73));
  g.samples.back().power_limit_w = std::nullopt;
  g.time_is_approximate = false;
  g.files = {7, 8};
  b.AddGpu(g);
  HostCpuLog h{.host = "node-a"};
  h.rounds.push_back(
      HostCpuRound{.time_ns = 1'706'860'208'000'000'000,
                   .procs_running = 3,
                   .cores = {CoreReading{
                       .cpu = 1, .busy = 0.75, .steal = 0.125, .probe_s = 9.5e-5, .speed = 0.5}}});
  h.procs.push_back(HostProcReading{.time_ns = 1'706'860'209'000'000'000,
                                    .pid = 4242,
                                    .ppid = 1,
                                    .comm = "python3",
                                    .cmdline = "python3 -c while True: pass",
                                    .cpu_share = 0.98,
                                    .cpus_allowed = {1, 3},
                                    .last_cpu = 3,
                                    .rank = 5,
                                    .src = SourceRef{7, 9}});
  b.AddHostCpu(h);
}

void AddNetwork(RunBuilder& b) {
  NetworkData& n = b.network();
  IbPort p{.host = "node-a",
           .ca = "mlx5_0",
           .port = 1,
           .state = "Active",
           .phys_state = "LinkUp",
           .rate_gbps = 400,
           .width = 4,
           .link_layer = "InfiniBand",
           .base_lid = 75,
           .port_guid = "0x946dae0300cde72d",
           .ca_type = "MT4129",
           .firmware = "28.39.1002",
           .src = SourceRef{9, 3},
           .sm_lid = 1,
           .node_guid = "0x946dae0300cde72c",
           .active_mtu_bytes = 4'096,
           .max_mtu_bytes = 4'096};
  n.ib_ports.push_back(p);
  EthLink e{.host = "node-a",
            .iface = "eth0",
            .speed_mbps = 100'000,
            .duplex = "Full",
            .link_detected = true,
            .port = "Direct Attach Copper",
            .counters = {{"rx_crc_errors", 3}, {"tx_dropped", 0}},
            .src = SourceRef{10, 1},
            .supported_link_modes = {"100000baseCR4/Full", "50000baseCR2/Full"},
            .advertised_link_modes = {"100000baseCR4/Full"},
            .auto_negotiation = false};
  n.eth_links.push_back(e);
  NcclTestRun r{.collective = "all_reduce",
                .threads = 1,
                .gpus_per_thread = 1,
                .iters = 20,
                .warmup_iters = 5};
  r.ranks.push_back(NcclTestRank{3, 0, 78, "node-a", 1, "0xc7", "NVIDIA A800"});
  r.rows.push_back(NcclTestRow{1 << 20, 262'144, "float", "sum", -1, 105.5, 9.94, 18.64, 0, 104.25,
                               10.06, 18.86, 0, SourceRef{11, 30}});
  r.avg_busbw_gbps = 41.6967;
  r.out_of_bounds = 0;
  r.errors = {"node-b: Test NCCL failure common.cu:1279 'unhandled system error'"};
  r.host_from_path = "node-a";
  r.src = SourceRef{11, 1};
  r.nccl_version = "2.19.3";
  n.nccl_tests.push_back(r);
  NcclRankInfo k{.host = "node-a",
                 .pid = 12'345,
                 .cuda_device = 3,
                 .rank = 3,
                 .nranks = 16,
                 .bus_id = "0000:c7:00.0",
                 .nccl_version = "2.19.3",
                 .net = "IB",
                 .nics = {"mlx5_0:1/IB", "mlx5_1:1/IB"},
                 .gdr = true};
  k.connections.push_back(NcclConnection{0, 3, 4, "NET/IB/0/GDRDMA", "ring"});
  k.connections.push_back(NcclConnection{std::nullopt, 3, 2, "P2P/IPC", std::nullopt});
  k.warnings = {"NCCL WARN NET/IB : Got completion from peer 10.0.0.2<34567> with error 12"};
  k.src = SourceRef{12, 1};
  n.nccl_ranks.push_back(k);
  TopologyMatrix m{.host = "node-a",
                   .devices = {"GPU0", "GPU1", "NIC0"},
                   .link = {{"X", "NV18", "PIX"}, {"NV18", "X", "SYS"}, {"PIX", "SYS", "X"}},
                   .cpu_affinity = {{"GPU0", "0-47"}, {"GPU1", "48-95"}},
                   .numa_affinity = {{"GPU0", "0"}, {"GPU1", "1"}},
                   .nic_names = {{"NIC0", "mlx5_0"}},
                   .src = SourceRef{13, 1}};
  n.topologies.push_back(m);
  n.switch_of = {{"node-a", "leaf-1"}, {"node-b", "leaf-2"}};
  n.switch_src = {{"node-a", SourceRef{14, 2}}, {"node-b", SourceRef{14, 3}}};
  IbPortCounters c{.host = "node-a",
                   .lid = 75,
                   .port = 1,
                   .extended = true,
                   .xmit_data_bytes = 4 * int64_t{1'000'000'007},
                   .rcv_data_bytes = 4 * int64_t{999'999'937},
                   .xmit_pkts = 1'000'000,
                   .rcv_pkts = 999'000,
                   .xmit_wait_ticks = 123'456'789,
                   .xmit_discards = 5,
                   .symbol_errors = 6,
                   .link_error_recoveries = 7,
                   .link_downed = 1,
                   .rcv_errors = 8,
                   .saturated = {"PortXmitWait"},
                   .src = SourceRef{15, 1},
                   .time_ns = 1'706'860'210'000'000'000};
  n.port_counters.push_back(c);
  n.pair_bandwidths.push_back(PairBandwidth{.host_a = "node-a",
                                            .host_b = "node-b",
                                            .gbps = 49.36,
                                            .note = "crossing TOR",
                                            .src = SourceRef{16, 4},
                                            .group = "test alltoall_perf, G 8"});
}

CollectiveRecord Entry() {
  CollectiveRecord e{.record_id = 11,
                     .pg_id = "0",
                     .pg_name = "5b1f0c",
                     .pg_desc = "default_pg",
                     .collective_seq = 42,
                     .p2p_seq = 0,
                     .op_id = 43,
                     .op = "nccl:all_reduce",
                     .created_ns = 1'000,
                     .started_ns = 2'000,
                     .completed_ns = std::nullopt,
                     .duration_ms = 1.5,
                     .state = CollectiveState::kStarted,
                     .input_sizes = {{1024, 1024}, {}},
                     .output_sizes = {{1024, 1024}},
                     .input_dtypes = {"Float", "BFloat16"},
                     .output_dtypes = {"Float"},
                     .retired = false,
                     .timeout_ms = 600'000,
                     .is_p2p = false};
  e.frames = {StackFrame{"all_reduce", "torch/distributed/distributed_c10d.py", 2501},
              StackFrame{"train_step", "train.py", 88}};
  return e;
}

HangEvent Event() {
  HangEvent e{
      .kind = HangEventKind::kWatchdogTimeout,
      .rank = 12,
      .group_rank = 4,
      .pg_id = "1",
      .pg_desc = "default_pg",
      .pg_guid = "9",
      .seq = 42,
      .last_enqueued = 43,
      .last_completed = 41,
      .op = "ALLREDUCE",
      .numel_in = 1'048'576,
      .numel_out = 1'048'576,
      .timeout_ms = 600'000,
      .ran_for_ms = 600'345,
      .ranks_named = {3, 7},
      .local_rank = 4,
      .exit_code = -6,
      .error_code = 12,
      .host = "node-b",
      .pid = 5'678,
      .peer = "peer 10.0.0.2<34567>",
      .time_ns = 1'706'860'900'000'000'000,
      .yearless_time_ns = 24'611'472'345'678'000,
      .text = "[rank12]:[E1015 10:11:12.345678 ...] Watchdog caught collective operation timeout",
      .src = SourceRef{16, 120}};
  return e;
}

RasReport Ras() {
  RasReport r{.file = 17, .nccl_version = "2.30.7", .nodes = 2, .processes = 16, .gpus = 16};
  r.comm_groups.push_back(
      RasCommGroup{0, 1, 2, "7-8", 16, 15, "RUNNING", "INCOMPLETE", SourceRef{17, 12}});
  RasCommunicator c{.id = "#0-0",
                    .hash = "27a079b828ff1a75",
                    .group = 0,
                    .problems = {"INCOMPLETE", "MISMATCH"},
                    .ranks_missing = 1};
  c.op_counts.push_back(RasOpCount{"AllReduce", 6'650, 15, SourceRef{17, 20}});
  c.ranks.push_back(RasRank{7, RasRankIssue::kOpCount, "AllReduce", 60, "RUNNING",
                            "Remote process error", 3, 1'650'386, "172.16.64.213",
                            SourceRef{17, 21}});
  c.src = SourceRef{17, 19};
  r.comms.push_back(c);
  r.processes_lost.push_back(
      RasProcess{3'487'984, "172.16.64.213", {5, 6}, true, SourceRef{17, 30}});
  r.processes_missing = 1;
  r.processes_dead = 1;
  r.timeouts = 2;
  r.no_comms = false;
  r.complete = true;
  r.src = SourceRef{17, 10};
  return r;
}

void AddHang(RunBuilder& b) {
  HangData& h = b.hang();
  h.groups.push_back(ProcessGroupInfo{"0", "default_pg", {}, 16, true, SourceRef{18, 0}});
  FlightRecorderDump d{
      .file = 18, .rank = 12, .version = "2.4", .format = "pickle", .comm_lib_version = "2.20.5"};
  d.status.push_back(GroupProgress{"0", 43, 42, 41});
  d.entries.push_back(Entry());
  d.truncated = true;
  h.dumps.push_back(d);
  h.events.push_back(Event());
  h.logs.push_back(HangLogInfo{16, 1, 2'000, true, "ends in a pager prompt"});
  h.ras.push_back(Ras());
}

void AddDiagnostics(RunBuilder& b) {
  Diagnostics& d = b.diagnostics();
  d.Add(DiagCode::kStepGarbled, "steps.log", 17, "rank 3 step ?? time 1.2", 3);
  d.Add(DiagCode::kStepGarbled, "steps.log", 18, "rank 3 step 4 time abc");
  d.AddAtOffset(DiagCode::kTraceBadEvent, "rank2.json", 123'456, "\"dur\": -5", 7);
  for (int i = 0; i < 7; ++i) d.Add(DiagCode::kHwBadRecord, "dmon.log", 100 + i, "garbled row");
}

// A builder with every family of the model populated.
RunBuilder FullBuilder() {
  RunBuilder b;
  AddSteps(b);
  AddTraces(b);
  AddGpu(b);
  AddNetwork(b);
  AddHang(b);
  AddDiagnostics(b);
  return b;
}

std::string Encode(RunBuilder& b) {
  std::string out;
  EncodeBuilder(b, out);
  return out;
}
std::string Encode(RunBuilder&& b) { return Encode(b); }

RunBuilder DecodeOrDie(std::string_view bytes) {
  StatusOr<RunBuilder> b = DecodeBuilder(bytes);
  EXPECT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(bytes.empty());
  return b.ok() ? std::move(b.value()) : RunBuilder();
}

// A run whose file table covers every file the builders name.
constexpr uint32_t kFiles = 20;
laggard::Run Finalized(RunBuilder& b) {
  laggard::Run run;
  for (uint32_t i = 0; i < kFiles; ++i)
    run.files.push_back(InputFileInfo{"file" + std::to_string(i)});
  b.Finalize(run);
  return run;
}

// Finalize() names a trace's file through Run::files unchecked: the frame
// cannot know the file table, so damage there is the caller's to catch.
bool TraceFilesKnown(const RunBuilder& b) {
  return std::all_of(b.traces().begin(), b.traces().end(),
                     [](const RankTrace& t) { return t.file < kFiles; });
}

void ExpectSameSteps(const std::vector<StepSeries>& a, const std::vector<StepSeries>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].info.rank, b[i].info.rank);
    EXPECT_EQ(a[i].info.host, b[i].info.host);
    EXPECT_EQ(a[i].info.local_gpu, b[i].info.local_gpu);
    EXPECT_EQ(a[i].info.pipeline_stage, b[i].info.pipeline_stage);
    EXPECT_EQ(a[i].info.data_parallel_index, b[i].info.data_parallel_index);
    EXPECT_EQ(a[i].file, b[i].file);
    ASSERT_EQ(a[i].steps.size(), b[i].steps.size());
    for (size_t j = 0; j < a[i].steps.size(); ++j) {
      const StepRecord& x = a[i].steps[j];
      const StepRecord& y = b[i].steps[j];
      EXPECT_EQ(x.step, y.step);
      EXPECT_EQ(x.duration_ns, y.duration_ns);
      EXPECT_TRUE(x.start_ns == y.start_ns) << "rank " << a[i].info.rank << " step " << x.step;
      EXPECT_EQ(x.src.file, y.src.file);
      EXPECT_EQ(x.src.line, y.src.line);
      EXPECT_EQ(x.compute_ns, y.compute_ns);
    }
    ASSERT_EQ(a[i].cpu.size(), b[i].cpu.size());
    for (size_t j = 0; j < a[i].cpu.size(); ++j) {
      EXPECT_EQ(a[i].cpu[j].step, b[i].cpu[j].step);
      EXPECT_EQ(a[i].cpu[j].on_cpu_ns, b[i].cpu[j].on_cpu_ns);
      EXPECT_EQ(a[i].cpu[j].runq_wait_ns, b[i].cpu[j].runq_wait_ns);
      EXPECT_EQ(a[i].cpu[j].probe_ns, b[i].cpu[j].probe_ns);
    }
  }
}

void ExpectSameDiagnostics(const Diagnostics& a, const Diagnostics& b) {
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::kCount); ++i) {
    DiagCode code = static_cast<DiagCode>(i);
    EXPECT_EQ(a.count(code), b.count(code)) << Describe(code).name;
    ASSERT_EQ(a.examples(code).size(), b.examples(code).size()) << Describe(code).name;
    for (size_t j = 0; j < a.examples(code).size(); ++j) {
      EXPECT_EQ(a.examples(code)[j].file, b.examples(code)[j].file);
      EXPECT_EQ(a.examples(code)[j].line, b.examples(code)[j].line);
      EXPECT_EQ(a.examples(code)[j].offset, b.examples(code)[j].offset);
      EXPECT_EQ(a.examples(code)[j].message, b.examples(code)[j].message);
    }
  }
}

// Spot checks of each family, and every step and diagnostic.
void ExpectSameRun(const laggard::Run& a, const laggard::Run& b) {
  ExpectSameSteps(a.ranks, b.ranks);
  ExpectSameSteps(a.unattributed, b.unattributed);
  ExpectSameDiagnostics(a.diagnostics, b.diagnostics);
  ASSERT_EQ(a.names.size(), b.names.size());
  for (uint32_t i = 0; i < a.names.size(); ++i) EXPECT_EQ(a.names.Get(i), b.names.Get(i));
  ASSERT_EQ(a.traces.size(), b.traces.size());
  for (size_t i = 0; i < a.traces.size(); ++i) {
    const RankTrace& x = a.traces[i];
    const RankTrace& y = b.traces[i];
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.origin, y.origin);
    EXPECT_EQ(x.alignment.has_value(), y.alignment.has_value());
    ASSERT_EQ(x.ops.size(), y.ops.size());
    for (size_t j = 0; j < x.ops.size(); ++j) {
      EXPECT_EQ(x.ops[j].name, y.ops[j].name);
      EXPECT_EQ(x.ops[j].cls, y.ops[j].cls);
      EXPECT_EQ(x.ops[j].shape, y.ops[j].shape);
    }
    ASSERT_EQ(x.collectives.size(), y.collectives.size());
    for (size_t j = 0; j < x.collectives.size(); ++j) {
      EXPECT_EQ(x.collectives[j].group, y.collectives[j].group);
      EXPECT_EQ(x.collectives[j].offset, y.collectives[j].offset);
    }
    EXPECT_EQ(x.idle_queued_ns, y.idle_queued_ns);
  }
  ASSERT_EQ(a.op_timelines.size(), b.op_timelines.size());
  for (size_t i = 0; i < a.op_timelines.size(); ++i) {
    EXPECT_EQ(a.op_timelines[i].layout, b.op_timelines[i].layout);
    ASSERT_EQ(a.op_timelines[i].ops.size(), b.op_timelines[i].ops.size());
    EXPECT_EQ(a.op_timelines[i].ops.back().kind, b.op_timelines[i].ops.back().kind);
  }
  ASSERT_EQ(a.layouts.size(), b.layouts.size());
  for (size_t i = 0; i < a.layouts.size(); ++i) EXPECT_EQ(a.layouts[i].layout, b.layouts[i].layout);
  ASSERT_EQ(a.tool_reports.size(), b.tool_reports.size());
  for (size_t i = 0; i < a.tool_reports.size(); ++i) {
    const ToolReport& x = a.tool_reports[i];
    const ToolReport& y = b.tool_reports[i];
    EXPECT_EQ(x.when, y.when);
    for (size_t m = 0; m < kToolMetricCount; ++m) {
      EXPECT_EQ(x.metrics[m].min, y.metrics[m].min);
      EXPECT_EQ(x.metrics[m].max, y.metrics[m].max);
    }
    EXPECT_EQ(x.lowest_tflops, y.lowest_tflops);
    EXPECT_EQ(x.highest_tflops, y.highest_tflops);
    EXPECT_EQ(x.src.line, y.src.line);
  }
  ASSERT_EQ(a.hardware.gpus.size(), b.hardware.gpus.size());
  for (size_t i = 0; i < a.hardware.gpus.size(); ++i) {
    const GpuRecord& x = a.hardware.gpus[i];
    const GpuRecord& y = b.hardware.gpus[i];
    EXPECT_EQ(x.facts.name, y.facts.name);
    EXPECT_EQ(x.facts.enforced_power_limit_w, y.facts.enforced_power_limit_w);
    EXPECT_EQ(x.facts.xids, y.facts.xids);
    ASSERT_EQ(x.samples.size(), y.samples.size());
    for (size_t j = 0; j < x.samples.size(); ++j) {
      EXPECT_EQ(x.samples[j].time_ns, y.samples[j].time_ns);
      EXPECT_EQ(x.samples[j].reliability_violation_ns, y.samples[j].reliability_violation_ns);
      EXPECT_EQ(x.samples[j].power_brake_violation_ns, y.samples[j].power_brake_violation_ns);
    }
    EXPECT_EQ(x.files, y.files);
  }
  ASSERT_EQ(a.hardware.host_cpu.size(), b.hardware.host_cpu.size());
  for (size_t i = 0; i < a.hardware.host_cpu.size(); ++i) {
    const HostCpuLog& x = a.hardware.host_cpu[i];
    const HostCpuLog& y = b.hardware.host_cpu[i];
    EXPECT_EQ(x.host, y.host);
    ASSERT_EQ(x.rounds.size(), y.rounds.size());
    for (size_t j = 0; j < x.rounds.size(); ++j) {
      EXPECT_EQ(x.rounds[j].time_ns, y.rounds[j].time_ns);
      EXPECT_EQ(x.rounds[j].procs_running, y.rounds[j].procs_running);
      ASSERT_EQ(x.rounds[j].cores.size(), y.rounds[j].cores.size());
      for (size_t c = 0; c < x.rounds[j].cores.size(); ++c) {
        EXPECT_EQ(x.rounds[j].cores[c].cpu, y.rounds[j].cores[c].cpu);
        EXPECT_EQ(x.rounds[j].cores[c].steal, y.rounds[j].cores[c].steal);
        EXPECT_EQ(x.rounds[j].cores[c].speed, y.rounds[j].cores[c].speed);
      }
    }
    ASSERT_EQ(x.procs.size(), y.procs.size());
    for (size_t j = 0; j < x.procs.size(); ++j) {
      EXPECT_EQ(x.procs[j].pid, y.procs[j].pid);
      EXPECT_EQ(x.procs[j].ppid, y.procs[j].ppid);
      EXPECT_EQ(x.procs[j].cmdline, y.procs[j].cmdline);
      EXPECT_EQ(x.procs[j].cpu_share, y.procs[j].cpu_share);
      EXPECT_EQ(x.procs[j].cpus_allowed, y.procs[j].cpus_allowed);
      EXPECT_EQ(x.procs[j].last_cpu, y.procs[j].last_cpu);
      EXPECT_EQ(x.procs[j].rank, y.procs[j].rank);
      EXPECT_EQ(x.procs[j].src.line, y.procs[j].src.line);
    }
  }
  EXPECT_EQ(a.network.eth_links.size(), b.network.eth_links.size());
  EXPECT_EQ(a.network.switch_of, b.network.switch_of);
  EXPECT_EQ(a.network.topologies.size(), b.network.topologies.size());
  EXPECT_EQ(a.hang.events.size(), b.hang.events.size());
  EXPECT_EQ(a.hang.dumps.size(), b.hang.dumps.size());
  EXPECT_EQ(a.hang.ras.size(), b.hang.ras.size());
}

TEST(WireTest, EncodeDecodeEncodeGivesTheSameBytes) {
  RunBuilder original = FullBuilder();
  std::string first = Encode(original);
  RunBuilder decoded = DecodeOrDie(first);
  EXPECT_EQ(Encode(decoded), first);
}

TEST(WireTest, AnEmptyBuilderRoundTrips) {
  RunBuilder empty;
  std::string bytes = Encode(empty);
  RunBuilder decoded = DecodeOrDie(bytes);
  EXPECT_EQ(Encode(decoded), bytes);
  laggard::Run run = Finalized(decoded);
  EXPECT_TRUE(run.ranks.empty());
  EXPECT_TRUE(run.hang.empty());
}

TEST(WireTest, DecodedBuilderFinalizesLikeTheOriginal) {
  RunBuilder original = FullBuilder();
  std::string bytes = Encode(original);
  RunBuilder decoded = DecodeOrDie(bytes);
  laggard::Run want = Finalized(original);
  laggard::Run got = Finalized(decoded);
  ExpectSameRun(want, got);

  // The fields, as the test set them (a check of the data, not only of
  // agreement between the two runs).
  ASSERT_EQ(got.ranks.size(), 3u);
  EXPECT_EQ(got.ranks[0].info.rank, 2);
  EXPECT_EQ(got.ranks[0].info.host, "node-a");
  EXPECT_EQ(got.ranks[0].info.local_gpu, 1);
  EXPECT_EQ(got.ranks[2].info.pipeline_stage, 1);
  ASSERT_EQ(got.ranks[2].cpu.size(), 2u);  // sorted by step
  EXPECT_EQ(got.ranks[2].cpu[0].runq_wait_ns, 5);
  EXPECT_EQ(got.ranks[2].cpu[1].on_cpu_ns, 300'000'000);
  EXPECT_EQ(got.ranks[2].cpu[1].probe_ns, 250'000);
  EXPECT_EQ(got.ranks[1].steps[1].compute_ns, 400'000'001);
  ASSERT_EQ(got.hardware.host_cpu.size(), 1u);
  EXPECT_EQ(got.hardware.host_cpu[0].rounds[0].cores[0].busy, 0.75);
  EXPECT_EQ(got.hardware.host_cpu[0].procs[0].comm, "python3");
  EXPECT_TRUE(got.ranks[1].steps[1].start_ns.has_value());
  EXPECT_FALSE(got.ranks[1].steps[0].start_ns.has_value());
  EXPECT_EQ(got.diagnostics.count(DiagCode::kStepDuplicate), 1u);
  EXPECT_EQ(got.diagnostics.count(DiagCode::kRankMissing), 7u);  // 0, 1, 3, 4, 6, 7, 8
  EXPECT_EQ(got.diagnostics.examples(DiagCode::kTraceBadEvent)[0].offset, 123'456u);
  EXPECT_EQ(got.diagnostics.examples(DiagCode::kHwBadRecord).size(),
            Diagnostics::kMaxExamplesPerCode);
  ASSERT_EQ(got.unattributed.size(), 2u);
  EXPECT_EQ(got.unattributed[0].file, 2u);  // the active file's series is kept last
  EXPECT_EQ(got.unattributed[1].steps.size(), 2u);
  const RankTrace& t = got.traces[0];
  EXPECT_EQ(t.world_size, 16);
  EXPECT_EQ(t.device, 1);
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(t.groups[0].ranks, std::vector<int32_t>({0, 1, 2, 3}));
  EXPECT_TRUE(t.groups[1].whole_world);
  EXPECT_EQ(t.alignment->shift_ns, 12'345);
  EXPECT_EQ(t.steps[0].idle_unlaunched_ns, 100);
  EXPECT_EQ(got.names.Get(t.ops[0].shape), "grid 132x1x1 block 128x1x1");
  EXPECT_EQ(got.names.Get(*t.collectives[0].group), "0");
  EXPECT_EQ(t.collectives[0].nelems, 1 << 20);
  EXPECT_EQ(t.events_lost, 12u);
  EXPECT_TRUE(t.truncated);
  EXPECT_TRUE(got.traces[1].cpu_only);
  EXPECT_EQ(got.traces[1].ops[0].device, -1);
  EXPECT_EQ(got.op_timelines[0].workers[0].rank, 6);
  EXPECT_FALSE(got.op_timelines[0].workers[1].coord_known);
  EXPECT_EQ(got.op_timelines[0].ops[0].seq, 2);
  EXPECT_EQ(got.layouts[0].source, LayoutSource::kProcessGroups);
  EXPECT_EQ(got.layouts[0].layout.cp, 2);
}

TEST(WireTest, EveryFamilyKeepsItsFields) {
  RunBuilder original = FullBuilder();
  std::string bytes = Encode(original);
  RunBuilder decoded = DecodeOrDie(bytes);
  laggard::Run got = Finalized(decoded);
  ASSERT_EQ(got.hardware.gpus.size(), 1u);
  const GpuRecord& g = got.hardware.gpus[0];
  EXPECT_EQ(g.mig_instance, "1g.10gb/7");
  EXPECT_EQ(g.facts.remapping_failure, true);
  EXPECT_EQ(g.facts.retired_pages_pending, false);
  EXPECT_EQ(g.facts.diag_messages.size(), 2u);
  EXPECT_EQ(g.facts.src->line, 1u);
  EXPECT_EQ(g.facts.lost_at_ns, 1'706'860'300'000'000'000);
  EXPECT_EQ(g.facts.nvlink_speed_gb_s, 26.562);
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[0].clock_events, clock_event::kSwPowerCap | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(g.samples[0].perf_state, 0);
  EXPECT_EQ(g.samples[1].power_limit_w, std::nullopt);
  EXPECT_EQ(g.samples[1].dram_active_pct, 55.5);

  const NetworkData& n = got.network;
  EXPECT_EQ(n.ib_ports[0].node_guid, "0x946dae0300cde72c");
  EXPECT_EQ(n.ib_ports[0].max_mtu_bytes, 4'096);
  EXPECT_EQ(n.eth_links[0].counters.at("rx_crc_errors"), 3);
  EXPECT_EQ(n.eth_links[0].auto_negotiation, false);
  EXPECT_EQ(n.nccl_tests[0].rows[0].ip_busbw_gbps, 18.86);
  EXPECT_EQ(n.nccl_tests[0].ranks[0].gpu_name, "NVIDIA A800");
  EXPECT_EQ(n.nccl_tests[0].nccl_version, "2.19.3");
  EXPECT_EQ(n.nccl_ranks[0].connections[1].kind, std::nullopt);
  EXPECT_EQ(n.nccl_ranks[0].connections[0].via, "NET/IB/0/GDRDMA");
  EXPECT_EQ(n.topologies[0].link[1][0], "NV18");
  EXPECT_EQ(n.topologies[0].nic_names.at("NIC0"), "mlx5_0");
  EXPECT_EQ(n.switch_src.at("node-b").line, 3u);
  EXPECT_EQ(n.port_counters[0].xmit_wait_ticks, 123'456'789);
  EXPECT_EQ(n.port_counters[0].saturated, std::vector<std::string>({"PortXmitWait"}));
  EXPECT_EQ(n.port_counters[0].time_ns, 1'706'860'210'000'000'000);
  ASSERT_EQ(n.pair_bandwidths.size(), 1u);
  EXPECT_EQ(n.pair_bandwidths[0].gbps, 49.36);
  EXPECT_EQ(n.pair_bandwidths[0].note, "crossing TOR");
  EXPECT_EQ(n.pair_bandwidths[0].group, "test alltoall_perf, G 8");
  EXPECT_EQ(n.pair_bandwidths[0].src.line, 4u);

  const HangData& h = got.hang;
  EXPECT_TRUE(h.groups[0].whole_world);
  const CollectiveRecord& e = h.dumps[0].entries[0];
  EXPECT_EQ(e.state, CollectiveState::kStarted);
  EXPECT_EQ(e.pg_name, "5b1f0c");
  EXPECT_EQ(e.input_sizes, std::vector<std::vector<int64_t>>({{1024, 1024}, {}}));
  EXPECT_EQ(e.completed_ns, std::nullopt);
  EXPECT_EQ(e.frames[1].line, 88);
  EXPECT_EQ(h.dumps[0].status[0].last_started, 42);
  EXPECT_TRUE(h.dumps[0].truncated);
  EXPECT_EQ(h.events[0].kind, HangEventKind::kWatchdogTimeout);
  EXPECT_EQ(h.events[0].ranks_named, std::vector<int32_t>({3, 7}));
  EXPECT_EQ(h.events[0].yearless_time_ns, 24'611'472'345'678'000);
  EXPECT_EQ(h.events[0].src.line, 120u);
  EXPECT_EQ(h.logs[0].truncation, "ends in a pager prompt");
  const RasReport& r = h.ras[0];
  EXPECT_EQ(r.comm_groups[0].ranks_per_node, "7-8");
  EXPECT_EQ(r.comms[0].ranks[0].issue, RasRankIssue::kOpCount);
  EXPECT_EQ(r.comms[0].ranks[0].pid, 1'650'386);
  EXPECT_EQ(r.comms[0].op_counts[0].ops_launched, 6'650);
  EXPECT_EQ(r.processes_lost[0].gpus, std::vector<int32_t>({5, 6}));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.timeouts, 2);
}

TEST(WireTest, BufferedStepsAreFlushedIntoTheFrame) {
  RunBuilder b;
  b.AddStep(3, 0, 10, std::nullopt, SourceRef{0, 1});
  b.AddStep(3, 1, 11, 5'000, SourceRef{0, 2}, 4);
  std::string bytes = Encode(b);  // no FlushSteps() before
  RunBuilder decoded = DecodeOrDie(bytes);
  ASSERT_EQ(decoded.series().size(), 1u);
  ASSERT_EQ(decoded.series()[0].steps.size(), 2u);
  EXPECT_EQ(*decoded.series()[0].steps[1].start_ns, 5'000);
  EXPECT_EQ(decoded.series()[0].steps[1].compute_ns, 4);
}

TEST(WireTest, ConcatenatedFramesDecodeInOrder) {
  RunBuilder a = FullBuilder();
  RunBuilder b;
  b.AddStep(40, 0, 77, std::nullopt, SourceRef{1, 1});
  RunBuilder empty;
  std::string bytes;
  EncodeBuilder(a, bytes);
  EncodeBuilder(b, bytes);
  EncodeBuilder(empty, bytes);
  std::string_view in = bytes;
  StatusOr<RunBuilder> first = DecodeBuilder(in);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->series().size(), 4u);
  StatusOr<RunBuilder> second = DecodeBuilder(in);
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_EQ(second->series().size(), 1u);
  EXPECT_EQ(second->series()[0].info.rank, 40);
  StatusOr<RunBuilder> third = DecodeBuilder(in);
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_TRUE(third->series().empty());
  EXPECT_TRUE(in.empty());
  EXPECT_FALSE(DecodeBuilder(in).ok());
}

// Per-file builders as `diagnose --mpi` sends them: merging the decoded
// ones gives the builder, and the run, that merging the originals gives.
TEST(WireTest, DecodedBuildersMergeLikeTheOriginals) {
  auto file_builders = [] {
    std::vector<RunBuilder> files;
    files.push_back(FullBuilder());
    RunBuilder second;  // overlapping and new ranks, more names, a conflict
    second.AddStep(9, 4, 1'000'009'004, std::nullopt, SourceRef{1, 1});
    second.AddStep(0, 0, 999'000'000, std::nullopt, SourceRef{1, 2});
    second.SetHost(2, "node-z", "b.log", 3);
    RankTrace t;
    t.file = 4;
    t.rank = 5;
    t.ops.push_back(TraceOp{5, 6, second.names().Intern("aten::mm"), 1, OpClass::kGemm, 0,
                            second.names().Intern("grid 1x1x1 block 32x1x1")});
    second.AddTrace(t);
    second.diagnostics().Add(DiagCode::kStepGarbled, "b.log", 9, "garbled");
    files.push_back(std::move(second));
    files.push_back(FullBuilder());  // everything again: duplicates across files
    return files;
  };
  RunBuilder direct;
  for (RunBuilder& f : file_builders()) direct.MergeFrom(std::move(f));
  RunBuilder via_wire;
  std::string bytes;
  for (RunBuilder& f : file_builders()) EncodeBuilder(f, bytes);
  std::string_view in = bytes;
  while (!in.empty()) {
    StatusOr<RunBuilder> b = DecodeBuilder(in);
    ASSERT_TRUE(b.ok()) << b.status().message();
    via_wire.MergeFrom(std::move(b.value()));
  }
  EXPECT_EQ(Encode(via_wire), Encode(direct));
  laggard::Run want = Finalized(direct);
  laggard::Run got = Finalized(via_wire);
  ExpectSameRun(want, got);
  EXPECT_EQ(got.diagnostics.count(DiagCode::kRankConflictingInfo), 1u);
  EXPECT_EQ(got.diagnostics.count(DiagCode::kStepDuplicate),
            want.diagnostics.count(DiagCode::kStepDuplicate));
}

// The rank table is rebuilt: steps added after decoding, to known ranks and
// to ranks below and above the rest, land as they would in the original.
TEST(WireTest, DecodedBuilderTakesMoreStepsLikeTheOriginal) {
  RunBuilder original = FullBuilder();
  std::string bytes = Encode(original);
  RunBuilder decoded = DecodeOrDie(bytes);
  for (RunBuilder* b : {&original, &decoded}) {
    b->AddStep(9, 10, 5, std::nullopt, SourceRef{0, 500});
    b->AddStep(0, 10, 6, std::nullopt, SourceRef{0, 501});
    b->AddStep(1'000, 10, 7, std::nullopt, SourceRef{0, 502});
    b->AddStep(2, 10, 8, 123, SourceRef{0, 503});
    b->SetLocalGpu(2, 3, "late.log", 1);  // conflicts with GPU 1
    b->AddUnattributedStep(2, 5, 9, std::nullopt, SourceRef{2, 9});
  }
  EXPECT_EQ(Encode(decoded), Encode(original));
  ExpectSameRun(Finalized(original), Finalized(decoded));
}

// The payload length of a frame, rewritten.
void SetPayloadLength(std::string& frame, uint64_t length) {
  std::memcpy(frame.data() + 8, &length, sizeof length);
}

TEST(WireTest, EveryCutFrameIsAnError) {
  const std::string whole = Encode(FullBuilder());
  for (size_t n = 0; n < whole.size(); ++n) {
    std::string_view in(whole.data(), n);
    StatusOr<RunBuilder> b = DecodeBuilder(in);
    ASSERT_FALSE(b.ok()) << "cut at " << n;
    EXPECT_EQ(b.status().message().rfind("wire: ", 0), 0u) << b.status().message();
    EXPECT_EQ(in.size(), n) << "an error must not consume input";
  }
  // The header made to agree with the cut: the payload itself ends early.
  for (size_t n = kHeaderBytes; n < whole.size(); ++n) {
    std::string cut = whole.substr(0, n);
    SetPayloadLength(cut, n - kHeaderBytes);
    std::string_view in = cut;
    StatusOr<RunBuilder> b = DecodeBuilder(in);
    ASSERT_FALSE(b.ok()) << "payload cut at " << n - kHeaderBytes;
    EXPECT_EQ(b.status().message().rfind("wire: ", 0), 0u) << b.status().message();
  }
}

// Random damage to the payload: an error, or a builder that encodes,
// decodes and finalizes again. Run it under ASan (build/asan) to see
// memory errors.
TEST(WireTest, FlippedBytesNeverCrash) {
  const std::string whole = Encode(FullBuilder());
  std::mt19937_64 rng(20240202);
  size_t decoded = 0;
  for (int round = 0; round < 3'000; ++round) {
    std::string damaged = whole;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      size_t at = kHeaderBytes + rng() % (damaged.size() - kHeaderBytes);
      if (rng() % 2) damaged[at] ^= static_cast<char>(1u << (rng() % 8));
      else damaged[at] = static_cast<char>(rng());
    }
    std::string_view in = damaged;
    StatusOr<RunBuilder> b = DecodeBuilder(in);
    if (!b.ok()) {
      EXPECT_EQ(b.status().message().rfind("wire: ", 0), 0u) << b.status().message();
      continue;
    }
    ++decoded;
    std::string again = Encode(b.value());
    std::string_view in2 = again;
    StatusOr<RunBuilder> c = DecodeBuilder(in2);
    ASSERT_TRUE(c.ok()) << "re-encoded damage does not decode: " << c.status().message();
    EXPECT_EQ(Encode(c.value()), again);
    if (TraceFilesKnown(c.value())) laggard::Run run = Finalized(c.value());
  }
  // Some flips hit plain values, which no check can see.
  EXPECT_GT(decoded, 0u);
  std::printf("%zu of 3000 damaged frames decoded\n", decoded);
}

// Decodes `frame`; expects an error whose message holds `words`.
void ExpectError(const std::string& frame, std::string_view words) {
  std::string_view in = frame;
  StatusOr<RunBuilder> b = DecodeBuilder(in);
  ASSERT_FALSE(b.ok()) << "decoded, expected an error with '" << words << "'";
  EXPECT_NE(b.status().message().find(words), std::string::npos) << b.status().message();
  EXPECT_EQ(in.size(), frame.size());
}

TEST(WireTest, ForgedFramesAreNamed) {
  std::string frame = Encode(FullBuilder());
  std::string bad = frame;
  bad[0] = 'X';
  ExpectError(bad, "bad magic");
  bad = frame;
  bad[4] = 99;
  ExpectError(bad, "version 99");
  bad = frame;
  SetPayloadLength(bad, uint64_t{1} << 62);
  ExpectError(bad, "present");
  bad = frame + "x";
  SetPayloadLength(bad, frame.size() - kHeaderBytes + 1);
  ExpectError(bad, "1 bytes left after the builder");
  bad = frame;  // the count of step series, first in the payload
  uint64_t huge = uint64_t{1} << 60;
  std::memcpy(bad.data() + kHeaderBytes, &huge, sizeof huge);
  ExpectError(bad, "a count of 1152921504606846976");
}

TEST(WireTest, InvalidModelValuesAreRefused) {
  {
    RunBuilder b;  // AddStep does not check: the caller has
    b.AddStep(-5, 0, 10, std::nullopt, SourceRef{0, 1});
    ExpectError(Encode(std::move(b)), "step series of rank -5");
  }
  {
    RunBuilder b;
    RankTrace t;
    t.ops.push_back(TraceOp{0, 1, 99, 0, OpClass::kGemm, 0, kNoShape});
    b.AddTrace(t);
    ExpectError(Encode(std::move(b)), "op name id 99 of 0");
  }
  {
    RunBuilder b;
    RankTrace t;
    uint32_t n = b.names().Intern("k");
    t.collectives.push_back(CollectiveCall{0, 1, n, n, 7});
    b.AddTrace(t);
    ExpectError(Encode(std::move(b)), "collective group name id 7 of 1");
  }
  {
    RunBuilder b;
    RankTrace t;
    t.rank = kMaxRank + 1;
    b.AddTrace(t);
    ExpectError(Encode(std::move(b)), "trace of rank");
  }
  {
    RunBuilder b;
    RankTrace t;
    t.ops.push_back(TraceOp{0, 1, b.names().Intern("k"), 0, OpClass::kCount, 0, kNoShape});
    b.AddTrace(t);
    ExpectError(Encode(std::move(b)), "OpClass value 6 out of range");
  }
  {
    RunBuilder b;
    HangEvent e;
    e.kind = static_cast<HangEventKind>(200);
    b.hang().events.push_back(e);
    ExpectError(Encode(std::move(b)), "HangEventKind value 200");
  }
}

TEST(WireTest, DamagedBoolsAndNamesAreRefused) {
  {
    RunBuilder b;
    b.SetRole(3, std::nullopt, std::nullopt);  // a series with no steps and no host
    std::string frame = Encode(std::move(b));
    // payload: series count (8), rank (4), then the host's "no value" bool.
    const size_t host_flag = kHeaderBytes + 8 + 4;
    ASSERT_EQ(frame[host_flag], 1);
    frame[host_flag] = 2;
    ExpectError(frame, "bool byte 2");
  }
  {
    RunBuilder b;
    b.names().Intern("alpha");
    b.names().Intern("gamma");
    std::string frame = Encode(std::move(b));
    size_t at = frame.find("gamma");
    ASSERT_NE(at, std::string::npos);
    frame.replace(at, 5, "alpha");
    ExpectError(frame, "name 'alpha' twice");
  }
}

std::string ReadSource(const std::string& path) {
  std::ifstream f(std::string(LAGGARD_SOURCE_DIR) + "/" + path, std::ios::binary);
  EXPECT_TRUE(f) << path;
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The data members of each `struct Name { ... };` of `header`, in order.
std::map<std::string, std::vector<std::string>> StructFields(const std::string& header) {
  static const std::regex kStruct(R"(\nstruct (\w+) \{([^]*?)\n\};)");
  static const std::regex kMember(R"(^(.*?[>\w*&])\s+([\w, ]+)$)");
  std::map<std::string, std::vector<std::string>> out;
  for (std::sregex_iterator m(header.begin(), header.end(), kStruct), end; m != end; ++m) {
    std::vector<std::string>& fields = out[(*m)[1]];
    std::istringstream body((*m)[2]);
    for (std::string line; std::getline(body, line);) {
      line = line.substr(0, line.find("//"));
      line = line.substr(0, line.find_last_not_of(' ') + 1);
      size_t first = line.find_first_not_of(' ');
      if (first == std::string::npos || line.back() != ';' || line.find('(') != std::string::npos)
        continue;
      line = line.substr(first, line.size() - first - 1);
      if (line.rfind("static ", 0) == 0 || line.rfind("using ", 0) == 0) continue;
      line = line.substr(0, line.find(" ="));
      std::smatch decl;
      if (!std::regex_match(line, decl, kMember)) continue;
      std::istringstream names(decl[2]);
      for (std::string name; std::getline(names, name, ',');) {
        name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
        fields.push_back(name);
      }
    }
  }
  return out;
}

// Beyond the sizes model/wire.cc asserts (blind to a field that fits in
// padding): each serializer names its struct's fields, all, in order.
TEST(WireTest, EverySerializerListsEveryFieldInOrder) {
  std::string headers;
  for (const char* h :
       {"run.h", "trace.h", "op_timeline.h", "parallel_layout.h", "hardware.h", "network.h",
        "hang.h", "process_group.h", "source.h", "diagnostics.h", "tool_report.h"}) {
    headers += ReadSource(std::string("src/model/") + h);
  }
  std::map<std::string, std::vector<std::string>> structs = StructFields(headers);
  const std::string codec = ReadSource("src/model/wire.cc");
  static const std::regex kSerializer(R"(void serialize\(Archive& ar, (\w+)& x\) \{([^]*?)\n\})");
  static const std::regex kField(R"(x\.(\w+))");
  size_t checked = 0;
  for (std::sregex_iterator m(codec.begin(), codec.end(), kSerializer), end; m != end; ++m) {
    std::string body = (*m)[2];
    std::vector<std::string> written;
    for (std::sregex_iterator f(body.begin(), body.end(), kField); f != end; ++f)
      written.push_back((*f)[1]);
    auto it = structs.find((*m)[1]);
    ASSERT_NE(it, structs.end()) << (*m)[1] << " is not a struct of the model";
    EXPECT_EQ(written, it->second) << "the serializer of " << it->first;
    ++checked;
  }
  EXPECT_GE(checked, 43u);
}

// fuzz/corpus/wire/ holds frames of this file's builders for the fuzz
// target (fuzz/wire_fuzzer.cc). They must decode, or the fuzzer starts from
// noise: after a format change, rewrite them with
//   LAGGARD_WRITE_WIRE_SEEDS=1 laggard_tests --gtest_filter=WireTest.FuzzSeedsDecode
TEST(WireTest, FuzzSeedsDecode) {
  const std::filesystem::path dir = std::filesystem::path(LAGGARD_SOURCE_DIR) / "fuzz/corpus/wire";
  if (std::getenv("LAGGARD_WRITE_WIRE_SEEDS") != nullptr) {
    std::filesystem::create_directories(dir);
    RunBuilder small;
    small.AddStep(1, 0, 1'000, std::nullopt, SourceRef{0, 1});
    small.AddStep(0, 0, 2'000, 5, SourceRef{0, 2}, 7);
    small.AddUnattributedStep(1, 3, 100, std::nullopt, SourceRef{1, 1});
    std::ofstream(dir / "small.bin", std::ios::binary) << Encode(std::move(small));
    std::ofstream(dir / "full.bin", std::ios::binary) << Encode(FullBuilder());
    std::string two = Encode(FullBuilder()) + Encode(RunBuilder());
    std::ofstream(dir / "two_frames.bin", std::ios::binary) << two;
  }
  size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string_view in = bytes;
    while (!in.empty()) {
      StatusOr<RunBuilder> b = DecodeBuilder(in);
      ASSERT_TRUE(b.ok()) << entry.path() << ": " << b.status().message();
    }
    ++seeds;
  }
  EXPECT_GE(seeds, 3u);
}

}  // namespace
}  // namespace laggard
