#include "agent/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/hardware.h"

namespace laggard::agent {
namespace {

struct GpuMetric {
  GpuField field;
  std::string_view name;
  std::string_view help;
};

// One gauge per numeric NVML field; DCGM equivalents in docs/agent.md.
constexpr GpuMetric kGpuMetrics[] = {
    {GpuField::kTempC, "laggard_gpu_temp_celsius", "GPU temperature (NVML_TEMPERATURE_GPU)."},
    {GpuField::kSmClockMhz, "laggard_gpu_sm_clock_mhz", "Current SM clock."},
    {GpuField::kSmClockMaxMhz, "laggard_gpu_sm_clock_max_mhz", "Maximum SM clock of the GPU."},
    {GpuField::kMemClockMhz, "laggard_gpu_mem_clock_mhz", "Current memory clock."},
    {GpuField::kMemClockMaxMhz, "laggard_gpu_mem_clock_max_mhz",
     "Maximum memory clock of the GPU."},
    {GpuField::kPowerW, "laggard_gpu_power_watts", "Power draw."},
    {GpuField::kPowerLimitW, "laggard_gpu_power_limit_watts",
     "Enforced power limit (after every limiter, e.g. nvidia-smi -pl)."},
    {GpuField::kPowerLimitDefaultW, "laggard_gpu_power_limit_default_watts",
     "Default power management limit of the GPU."},
    {GpuField::kUtilPct, "laggard_gpu_utilization_percent",
     "Percent of the last sample period during which a kernel ran."},
    {GpuField::kMemUtilPct, "laggard_gpu_mem_utilization_percent",
     "Percent of the last sample period during which device memory was read or written."},
    {GpuField::kPcieGen, "laggard_gpu_pcie_link_gen", "Current PCIe link generation."},
    {GpuField::kPcieGenMax, "laggard_gpu_pcie_link_gen_max",
     "Maximum PCIe link generation of the GPU and system."},
    {GpuField::kPcieWidth, "laggard_gpu_pcie_link_width", "Current PCIe link width (lanes)."},
    {GpuField::kPcieWidthMax, "laggard_gpu_pcie_link_width_max",
     "Maximum PCIe link width (lanes)."},
    {GpuField::kPcieTxKbS, "laggard_gpu_pcie_tx_kilobytes_per_second",
     "PCIe transmit throughput over NVML's 20 ms window, KB/s."},
    {GpuField::kPcieRxKbS, "laggard_gpu_pcie_rx_kilobytes_per_second",
     "PCIe receive throughput over NVML's 20 ms window, KB/s."},
    {GpuField::kClockEvents, "laggard_gpu_clock_event_reasons",
     "Bitmask of active clock-event (throttle) reasons, NVML nvmlClocksEventReason* bits."},
    {GpuField::kEccUncorrectedVolatile, "laggard_gpu_ecc_uncorrected_volatile_errors",
     "Uncorrected ECC errors since the driver was loaded."},
};

// Appends `v` with backslashes and newlines escaped, and double quotes too
// when `escape_quotes` (label values; HELP text keeps its quotes).
void AppendEscaped(std::string& out, std::string_view v, bool escape_quotes) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"' && escape_quotes) out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  AppendEscaped(out, v, /*escape_quotes=*/true);
  return out;
}

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

void PromWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  AppendEscaped(out_, help, /*escape_quotes=*/false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PromWriter::Sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      AppendEscaped(out_, labels[i].second, /*escape_quotes=*/true);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatSampleValue(value);
  out_ += '\n';
}

namespace {

// One exposition of a MetricsInput, family by family; a null pointer in the
// input stands for nothing to report.
class MetricsRenderer {
 public:
  explicit MetricsRenderer(const MetricsInput& in)
      : in_(in),
        gpus_(in.gpus ? *in.gpus : kNoGpus),
        ranks_(in.ranks ? *in.ranks : kNoRanks),
        links_(in.links ? *in.links : kNoLinks),
        cpu_(in.host_cpu ? *in.host_cpu : kNoCpu),
        c_(in.counters ? *in.counters : kNoCounters) {
    base_ = {{"host", in.host}};
    if (in.job) base_.emplace_back("job", *in.job);
  }

