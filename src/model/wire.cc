// The wire codec of RunBuilder (model/wire.h): one cereal serializer per
// model struct, an input archive that checks every length against the bytes
// left, and the checks a decoded builder passes before it is handed out.
//
// Writing uses cereal's BinaryOutputArchive. Reading uses WireReader, which
// reads the same bytes but never trusts a length: cereal's own binary input
// archive resizes a vector or string to whatever size the bytes claim before
// reading a single element, so eight damaged bytes could ask for exabytes.
// Here a length must fit in the bytes left, and a vector of structs grows as
// its elements actually arrive, so a frame of B bytes allocates O(B), plus
// the builder's rank table (16 MiB at most, as for any builder).
//
// layout: one codec over one page of size checks; the serializers use the
// reader's enum and length checks above them, which a split would have to
// export from an internal header.

#include "model/wire.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

namespace laggard {

// Every struct the codec writes, with its size on x86-64 with libstdc++
// (g++ 12). A new field changes the size (unless it fits in padding): add it
// to the struct's serializer below, to tests/model/wire_test.cc, and bump
// kWireVersion.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(PackedTime) == 8, "a field was added to PackedTime: update model/wire.cc");
static_assert(sizeof(SourceRef) == 8, "a field was added to SourceRef: update model/wire.cc");
static_assert(sizeof(StepRecord) == 40, "a field was added to StepRecord: update model/wire.cc");
static_assert(sizeof(RankInfo) == 72, "a field was added to RankInfo: update model/wire.cc");
static_assert(sizeof(StepCpu) == 56, "a field was added to StepCpu: update model/wire.cc");
static_assert(sizeof(StepSeries) == 128, "a field was added to StepSeries: update model/wire.cc");
static_assert(sizeof(ProcessGroupInfo) == 112,
              "a field was added to ProcessGroupInfo: update model/wire.cc");
static_assert(sizeof(TraceOp) == 32, "a field was added to TraceOp: update model/wire.cc");
static_assert(sizeof(CollectiveCall) == 80,
              "a field was added to CollectiveCall: update model/wire.cc");
static_assert(sizeof(TraceStep) == 64, "a field was added to TraceStep: update model/wire.cc");
static_assert(sizeof(ClockAlignment) == 32,
              "a field was added to ClockAlignment: update model/wire.cc");
static_assert(sizeof(RankTrace) == 320, "a field was added to RankTrace: update model/wire.cc");
static_assert(sizeof(NameTable) == 80, "a field was added to NameTable: update model/wire.cc");
static_assert(sizeof(ParallelLayout) == 20,
              "a field was added to ParallelLayout: update model/wire.cc");
static_assert(sizeof(ParallelCoord) == 16,
              "a field was added to ParallelCoord: update model/wire.cc");
static_assert(sizeof(LayoutStatement) == 32,
              "a field was added to LayoutStatement: update model/wire.cc");
static_assert(sizeof(RankValue) == 16, "a field was added to RankValue: update model/wire.cc");
static_assert(sizeof(RankScore) == 48, "a field was added to RankScore: update model/wire.cc");
static_assert(sizeof(NvrxReport) == 112, "a field was added to NvrxReport: update model/wire.cc");
static_assert(sizeof(ToolReport) == 424, "a field was added to ToolReport: update model/wire.cc");
static_assert(sizeof(TimelineOp) == 56, "a field was added to TimelineOp: update model/wire.cc");
static_assert(sizeof(TimelineWorker) == 28,
              "a field was added to TimelineWorker: update model/wire.cc");
static_assert(sizeof(OpTimeline) == 80, "a field was added to OpTimeline: update model/wire.cc");
static_assert(sizeof(GpuSample) == 456, "a field was added to GpuSample: update model/wire.cc");
static_assert(sizeof(GpuFacts) == 520, "a field was added to GpuFacts: update model/wire.cc");
static_assert(sizeof(GpuRecord) == 744, "a field was added to GpuRecord: update model/wire.cc");
static_assert(sizeof(IbPort) == 440, "a field was added to IbPort: update model/wire.cc");
static_assert(sizeof(EthLink) == 288, "a field was added to EthLink: update model/wire.cc");
static_assert(sizeof(NcclTestRank) == 152,
              "a field was added to NcclTestRank: update model/wire.cc");
static_assert(sizeof(NcclTestRow) == 256, "a field was added to NcclTestRow: update model/wire.cc");
static_assert(sizeof(NcclTestRun) == 256, "a field was added to NcclTestRun: update model/wire.cc");
static_assert(sizeof(NcclConnection) == 88,
              "a field was added to NcclConnection: update model/wire.cc");
static_assert(sizeof(NcclRankInfo) == 288,
              "a field was added to NcclRankInfo: update model/wire.cc");
static_assert(sizeof(TopologyMatrix) == 240,
              "a field was added to TopologyMatrix: update model/wire.cc");
static_assert(sizeof(P2pMatrix) == 40, "a field was added to P2pMatrix: update model/wire.cc");
static_assert(sizeof(P2pBandwidthTest) == 128,
              "a field was added to P2pBandwidthTest: update model/wire.cc");
static_assert(sizeof(IbPortCounters) == 272,
              "a field was added to IbPortCounters: update model/wire.cc");
static_assert(sizeof(PairBandwidth) == 152,
              "a field was added to PairBandwidth: update model/wire.cc");
static_assert(sizeof(NetworkData) == 288, "a field was added to NetworkData: update model/wire.cc");
static_assert(sizeof(StackFrame) == 72, "a field was added to StackFrame: update model/wire.cc");
static_assert(sizeof(CollectiveRecord) == 408,
              "a field was added to CollectiveRecord: update model/wire.cc");
static_assert(sizeof(GroupProgress) == 80,
              "a field was added to GroupProgress: update model/wire.cc");
static_assert(sizeof(FlightRecorderDump) == 168,
              "a field was added to FlightRecorderDump: update model/wire.cc");
static_assert(sizeof(HangEvent) == 496, "a field was added to HangEvent: update model/wire.cc");
static_assert(sizeof(HangLogInfo) == 64, "a field was added to HangLogInfo: update model/wire.cc");
static_assert(sizeof(RasRank) == 184, "a field was added to RasRank: update model/wire.cc");
static_assert(sizeof(RasOpCount) == 56, "a field was added to RasOpCount: update model/wire.cc");
static_assert(sizeof(RasCommunicator) == 160,
              "a field was added to RasCommunicator: update model/wire.cc");
static_assert(sizeof(RasCommGroup) == 128,
              "a field was added to RasCommGroup: update model/wire.cc");
static_assert(sizeof(RasProcess) == 80, "a field was added to RasProcess: update model/wire.cc");
static_assert(sizeof(RasReport) == 176, "a field was added to RasReport: update model/wire.cc");
static_assert(sizeof(HangData) == 120, "a field was added to HangData: update model/wire.cc");
static_assert(sizeof(DiagExample) == 80, "a field was added to DiagExample: update model/wire.cc");
// A count and an example list per code: a new DiagCode is fine, a new field is not.
static_assert(sizeof(Diagnostics) == static_cast<size_t>(DiagCode::kCount) *
                                         (sizeof(uint64_t) + sizeof(std::vector<DiagExample>)),
              "a field was added to Diagnostics: update model/wire.cc");
static_assert(sizeof(CoreReading) == 72, "a field was added to CoreReading: update model/wire.cc");
static_assert(sizeof(HostCpuRound) == 64,
              "a field was added to HostCpuRound: update model/wire.cc");
static_assert(sizeof(HostProcReading) == 152,
              "a field was added to HostProcReading: update model/wire.cc");
static_assert(sizeof(HostCpuLog) == 80, "a field was added to HostCpuLog: update model/wire.cc");
static_assert(sizeof(RunBuilder) == 2904, "a field was added to RunBuilder: update model/wire.cc");
#endif

namespace {

constexpr char kWireMagic[4] = {'L', 'G', 'W', 'B'};
constexpr uint32_t kWireVersion = 12;
constexpr size_t kHeaderBytes = sizeof kWireMagic + sizeof(uint32_t) + sizeof(uint64_t);

// What went wrong inside a frame; DecodeBuilder turns it into a Status.
class WireError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// cereal's binary input format read from memory, every length checked.
class WireReader : public cereal::InputArchive<WireReader, cereal::AllowEmptyClassElision> {
 public:
  explicit WireReader(std::string_view in) : InputArchive(this), in_(in) {}

