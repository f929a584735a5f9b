// nvidia-smi output of one simulated node, as driver 565.57.01 prints it on
// an HGX H100 (layouts of the real captures in the shared corpus):
//   nvidia-smi-dmon.txt     dmon -s pucvmt -o DT (1 s samples, from a few
//                           seconds before the job to a few after)
//   nvidia-smi-query.csv    --query-gpu=timestamp,index,uuid,temperature.gpu,
//                           clocks.sm,clocks.max.sm,power.draw,power.limit,
//                           enforced.power.limit,power.default_limit,
//                           utilization.gpu,pcie.link.gen.current,
//                           pcie.link.gen.max,pcie.link.width.current,
//                           pcie.link.width.max,clocks_event_reasons.active
//                           --format=csv -l 5
//   nvidia-smi-q.txt        -q at the end of the run (the job still running)
//   nvidia-smi-topo.txt     topo -m (tab-separated)
//   nvidia-smi-nvlink.txt   nvlink --status
// A sample at host time t shows the GPU's state in the step its rank was
// running at true time t - offset; temperature is interpolated between
// step starts.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "simulator/rng.h"
#include "simulator/writers/writers.h"

namespace laggard::sim {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr double kIdleClockMhz = 345;
constexpr double kIdleDrawW = 72;
constexpr int kFbUsedMiB = 71'520;
constexpr int kFbTotalMiB = 81'559;

// What nvidia-smi reads from one GPU at one instant.
struct Reading {
  double temp_c = 0;
  double sm_clock_mhz = kIdleClockMhz;
  double power_w = kIdleDrawW;
  double util_pct = 0;
  double mem_util_pct = 0;
  double power_limit_w = kDefaultPowerLimitW;
  uint16_t reasons = kReasonGpuIdle;
  int pcie_width = 16;
  double rx_mbps = 0;
  double tx_mbps = 0;
  bool busy = false;  // the job's process holds the GPU
};

Reading ReadAt(const RunContext& ctx, int node, int gpu, int64_t true_ns) {
  const ClusterRun& run = ctx.run;
  int rank = node * run.scenario().gpus_per_node + gpu;
  int steps = run.steps();
  Reading r;
  int64_t first = run.step_start_ns(rank, 0), last = run.step_start_ns(rank, steps);
  const GpuSample& s0 = run.gpu_sample(node, gpu, 0);
  const GpuSample& sl = run.gpu_sample(node, gpu, steps - 1);
  r.pcie_width = s0.pcie_width;
  // The power limit is a device setting (`nvidia-smi -pl`): it holds while
  // the GPU idles before and after the job.
  r.power_limit_w = true_ns < first ? s0.power_limit_w : sl.power_limit_w;
  if (true_ns < first) {
    r.temp_c = s0.temp_c;
    return r;
  }
  if (true_ns >= last) {
    double idle_t = kInletTempC + kThermalResistanceCPerW * kIdleDrawW;
    r.temp_c = idle_t + (sl.temp_c - idle_t) *
                            std::exp(-static_cast<double>(true_ns - last) / (kThermalTauS * kSec));
    r.pcie_width = sl.pcie_width;
    return r;
  }
  // The step running at true_ns: binary search over step starts.
  int lo = 0, hi = steps;  // start(lo) <= t < start(hi)
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (run.step_start_ns(rank, mid) <= true_ns) lo = mid;
    else hi = mid;
  }
  const GpuSample& s = run.gpu_sample(node, gpu, lo);
  double t_next = lo + 1 < steps ? run.gpu_sample(node, gpu, lo + 1).temp_c : s.temp_c;
  double frac = static_cast<double>(true_ns - run.step_start_ns(rank, lo)) /
                static_cast<double>(std::max<int64_t>(1, run.step_ns(rank, lo)));
  r.busy = true;
  r.temp_c = s.temp_c + (t_next - s.temp_c) * frac;
  r.sm_clock_mhz = s.sm_clock_mhz;
  r.power_w = s.power_w;
  r.util_pct = s.util_pct;
  r.mem_util_pct = 0.45 * s.sm_active_pct;
  r.power_limit_w = s.power_limit_w;
  r.reasons = s.reasons;
  r.pcie_width = s.pcie_width;
  r.rx_mbps = s.pcie_rx_mbps;
  r.tx_mbps = s.pcie_tx_mbps;
  return r;
}

