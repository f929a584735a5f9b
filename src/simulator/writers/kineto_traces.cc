#include "simulator/writers/kineto_traces.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "formats/kineto_keys.h"
#include "simulator/rng.h"
#include "simulator/writers/kineto_sim.h"
#include "simulator/writers/kineto_writer.h"
#include "simulator/writers/step_logs.h"

namespace laggard::sim {
namespace {

using kineto_kernels::kBackwardPattern;
using kineto_kernels::KernelKind;
using kineto_kernels::kForwardPattern;
using kineto_kernels::kKinds;
using kineto_kernels::kOptimizerKind;

// Each purpose/rank/step gets its own random stream (StreamSeed), so a fault
// changes only what it touches and threads cannot reorder draws.

enum StreamTag : uint64_t { kPlanTag = 1, kNetTag = 2, kClockTag = 3, kStartTag = 4 };

uint64_t StreamSeed(uint64_t seed, StreamTag tag, uint64_t a, uint64_t b) {
  Rng r(seed ^ (tag * 0xd1b54a32d192ed03ull));
  uint64_t h = r.Next() ^ (a * 0x9e3779b97f4a7c15ull);
  h = Rng(h).Next() ^ (b * 0xc2b2ae3d27d4eb4full);
  return Rng(h).Next();
}

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

constexpr int kComputeStream = 7;
constexpr int kNcclStream = 24;
constexpr int kNumSms = 132;                   // H100 SXM
constexpr int64_t kLaunchLatencyNs = 4 * kUs;  // cudaLaunchKernel to kernel start, idle GPU
constexpr int64_t kNcclLatencyNs = 20 * kUs;   // per all-reduce, on top of bytes / bus bw
constexpr int64_t kInputBytes = 8LL << 20;     // one batch copied host to device
constexpr double kPcieGbps = 24;

// The work of one step, the same on every rank and step.
struct StepLayout {
  std::vector<uint16_t> kinds;        // compute kernels in launch order
  int forward_end = 0;                // kernels [0, forward_end) are forward (main thread)
  int optimizer_begin = 0;            // kernels [optimizer_begin, end) are the optimizer
  std::vector<int> collective_after;  // collective k follows kernel collective_after[k] - 1
  std::vector<int64_t> nelems;        // per collective
};

StepLayout MakeLayout(const TraceScenario& sc) {
  StepLayout l;
  int k_total = sc.kernels_per_step, c = sc.collectives_per_step;
  int opt = std::max(1, k_total / 16);
  int rest = k_total - opt;
  int bwd = std::min(rest, std::max(c, rest * 3 / 5));
  int fwd = rest - bwd;
  for (int i = 0; i < fwd; ++i) l.kinds.push_back(kForwardPattern[i % std::size(kForwardPattern)]);
  for (int i = 0; i < bwd; ++i)
    l.kinds.push_back(kBackwardPattern[i % std::size(kBackwardPattern)]);
  for (int i = 0; i < opt; ++i) l.kinds.push_back(kOptimizerKind);
  l.forward_end = fwd;
  l.optimizer_begin = fwd + bwd;
  int elem = sc.legacy_nccl ? 4 : 2;
  for (int k = 0; k < c; ++k) {
    // Bucket k holds an equal share of the backward kernels; DDP's first
    // bucket is 1 MiB.
    l.collective_after.push_back(fwd + static_cast<int>(static_cast<int64_t>(bwd) * (k + 1) / c));
    int64_t bytes =
        (k == 0 && c > 1) ? std::min<int64_t>(1 << 20, sc.bucket_bytes) : sc.bucket_bytes;
    l.nelems.push_back(std::max<int64_t>(1, bytes / elem));
  }
  return l;
}

// Everything random about one rank's step, drawn before it is simulated.
struct PlannedKernel {
  int64_t dur_ns;
  int64_t op_ns;      // host time of the aten op around the launch
  int64_t launch_ns;  // host time of cudaLaunchKernel
  int64_t gap_ns;     // GPU idle before it when the GPU is the bottleneck
};

struct StepPlan {
  int64_t dataloader_ns = 0;
  int64_t h2d_ns = 0;
  int64_t d2h_ns = 0;
  std::vector<PlannedKernel> kernels;
  std::vector<int64_t> comm_host_ns;  // record_param_comms on the host, per collective
  std::vector<int64_t> end_skew_ns;   // this rank's end of each collective after the last arrival
};

// Scenario-wide constants and preformatted strings, shared by all ranks.
struct Shared {
  const TraceScenario& sc;
  StepLayout layout;
  int nodes = 0;
  int collectives = 0;
  std::vector<int64_t> clock_offsets_ns;  // per node
  std::vector<std::string> kind_args;     // per kernel kind: launch configuration args
  std::string nccl_kernel;
  std::string nccl_kernel_args;
  std::string dtype;
  std::string nccl_version;
  std::string group_ranks;  // "Process Group Ranks" as PyTorch writes it
  std::string device_properties;