  void Read(void* data, size_t size) {
    if (size > in_.size()) {
      throw WireError(
          fmt::format("wire: payload ends early ({} bytes wanted, {} left)", size, in_.size()));
    }
    if (size > 0) std::memcpy(data, in_.data(), size);
    in_.remove_prefix(size);
  }
  size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

template <class T>
requires std::is_arithmetic_v<T>
void CEREAL_LOAD_FUNCTION_NAME(WireReader& ar, T& t) {
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t byte = 0;  // any other byte than 0 or 1 would be an invalid bool
    ar.Read(&byte, 1);
    if (byte > 1) throw WireError(fmt::format("wire: bool byte {}", byte));
    t = byte == 1;
  } else {
    ar.Read(&t, sizeof t);
  }
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireReader& ar, cereal::NameValuePair<T>& nvp) {
  ar(nvp.value);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireReader& ar, cereal::BinaryData<T>& bd) {
  ar.Read(bd.data, static_cast<size_t>(bd.size));
}

// Every element of every container takes at least one byte: a count larger
// than the bytes left is damage (strings and maps are sized by it).
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireReader& ar, cereal::SizeTag<T>& tag) {
  ar(tag.size);
  if (tag.size > ar.left()) {
    throw WireError(fmt::format("wire: a count of {} with {} bytes left", tag.size, ar.left()));
  }
}

// Vectors: reserved only as far as the bytes left could fill them, so a
// damaged count cannot allocate more than the frame's worth. More
// specialised than cereal's vector load, so it is the one chosen.
template <class T, class A>
void CEREAL_LOAD_FUNCTION_NAME(WireReader& ar, std::vector<T, A>& v) {
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> is not in the model");
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  v.clear();
  if constexpr (std::is_arithmetic_v<T>) {
    if (n > ar.left() / sizeof(T)) {
      throw WireError(
          fmt::format("wire: {} values of {} bytes with {} bytes left", n, sizeof(T), ar.left()));
    }
    v.resize(static_cast<size_t>(n));
    ar.Read(v.data(), v.size() * sizeof(T));
  } else {
    v.reserve(std::min<size_t>(static_cast<size_t>(n), ar.left() / sizeof(T)));
    for (cereal::size_type i = 0; i < n; ++i) ar(v.emplace_back());
  }
}

// An enum field, written as its underlying integer and checked on load
// against `end`, one past its last value.
template <class E>
struct EnumField {
  E& value;
  E end;
  const char* name;
};
template <class E>
EnumField<E> Enum(E& value, E end, const char* name) {
  return EnumField<E>{value, end, name};
}
template <class E>
void CEREAL_SAVE_FUNCTION_NAME(cereal::BinaryOutputArchive& ar, const EnumField<E>& f) {
  ar(static_cast<std::underlying_type_t<E>>(f.value));
}
template <class E>
void CEREAL_LOAD_FUNCTION_NAME(WireReader& ar, EnumField<E>& f) {
  using U = std::underlying_type_t<E>;
  static_assert(std::is_unsigned_v<U>, "enums of the model are unsigned");
  U v = 0;
  ar(v);
  if (v >= static_cast<U>(f.end)) {
    throw WireError(
        fmt::format("wire: {} value {} out of range (< {})", f.name, v, static_cast<U>(f.end)));
  }
  f.value = static_cast<E>(v);
}

// One past the last value of the model's enums that have no kCount.
template <class E>
constexpr E After(E last) {
  return static_cast<E>(static_cast<std::underlying_type_t<E>>(last) + 1);
}
constexpr TraceOrigin kTraceOriginEnd = After(TraceOrigin::kFileStart);
constexpr LayoutSource kLayoutSourceEnd = After(LayoutSource::kProcessGroups);
constexpr CollectiveState kCollectiveStateEnd = After(CollectiveState::kCompleted);
constexpr TimelineOpKind kTimelineOpKindEnd = static_cast<TimelineOpKind>(kTimelineOpKinds);
static_assert(After(TimelineOpKind::kGc) == kTimelineOpKindEnd);

// Appends what the archive writes to a string.
class AppendBuffer final : public std::streambuf {
 public:
  explicit AppendBuffer(std::string& out) : out_(out) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.append(s, static_cast<size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof()))
      out_.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }

 private:
  std::string& out_;
};

}  // namespace