// Sample noise that does not depend on thread scheduling.
struct Noise {
  explicit Noise(uint64_t seed, int node, int gpu, int64_t t)
      : rng(seed ^ (static_cast<uint64_t>(node) * 0x9e3779b97f4a7c15ull) ^
            (static_cast<uint64_t>(gpu) << 48) ^ static_cast<uint64_t>(t)) {}
  double Around(double v, double rel) { return v * (1 + rel * (2 * rng.Uniform() - 1)); }
  double Plus(double v, double abs) { return v + abs * (2 * rng.Uniform() - 1); }
  Rng rng;
};

const char* Weekday(int d) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  return kDays[d % 7];
}
const char* Month(int m) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  return kMonths[(m - 1) % 12];
}

// dmon: 1 s samples from 3 s before the job's first step to 3 s after its last.
void Dmon(const RunContext& ctx, int node, OutFile& f) {
  int g = ctx.run.scenario().gpus_per_node;
  f.Raw(
      "#Date        Time         gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    "
      "ofa   mclk   pclk"
      "  pviol  tviol     fb   bar1   ccpm  rxpci  txpci\n");
  f.Raw(
      "#YYYYMMDD    HH:MM:SS     Idx      W      C      C      %      %      %      %      %      "
      "%    MHz    MHz"
      "      %   bool     MB     MB     MB   MB/s   MB/s\n");
  int64_t interval = static_cast<int64_t>(std::max(1, ctx.opt.dmon_interval_s)) * kSec;
  int64_t first = (ctx.host_ns(node, ctx.job_start_ns) / kSec - 3) * kSec;
  int64_t last = ctx.host_ns(node, ctx.job_end_ns) + 3 * kSec;
  for (int64_t t = first; t <= last; t += interval) {
    Civil c = ToCivil(t);
    for (int i = 0; i < g; ++i) {
      // nvidia-smi reads the GPUs one after the other, a few ms apart.
      int64_t at = t + i * 3'000'000;
      Reading r = ReadAt(ctx, node, i, at - ctx.run.clock_offsets_ns()[static_cast<size_t>(node)]);
      Noise n(ctx.run.scenario().seed, node, i, at);
      long pwr = std::lround(n.Around(r.power_w, 0.01));
      long gtemp = std::lround(n.Plus(r.temp_c, 0.3));
      long mtemp = std::lround(n.Plus(r.temp_c + 6, 0.3));
      bool pviol = r.reasons & kReasonSwPowerCap;
      bool tviol = r.reasons & (kReasonSwThermal | kReasonHwThermal);
      f.Print(
          " {:04d}{:02d}{:02d}    "
          "{:02d}:{:02d}:{:02d}{:>8}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>7}{:>"
          "7}"
          "{:>7}{:>7}{:>7}{:>7}{:>7}\n",
          c.year, c.month, c.day, c.hour, c.minute, c.second, i, pwr, gtemp, mtemp,
          std::lround(r.util_pct), std::lround(r.mem_util_pct), 0, 0, 0, 0,
          static_cast<long>(kMemClockMhz), std::lround(r.sm_clock_mhz), pviol ? 100 : 0,
          tviol ? 1 : 0, r.busy ? kFbUsedMiB + 13 * i : 1, r.busy ? 4 : 1, 0,
          std::lround(n.Around(r.rx_mbps, 0.05)), std::lround(n.Around(r.tx_mbps, 0.05)));
    }
  }
}