  std::string Render() {
    w_.text().reserve(32 * 1024);
    // Agent health first: it is there even with no GPU and no step.
    AgentHealth();
    AgentIntake();
    AgentLogs();
    Gpus();
    Steps();
    IbPorts();
    NetIfs();
    PcieLinks();
    HostCpuFamilies();
    return std::move(w_.text());
  }

 private:
  static inline const std::vector<GpuSnapshot> kNoGpus{};
  static inline const std::vector<RankSteps> kNoRanks{};
  static inline const HostLinks kNoLinks{};
  static inline const HostCpu kNoCpu{};
  static inline const AgentCounters kNoCounters{};

  // The host (and job) labels, then `extra`.
  Labels With(Labels extra) const {
    Labels l = base_;
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  }
  Labels GpuLabels(const GpuSnapshot& g, Labels extra = {}) const {
    Labels l = base_;
    l.emplace_back("gpu", std::to_string(g.index));
    if (g.uuid) l.emplace_back("uuid", *g.uuid);
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  }
  // rank, and the GPU it said it drives (with that GPU's uuid when known).
  Labels RankLabels(const RankSteps& r, Labels extra = {}) const {
    Labels l = base_;
    l.emplace_back("rank", std::to_string(r.rank));
    if (r.gpu) {
      l.emplace_back("gpu", std::to_string(*r.gpu));
      if (*r.gpu >= 0 && static_cast<size_t>(*r.gpu) < gpus_.size() &&
          gpus_[static_cast<size_t>(*r.gpu)].uuid) {
        l.emplace_back("uuid", *gpus_[static_cast<size_t>(*r.gpu)].uuid);
      }
    }
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  }

  // A family whose samples `emit` writes; dropped, header and all, when it
  // writes none. Returns whether the family was kept.
  template <typename Emit>
  bool OptionalFamily(std::string_view name, std::string_view type, std::string_view help,
                      Emit&& emit) {
    size_t mark = w_.text().size();
    w_.Family(name, type, help);
    size_t header_end = w_.text().size();
    emit();
    if (w_.text().size() != header_end) return true;
    w_.text().resize(mark);
    return false;
  }
  // A family with `emit` run for each GPU; dropped when empty.
  template <typename Emit>
  void GpuFamily(std::string_view name, std::string_view type, std::string_view help, Emit&& emit) {
    OptionalFamily(name, type, help, [&] {
      for (const GpuSnapshot& g : gpus_) emit(g);
    });
  }
  // A family with one sample per rank, `value(rank)`.
  template <typename Value>
  void RankFamily(std::string_view name, std::string_view type, std::string_view help,
                  Value&& value) {
    w_.Family(name, type, help);
    for (const RankSteps& r : ranks_) w_.Sample(name, RankLabels(r), value(r));
  }
  // A family with one sample per IB port, `value(port)`, for the ports that have it.
  template <typename Value>
  void PortFamily(std::string_view name, std::string_view type, std::string_view help,
                  Value&& value) {
    w_.Family(name, type, help);
    for (const IbPortSample& p : links_.ib_ports) {
      if (std::optional<double> v = value(p)) w_.Sample(name, PortLabels(p), *v);
    }
  }
  Labels PortLabels(const IbPortSample& p, Labels extra = {}) const {
    Labels l = With({{"device", p.ca}, {"port", std::to_string(p.port)}});
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  }
  // A counter per step transport.
  void PerSource(std::string_view name, std::string_view help,
                 const std::array<uint64_t, static_cast<size_t>(StepSource::kCount)>& counts) {
    w_.Family(name, "counter", help);
    for (size_t s = 0; s < counts.size(); ++s) {
      w_.Sample(name, With({{"source", std::string(StepSourceName(static_cast<StepSource>(s)))}}),
                static_cast<double>(counts[s]));
    }
  }
  // A counter per rolling log.
  void PerLog(std::string_view name, std::string_view help,
              const std::map<std::string, uint64_t>& counts) {
    w_.Family(name, "counter", help);
    for (const auto& [log, v] : counts)
      w_.Sample(name, With({{"log", log}}), static_cast<double>(v));
  }