// The serializers: found by cereal through argument-dependent lookup, so
// they live in the model's namespace. Fields in declaration order.

template <class Archive>
void serialize(Archive& ar, SourceRef& x) {
  ar(x.file, x.line);
}

// "none" is INT64_MIN, which operator* returns and the constructor maps back.
template <class Archive>
void save(Archive& ar, const PackedTime& x) {
  ar(static_cast<TimeNs>(*x));
}
template <class Archive>
void load(Archive& ar, PackedTime& x) {
  TimeNs v = 0;
  ar(v);
  x = PackedTime(v);
}

template <class Archive>
void serialize(Archive& ar, StepRecord& x) {
  ar(x.step, x.duration_ns, x.start_ns, x.src, x.compute_ns);
}

template <class Archive>
void serialize(Archive& ar, RankInfo& x) {
  ar(x.rank, x.host, x.local_gpu, x.pipeline_stage, x.data_parallel_index);
}

template <class Archive>
void serialize(Archive& ar, StepCpu& x) {
  ar(x.step, x.on_cpu_ns, x.runq_wait_ns, x.probe_ns);
}

template <class Archive>
void serialize(Archive& ar, StepSeries& x) {
  ar(x.info, x.steps, x.cpu, x.file);
}

template <class Archive>
void serialize(Archive& ar, ProcessGroupInfo& x) {
  ar(x.id, x.desc, x.ranks, x.size, x.whole_world, x.src);
}

template <class Archive>
void serialize(Archive& ar, TraceOp& x) {
  ar(x.start_ns, x.dur_ns, x.name, x.stream, Enum(x.cls, OpClass::kCount, "OpClass"), x.device,
     x.shape);
}