  explicit Shared(const TraceScenario& s) : sc(s) {}
};

namespace keys = laggard::kineto_keys;
using kineto_json::Members;
using kineto_json::MembersText;
using kineto_json::RankInfo;
using kineto_json::Sink;
using kineto_json::TraceWriter;

double Jitter(Rng& rng, double jitter) { return std::max(0.5, 1 + jitter * rng.Normal()); }
int64_t Scaled(double ns, double factor) { return std::max<int64_t>(1, std::llround(ns * factor)); }

std::string LaunchArgs(int regs, int smem, int grid, int block) {
  double blocks_per_sm = static_cast<double>(grid) / kNumSms;
  double warps_per_sm = blocks_per_sm * block / 32;
  int occupancy = std::min(100, static_cast<int>(warps_per_sm / 64 * 100));
  return MembersText([&](Members& m) {
    m.Num(keys::args::kRegistersPerThread, regs).Num(keys::args::kSharedMemory, smem);
    m.Num(keys::args::kBlocksPerSm, blocks_per_sm, "{:.6f}")
        .Num(keys::args::kWarpsPerSm, warps_per_sm, "{:.6f}");
    m.Num(keys::args::kGrid, grid, "[{}, 1, 1]").Num(keys::args::kBlock, block, "[{}, 1, 1]");
    m.Num(keys::args::kEstAchievedOccupancy, occupancy);
  });
}

// torch/csrc/profiler/util.cpp format_list: at most 30 ranks, then "...".
std::string GroupRanks(int n) {
  std::string s = "[";
  for (int i = 0; i < std::min(n, 30); ++i) s += fmt::format("{}{}", i ? ", " : "", i);
  s += n > 30 ? ", ...]" : "]";
  return s;
}

std::unique_ptr<Shared> MakeShared(const TraceScenario& sc) {
  auto sh = std::make_unique<Shared>(sc);
  sh->layout = MakeLayout(sc);
  sh->nodes = (sc.ranks + sc.gpus_per_node - 1) / sc.gpus_per_node;
  sh->collectives = sc.collectives_per_step;
  sh->clock_offsets_ns = HostClockOffsetsNs(sc);
  for (const KernelKind& k : kKinds)
    sh->kind_args.push_back(LaunchArgs(k.regs, k.smem, k.grid, k.block));
  if (sc.legacy_nccl) {
    sh->nccl_kernel =
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
    sh->dtype = "Float";
    sh->nccl_version = "2.17.1";
  } else {
    sh->nccl_kernel = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    sh->dtype = "BFloat16";
    sh->nccl_version = "2.21.5";
  }
  sh->nccl_kernel_args = LaunchArgs(96, 87568, 24, 576);
  sh->group_ranks = GroupRanks(sc.ranks);
  std::string props;
  for (int g = 0; g < sc.gpus_per_node; ++g) {
    namespace device = keys::device;
    props += g ? ",\n    {" : "    {";
    props += MembersText([&](Members& m) {
      m.Num(device::kId, g)
          .Str(device::kName, "NVIDIA H100 80GB HBM3")
          .Num(device::kTotalGlobalMem, 85029158912);
      m.Num(device::kComputeMajor, 9)
          .Num(device::kComputeMinor, 0)
          .Num(device::kMaxThreadsPerBlock, 1024);
      m.Num(device::kMaxThreadsPerMultiprocessor, 2048)
          .Num(device::kRegsPerBlock, 65536)
          .Num(device::kWarpSize, 32);
      m.Num(device::kSharedMemPerBlock, 49152)
          .Num(device::kNumSms, kNumSms)
          .Num(device::kRegsPerMultiprocessor, 65536);
      m.Num(device::kSharedMemPerBlockOptin, 232448)
          .Num(device::kSharedMemPerMultiprocessor, 233472);
    });
    props += "}";
  }
  sh->device_properties = std::move(props);
  return sh;
}

StepPlan MakePlan(const Shared& sh, int rank, int timeline_step) {
  const TraceScenario& sc = sh.sc;
  Rng rng(StreamSeed(sc.seed, kPlanTag, static_cast<uint64_t>(rank),
                     static_cast<uint64_t>(timeline_step)));
  double j = sc.jitter;
  double slow = sc.compute_slow && sc.compute_slow->rank == rank ? sc.compute_slow->factor : 1;
  StepPlan p;
  // The number of draws never depends on the faults: a faulty scenario and
  // its healthy control share every other random number.
  p.dataloader_ns = Scaled(300 * kUs, Jitter(rng, j));
  if (sc.data_stall && sc.data_stall->rank == rank) {
    p.dataloader_ns += std::llround(sc.data_stall->seconds * kSec);
  }
  p.h2d_ns = Scaled(kInputBytes / kPcieGbps, Jitter(rng, j));
  p.d2h_ns = Scaled(1800, Jitter(rng, j));
  p.kernels.reserve(sh.layout.kinds.size());
  for (uint16_t kind : sh.layout.kinds) {
    PlannedKernel k;
    k.dur_ns = Scaled(kKinds[kind].dur_us * kUs, Jitter(rng, j) * slow);
    k.op_ns = Scaled(14 * kUs, Jitter(rng, 10 * j));
    k.launch_ns = Scaled(5 * kUs, Jitter(rng, 10 * j));
    k.gap_ns = static_cast<int64_t>(1500 + 2500 * rng.Uniform());
    p.kernels.push_back(k);
  }
  for (int k = 0; k < sh.collectives; ++k) {
    p.comm_host_ns.push_back(std::max<int64_t>(40 * kUs, Scaled(60 * kUs, Jitter(rng, 10 * j))));
    p.end_skew_ns.push_back(static_cast<int64_t>(2000 * rng.Uniform()));
  }
  return p;
}

// Transfer time of collective k of a timeline step: the same for every rank.
int64_t TransferNs(const Shared& sh, int timeline_step, int k) {
  const TraceScenario& sc = sh.sc;
  Rng rng(
      StreamSeed(sc.seed, kNetTag, static_cast<uint64_t>(timeline_step), static_cast<uint64_t>(k)));
  int n = sc.ranks;
  double bytes =
      static_cast<double>(sh.layout.nelems[static_cast<size_t>(k)]) * (sc.legacy_nccl ? 4 : 2);
  double wire_ns = 2.0 * (n - 1) / n * bytes / sc.bus_bw_gbps;  // GB/s == bytes/ns
  double factor = sc.network_slow ? sc.network_slow->factor : 1;
  return Scaled((kNcclLatencyNs + wire_ns * factor) * Jitter(rng, sc.jitter), 1);
}

int64_t FirstStepStartNs(const TraceScenario& sc, int rank) {
  Rng rng(StreamSeed(sc.seed, kStartTag, static_cast<uint64_t>(rank), 0));
  return sc.start_time_s * kSec + static_cast<int64_t>(50 * kUs * rng.Uniform());
}

RankInfo MakeRankInfo(const Shared& sh, int rank) {
  RankInfo ri;
  ri.rank = rank;
  ri.node = rank / sh.sc.gpus_per_node;
  ri.gpu = rank % sh.sc.gpus_per_node;
  ri.pid = TraceProcessId(rank);
  ri.main_tid = ri.pid;
  ri.autograd_tid = ri.pid + 9;
  ri.clock_offset_ns = sh.clock_offsets_ns[static_cast<size_t>(ri.node)];
  // Kineto's base time is the process start rounded to the second; processes
  // start a few seconds apart, an hour before the profiled steps.
  ri.base_ns = (sh.sc.start_time_s - 3600 - (rank * 7) % 5) * kSec;
  return ri;
}

// One rank's step, simulated in the order the collectives force:
//   RunToCollective(0), EndCollective(0, end0), ..., Finish().
// The physics pass drives all ranks' sims collective by collective to find
// each collective's end; the writing pass replays one rank with the ends
// known and a writer attached. Both run this same code.
class RankStepSim {
 public:
  // With `fixed`, the step's times come from it (ScheduledStep) and kernels
  // are scaled to fit them.
  RankStepSim(const Shared& sh, const RankInfo& ri, const StepPlan& plan, int step_index,
              int64_t start_ns, TraceWriter* out, const ScheduledStep* fixed = nullptr)
      : sh_(sh),
        ri_(ri),
        plan_(plan),
        step_index_(step_index),
        start_ns_(start_ns),
        out_(out),
        fixed_(fixed) {
    cpu_ = start_ns + (fixed_ ? fixed_->host_gap_ns : 0);
    gpu_free_ = start_ns;  // the previous step's loss.item() waited for the GPU
    step_ext_ = out_ ? out_->NewExternalId() : 0;
    // Data loader: a data stall is host time spent here.
    int64_t dl_start = cpu_ + 6 * kUs;
    if (out_) {
      out_->HostEvent(keys::category::kUserAnnotation,
                      "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ri_.main_tid,
                      dl_start, plan_.dataloader_ns, out_->NewExternalId());
    }
    cpu_ = dl_start + plan_.dataloader_ns + 3 * kUs;
    Memcpy("aten::copy_", "Memcpy HtoD (Pinned -> Device)", kInputBytes, plan_.h2d_ns,
           /*blocking=*/false);
  }