  void AgentHealth() {
    w_.Family("laggard_agent_info", "gauge", "Constant 1; the agent's version and GPU backend.");
    w_.Sample("laggard_agent_info",
              With({{"version", in_.version}, {"gpu_backend", in_.gpu_backend}}), 1);
    w_.Family("laggard_agent_gpus", "gauge", "GPUs the backend reports.");
    w_.Sample("laggard_agent_gpus", base_, static_cast<double>(gpus_.size()));
    w_.Family("laggard_agent_samples_total", "counter",
              "Sampling rounds done (GPUs and host links).");
    w_.Sample("laggard_agent_samples_total", base_, static_cast<double>(c_.samples));
    if (c_.samples > 0) {
      w_.Family("laggard_agent_sample_duration_seconds", "gauge",
                "Duration of the last sampling round.");
      w_.Sample("laggard_agent_sample_duration_seconds", base_,
                ToSeconds(c_.last_sample_duration_ns));
      w_.Family("laggard_agent_last_sample_timestamp_seconds", "gauge",
                "Unix time of the last sampling round.");
      w_.Sample("laggard_agent_last_sample_timestamp_seconds", base_, ToSeconds(c_.last_sample_ns));
    }
  }

  void AgentIntake() {
    PerSource("laggard_agent_step_datagrams_total", "Step datagrams received, by transport.",
              c_.datagrams);
    PerSource("laggard_agent_step_reports_total", "Step reports accepted, by transport.", c_.steps);
    w_.Family(
        "laggard_agent_step_lines_bad_total", "counter",
        "Step lines refused, by reason and transport (see docs/agent.md for the line format).");
    for (size_t b = 0; b < c_.bad_lines.size(); ++b) {
      for (size_t s = 0; s < c_.bad_lines[b].size(); ++s) {
        w_.Sample("laggard_agent_step_lines_bad_total",
                  With({{"reason", std::string(BadLineName(static_cast<BadLine>(b)))},
                        {"source", std::string(StepSourceName(static_cast<StepSource>(s)))}}),
                  static_cast<double>(c_.bad_lines[b][s]));
      }
    }
    w_.Family("laggard_agent_ranks_expired_total", "counter",
              "Ranks forgotten after reporting nothing for --rank-ttl.");
    w_.Sample("laggard_agent_ranks_expired_total", base_, static_cast<double>(c_.ranks_expired));
    w_.Family("laggard_agent_step_pids_other_namespace_total", "counter",
              "Step reports whose pid= is of another PID namespace than the /proc the agent "
              "reads: not tied to their rank.");
    w_.Sample("laggard_agent_step_pids_other_namespace_total", base_,
              static_cast<double>(c_.pids_other_namespace));
    w_.Family("laggard_agent_sysfs_parse_errors_total", "counter",
              "sysfs attributes and /proc/stat lines with unexpected contents.");
    w_.Sample("laggard_agent_sysfs_parse_errors_total", base_,
              static_cast<double>(c_.sysfs_parse_errors));
  }

  void AgentLogs() {
    if (c_.log_bytes.empty()) return;
    PerLog("laggard_agent_log_bytes_total", "Bytes written to the rolling logs.", c_.log_bytes);
    PerLog("laggard_agent_log_write_errors_total",
           "Rolling-log writes that failed (the line was dropped).", c_.log_write_errors);
    PerLog("laggard_agent_log_rotations_total", "Rolling-log rotations.", c_.log_rotations);
  }