template <class Archive>
void serialize(Archive& ar, CollectiveCall& x) {
  ar(x.start_ns, x.dur_ns, x.kernel, x.collective, x.group, x.seq, x.nelems, x.group_size,
     x.offset);
}

template <class Archive>
void serialize(Archive& ar, TraceStep& x) {
  ar(x.step, x.start_ns, x.end_ns, x.gpu_idle_ns, x.idle_unlaunched_ns, x.idle_queued_ns);
}

template <class Archive>
void serialize(Archive& ar, ClockAlignment& x) {
  ar(x.reference_rank, x.shift_ns, x.spread_ns, x.matched);
}

template <class Archive>
void serialize(Archive& ar, RankTrace& x) {
  ar(x.file, x.rank, x.world_size, x.host, x.device, x.groups, x.producer, x.cpu_only,
     Enum(x.origin, kTraceOriginEnd, "TraceOrigin"), x.alignment);
  ar(x.steps, x.ops, x.collectives, x.events_total, x.events_lost, x.truncated);
  ar(x.gpu_idle_ns, x.idle_unlaunched_ns, x.idle_queued_ns, x.launches_linked);
}

template <class Archive>
void serialize(Archive& ar, ParallelLayout& x) {
  ar(x.dp, x.pp, x.tp, x.vpp, x.cp);
}

template <class Archive>
void serialize(Archive& ar, ParallelCoord& x) {
  ar(x.dp, x.pp, x.tp, x.cp);
}

template <class Archive>
void serialize(Archive& ar, LayoutStatement& x) {
  ar(x.layout, Enum(x.source, kLayoutSourceEnd, "LayoutSource"), x.src);
}

template <class Archive>
void serialize(Archive& ar, RankValue& x) {
  ar(x.value, x.rank);
}

template <class Archive>
void serialize(Archive& ar, ToolReport& x) {
  ar(x.when);
  for (ToolExtremes& m : x.metrics) ar(m.min, m.max);
  ar(x.lowest_tflops, x.highest_tflops, x.src);
}

template <class Archive>
void serialize(Archive& ar, RankScore& x) {
  ar(x.rank, x.score, x.node);
}

template <class Archive>
void serialize(Archive& ar, NvrxReport& x) {
  ar(x.relative, x.individual, x.relative_ranks, x.individual_ranks, x.flagged_relative,
     x.flagged_individual, x.src);
}

template <class Archive>
void serialize(Archive& ar, TimelineOp& x) {
  ar(x.start_ns, x.dur_ns, x.step, x.src, x.worker, x.microbatch, x.chunk, x.seq,
     Enum(x.kind, kTimelineOpKindEnd, "TimelineOpKind"));
}

template <class Archive>
void serialize(Archive& ar, TimelineWorker& x) {
  ar(x.coord, x.coord_known, x.rank);
}

template <class Archive>
void serialize(Archive& ar, OpTimeline& x) {
  ar(x.file, x.layout, x.workers, x.ops);
}

template <class Archive>
void serialize(Archive& ar, GpuSample& x) {
  ar(x.time_ns, x.temp_c, x.mem_temp_c, x.sm_clock_mhz, x.mem_clock_mhz, x.power_w, x.power_limit_w,
     x.util_pct, x.mem_util_pct, x.pcie_rx_mb_s, x.pcie_tx_mb_s);
  ar(x.pcie_gen, x.pcie_width, x.clock_events, x.perf_state, x.src);
  ar(x.gr_engine_active_pct, x.sm_active_pct, x.sm_occupancy_pct, x.tensor_active_pct,
     x.dram_active_pct, x.nvlink_tx_mb_s, x.nvlink_rx_mb_s, x.nvlink_total_mb_s);
  ar(x.power_violation_ns, x.thermal_violation_ns, x.sync_boost_violation_ns,
     x.board_limit_violation_ns, x.low_util_violation_ns, x.reliability_violation_ns,
     x.power_brake_violation_ns);
}

template <class Archive>
void serialize(Archive& ar, GpuFacts& x) {
  ar(x.name, x.serial, x.driver_version, x.max_sm_clock_mhz, x.max_mem_clock_mhz,
     x.app_sm_clock_mhz, x.default_power_limit_w, x.enforced_power_limit_w, x.min_power_limit_w,
     x.max_power_limit_w, x.slowdown_temp_c, x.shutdown_temp_c, x.max_operating_temp_c);
  ar(x.pcie_gen_current, x.pcie_gen_max, x.pcie_gen_host_max, x.pcie_width_current,
     x.pcie_width_max, x.nvlink_up, x.nvlink_total, x.nvlink_speed_gb_s);
  ar(x.ecc_uncorrected_volatile, x.ecc_uncorrected_aggregate, x.retired_pages_dbe,
     x.retired_pages_pending, x.remapping_failure, x.remapped_rows_uncorrectable,
     x.remapped_rows_pending, x.xids, x.diag_failed, x.diag_messages, x.src, x.lost_at_ns);
}