  // Launches the compute before collective k and the collective itself;
  // returns the collective's arrival: when this rank's NCCL kernel starts.
  int64_t RunToCollective(int k) {
    RunKernelsUntil(sh_.layout.collective_after[static_cast<size_t>(k)],
                    fixed_ ? fixed_->arrival_ns[static_cast<size_t>(k)] - kComputeToNcclNs : -1);
    int64_t host_ns = plan_.comm_host_ns[static_cast<size_t>(k)];
    int64_t c0 = cpu_;
    int tid = ri_.autograd_tid;
    int64_t launch = c0 + 14 * kUs;
    comm_ext_ = out_ ? out_->NewExternalId() : 0;
    comm_corr_ = 0;
    if (out_) {
      int64_t nelems = sh_.layout.nelems[static_cast<size_t>(k)];
      comm_args_ = MembersText([&](Members& m) {
        namespace args = keys::args;
        m.Str(args::kCollectiveName, "allreduce")
            .Num(args::kInMsgNelems, nelems)
            .Num(args::kOutMsgNelems, nelems);
        m.Num(args::kGroupSize, sh_.sc.ranks)
            .Str(args::kDtype, sh_.dtype)
            .Str(args::kInSplitSize, "[]");
        m.Str(args::kOutSplitSize, "[]").Str(args::kProcessGroupName, "0");
        m.Str(args::kProcessGroupDesc, "default_pg").Str(args::kProcessGroupRanks, sh_.group_ranks);
        m.Num(args::kSeq, Seq(k));
      });
      out_->HostEvent(keys::category::kCpuOp, keys::name::kRecordParamComms, tid, c0, host_ns,
                      comm_ext_, MembersText([&](Members& m) {
                        m.Num(keys::args::kRank, ri_.rank).Num(keys::args::kGlobalRankStart, 0);
                        m.Num(keys::args::kGlobalRankStride, 1).More(comm_args_);
                      }));
      out_->HostEvent(keys::category::kUserAnnotation, "nccl:all_reduce", tid, c0 + 3 * kUs,
                      host_ns - 10 * kUs, out_->NewExternalId());
      out_->Runtime("cudaEventRecord", tid, c0 + 8 * kUs, 1500, comm_ext_, 135,
                    out_->NewCorrelation(), false);
      out_->Runtime("cudaStreamWaitEvent", tid, c0 + 11 * kUs, 1000, comm_ext_, 147,
                    out_->NewCorrelation(), false);
      comm_corr_ = out_->NewCorrelation();
      out_->Runtime("cudaLaunchKernelExC", tid, launch, 10 * kUs, comm_ext_, 430, comm_corr_, true);
      out_->Runtime("cudaEventRecord", tid, c0 + 26 * kUs, 1000, comm_ext_, 135,
                    out_->NewCorrelation(), false);
    }
    cpu_ = c0 + host_ns + 1 * kUs;
    // The NCCL stream waits for the compute stream (the bucket's gradients).
    arrival_ = fixed_ ? fixed_->arrival_ns[static_cast<size_t>(k)]
                      : std::max(launch + kLaunchLatencyNs, gpu_free_ + kComputeToNcclNs);
    return arrival_;
  }