void QueryCsv(const RunContext& ctx, int node, OutFile& f) {
  const ClusterRun& run = ctx.run;
  int g = run.scenario().gpus_per_node;
  f.Raw(
      "timestamp, index, uuid, temperature.gpu, clocks.current.sm [MHz], clocks.max.sm [MHz], "
      "power.draw [W], "
      "power.limit [W], enforced.power.limit [W], power.default_limit [W], utilization.gpu [%], "
      "pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, "
      "clocks_event_reasons.active\n");
  int64_t interval = static_cast<int64_t>(std::max(1, ctx.opt.query_interval_s)) * kSec;
  int64_t first = ctx.host_ns(node, ctx.job_start_ns) - 2 * kSec + 137'000'000;
  int64_t last = ctx.host_ns(node, ctx.job_end_ns) + 2 * kSec;
  for (int64_t t = first; t <= last; t += interval) {
    for (int i = 0; i < g; ++i) {
      int64_t at = t + i * 4'000'000;
      Reading r = ReadAt(ctx, node, i, at - run.clock_offsets_ns()[static_cast<size_t>(node)]);
      Noise n(run.scenario().seed ^ 0x51, node, i, at);
      Civil c = ToCivil(at);
      f.Print(
          "{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}, {}, {}, {}, {} MHz, {} MHz, {:.2f} W, "
          "{:.2f} W, {:.2f} W, "
          "{:.2f} W, {} %, 5, 5, {}, 16, 0x{:016x}\n",
          c.year, c.month, c.day, c.hour, c.minute, c.second, c.millis, i,
          run.gpu_uuids()[static_cast<size_t>(node * g + i)], std::lround(n.Plus(r.temp_c, 0.3)),
          std::lround(r.sm_clock_mhz), static_cast<long>(kMaxSmClockMhz), n.Around(r.power_w, 0.01),
          r.power_limit_w, r.power_limit_w, kDefaultPowerLimitW, std::lround(r.util_pct),
          r.pcie_width, static_cast<unsigned>(r.reasons));
    }
  }
}

const char* Active(bool on) { return on ? "Active" : "Not Active"; }

// A memory usage block of -q (FB, BAR1, confidential compute), MiB.
void QueryMemoryUsage(OutFile& f, std::string_view title, long total_mib, long used_mib,
                      std::optional<long> reserved_mib = std::nullopt) {
  f.Print("    {}\n", title);
  f.Print("        Total                             : {} MiB\n", total_mib);
  if (reserved_mib) f.Print("        Reserved                          : {} MiB\n", *reserved_mib);
  f.Print("        Used                              : {} MiB\n", used_mib);
  f.Print("        Free                              : {} MiB\n",
          total_mib - reserved_mib.value_or(0) - used_mib);
}

// A clocks block of -q: Graphics, then SM, Memory and Video where given, MHz.
void QueryClockBlock(OutFile& f, std::string_view title, long graphics_mhz,
                     std::optional<long> sm_mhz, std::optional<long> memory_mhz,
                     std::optional<long> video_mhz) {
  f.Print("    {}\n", title);
  f.Print("        Graphics                          : {} MHz\n", graphics_mhz);
  if (sm_mhz) f.Print("        SM                                : {} MHz\n", *sm_mhz);
  if (memory_mhz) f.Print("        Memory                            : {} MHz\n", *memory_mhz);
  if (video_mhz) f.Print("        Video                             : {} MHz\n", *video_mhz);
}