template <class Archive>
void serialize(Archive& ar, GpuRecord& x) {
  ar(x.host, x.index, x.uuid, x.bus_id, x.mig_instance, x.facts, x.samples, x.time_is_approximate,
     x.files);
}

template <class Archive>
void serialize(Archive& ar, CoreReading& x) {
  ar(x.cpu, x.busy, x.steal, x.probe_s, x.speed);
}

template <class Archive>
void serialize(Archive& ar, HostCpuRound& x) {
  ar(x.time_ns, x.procs_running, x.procs_blocked, x.cores);
}

template <class Archive>
void serialize(Archive& ar, HostProcReading& x) {
  ar(x.time_ns, x.pid, x.ppid, x.comm, x.cmdline, x.cpu_share, x.cpus_allowed, x.last_cpu, x.rank,
     x.src);
}

template <class Archive>
void serialize(Archive& ar, HostCpuLog& x) {
  ar(x.host, x.rounds, x.procs);
}

template <class Archive>
void serialize(Archive& ar, IbPort& x) {
  ar(x.host, x.ca, x.port, x.state, x.phys_state, x.rate_gbps, x.width, x.link_layer, x.base_lid,
     x.port_guid, x.ca_type, x.firmware, x.src);
  ar(x.sm_lid, x.node_guid, x.active_mtu_bytes, x.max_mtu_bytes);
}

template <class Archive>
void serialize(Archive& ar, EthLink& x) {
  ar(x.host, x.iface, x.speed_mbps, x.duplex, x.link_detected, x.port, x.counters, x.src,
     x.supported_link_modes, x.advertised_link_modes, x.auto_negotiation);
}

template <class Archive>
void serialize(Archive& ar, NcclTestRank& x) {
  ar(x.rank, x.group, x.pid, x.host, x.device, x.bus_id, x.gpu_name);
}

template <class Archive>
void serialize(Archive& ar, NcclTestRow& x) {
  ar(x.size_bytes, x.count, x.type, x.redop, x.root, x.oop_time_us, x.oop_algbw_gbps,
     x.oop_busbw_gbps, x.oop_wrong, x.ip_time_us, x.ip_algbw_gbps, x.ip_busbw_gbps, x.ip_wrong,
     x.src);
}

template <class Archive>
void serialize(Archive& ar, NcclTestRun& x) {
  ar(x.collective, x.threads, x.gpus_per_thread, x.iters, x.warmup_iters, x.ranks, x.rows,
     x.avg_busbw_gbps, x.out_of_bounds, x.errors, x.host_from_path, x.src, x.nccl_version);
}

template <class Archive>
void serialize(Archive& ar, NcclConnection& x) {
  ar(x.channel, x.from_rank, x.to_rank, x.via, x.kind);
}

template <class Archive>
void serialize(Archive& ar, NcclRankInfo& x) {
  ar(x.host, x.pid, x.cuda_device, x.rank, x.nranks, x.bus_id, x.nccl_version, x.net, x.nics, x.gdr,
     x.connections, x.warnings, x.src);
}

template <class Archive>
void serialize(Archive& ar, TopologyMatrix& x) {
  ar(x.host, x.devices, x.link, x.cpu_affinity, x.numa_affinity, x.nic_names, x.src);
}

template <class Archive>
void serialize(Archive& ar, P2pMatrix& x) {
  ar(Enum(x.kind, P2pMatrixKind::kEnd, "P2pMatrixKind"), x.n, x.cells, x.src);
}

template <class Archive>
void serialize(Archive& ar, P2pBandwidthTest& x) {
  ar(x.host, x.gpu_names, x.can_access, x.n, x.matrices, x.src);
}

template <class Archive>
void serialize(Archive& ar, IbPortCounters& x) {
  ar(x.host, x.lid, x.port, x.extended, x.xmit_data_bytes, x.rcv_data_bytes, x.xmit_pkts,
     x.rcv_pkts, x.xmit_wait_ticks, x.xmit_discards, x.symbol_errors, x.link_error_recoveries);
  ar(x.link_downed, x.rcv_errors, x.saturated, x.src, x.time_ns);
}

template <class Archive>
void serialize(Archive& ar, PairBandwidth& x) {
  ar(x.host_a, x.host_b, x.gbps, x.note, x.src, x.group);
}

template <class Archive>
void serialize(Archive& ar, NetworkData& x) {
  ar(x.ib_ports, x.eth_links, x.nccl_tests, x.nccl_ranks, x.topologies, x.switch_of, x.switch_src,
     x.port_counters, x.p2p_tests, x.pair_bandwidths);
}

template <class Archive>
void serialize(Archive& ar, StackFrame& x) {
  ar(x.name, x.file, x.line);
}