  // Collective k ended (its last rank arrived and the transfer finished) at
  // `end_ns`; this rank sees it end a little later by its skew.
  void EndCollective(int k, int64_t end_ns) {
    int64_t end = fixed_ ? fixed_->end_ns[static_cast<size_t>(k)]
                         : end_ns + plan_.end_skew_ns[static_cast<size_t>(k)];
    if (out_) {
      out_->Device(keys::category::kKernel, sh_.nccl_kernel, kNcclStream, arrival_, end - arrival_,
                   comm_ext_, comm_corr_, fmt::format("{}, {}", sh_.nccl_kernel_args, comm_args_));
    }
    gpu_free_ = end;  // compute waits for the all-reduce (synchronous training)
  }

  // Optimizer and loss.item(); returns when the host starts the next step.
  int64_t Finish() {
    RunKernelsUntil(sh_.layout.optimizer_begin, -1);
    int64_t opt_start = cpu_;
    int64_t opt_ext = out_ ? out_->NewExternalId() : 0;
    cpu_ += 5 * kUs;
    RunKernelsUntil(static_cast<int>(sh_.layout.kinds.size()),
                    fixed_ ? fixed_->optimizer_end_ns : -1);
    if (out_) {
      out_->HostEvent(keys::category::kUserAnnotation, "Optimizer.step#AdamW.step", ri_.main_tid,
                      opt_start, cpu_ - opt_start, opt_ext);
    }
    cpu_ += 3 * kUs;
    Memcpy("aten::item", "Memcpy DtoH (Device -> Pageable)", 4, plan_.d2h_ns, /*blocking=*/true);
    int64_t next = fixed_ ? fixed_->next_start_ns : cpu_ + 12 * kUs;
    if (out_) {
      std::string name = sh_.sc.step_name.empty() ? fmt::format("{}{}", keys::name::kProfilerStep,
                                                                sh_.sc.first_step + step_index_)
                                                  : sh_.sc.step_name;
      out_->HostEvent(keys::category::kUserAnnotation, name, ri_.main_tid, start_ns_,
                      next - start_ns_, step_ext_);
    }
    return next;
  }

 private:
  int64_t Seq(int k) const {
    // ProcessGroupNCCL's sequence number: collectives since the group was
    // created (one broadcast at init, then collectives_per_step per step).
    return 1 + static_cast<int64_t>(sh_.sc.first_step + step_index_) * sh_.collectives + k;
  }