// -q from the GPU's header line to its IBMNPU section: what it is.
void QueryIdentity(const ClusterRun& run, int node, int i, OutFile& f) {
  int bus = GpuBusId(i);
  f.Print("GPU 00000000:{:02X}:00.0\n", bus);
  f.Raw(
      "    Product Name                          : NVIDIA H100 80GB HBM3\n"
      "    Product Brand                         : NVIDIA\n"
      "    Product Architecture                  : Hopper\n"
      "    Display Mode                          : Enabled\n"
      "    Display Active                        : Disabled\n"
      "    Persistence Mode                      : Enabled\n"
      "    Addressing Mode                       : None\n"
      "    MIG Mode\n"
      "        Current                           : Disabled\n"
      "        Pending                           : Disabled\n"
      "    Accounting Mode                       : Disabled\n"
      "    Accounting Mode Buffer Size           : 4000\n"
      "    Driver Model\n"
      "        Current                           : N/A\n"
      "        Pending                           : N/A\n");
  f.Print("    Serial Number                         : {}\n", 1654423000000LL + node * 97 + i * 13);
  f.Print("    GPU UUID                              : {}\n",
          run.gpu_uuids()[static_cast<size_t>(node * run.scenario().gpus_per_node + i)]);
  f.Print("    Minor Number                          : {}\n", i);
  f.Raw(
      "    VBIOS Version                         : 96.00.74.00.01\n"
      "    MultiGPU Board                        : No\n");
  f.Print("    Board ID                              : 0x{:x}00\n", bus);
  f.Raw(
      "    Board Part Number                     : 692-2G520-0200-000\n"
      "    GPU Part Number                       : 2330-885-A1\n"
      "    FRU Part Number                       : N/A\n"
      "    Platform Info\n"
      "        RACK Serial Number                : N/A\n"
      "        Chassis Physical Slot Number      : N/A\n"
      "        Compute Slot Index                : N/A\n"
      "        Node Index                        : N/A\n"
      "        Peer Type                         : N/A\n");
  f.Print("        Module Id                         : {}\n", i + 1);
  f.Raw(
      "    Inforom Version\n"
      "        Image Version                     : G520.0200.00.05\n"
      "        OEM Object                        : 2.1\n"
      "        ECC Object                        : 7.16\n"
      "        Power Management Object           : N/A\n"
      "    GPU Operation Mode\n"
      "        Current                           : N/A\n"
      "        Pending                           : N/A\n"
      "    GPU C2C Mode                          : Disabled\n"
      "    GPU Virtualization Mode\n"
      "        Virtualization Mode               : None\n"
      "        Host VGPU Mode                    : N/A\n"
      "        vGPU Heterogeneous Mode           : N/A\n"
      "    GPU Reset Status\n"
      "        Reset Required                    : No\n"
      "        Drain and Reset Recommended       : No\n"
      "    GPU Recovery Action                   : None\n"
      "    GSP Firmware Version                  : 565.57.01\n"
      "    IBMNPU\n"
      "        Relaxed Ordering Mode             : N/A\n");
}

// The PCI section: the link (width as trained) and its throughput; draws
// the Tx, then the Rx noise.
void QueryPci(int i, int pcie_width, const Reading& r, Noise& n, OutFile& f) {
  int bus = GpuBusId(i);
  f.Raw("    PCI\n");
  f.Print("        Bus                               : 0x{:02x}\n", bus);
  f.Raw(
      "        Device                            : 0x00\n"
      "        Domain                            : 0x0000\n"
      "        Base Classcode                    : 0x3\n"
      "        Sub Classcode                     : 0x2\n"
      "        Device Id                         : 0x233010DE\n");
  f.Print("        Bus Id                            : 00000000:{:02X}:00.0\n", bus);
  f.Raw(
      "        Sub System Id                     : 0x16C110DE\n"
      "        GPU Link Info\n"
      "            PCIe Generation\n"
      "                Max                       : 5\n"
      "                Current                   : 5\n"
      "                Device Current            : 5\n"
      "                Device Max                : 5\n"
      "                Host Max                  : 5\n"
      "            Link Width\n"
      "                Max                       : 16x\n");
  f.Print("                Current                   : {}x\n", pcie_width);
  f.Raw(
      "        Bridge Chip\n"
      "            Type                          : N/A\n"
      "            Firmware                      : N/A\n");
  f.Print("        Replays Since Reset               : {}\n", pcie_width < 16 ? 4182 : 0);
  f.Raw("        Replay Number Rollovers           : 0\n");
  f.Print("        Tx Throughput                     : {} KB/s\n",
          std::lround(n.Around(r.tx_mbps * 1000, 0.05)));
  f.Print("        Rx Throughput                     : {} KB/s\n",
          std::lround(n.Around(r.rx_mbps * 1000, 0.05)));
  f.Raw(
      "        Atomic Caps Outbound              : FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 "
      "CAS_64 \n"
      "        Atomic Caps Inbound               : FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 "
      "CAS_64 \n");
}