template <class Archive>
void serialize(Archive& ar, CollectiveRecord& x) {
  ar(x.record_id, x.pg_id, x.pg_name, x.pg_desc, x.collective_seq, x.p2p_seq, x.op_id, x.op,
     x.created_ns, x.started_ns, x.completed_ns, x.duration_ms,
     Enum(x.state, kCollectiveStateEnd, "CollectiveState"));
  ar(x.input_sizes, x.output_sizes, x.input_dtypes, x.output_dtypes, x.retired, x.timeout_ms,
     x.is_p2p, x.frames);
}

template <class Archive>
void serialize(Archive& ar, GroupProgress& x) {
  ar(x.pg_id, x.last_enqueued, x.last_started, x.last_completed);
}

template <class Archive>
void serialize(Archive& ar, FlightRecorderDump& x) {
  ar(x.file, x.rank, x.version, x.format, x.comm_lib_version, x.status, x.entries, x.truncated);
}

template <class Archive>
void serialize(Archive& ar, HangEvent& x) {
  ar(Enum(x.kind, HangEventKind::kCount, "HangEventKind"), x.rank, x.group_rank, x.pg_id, x.pg_desc,
     x.pg_guid, x.seq, x.last_enqueued, x.last_completed, x.op, x.numel_in, x.numel_out);
  ar(x.timeout_ms, x.ran_for_ms, x.ranks_named, x.local_rank, x.exit_code, x.error_code, x.host,
     x.pid, x.peer, x.detail, x.time_ns, x.yearless_time_ns, x.text, x.src);
}

template <class Archive>
void serialize(Archive& ar, HangLogInfo& x) {
  ar(x.file, x.events, x.lines, x.truncated, x.truncation);
}

template <class Archive>
void serialize(Archive& ar, RasRank& x) {
  ar(x.comm_rank, Enum(x.issue, RasRankIssue::kCount, "RasRankIssue"), x.op, x.ops_launched,
     x.status, x.error, x.gpu, x.pid, x.node, x.src);
}

template <class Archive>
void serialize(Archive& ar, RasOpCount& x) {
  ar(x.op, x.ops_launched, x.ranks, x.src);
}

template <class Archive>
void serialize(Archive& ar, RasCommunicator& x) {
  ar(x.id, x.hash, x.group, x.problems, x.ranks_missing, x.op_counts, x.ranks, x.src);
}

template <class Archive>
void serialize(Archive& ar, RasCommGroup& x) {
  ar(x.index, x.comms, x.nodes, x.ranks_per_node, x.ranks_per_comm, x.ranks_in_group, x.status,
     x.errors, x.src);
}

template <class Archive>
void serialize(Archive& ar, RasProcess& x) {
  ar(x.pid, x.node, x.gpus, x.dead, x.src);
}

template <class Archive>
void serialize(Archive& ar, RasReport& x) {
  ar(x.file, x.nccl_version, x.nodes, x.processes, x.gpus, x.comm_groups, x.comms, x.processes_lost,
     x.processes_missing, x.processes_dead, x.timeouts, x.no_comms, x.complete, x.src);
}

template <class Archive>
void serialize(Archive& ar, HangData& x) {
  ar(x.groups, x.dumps, x.events, x.logs, x.ras);
}

template <class Archive>
void serialize(Archive& ar, DiagExample& x) {
  ar(x.file, x.line, x.offset, x.message);
}

// The private state of RunBuilder and Diagnostics (friends of this struct).
struct WireAccess {
  static void Save(cereal::BinaryOutputArchive& ar, const RunBuilder& b) {
    ar(b.series_, b.unattributed_, b.traces_, b.op_timelines_, b.layouts_, b.tool_reports_,
       b.nvrx_reports_);
    SaveNames(ar, b.names_);
    ar(b.gpus_, b.host_cpu_, b.network_, b.hang_);
    SaveDiagnostics(ar, b.diagnostics_);
  }

  // Into a fresh builder. The series go in through the builder's own rank
  // table, in their order, as MergeFrom() adds a new rank: the table comes
  // out as the original's.
  static void Load(WireReader& ar, RunBuilder& b) {
    std::vector<StepSeries> series;
    ar(series);
    b.series_.reserve(series.size());
    for (StepSeries& s : series) {
      int32_t rank = s.info.rank;
      if (rank < 0 || rank > kMaxRank) {
        throw WireError(fmt::format("wire: step series of rank {} (not in 0..{})", rank, kMaxRank));
      }
      if (b.present(rank)) throw WireError(fmt::format("wire: two step series of rank {}", rank));
      b.SeriesFor(rank) = std::move(s);
    }
    ar(b.unattributed_, b.traces_, b.op_timelines_, b.layouts_, b.tool_reports_, b.nvrx_reports_);
    LoadNames(ar, b.names_);
    ar(b.gpus_, b.host_cpu_, b.network_, b.hang_);
    LoadDiagnostics(ar, b.diagnostics_);
    Check(b);
  }