  void Gpus() {
    GpuFamily("laggard_gpu_info", "gauge", "Constant 1 per GPU; its name and PCI bus id.",
              [&](const GpuSnapshot& g) {
                Labels extra;
                if (g.name) extra.emplace_back("name", *g.name);
                if (g.bus_id) extra.emplace_back("bus_id", *g.bus_id);
                w_.Sample("laggard_gpu_info", GpuLabels(g, std::move(extra)), 1);
              });
    GpuFamily(
        "laggard_gpu_lost", "gauge",
        "1 when NVML reports the GPU lost (GPU_IS_LOST: fallen off the bus); its other "
        "metrics are absent meanwhile.",
        [&](const GpuSnapshot& g) { w_.Sample("laggard_gpu_lost", GpuLabels(g), g.lost ? 1 : 0); });
    for (const GpuMetric& m : kGpuMetrics) {
      GpuFamily(m.name, "gauge", m.help, [&](const GpuSnapshot& g) {
        if (auto v = g[m.field]) w_.Sample(m.name, GpuLabels(g), *v);
      });
    }
    GpuFamily(
        "laggard_gpu_clock_event_active", "gauge",
        "1 when the clock-event (throttle) reason is active, 0 when not; one series per reason.",
        [&](const GpuSnapshot& g) {
          auto v = g[GpuField::kClockEvents];
          if (!v || !(*v >= 0 && *v < 1.8e19)) return;  // a bitmask; anything else is not one
          uint64_t bits = static_cast<uint64_t>(*v);
          for (auto [bit, name] : ClockEventBits()) {
            w_.Sample("laggard_gpu_clock_event_active",
                      GpuLabels(g, {{"reason", std::string(name)}}), (bits & bit) != 0 ? 1 : 0);
          }
        });
    GpuNvlinks();
    GpuEvents();
  }

  void GpuNvlinks() {
    GpuFamily("laggard_gpu_nvlinks_active", "gauge", "NVLinks of the GPU that are active.",
              [&](const GpuSnapshot& g) {
                if (auto n = g.nvlinks_active())
                  w_.Sample("laggard_gpu_nvlinks_active", GpuLabels(g), *n);
              });
    GpuFamily("laggard_gpu_nvlinks", "gauge", "NVLinks the GPU has.", [&](const GpuSnapshot& g) {
      if (g.nvlinks_known)
        w_.Sample("laggard_gpu_nvlinks", GpuLabels(g), static_cast<double>(g.nvlinks.size()));
    });
    GpuFamily("laggard_gpu_nvlink_link_active", "gauge", "1 when the NVLink is active, per link.",
              [&](const GpuSnapshot& g) {
                for (size_t l = 0; l < g.nvlinks.size(); ++l) {
                  w_.Sample("laggard_gpu_nvlink_link_active",
                            GpuLabels(g, {{"link", std::to_string(l)}}), g.nvlinks[l] ? 1 : 0);
                }
              });
  }

  void GpuEvents() {
    GpuFamily("laggard_gpu_xid_events_total", "counter",
              "XID events seen since the agent started, by XID.", [&](const GpuSnapshot& g) {
                for (const auto& [xid, n] : g.xid_counts) {
                  w_.Sample("laggard_gpu_xid_events_total",
                            GpuLabels(g, {{"xid", std::to_string(xid)}}), static_cast<double>(n));
                }
              });
    GpuFamily("laggard_gpu_last_xid", "gauge", "The most recent XID seen since the agent started.",
              [&](const GpuSnapshot& g) {
                if (g.last_xid)
                  w_.Sample("laggard_gpu_last_xid", GpuLabels(g), static_cast<double>(*g.last_xid));
              });
    GpuFamily(
        "laggard_gpu_query_errors_total", "counter",
        "NVML queries that failed with an error other than NOT_SUPPORTED, by field and error.",
        [&](const GpuSnapshot& g) {
          for (const auto& [key, n] : g.query_errors) {
            w_.Sample("laggard_gpu_query_errors_total",
                      GpuLabels(g, {{"field", key.first}, {"error", key.second}}),
                      static_cast<double>(n));
          }
        });
  }