  // Launches kernels [next_kernel_, end). With fit_end_ns >= 0 their
  // durations are scaled so that the last one ends at fit_end_ns: each
  // kernel takes its planned share of what is left after its start, which
  // absorbs a late start (the host launching behind the GPU) exactly.
  void RunKernelsUntil(int end, int64_t fit_end_ns) {
    if (fit_end_ns < 0) {
      for (; next_kernel_ < end; ++next_kernel_) {
        Launch(next_kernel_,
               [&](int64_t) { return plan_.kernels[static_cast<size_t>(next_kernel_)].dur_ns; });
      }
      return;
    }
    double rest_w = 0;
    int64_t rest_gaps = 0;
    for (int i = next_kernel_; i < end; ++i) {
      rest_w += static_cast<double>(plan_.kernels[static_cast<size_t>(i)].dur_ns);
      if (i > next_kernel_) rest_gaps += plan_.kernels[static_cast<size_t>(i)].gap_ns;
    }
    for (int first = next_kernel_; next_kernel_ < end; ++next_kernel_) {
      const PlannedKernel& pk = plan_.kernels[static_cast<size_t>(next_kernel_)];
      if (next_kernel_ > first) rest_gaps -= pk.gap_ns;
      double w = static_cast<double>(pk.dur_ns);
      bool last = next_kernel_ + 1 == end;
      Launch(next_kernel_, [&](int64_t start) {
        double room = static_cast<double>(fit_end_ns - start - rest_gaps);
        int64_t dur = last ? fit_end_ns - start : std::llround(room * w / std::max(rest_w, 1.0));
        return std::max<int64_t>(1 * kUs, dur);
      });
      rest_w -= w;
    }
  }

  // Launches kernel i; duration_at(start) gives its duration.
  template <typename DurationFn>
  void Launch(int i, DurationFn duration_at) {
    const PlannedKernel& pk = plan_.kernels[static_cast<size_t>(i)];
    const KernelKind& kind = kKinds[sh_.layout.kinds[static_cast<size_t>(i)]];
    int tid = (i >= sh_.layout.forward_end && i < sh_.layout.optimizer_begin) ? ri_.autograd_tid
                                                                              : ri_.main_tid;
    int64_t op_start = cpu_;
    int64_t rt_start = op_start + (pk.op_ns - pk.launch_ns) * 3 / 5;
    int64_t start = std::max(rt_start + kLaunchLatencyNs, gpu_free_ + pk.gap_ns);
    int64_t dur = duration_at(start);
    if (out_) {
      int64_t ext = out_->NewExternalId();
      int64_t corr = out_->NewCorrelation();
      out_->HostEvent(keys::category::kCpuOp, kind.op, tid, op_start, pk.op_ns, ext);
      out_->Runtime("cudaLaunchKernel", tid, rt_start, pk.launch_ns, ext, 211, corr, true);
      out_->Device(keys::category::kKernel, kind.name, kComputeStream, start, dur, ext, corr,
                   sh_.kind_args[sh_.layout.kinds[static_cast<size_t>(i)]]);
    }
    gpu_free_ = start + dur;
    cpu_ = op_start + pk.op_ns + 1 * kUs;
  }

  // A copy on the compute stream; a blocking one (loss.item() to pageable
  // memory) holds the host until the GPU has done everything before it.
  void Memcpy(std::string_view op, std::string_view name, int64_t bytes, int64_t dur,
              bool blocking) {
    int64_t op_start = cpu_;
    int64_t rt_start = op_start + 8 * kUs;
    int64_t start = std::max(rt_start + kLaunchLatencyNs, gpu_free_ + 2 * kUs);
    int64_t rt_end = blocking ? start + dur + 4 * kUs : rt_start + 6 * kUs;
    int64_t op_end = rt_end + 3 * kUs;
    if (out_) {
      int64_t ext = out_->NewExternalId();
      int64_t corr = out_->NewCorrelation();
      out_->HostEvent(keys::category::kCpuOp, op, ri_.main_tid, op_start, op_end - op_start, ext);
      out_->Runtime("cudaMemcpyAsync", ri_.main_tid, rt_start, rt_end - rt_start, ext, 41, corr,
                    true);
      double gbps = static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(1, dur));
      std::string args = MembersText([&](Members& m) {
        m.Num(keys::args::kBytes, bytes).Num(keys::args::kMemoryBandwidth, gbps, "{:.6f}");
      });
      out_->Device(keys::category::kGpuMemcpy, name, kComputeStream, start, dur, ext, corr, args);
    }
    gpu_free_ = start + dur;
    cpu_ = op_end + 1 * kUs;
  }