  static void SaveNames(cereal::BinaryOutputArchive& ar, const NameTable& names) {
    ar(cereal::make_size_tag(static_cast<cereal::size_type>(names.size())));
    for (uint32_t i = 0; i < names.size(); ++i) ar(std::string(names.Get(i)));
  }
  // Interning rebuilds the index; a name given twice would leave two ids
  // for it, so it is damage.
  static void LoadNames(WireReader& ar, NameTable& names) {
    cereal::size_type n = 0;
    ar(cereal::make_size_tag(n));
    std::string name;
    for (cereal::size_type i = 0; i < n; ++i) {
      ar(name);
      if (names.Intern(name) != i) throw WireError(fmt::format("wire: name '{}' twice", name));
    }
  }

  static void SaveDiagnostics(cereal::BinaryOutputArchive& ar, const Diagnostics& d) {
    ar(static_cast<uint32_t>(Diagnostics::kCodes));
    for (size_t i = 0; i < Diagnostics::kCodes; ++i) ar(d.counts_[i], d.examples_[i]);
  }
  static void LoadDiagnostics(WireReader& ar, Diagnostics& d) {
    uint32_t codes = 0;
    ar(codes);
    if (codes != Diagnostics::kCodes) {
      throw WireError(
          fmt::format("wire: {} diagnostic codes, this build has {}", codes, Diagnostics::kCodes));
    }
    for (size_t i = 0; i < Diagnostics::kCodes; ++i) {
      ar(d.counts_[i], d.examples_[i]);
      if (d.examples_[i].size() > Diagnostics::kMaxExamplesPerCode) {
        throw WireError(fmt::format("wire: {} examples of {}", d.examples_[i].size(),
                                    Describe(static_cast<DiagCode>(i)).name));
      }
    }
  }

  // What MergeFrom() and Finalize() rely on beyond the series' ranks: name
  // ids inside the table (MergeFrom re-maps through it), traced ranks and
  // world sizes as the trace readers bound them (Finalize keys on them),
  // unattributed series as AddUnattributedStep() makes them.
  static void Check(const RunBuilder& b) {
    for (const StepSeries& s : b.unattributed_) {
      if (s.info.rank != -1 || !s.file) {
        throw WireError(fmt::format("wire: unattributed series with rank {} and {} file",
                                    s.info.rank, s.file ? "a" : "no"));
      }
    }
    const size_t names = b.names_.size();
    auto check_name = [&](uint32_t id, const char* what) {
      if (id >= names) throw WireError(fmt::format("wire: {} name id {} of {}", what, id, names));
    };
    for (const RankTrace& t : b.traces_) {
      if (t.rank && (*t.rank < 0 || *t.rank > kMaxRank))
        throw WireError(fmt::format("wire: trace of rank {}", *t.rank));
      if (t.world_size && (*t.world_size < 1 || *t.world_size > kMaxRank + 1))
        throw WireError(fmt::format("wire: trace of world size {}", *t.world_size));
      for (const TraceOp& op : t.ops) {
        check_name(op.name, "op");
        if (op.shape != kNoShape) check_name(op.shape, "op shape");
      }
      for (const CollectiveCall& c : t.collectives) {
        check_name(c.kernel, "collective kernel");
        check_name(c.collective, "collective");
        if (c.group) check_name(*c.group, "collective group");
      }
    }
    // The agent's host CPU log, as its reader would have let it in: the
    // analysis sorts and averages these numbers.
    for (const HostCpuLog& log : b.host_cpu_) {
      for (const HostCpuRound& r : log.rounds) {
        for (const CoreReading& c : r.cores) {
          if (std::string problem = CoreReadingProblem(c); !problem.empty())
            throw WireError("wire: host CPU reading: " + problem);
        }
      }
      for (const HostProcReading& p : log.procs) {
        if (std::string problem = HostProcReadingProblem(p); !problem.empty())
          throw WireError("wire: host process: " + problem);
      }
    }
    auto check_rank = [](const RankValue& v) {
      if (v.rank < 0 || v.rank > kMaxRank)
        throw WireError(fmt::format("wire: tool report names rank {}", v.rank));
      if (!std::isfinite(v.value) || v.value < 0)
        throw WireError(fmt::format("wire: tool report value {}", v.value));
    };
    for (const P2pBandwidthTest& t : b.network_.p2p_tests) {
      const size_t n = t.n > 0 && t.n <= 4096 ? static_cast<size_t>(t.n) : 0;
      if (n == 0 || t.can_access.size() != n * n || t.gpu_names.size() != n)
        throw WireError(fmt::format("wire: p2p test of {} GPUs with {} access cells", t.n,
                                    t.can_access.size()));
      for (const P2pMatrix& m : t.matrices) {
        if (m.n <= 0 || m.n > t.n || m.cells.size() != static_cast<size_t>(m.n) * m.n)
          throw WireError(
              fmt::format("wire: p2p matrix of {} GPUs with {} cells", m.n, m.cells.size()));
      }
    }
    for (const PairBandwidth& p : b.network_.pair_bandwidths) {
      if (!std::isfinite(p.gbps) || p.gbps <= 0 || p.host_a.empty() || p.host_b.empty() ||
          p.host_a == p.host_b)
        throw WireError(fmt::format("wire: node pair of {:.3g} GB/s", p.gbps));
    }
    for (const NvrxReport& r : b.nvrx_reports_) {
      for (const auto* list : {&r.relative, &r.individual}) {
        for (const RankScore& s : *list) {
          if (s.rank < 0 || s.rank > kMaxRank)
            throw WireError(fmt::format("wire: NVRx report names rank {}", s.rank));
        }
      }
      for (const auto* list : {&r.flagged_relative, &r.flagged_individual}) {
        for (int32_t rank : *list) {
          if (rank < 0 || rank > kMaxRank)
            throw WireError(fmt::format("wire: NVRx report names rank {}", rank));
        }
      }
    }
    for (const ToolReport& r : b.tool_reports_) {
      for (const ToolExtremes& m : r.metrics) {
        if (m.min) check_rank(*m.min);
        if (m.max) check_rank(*m.max);
      }
      for (const RankValue& v : r.lowest_tflops) check_rank(v);
      for (const RankValue& v : r.highest_tflops) check_rank(v);
    }
  }
};