// Fan, performance state and the clock event (throttle) reasons.
void QueryClockEvents(const Reading& r, OutFile& f) {
  f.Raw("    Fan Speed                             : N/A\n");
  f.Raw("    Performance State                     : P0\n");
  bool hw_thermal = r.reasons & kReasonHwThermal;
  f.Raw("    Clocks Event Reasons\n");
  f.Print("        Idle                              : {}\n", Active(r.reasons & kReasonGpuIdle));
  f.Print("        Applications Clocks Setting       : {}\n",
          Active(r.reasons & kReasonApplicationsClocks));
  f.Print("        SW Power Cap                      : {}\n",
          Active(r.reasons & kReasonSwPowerCap));
  f.Print("        HW Slowdown                       : {}\n",
          Active(r.reasons & kReasonHwSlowdown));
  f.Print("            HW Thermal Slowdown           : {}\n", Active(hw_thermal));
  f.Raw(
      "            HW Power Brake Slowdown       : Not Active\n"
      "        Sync Boost                        : Not Active\n");
  f.Print("        SW Thermal Slowdown               : {}\n", Active(r.reasons & kReasonSwThermal));
  f.Raw(
      "        Display Clock Setting             : Not Active\n"
      "    Sparse Operation Mode                 : Disabled\n");
}

// Memory usage and utilisation, then the encoder, ECC and row remapping
// sections (all clean).
void QueryMemoryAndUtilization(const Reading& r, int used_mib, OutFile& f) {
  QueryMemoryUsage(f, "FB Memory Usage", kFbTotalMiB, used_mib, 454);
  QueryMemoryUsage(f, "BAR1 Memory Usage", 131072, r.busy ? 4 : 1);
  QueryMemoryUsage(f, "Conf Compute Protected Memory Usage", 0, 0);
  f.Raw(
      "    Compute Mode                          : Default\n"
      "    Utilization\n");
  f.Print("        Gpu                               : {} %\n", std::lround(r.util_pct));
  f.Print("        Memory                            : {} %\n", std::lround(r.mem_util_pct));
  f.Raw(
      "        Encoder                           : 0 %\n"
      "        Decoder                           : 0 %\n"
      "        JPEG                              : 0 %\n"
      "        OFA                               : 0 %\n"
      "    Encoder Stats\n"
      "        Active Sessions                   : 0\n"
      "        Average FPS                       : 0\n"
      "        Average Latency                   : 0\n"
      "    FBC Stats\n"
      "        Active Sessions                   : 0\n"
      "        Average FPS                       : 0\n"
      "        Average Latency                   : 0\n"
      "    ECC Mode\n"
      "        Current                           : Enabled\n"
      "        Pending                           : Enabled\n"
      "    ECC Errors\n"
      "        Volatile\n"
      "            SRAM Correctable              : 0\n"
      "            SRAM Uncorrectable Parity     : 0\n"
      "            SRAM Uncorrectable SEC-DED    : 0\n"
      "            DRAM Correctable              : 0\n"
      "            DRAM Uncorrectable            : 0\n"
      "        Aggregate\n"
      "            SRAM Correctable              : 0\n"
      "            SRAM Uncorrectable Parity     : 0\n"
      "            SRAM Uncorrectable SEC-DED    : 0\n"
      "            DRAM Correctable              : 0\n"
      "            DRAM Uncorrectable            : 0\n"
      "            SRAM Threshold Exceeded       : No\n"
      "        Aggregate Uncorrectable SRAM Sources\n"
      "            SRAM L2                       : 0\n"
      "            SRAM SM                       : 0\n"
      "            SRAM Microcontroller          : 0\n"
      "            SRAM PCIE                     : 0\n"
      "            SRAM Other                    : 0\n"
      "    Retired Pages\n"
      "        Single Bit ECC                    : N/A\n"
      "        Double Bit ECC                    : N/A\n"
      "        Pending Page Blacklist            : N/A\n"
      "    Remapped Rows\n"
      "        Correctable Error                 : 0\n"
      "        Uncorrectable Error               : 0\n"
      "        Pending                           : No\n"
      "        Remapping Failure Occurred        : No\n"
      "        Bank Remap Availability Histogram\n"
      "            Max                           : 2560 bank(s)\n"
      "            High                          : 0 bank(s)\n"
      "            Partial                       : 0 bank(s)\n"
      "            Low                           : 0 bank(s)\n"
      "            None                          : 0 bank(s)\n");
}