  void Steps() {
    if (ranks_.empty()) return;
    RankFamily("laggard_step_duration_seconds", "gauge",
               "Duration of the rank's last reported step.",
               [](const RankSteps& r) { return ToSeconds(r.last_duration_ns); });
    RankFamily("laggard_step_last", "gauge", "Number of the rank's last reported step.",
               [](const RankSteps& r) { return static_cast<double>(r.last_step); });
    RankFamily("laggard_steps_total", "counter", "Steps the rank reported since the agent started.",
               [](const RankSteps& r) { return static_cast<double>(r.reports); });
    RankFamily("laggard_step_seconds_total", "counter",
               "Sum of the rank's reported step times; rate(...) / rate(laggard_steps_total) is "
               "the mean step time.",
               [](const RankSteps& r) { return r.seconds_total; });
    RankFamily("laggard_step_last_report_timestamp_seconds", "gauge",
               "Unix time of the rank's last report.",
               [](const RankSteps& r) { return ToSeconds(r.last_report_ns); });
    RankFamily("laggard_rank_stalled", "gauge",
               "1 while the rank has reported no step for 1.5 x its typical step + 5 s and "
               "another rank of this host reported a later step (it holds the others up); "
               "else 0.",
               [](const RankSteps& r) { return r.stalled ? 1.0 : 0.0; });
    bool phases = OptionalFamily("laggard_step_phase_seconds", "gauge",
                                 "A phase's time in the rank's last step that reported it.", [&] {
                                   for (const RankSteps& r : ranks_) {
                                     for (const auto& [phase, d] : r.last_phase_ns) {
                                       w_.Sample("laggard_step_phase_seconds",
                                                 RankLabels(r, {{"phase", phase}}), ToSeconds(d));
                                     }
                                   }
                                 });
    if (!phases) return;
    w_.Family("laggard_step_phase_seconds_total", "counter", "Sum of a phase's reported times.");
    for (const RankSteps& r : ranks_) {
      for (const auto& [phase, s] : r.phase_seconds_total) {
        w_.Sample("laggard_step_phase_seconds_total", RankLabels(r, {{"phase", phase}}), s);
      }
    }
  }

  void IbPorts() {
    if (links_.ib_ports.empty()) return;
    using Value = std::optional<double>;
    PortFamily("laggard_ib_port_active", "gauge", "1 when the InfiniBand port's state is ACTIVE.",
               [](const IbPortSample& p) {
                 return p.state_code ? Value(*p.state_code == 4 ? 1 : 0) : Value();
               });
    PortFamily("laggard_ib_port_state", "gauge",
               "Port state code: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.",
               [](const IbPortSample& p) { return p.state_code ? Value(*p.state_code) : Value(); });
    PortFamily("laggard_ib_port_phys_state", "gauge",
               "Physical state code: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, "
               "5 LinkUp, "
               "6 LinkErrorRecovery, 7 PhyTest.",
               [](const IbPortSample& p) {
                 return p.phys_state_code ? Value(*p.phys_state_code) : Value();
               });
    PortFamily("laggard_ib_port_rate_gbps", "gauge", "Port data rate (active width x speed), Gb/s.",
               [](const IbPortSample& p) { return p.rate_gbps; });
    PortFamily("laggard_ib_port_width", "gauge", "Active link width in lanes (4 for 4X).",
               [](const IbPortSample& p) { return p.width ? Value(*p.width) : Value(); });
    auto counter = [](std::string_view name) {
      return [name](const IbPortSample& p) {
        auto it = p.counters.find(std::string(name));
        return it != p.counters.end() ? Value(static_cast<double>(it->second)) : Value();
      };
    };
    PortFamily("laggard_ib_port_transmit_bytes_total", "counter",
               "Bytes transmitted (port_xmit_data x 4).", counter("port_xmit_data"));
    PortFamily("laggard_ib_port_receive_bytes_total", "counter",
               "Bytes received (port_rcv_data x 4).", counter("port_rcv_data"));
    w_.Family("laggard_ib_port_counter_total", "counter",
              "Other port counters as the kernel names them (symbol_error, link_downed, "
              "port_rcv_errors, port_xmit_discards ...).");
    for (const auto& p : links_.ib_ports) {
      for (const auto& [name, v] : p.counters) {
        if (name == "port_xmit_data" || name == "port_rcv_data") continue;
        w_.Sample("laggard_ib_port_counter_total", PortLabels(p, {{"counter", name}}),
                  static_cast<double>(v));
      }
    }
  }

  void NetIfs() {
    if (links_.net_ifs.empty()) return;
    w_.Family("laggard_net_up", "gauge",
              "1 when the interface's operstate is up, 0 when down; absent when unknown.");
    for (const auto& n : links_.net_ifs) {
      if (n.operstate && (*n.operstate == "up" || *n.operstate == "down")) {
        w_.Sample("laggard_net_up", With({{"iface", n.iface}}), *n.operstate == "up" ? 1 : 0);
      }
    }
    w_.Family("laggard_net_speed_mbps", "gauge",
              "Negotiated link speed, Mb/s (absent when the link is down).");
    for (const auto& n : links_.net_ifs) {
      if (n.speed_mbps) {
        w_.Sample("laggard_net_speed_mbps", With({{"iface", n.iface}}),
                  static_cast<double>(*n.speed_mbps));
      }
    }
  }