namespace {

// The bulk of a frame (steps, 40 bytes each, and trace ops, 33), reserved at
// once rather than grown by doubling through hundreds of MB.
size_t BulkBytes(const RunBuilder& b) {
  size_t bytes = kHeaderBytes;
  for (const StepSeries& s : b.series()) bytes += s.steps.size() * sizeof(StepRecord);
  for (const StepSeries& s : b.unattributed()) bytes += s.steps.size() * sizeof(StepRecord);
  for (const RankTrace& t : b.traces()) bytes += t.ops.size() * (sizeof(TraceOp) + 1);
  return bytes;
}

}  // namespace

void EncodeBuilder(RunBuilder& builder, std::string& out) {
  builder.FlushSteps();
  const size_t start = out.size();
  // Geometric still, for callers that append many frames to one string.
  if (size_t want = start + BulkBytes(builder); want > out.capacity())
    out.reserve(std::max(want, 2 * out.capacity()));
  out.append(kHeaderBytes, '\0');
  {
    AppendBuffer buffer(out);
    std::ostream stream(&buffer);
    cereal::BinaryOutputArchive ar(stream);
    WireAccess::Save(ar, builder);
  }
  const uint64_t payload = out.size() - start - kHeaderBytes;
  char* header = out.data() + start;
  std::memcpy(header, kWireMagic, sizeof kWireMagic);
  std::memcpy(header + sizeof kWireMagic, &kWireVersion, sizeof kWireVersion);
  std::memcpy(header + sizeof kWireMagic + sizeof kWireVersion, &payload, sizeof payload);
}

StatusOr<RunBuilder> DecodeBuilder(std::string_view& in) {
  if (in.size() < kHeaderBytes) {
    return Status::Error(
        fmt::format("wire: {} bytes, a frame header takes {}", in.size(), kHeaderBytes));
  }
  if (std::memcmp(in.data(), kWireMagic, sizeof kWireMagic) != 0) {
    return Status::Error("wire: not a builder frame (bad magic)");
  }
  uint32_t version = 0;
  uint64_t payload = 0;
  std::memcpy(&version, in.data() + sizeof kWireMagic, sizeof version);
  std::memcpy(&payload, in.data() + sizeof kWireMagic + sizeof version, sizeof payload);
  if (version != kWireVersion) {
    return Status::Error(
        fmt::format("wire: frame version {}, this build reads {}", version, kWireVersion));
  }
  if (payload > in.size() - kHeaderBytes) {
    return Status::Error(
        fmt::format("wire: frame of {} bytes, {} present", payload, in.size() - kHeaderBytes));
  }
  RunBuilder builder;
  try {
    WireReader ar(in.substr(kHeaderBytes, static_cast<size_t>(payload)));
    WireAccess::Load(ar, builder);
    if (ar.left() != 0) {
      return Status::Error(fmt::format("wire: {} bytes left after the builder", ar.left()));
    }
  } catch (const WireError& e) {
    return Status::Error(e.what());
  } catch (const std::bad_alloc&) {
    return Status::Error(fmt::format("wire: out of memory decoding {} bytes", payload));
  } catch (const std::exception& e) {  // cereal::Exception, std::length_error
    return Status::Error(fmt::format("wire: {}", e.what()));
  }
  in.remove_prefix(kHeaderBytes + static_cast<size_t>(payload));
  return builder;
}

}  // namespace laggard