// Temperatures as T.Limit margins (what the 565 driver prints).
void QueryTemperature(long temp_c, OutFile& f) {
  f.Raw("    Temperature\n");
  f.Print("        GPU Current Temp                  : {} C\n", temp_c);
  f.Print("        GPU T.Limit Temp                  : {} C\n",
          static_cast<long>(kMaxOperatingTempC) - temp_c);
  f.Print("        GPU Shutdown T.Limit Temp         : {} C\n",
          static_cast<long>(kMaxOperatingTempC - kShutdownTempC));
  f.Print("        GPU Slowdown T.Limit Temp         : {} C\n",
          static_cast<long>(kMaxOperatingTempC - kHwSlowdownTempC));
  f.Raw(
      "        GPU Max Operating T.Limit Temp    : 0 C\n"
      "        GPU Target Temperature            : N/A\n");
  f.Print("        Memory Current Temp               : {} C\n", temp_c + 6);
  f.Raw("        Memory Max Operating T.Limit Temp : 0 C\n");
}

// GPU, memory and module power; draws the GPU's, then the memory's noise.
void QueryPower(const Reading& r, double limit_w, Noise& n, OutFile& f) {
  f.Raw("    GPU Power Readings\n");
  f.Print("        Power Draw                        : {:.2f} W\n", n.Around(r.power_w, 0.01));
  f.Print("        Current Power Limit               : {:.2f} W\n", limit_w);
  f.Print("        Requested Power Limit             : {:.2f} W\n", limit_w);
  f.Print("        Default Power Limit               : {:.2f} W\n", kDefaultPowerLimitW);
  f.Print("        Min Power Limit                   : {:.2f} W\n", kMinPowerLimitW);
  f.Print("        Max Power Limit                   : {:.2f} W\n", kDefaultPowerLimitW);
  f.Raw("    GPU Memory Power Readings \n");
  f.Print("        Power Draw                        : {:.2f} W\n",
          n.Around(r.busy ? 96 : 48, 0.03));
  f.Raw(
      "    Module Power Readings\n"
      "        Power Draw                        : N/A\n"
      "        Current Power Limit               : N/A\n"
      "        Requested Power Limit             : N/A\n"
      "        Default Power Limit               : N/A\n"
      "        Min Power Limit                   : N/A\n"
      "        Max Power Limit                   : N/A\n");
}

// Current, application (nvidia-smi -lgc shows here) and maximum clocks,
// voltage and the fabric.
void QueryClocks(const Reading& r, std::optional<double> locked_mhz, OutFile& f) {
  const long max_mhz = static_cast<long>(kMaxSmClockMhz);
  const long mem_mhz = static_cast<long>(kMemClockMhz);
  QueryClockBlock(f, "Clocks", std::lround(r.sm_clock_mhz), std::lround(r.sm_clock_mhz), mem_mhz,
                  r.busy ? 1755 : 765);
  QueryClockBlock(f, "Applications Clocks", std::lround(locked_mhz.value_or(kMaxSmClockMhz)),
                  std::nullopt, mem_mhz, std::nullopt);
  QueryClockBlock(f, "Default Applications Clocks", max_mhz, std::nullopt, mem_mhz, std::nullopt);
  f.Raw(
      "    Deferred Clocks\n"
      "        Memory                            : N/A\n");
  QueryClockBlock(f, "Max Clocks", max_mhz, max_mhz, mem_mhz, 1545);
  QueryClockBlock(f, "Max Customer Boost Clocks", max_mhz, std::nullopt, std::nullopt,
                  std::nullopt);
  f.Raw(
      "    Clock Policy\n"
      "        Auto Boost                        : N/A\n"
      "        Auto Boost Default                : N/A\n"
      "    Voltage\n");
  f.Print("        Graphics                          : {:.3f} mV\n",
          r.busy ? 670 + 330 * (r.sm_clock_mhz - kIdleClockMhz) / (kMaxSmClockMhz - kIdleClockMhz)
                 : 670.0);
  f.Raw(
      "    Fabric\n"
      "        State                             : Completed\n"
      "        Status                            : Success\n"
      "        CliqueId                          : 0\n"
      "        ClusterUUID                       : 00000000-0000-0000-0000-000000000000\n"
      "        Health\n"
      "            Bandwidth                     : N/A\n");
}