  const Shared& sh_;
  const RankInfo& ri_;
  const StepPlan& plan_;
  int step_index_;
  int64_t start_ns_;
  TraceWriter* out_;
  const ScheduledStep* fixed_;
  int64_t cpu_ = 0;
  int64_t gpu_free_ = 0;
  int next_kernel_ = 0;
  int64_t step_ext_ = 0;
  int64_t arrival_ = 0;
  int64_t comm_ext_ = 0;
  int64_t comm_corr_ = 0;
  std::string comm_args_;
};

// The job's timing, decided by all ranks together: when each rank starts
// each step and when each collective ends (true clock). Timeline step 0 is
// an unwritten warm-up step (torch.profiler's schedule has one too): it lines
// the ranks up the way a previous collective would, so the first profiled
// step already has equal end-to-end times. Timeline step i is profiled step
// i - 1, ProfilerStep#(first_step + i - 1).
struct Timeline {
  int ranks = 0;
  int collectives = 0;
  std::vector<int64_t> step_start;      // [(timeline steps + 1) * ranks]
  std::vector<int64_t> collective_end;  // [timeline steps * collectives]
  int64_t start(int s, int r) const { return step_start[static_cast<size_t>(s) * ranks + r]; }
  int64_t end(int s, int k) const {
    return collective_end[static_cast<size_t>(s) * collectives + k];
  }
};

// Simulates the warm-up step and `steps` profiled steps.
Timeline SimulateTimeline(const Shared& sh, int profiled_steps) {
  const TraceScenario& sc = sh.sc;
  int steps = profiled_steps + 1;
  Timeline t;
  t.ranks = sc.ranks;
  t.collectives = sh.collectives;
  t.step_start.resize(static_cast<size_t>(steps + 1) * sc.ranks);
  t.collective_end.resize(static_cast<size_t>(steps) * sh.collectives);
  for (int r = 0; r < sc.ranks; ++r) t.step_start[static_cast<size_t>(r)] = FirstStepStartNs(sc, r);
  std::vector<RankInfo> infos;
  for (int r = 0; r < sc.ranks; ++r) infos.push_back(MakeRankInfo(sh, r));
  std::vector<StepPlan> plans(static_cast<size_t>(sc.ranks));
  for (int s = 0; s < steps; ++s) {
    std::vector<RankStepSim> sims;
    sims.reserve(static_cast<size_t>(sc.ranks));
    for (int r = 0; r < sc.ranks; ++r) {
      plans[static_cast<size_t>(r)] = MakePlan(sh, r, s);
      sims.emplace_back(sh, infos[static_cast<size_t>(r)], plans[static_cast<size_t>(r)], s - 1,
                        t.start(s, r), nullptr);
    }
    for (int k = 0; k < sh.collectives; ++k) {
      int64_t last_arrival = 0;
      for (auto& sim : sims) last_arrival = std::max(last_arrival, sim.RunToCollective(k));
      int64_t end = last_arrival + TransferNs(sh, s, k);
      t.collective_end[static_cast<size_t>(s) * sh.collectives + k] = end;
      for (auto& sim : sims) sim.EndCollective(k, end);
    }
    for (int r = 0; r < sc.ranks; ++r) {
      t.step_start[static_cast<size_t>(s + 1) * sc.ranks + r] =
          sims[static_cast<size_t>(r)].Finish();
    }
  }
  return t;
}

void WriteHeader(const Shared& sh, const RankInfo& ri, TraceWriter& w) {
  const TraceScenario& sc = sh.sc;
  std::string ranks_list;
  for (int r = 0; r < sc.ranks; ++r) ranks_list += fmt::format("{}{}", r ? ", " : "", r);
  namespace dist = keys::distributed;
  std::string pg_config = MembersText([&](Members& m) {
    m.Str(dist::kPgName, "0")
        .Str(dist::kPgDesc, "default_pg")
        .Str(dist::kBackendConfig, "cuda:nccl");
    m.Num(dist::kPgSize, sc.ranks).Json(dist::kRanks, "[" + ranks_list + "]");
  });
  std::string dist_info = MembersText([&](Members& m) {
    m.Str(dist::kBackend, "nccl")
        .Num(dist::kRank, ri.rank)
        .Num(dist::kWorldSize, sc.ranks)
        .Num(dist::kPgCount, 1);
    m.Json(dist::kPgConfig, "[{" + pg_config + "}]").Str(dist::kNcclVersion, sh.nccl_version);
  });
  auto member = [&](std::string_view key, std::string_view json) {
    w.Raw(fmt::format("  \"{}\": {},\n", key, json));
  };
  w.Raw("{\n");
  member(keys::top::kSchemaVersion, "1");
  member(keys::top::kDeviceProperties, "[\n" + sh.device_properties + "\n  ]");
  member(keys::top::kDistributedInfo, "{" + dist_info + "}");
  if (sc.base_time_in_header) {
    member(keys::top::kDisplayTimeUnit, "\"ms\"");
    member(keys::top::kBaseTimeNanoseconds, std::to_string(ri.base_ns));
  }
  w.Raw(fmt::format("  \"{}\": [\n", keys::top::kTraceEvents));
}

void WriteFooter(const Shared& sh, const RankInfo& ri, const std::string& trace_name,
                 int64_t span_start, int64_t span_end, TraceWriter& w) {
  namespace event = keys::event;
  namespace name = keys::name;
  // A metadata event (ph M) of `pid` (JSON) and `tid`, with one member in args.
  auto meta = [&](std::string_view event_name, std::string_view pid, int64_t tid,
                  const std::string& arg) {
    Members m = w.Open();
    m.Str(event::kName, event_name).Str(event::kPh, keys::phase::kMetadata).Key(event::kTs);
    w.Time(span_start);
    m.Json(event::kPid, pid).Num(event::kTid, tid).Json(event::kArgs, "{" + arg + "}");
    w.Raw("},\n");
  };
  auto str = [](std::string_view key, std::string_view v) {
    return MembersText([&](Members& m) { m.Str(key, v); });
  };
  auto num = [](std::string_view key, int64_t v) {
    return MembersText([&](Members& m) { m.Num(key, v); });
  };
  namespace arg = keys::args;
  std::string pid = std::to_string(ri.pid);
  std::string gpu = std::to_string(ri.gpu);
  meta(name::kProcessName, pid, 0, str(arg::kName, "python3"));
  meta(name::kProcessLabels, pid, 0, str(arg::kLabels, "CPU"));
  meta(name::kProcessSortIndex, pid, 0, num(arg::kSortIndex, ri.pid));
  meta(name::kProcessName, gpu, 0, str(arg::kName, "python3"));
  meta(name::kProcessLabels, gpu, 0, str(arg::kLabels, fmt::format("GPU {}", ri.gpu)));
  meta(name::kProcessSortIndex, gpu, 0, num(arg::kSortIndex, 0x1000000 + ri.gpu));
  for (int stream : {kComputeStream, kNcclStream}) {
    meta(name::kThreadName, gpu, stream, str(arg::kName, fmt::format("stream {} ", stream)));
    meta(name::kThreadSortIndex, gpu, stream, num(arg::kSortIndex, stream));
  }
  meta(name::kThreadName, pid, ri.main_tid,
       str(arg::kName, fmt::format("thread {} (python3)", ri.main_tid)));
  meta(name::kThreadSortIndex, pid, ri.main_tid, num(arg::kSortIndex, ri.main_tid));
  meta(name::kThreadName, pid, ri.autograd_tid,
       str(arg::kName, fmt::format("thread {} (pt_autograd_0)", ri.autograd_tid)));
  meta(name::kThreadSortIndex, pid, ri.autograd_tid, num(arg::kSortIndex, ri.autograd_tid));
  Members span = w.Open();  // the profiler's own span
  span.Str(event::kPh, keys::phase::kComplete).Str(event::kCat, keys::category::kTrace);
  w.TimeAndDuration(span, span_start, span_end - span_start);
  span.Str(event::kPid, "Spans")
      .Str(event::kTid, "PyTorch Profiler")
      .Str(event::kName, "PyTorch Profiler (0)");
  span.Json(event::kArgs, "{" + num(arg::kOpCount, 0) + "}");
  w.Raw("},\n");
  meta(name::kProcessSortIndex, "\"Spans\"", 0, num(arg::kSortIndex, 536870912));
  auto instant = [&](std::string_view event_name, std::string_view pid_text,
                     std::string_view tid_text, int64_t ts) {
    Members m = w.Open();
    m.Str(event::kName, event_name)
        .Str(event::kPh, keys::phase::kInstant)
        .Str(event::kScope, event::kScopeGlobal);
    m.Str(event::kPid, pid_text).Str(event::kTid, tid_text).Key(event::kTs);
    w.Time(ts);
  };
  instant("Iteration Start: PyTorch Profiler", "Traces", "Trace PyTorch Profiler", span_start);
  w.Raw("},\n");
  instant("Record Window End", "", "", span_end + 40 * kUs);
  w.Raw("}\n  ],\n");
  w.Raw(fmt::format("  \"{}\": \"{}\"", keys::top::kTraceName, trace_name));
  if (!sh.sc.base_time_in_header) {
    w.Raw(fmt::format(",\n  \"{}\": \"ms\",\n  \"{}\": {}", keys::top::kDisplayTimeUnit,
                      keys::top::kBaseTimeNanoseconds, ri.base_ns));
  }
  w.Raw("\n}\n");
}

// `t` is null when the scenario has a schedule.
Status WriteRank(const Shared& sh, const Timeline* t, int rank, const std::string& dir, bool gzip) {
  const TraceScenario& sc = sh.sc;
  RankInfo ri = MakeRankInfo(sh, rank);
  std::string rel = KinetoTracePath(sc, rank, gzip);
  std::string path = dir + "/" + rel;
  Sink sink;
  if (Status st = sink.Open(path, gzip); !st.ok()) return st;
  TraceWriter w(ri, &sink);
  WriteHeader(sh, ri, w);
  int64_t span_start = 0, span_end = 0;
  for (int s = 1; s <= sc.steps; ++s) {
    StepPlan plan = MakePlan(sh, rank, s);
    const ScheduledStep* fixed = nullptr;
    if (!t) {
      fixed = &sc.schedule(rank, s - 1);
      plan.dataloader_ns = fixed->dataloader_ns;
      plan.h2d_ns = fixed->h2d_ns;
      plan.d2h_ns = fixed->d2h_ns;
    }
    int64_t start = t ? t->start(s, rank) : fixed->start_ns;
    if (s == 1) span_start = start - 2 * kMs;
    RankStepSim sim(sh, ri, plan, s - 1, start, &w, fixed);
    for (int k = 0; k < sh.collectives; ++k) {
      sim.RunToCollective(k);
      sim.EndCollective(k, t ? t->end(s, k) : 0);
    }
    span_end = sim.Finish();
  }
  WriteFooter(sh, ri, rel, span_start, span_end, w);
  w.Flush();
  if (w.failed()) return Status::Error(fmt::format("{}: write failed", path));
  return sink.Close();
}

}  // namespace