  void PcieLinks() {
    if (links_.pcie_links.empty()) return;
    struct PcieMetric {
      std::string_view name, help;
      std::optional<int32_t> PcieLinkSample::*field;
    };
    constexpr PcieMetric kPcie[] = {
        {"laggard_pcie_link_gen", "Current PCIe link generation of the device.",
         &PcieLinkSample::gen},
        {"laggard_pcie_link_gen_max", "Maximum PCIe link generation of the device.",
         &PcieLinkSample::max_gen},
        {"laggard_pcie_link_width", "Current PCIe link width (lanes).", &PcieLinkSample::width},
        {"laggard_pcie_link_width_max", "Maximum PCIe link width (lanes).",
         &PcieLinkSample::max_width},
    };
    for (const PcieMetric& m : kPcie) {
      w_.Family(m.name, "gauge", m.help);
      for (const auto& l : links_.pcie_links) {
        if (auto v = l.*m.field) {
          Labels labels = With({{"device", l.address}});
          if (l.device_class) labels.emplace_back("class", *l.device_class);
          w_.Sample(m.name, labels, *v);
        }
      }
    }
  }

  // The host's cores (host_cpu.h): busy and steal shares from /proc/stat,
  // the speed probe's time and its ratio to the fastest core, the run queue.
  void HostCpuFamilies() {
    struct CoreMetric {
      std::string_view name, help;
      std::optional<double> CoreSample::*field;
    };
    constexpr CoreMetric kCore[] = {
        {"laggard_host_cpu_busy_ratio",
         "Share of the core's time busy over the last round (not idle or iowait; steal counts "
         "as busy).",
         &CoreSample::busy_ratio},
        {"laggard_host_cpu_steal_ratio",
         "Share of the core's time the hypervisor gave another guest over the last round "
         "(/proc/stat steal; often 0 where a neighbour shares the physical core).",
         &CoreSample::steal_ratio},
        {"laggard_host_cpu_probe_seconds",
         "Wall time of the agent's fixed piece of work pinned to the core, its latest run.",
         &CoreSample::probe_s},
        {"laggard_host_cpu_speed_ratio",
         "The fastest core's latest probe time over this core's (1: the fastest; 0.5: it ran "
         "the same work twice as long).",
         &CoreSample::speed_ratio},
    };
    for (const CoreMetric& m : kCore) {
      if (std::none_of(cpu_.cores.begin(), cpu_.cores.end(),
                       [&](const CoreSample& c) { return (c.*m.field).has_value(); }))
        continue;
      w_.Family(m.name, "gauge", m.help);
      for (const CoreSample& c : cpu_.cores) {
        if (auto v = c.*m.field) w_.Sample(m.name, With({{"cpu", std::to_string(c.cpu)}}), *v);
      }
    }
    if (cpu_.procs_running) {
      w_.Family("laggard_host_procs_running", "gauge",
                "Threads runnable on the host now, the agent's own included (/proc/stat).");
      w_.Sample("laggard_host_procs_running", base_, static_cast<double>(*cpu_.procs_running));
    }
    if (cpu_.procs_blocked) {
      w_.Family("laggard_host_procs_blocked", "gauge",
                "Threads blocked on I/O on the host now (/proc/stat).");
      w_.Sample("laggard_host_procs_blocked", base_, static_cast<double>(*cpu_.procs_blocked));
    }
  }

  const MetricsInput& in_;
  const std::vector<GpuSnapshot>& gpus_;
  const std::vector<RankSteps>& ranks_;
  const HostLinks& links_;
  const HostCpu& cpu_;
  const AgentCounters& c_;
  Labels base_;
  PromWriter w_;
};

}  // namespace

std::string RenderMetrics(const MetricsInput& in) { return MetricsRenderer(in).Render(); }

}  // namespace laggard::agent