// The training process while the job runs, and the GPU's capabilities.
void QueryProcesses(const Reading& r, int rank, int used_mib, OutFile& f) {
  if (r.busy) {
    f.Raw(
        "    Processes\n"
        "        GPU instance ID                   : N/A\n"
        "        Compute instance ID               : N/A\n");
    f.Print("        Process ID                        : {}\n", TraceProcessId(rank));
    f.Raw(
        "            Type                          : C\n"
        "            Name                          : python3\n");
    f.Print("            Used GPU Memory               : {} MiB\n", used_mib - 1);
  } else {
    f.Raw("    Processes                             : None\n");
  }
  f.Raw(
      "    Capabilities\n"
      "        EGM                               : disabled\n\n");
}

// nvidia-smi -q, taken 1 s before the last step ends: the job is still running.
void Query(const RunContext& ctx, int node, OutFile& f) {
  const ClusterRun& run = ctx.run;
  int g = run.scenario().gpus_per_node;
  const NodeState& ns = run.node_states()[static_cast<size_t>(node)];
  int64_t host_t = ctx.host_ns(node, ctx.job_end_ns) - kSec;
  Civil c = ToCivil(host_t);
  f.Print("==============NVSMI LOG==============\n\n");
  f.Print("Timestamp                                 : {} {} {:2d} {:02d}:{:02d}:{:02d} {}\n",
          Weekday(c.weekday), Month(c.month), c.day, c.hour, c.minute, c.second, c.year);
  f.Raw(
      "Driver Version                            : 565.57.01\n"
      "CUDA Version                              : 12.7\n\n");
  f.Print("Attached GPUs                             : {}\n", g);
  for (int i = 0; i < g; ++i) {
    Reading r = ReadAt(ctx, node, i, host_t - run.clock_offsets_ns()[static_cast<size_t>(node)]);
    Noise n(run.scenario().seed ^ 0x77, node, i, host_t);
    int used_mib = r.busy ? kFbUsedMiB + 13 * i : 1;
    QueryIdentity(run, node, i, f);
    QueryPci(i, ns.pcie_width[static_cast<size_t>(i)], r, n, f);
    QueryClockEvents(r, f);
    QueryMemoryAndUtilization(r, used_mib, f);
    QueryTemperature(std::lround(r.temp_c), f);
    QueryPower(r, ns.power_limit_w[static_cast<size_t>(i)], n, f);
    QueryClocks(r, ns.locked_clock_mhz[static_cast<size_t>(i)], f);
    QueryProcesses(r, node * g + i, used_mib, f);
  }
}

// GPU NUMA node: the first half of the GPUs on socket 0.
int Numa(int gpu, int g) { return gpu < (g + 1) / 2 ? 0 : 1; }