std::vector<int64_t> HostClockOffsetsNs(const TraceScenario& sc) {
  int nodes =
      (std::max(sc.ranks, 0) + std::max(sc.gpus_per_node, 1) - 1) / std::max(sc.gpus_per_node, 1);
  std::vector<int64_t> offsets(static_cast<size_t>(nodes), 0);
  if (!sc.clock_offsets_ns.empty()) {
    for (size_t n = 0; n < offsets.size() && n < sc.clock_offsets_ns.size(); ++n)
      offsets[n] = sc.clock_offsets_ns[n];
    return offsets;
  }
  if (sc.max_clock_offset_ms <= 0) return offsets;
  Rng rng(StreamSeed(sc.seed, kClockTag, 0, 0));
  for (int64_t& o : offsets)
    o = std::llround((2 * rng.Uniform() - 1) * sc.max_clock_offset_ms * kMs);
  return offsets;
}

std::string KinetoTracePath(const TraceScenario& sc, int rank, bool gzip) {
  // torch.profiler.tensorboard_trace_handler names files <worker>.<time>.pt.trace.json.
  int64_t ms = sc.start_time_s * 1000 + (rank * 7) % 1000;
  return fmt::format("{}/rank-{}.{}.pt.trace.json{}",
                     HostName(rank / std::max(sc.gpus_per_node, 1)), rank, ms, gzip ? ".gz" : "");
}

StatusOr<uint64_t> KinetoBytesPerStep(const TraceScenario& scenario) {
  if (Status st = ValidateTraceScenario(scenario); !st.ok()) return st;
  auto sh = MakeShared(scenario);
  Timeline t = SimulateTimeline(*sh, 1);
  RankInfo ri = MakeRankInfo(*sh, 0);
  TraceWriter w(ri, nullptr);
  StepPlan plan = MakePlan(*sh, 0, 1);
  RankStepSim sim(*sh, ri, plan, 0, t.start(1, 0), &w);
  for (int k = 0; k < sh->collectives; ++k) {
    sim.RunToCollective(k);
    sim.EndCollective(k, t.end(1, k));
  }
  sim.Finish();
  return w.bytes();
}

std::vector<int> TracedRanks(const TraceScenario& scenario) {
  if (!scenario.traced_ranks.empty()) return scenario.traced_ranks;
  std::vector<int> all(static_cast<size_t>(std::max(0, scenario.ranks)));
  for (int r = 0; r < scenario.ranks; ++r) all[static_cast<size_t>(r)] = r;
  return all;
}

Status WriteKinetoTraces(const TraceScenario& scenario, const std::string& dir, bool gzip) {
  if (Status st = ValidateTraceScenario(scenario); !st.ok()) return st;
  auto sh = MakeShared(scenario);
  std::error_code ec;
  for (int n = 0; n < sh->nodes; ++n) {
    std::filesystem::create_directories(dir + "/" + HostName(n), ec);
    if (ec)
      return Status::Error(fmt::format("{}/{}: cannot create: {}", dir, HostName(n), ec.message()));
  }
  Timeline t;
  if (!scenario.schedule) t = SimulateTimeline(*sh, scenario.steps);

  // Ranks are independent once the timeline is known: write them in parallel.
  const std::vector<int> ranks = TracedRanks(scenario);
  const int n = static_cast<int>(ranks.size());
  int workers = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, n);
  std::vector<Status> results(ranks.size());
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      results[static_cast<size_t>(i)] = WriteRank(*sh, scenario.schedule ? nullptr : &t,
                                                  ranks[static_cast<size_t>(i)], dir, gzip);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < workers; ++i) threads.emplace_back(work);
  work();
  for (std::thread& th : threads) th.join();
  for (const Status& st : results) {
    if (!st.ok()) return st;
  }
  return scenario.write_truth ? WriteTraceTruth(scenario, dir, gzip) : Status::Ok();
}

int64_t CollectiveBytes(const TraceScenario& sc, int k) {
  int elem = sc.legacy_nccl ? 4 : 2;
  int64_t bytes = (k == 0 && sc.collectives_per_step > 1)
                      ? std::min<int64_t>(1 << 20, sc.bucket_bytes)
                      : sc.bucket_bytes;
  return std::max<int64_t>(1, bytes / elem) * elem;
}

std::vector<double> ComputeSegmentShares(const TraceScenario& sc) {
  StepLayout l = MakeLayout(sc);
  std::vector<double> shares(static_cast<size_t>(sc.collectives_per_step) + 1, 0);
  double total = 0;
  size_t seg = 0;
  for (size_t i = 0; i < l.kinds.size(); ++i) {
    while (seg < l.collective_after.size() && static_cast<int>(i) >= l.collective_after[seg]) ++seg;
    double d = kKinds[l.kinds[i]].dur_us;
    shares[seg] += d;
    total += d;
  }
  for (double& v : shares) v /= total;
  return shares;
}

int TraceProcessId(int rank) { return 1'200'000 + 31 * rank; }

}  // namespace laggard::sim