void Topo(const RunContext& ctx, int node, OutFile& f) {
  int g = ctx.run.scenario().gpus_per_node;
  const NodeState& ns = ctx.run.node_states()[static_cast<size_t>(node)];
  int nics = g + 1;  // one IB NIC per GPU (mlx5_0..), then the Ethernet NIC of eth0
  auto nic_numa = [&](int nic) { return nic < g ? Numa(nic, g) : 0; };
  f.Raw("\t");
  for (int i = 0; i < g; ++i) f.Print("GPU{}\t", i);
  for (int j = 0; j < nics; ++j) f.Print("NIC{}\t", j);
  f.Raw("CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
  auto path = [&](int numa_a, int numa_b, bool same_switch) -> std::string {
    if (same_switch) return "PIX";
    return numa_a == numa_b ? "NODE" : "SYS";
  };
  for (int i = 0; i < g; ++i) {
    f.Print("GPU{}", i);
    for (int j = 0; j < g; ++j) {
      if (i == j) {
        f.Raw("\t X ");
        continue;
      }
      int links = std::min(ns.nvlinks_active[static_cast<size_t>(i)],
                           ns.nvlinks_active[static_cast<size_t>(j)]);
      if (links > 0) f.Print("\tNV{}", links);
      else f.Print("\t{}", path(Numa(i, g), Numa(j, g), false));
    }
    for (int j = 0; j < nics; ++j) f.Print("\t{}", path(Numa(i, g), nic_numa(j), j == i));
    int numa = Numa(i, g);
    f.Print("\t{}\t{}\t\tN/A\n", numa == 0 ? "0-55,112-167" : "56-111,168-223", numa);
  }
  for (int j = 0; j < nics; ++j) {
    f.Print("NIC{}", j);
    for (int i = 0; i < g; ++i) f.Print("\t{}", path(nic_numa(j), Numa(i, g), j == i));
    for (int k = 0; k < nics; ++k) {
      if (k == j) f.Raw("\t X ");
      else f.Print("\t{}", path(nic_numa(j), nic_numa(k), j < g && k < g && (j ^ 1) == k));
    }
    f.Raw("\t\t\t\t\n");
  }
  f.Raw(
      "\nLegend:\n\n"
      "  X    = Self\n"
      "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
      "(e.g., QPI/UPI)\n"
      "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
      "within a NUMA node\n"
      "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
      "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
      "Bridge)\n"
      "  PIX  = Connection traversing at most a single PCIe bridge\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n\n"
      "NIC Legend:\n\n");
  for (int j = 0; j < nics; ++j) f.Print("  NIC{}: mlx5_{}\n", j, j);
}

void Nvlink(const RunContext& ctx, int node, OutFile& f) {
  int g = ctx.run.scenario().gpus_per_node;
  const NodeState& ns = ctx.run.node_states()[static_cast<size_t>(node)];
  for (int i = 0; i < g; ++i) {
    f.Print("GPU {}: NVIDIA H100 80GB HBM3 (UUID: {})\n", i,
            ctx.run.gpu_uuids()[static_cast<size_t>(node * g + i)]);
    int active = ns.nvlinks_active[static_cast<size_t>(i)];
    for (int l = 0; l < kNvlinksPerGpu; ++l) {
      // Links fail from the highest index down.
      if (l < active) f.Print("         Link {}: {:.3f} GB/s\n", l, kNvlinkGBps);
      else f.Print("         Link {}: <inactive>\n", l);
    }
  }
}

}  // namespace

Status WriteNvidiaSmiFiles(const RunContext& ctx, int node, uint64_t* bytes, int* files) {
  std::string dir = ctx.dir + "/" + HostName(node) + "/";
  struct Item {
    const char* name;
    void (*fn)(const RunContext&, int, OutFile&);
  };
  static constexpr Item kItems[] = {{"nvidia-smi-dmon.txt", Dmon},
                                    {"nvidia-smi-query.csv", QueryCsv},
                                    {"nvidia-smi-q.txt", Query},
                                    {"nvidia-smi-topo.txt", Topo},
                                    {"nvidia-smi-nvlink.txt", Nvlink}};
  for (const Item& item : kItems) {
    OutFile f(dir + item.name);
    item.fn(ctx, node, f);
    if (Status st = f.Close(bytes); !st.ok()) return st;
    ++*files;
  }
  return Status::Ok();
}

}  // namespace laggard::sim
