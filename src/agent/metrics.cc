#include "agent/metrics.h"

#include <cmath>

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
    {GpuField::kMemClockMaxMhz, "laggard_gpu_mem_clock_max_mhz", "Maximum memory clock of the GPU."},
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
    {GpuField::kPcieGenMax, "laggard_gpu_pcie_link_gen_max", "Maximum PCIe link generation of the GPU and system."},
    {GpuField::kPcieWidth, "laggard_gpu_pcie_link_width", "Current PCIe link width (lanes)."},
    {GpuField::kPcieWidthMax, "laggard_gpu_pcie_link_width_max", "Maximum PCIe link width (lanes)."},
    {GpuField::kPcieTxKbS, "laggard_gpu_pcie_tx_kilobytes_per_second",
     "PCIe transmit throughput over NVML's 20 ms window, KB/s."},
    {GpuField::kPcieRxKbS, "laggard_gpu_pcie_rx_kilobytes_per_second",
     "PCIe receive throughput over NVML's 20 ms window, KB/s."},
    {GpuField::kClockEvents, "laggard_gpu_clock_event_reasons",
     "Bitmask of active clock-event (throttle) reasons, NVML nvmlClocksEventReason* bits."},
    {GpuField::kEccUncorrectedVolatile, "laggard_gpu_ecc_uncorrected_volatile_errors",
     "Uncorrected ECC errors since the driver was loaded."},
};

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
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
  for (char c : help) {
    if (c == '\\') out_ += "\\\\";
    else if (c == '\n') out_ += "\\n";
    else out_.push_back(c);
  }
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
      out_ += EscapeLabelValue(labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatSampleValue(value);
  out_ += '\n';
}

std::string RenderMetrics(const MetricsInput& in) {
  PromWriter w;
  w.text().reserve(32 * 1024);
  Labels base = {{"host", in.host}};
  if (in.job) base.emplace_back("job", *in.job);
  auto with = [&](Labels extra) {
    Labels l = base;
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  };
  static const std::vector<GpuSnapshot> kNoGpus;
  static const std::vector<RankSteps> kNoRanks;
  static const HostLinks kNoLinks;
  static const AgentCounters kNoCounters;
  const std::vector<GpuSnapshot>& gpus = in.gpus ? *in.gpus : kNoGpus;
  const std::vector<RankSteps>& ranks = in.ranks ? *in.ranks : kNoRanks;
  const HostLinks& links = in.links ? *in.links : kNoLinks;
  const AgentCounters& c = in.counters ? *in.counters : kNoCounters;

  auto gpu_labels = [&](const GpuSnapshot& g, Labels extra = {}) {
    Labels l = base;
    l.emplace_back("gpu", std::to_string(g.index));
    if (g.uuid) l.emplace_back("uuid", *g.uuid);
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  };
  // A family whose samples come from a per-GPU lambda; skipped when empty.
  auto gpu_family = [&](std::string_view name, std::string_view type, std::string_view help,
                        auto&& emit) {
    size_t mark = w.text().size();
    w.Family(name, type, help);
    size_t header_end = w.text().size();
    for (const GpuSnapshot& g : gpus) emit(g);
    if (w.text().size() == header_end) w.text().resize(mark);
  };

  // Agent health first: it is there even with no GPU and no step.
  w.Family("laggard_agent_info", "gauge", "Constant 1; the agent's version and GPU backend.");
  w.Sample("laggard_agent_info", with({{"version", in.version}, {"gpu_backend", in.gpu_backend}}), 1);
  w.Family("laggard_agent_gpus", "gauge", "GPUs the backend reports.");
  w.Sample("laggard_agent_gpus", base, static_cast<double>(gpus.size()));
  w.Family("laggard_agent_samples_total", "counter", "Sampling rounds done (GPUs and host links).");
  w.Sample("laggard_agent_samples_total", base, static_cast<double>(c.samples));
  if (c.samples > 0) {
    w.Family("laggard_agent_sample_duration_seconds", "gauge", "Duration of the last sampling round.");
    w.Sample("laggard_agent_sample_duration_seconds", base, ToSeconds(c.last_sample_duration_ns));
    w.Family("laggard_agent_last_sample_timestamp_seconds", "gauge",
             "Unix time of the last sampling round.");
    w.Sample("laggard_agent_last_sample_timestamp_seconds", base, ToSeconds(c.last_sample_ns));
  }
  w.Family("laggard_agent_step_datagrams_total", "counter", "Step datagrams received, by transport.");
  for (size_t s = 0; s < c.datagrams.size(); ++s) {
    w.Sample("laggard_agent_step_datagrams_total",
             with({{"source", std::string(StepSourceName(static_cast<StepSource>(s)))}}),
             static_cast<double>(c.datagrams[s]));
  }
  w.Family("laggard_agent_step_reports_total", "counter", "Step reports accepted, by transport.");
  for (size_t s = 0; s < c.steps.size(); ++s) {
    w.Sample("laggard_agent_step_reports_total",
             with({{"source", std::string(StepSourceName(static_cast<StepSource>(s)))}}),
             static_cast<double>(c.steps[s]));
  }
  w.Family("laggard_agent_step_lines_bad_total", "counter",
           "Step lines refused, by reason and transport (see docs/agent.md for the line format).");
  for (size_t b = 0; b < c.bad_lines.size(); ++b) {
    for (size_t s = 0; s < c.bad_lines[b].size(); ++s) {
      w.Sample("laggard_agent_step_lines_bad_total",
               with({{"reason", std::string(BadLineName(static_cast<BadLine>(b)))},
                     {"source", std::string(StepSourceName(static_cast<StepSource>(s)))}}),
               static_cast<double>(c.bad_lines[b][s]));
    }
  }
  w.Family("laggard_agent_ranks_expired_total", "counter",
           "Ranks forgotten after reporting nothing for --rank-ttl.");
  w.Sample("laggard_agent_ranks_expired_total", base, static_cast<double>(c.ranks_expired));
  w.Family("laggard_agent_sysfs_parse_errors_total", "counter",
           "sysfs attributes with unexpected contents.");
  w.Sample("laggard_agent_sysfs_parse_errors_total", base, static_cast<double>(c.sysfs_parse_errors));
  if (!c.log_bytes.empty()) {
    w.Family("laggard_agent_log_bytes_total", "counter", "Bytes written to the rolling logs.");
    for (const auto& [log, v] : c.log_bytes) w.Sample("laggard_agent_log_bytes_total", with({{"log", log}}), static_cast<double>(v));
    w.Family("laggard_agent_log_write_errors_total", "counter",
             "Rolling-log writes that failed (the line was dropped).");
    for (const auto& [log, v] : c.log_write_errors)
      w.Sample("laggard_agent_log_write_errors_total", with({{"log", log}}), static_cast<double>(v));
    w.Family("laggard_agent_log_rotations_total", "counter", "Rolling-log rotations.");
    for (const auto& [log, v] : c.log_rotations)
      w.Sample("laggard_agent_log_rotations_total", with({{"log", log}}), static_cast<double>(v));
  }

  // GPUs.
  gpu_family("laggard_gpu_info", "gauge", "Constant 1 per GPU; its name and PCI bus id.",
             [&](const GpuSnapshot& g) {
               Labels extra;
               if (g.name) extra.emplace_back("name", *g.name);
               if (g.bus_id) extra.emplace_back("bus_id", *g.bus_id);
               w.Sample("laggard_gpu_info", gpu_labels(g, std::move(extra)), 1);
             });
  gpu_family("laggard_gpu_lost", "gauge",
             "1 when NVML reports the GPU lost (GPU_IS_LOST: fallen off the bus); its other "
             "metrics are absent meanwhile.",
             [&](const GpuSnapshot& g) { w.Sample("laggard_gpu_lost", gpu_labels(g), g.lost ? 1 : 0); });
  for (const GpuMetric& m : kGpuMetrics) {
    gpu_family(m.name, "gauge", m.help, [&](const GpuSnapshot& g) {
      if (auto v = g[m.field]) w.Sample(m.name, gpu_labels(g), *v);
    });
  }
  gpu_family("laggard_gpu_clock_event_active", "gauge",
             "1 when the clock-event (throttle) reason is active, 0 when not; one series per reason.",
             [&](const GpuSnapshot& g) {
               auto v = g[GpuField::kClockEvents];
               if (!v || !(*v >= 0 && *v < 1.8e19)) return;  // a bitmask; anything else is not one
               uint64_t bits = static_cast<uint64_t>(*v);
               for (auto [bit, name] : ClockEventBits()) {
                 w.Sample("laggard_gpu_clock_event_active", gpu_labels(g, {{"reason", std::string(name)}}),
                          (bits & bit) != 0 ? 1 : 0);
               }
             });
  gpu_family("laggard_gpu_nvlinks_active", "gauge", "NVLinks of the GPU that are active.",
             [&](const GpuSnapshot& g) {
               if (auto n = g.nvlinks_active()) w.Sample("laggard_gpu_nvlinks_active", gpu_labels(g), *n);
             });
  gpu_family("laggard_gpu_nvlinks", "gauge", "NVLinks the GPU has.", [&](const GpuSnapshot& g) {
    if (g.nvlinks_known) w.Sample("laggard_gpu_nvlinks", gpu_labels(g), static_cast<double>(g.nvlinks.size()));
  });
  gpu_family("laggard_gpu_nvlink_link_active", "gauge", "1 when the NVLink is active, per link.",
             [&](const GpuSnapshot& g) {
               for (size_t l = 0; l < g.nvlinks.size(); ++l) {
                 w.Sample("laggard_gpu_nvlink_link_active", gpu_labels(g, {{"link", std::to_string(l)}}),
                          g.nvlinks[l] ? 1 : 0);
               }
             });
  gpu_family("laggard_gpu_xid_events_total", "counter", "XID events seen since the agent started, by XID.",
             [&](const GpuSnapshot& g) {
               for (const auto& [xid, n] : g.xid_counts) {
                 w.Sample("laggard_gpu_xid_events_total", gpu_labels(g, {{"xid", std::to_string(xid)}}),
                          static_cast<double>(n));
               }
             });
  gpu_family("laggard_gpu_last_xid", "gauge", "The most recent XID seen since the agent started.",
             [&](const GpuSnapshot& g) {
               if (g.last_xid) w.Sample("laggard_gpu_last_xid", gpu_labels(g), static_cast<double>(*g.last_xid));
             });
  gpu_family("laggard_gpu_query_errors_total", "counter",
             "NVML queries that failed with an error other than NOT_SUPPORTED, by field and error.",
             [&](const GpuSnapshot& g) {
               for (const auto& [key, n] : g.query_errors) {
                 w.Sample("laggard_gpu_query_errors_total",
                          gpu_labels(g, {{"field", key.first}, {"error", key.second}}), static_cast<double>(n));
               }
             });

  // Steps.
  auto rank_labels = [&](const RankSteps& r, Labels extra = {}) {
    Labels l = base;
    l.emplace_back("rank", std::to_string(r.rank));
    if (r.gpu) {
      l.emplace_back("gpu", std::to_string(*r.gpu));
      if (*r.gpu >= 0 && static_cast<size_t>(*r.gpu) < gpus.size() && gpus[static_cast<size_t>(*r.gpu)].uuid) {
        l.emplace_back("uuid", *gpus[static_cast<size_t>(*r.gpu)].uuid);
      }
    }
    for (auto& e : extra) l.push_back(std::move(e));
    return l;
  };
  if (!ranks.empty()) {
    w.Family("laggard_step_duration_seconds", "gauge", "Duration of the rank's last reported step.");
    for (const RankSteps& r : ranks) w.Sample("laggard_step_duration_seconds", rank_labels(r), ToSeconds(r.last_duration_ns));
    w.Family("laggard_step_last", "gauge", "Number of the rank's last reported step.");
    for (const RankSteps& r : ranks) w.Sample("laggard_step_last", rank_labels(r), static_cast<double>(r.last_step));
    w.Family("laggard_steps_total", "counter", "Steps the rank reported since the agent started.");
    for (const RankSteps& r : ranks) w.Sample("laggard_steps_total", rank_labels(r), static_cast<double>(r.reports));
    w.Family("laggard_step_seconds_total", "counter",
             "Sum of the rank's reported step times; rate(...) / rate(laggard_steps_total) is the mean step time.");
    for (const RankSteps& r : ranks) w.Sample("laggard_step_seconds_total", rank_labels(r), r.seconds_total);
    w.Family("laggard_step_last_report_timestamp_seconds", "gauge", "Unix time of the rank's last report.");
    for (const RankSteps& r : ranks)
      w.Sample("laggard_step_last_report_timestamp_seconds", rank_labels(r), ToSeconds(r.last_report_ns));
    size_t mark = w.text().size();
    w.Family("laggard_step_phase_seconds", "gauge", "A phase's time in the rank's last step that reported it.");
    size_t header_end = w.text().size();
    for (const RankSteps& r : ranks) {
      for (const auto& [phase, d] : r.last_phase_ns) {
        w.Sample("laggard_step_phase_seconds", rank_labels(r, {{"phase", phase}}), ToSeconds(d));
      }
    }
    if (w.text().size() == header_end) {
      w.text().resize(mark);
    } else {
      w.Family("laggard_step_phase_seconds_total", "counter", "Sum of a phase's reported times.");
      for (const RankSteps& r : ranks) {
        for (const auto& [phase, s] : r.phase_seconds_total) {
          w.Sample("laggard_step_phase_seconds_total", rank_labels(r, {{"phase", phase}}), s);
        }
      }
    }
  }

  // Host links.
  if (!links.ib_ports.empty()) {
    auto port_labels = [&](const IbPortSample& p, Labels extra = {}) {
      Labels l = with({{"device", p.ca}, {"port", std::to_string(p.port)}});
      for (auto& e : extra) l.push_back(std::move(e));
      return l;
    };
    w.Family("laggard_ib_port_active", "gauge", "1 when the InfiniBand port's state is ACTIVE.");
    for (const auto& p : links.ib_ports) {
      if (p.state_code) w.Sample("laggard_ib_port_active", port_labels(p), *p.state_code == 4 ? 1 : 0);
    }
    w.Family("laggard_ib_port_state", "gauge",
             "Port state code: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.");
    for (const auto& p : links.ib_ports) {
      if (p.state_code) w.Sample("laggard_ib_port_state", port_labels(p), *p.state_code);
    }
    w.Family("laggard_ib_port_phys_state", "gauge",
             "Physical state code: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, "
             "6 LinkErrorRecovery, 7 PhyTest.");
    for (const auto& p : links.ib_ports) {
      if (p.phys_state_code) w.Sample("laggard_ib_port_phys_state", port_labels(p), *p.phys_state_code);
    }
    w.Family("laggard_ib_port_rate_gbps", "gauge", "Port data rate (active width x speed), Gb/s.");
    for (const auto& p : links.ib_ports) {
      if (p.rate_gbps) w.Sample("laggard_ib_port_rate_gbps", port_labels(p), *p.rate_gbps);
    }
    w.Family("laggard_ib_port_width", "gauge", "Active link width in lanes (4 for 4X).");
    for (const auto& p : links.ib_ports) {
      if (p.width) w.Sample("laggard_ib_port_width", port_labels(p), *p.width);
    }
    w.Family("laggard_ib_port_transmit_bytes_total", "counter", "Bytes transmitted (port_xmit_data x 4).");
    for (const auto& p : links.ib_ports) {
      if (auto it = p.counters.find("port_xmit_data"); it != p.counters.end())
        w.Sample("laggard_ib_port_transmit_bytes_total", port_labels(p), static_cast<double>(it->second));
    }
    w.Family("laggard_ib_port_receive_bytes_total", "counter", "Bytes received (port_rcv_data x 4).");
    for (const auto& p : links.ib_ports) {
      if (auto it = p.counters.find("port_rcv_data"); it != p.counters.end())
        w.Sample("laggard_ib_port_receive_bytes_total", port_labels(p), static_cast<double>(it->second));
    }
    w.Family("laggard_ib_port_counter_total", "counter",
             "Other port counters as the kernel names them (symbol_error, link_downed, "
             "port_rcv_errors, port_xmit_discards ...).");
    for (const auto& p : links.ib_ports) {
      for (const auto& [name, v] : p.counters) {
        if (name == "port_xmit_data" || name == "port_rcv_data") continue;
        w.Sample("laggard_ib_port_counter_total", port_labels(p, {{"counter", name}}), static_cast<double>(v));
      }
    }
  }
  if (!links.net_ifs.empty()) {
    w.Family("laggard_net_up", "gauge", "1 when the interface's operstate is up, 0 when down; absent when unknown.");
    for (const auto& n : links.net_ifs) {
      if (n.operstate && (*n.operstate == "up" || *n.operstate == "down")) {
        w.Sample("laggard_net_up", with({{"iface", n.iface}}), *n.operstate == "up" ? 1 : 0);
      }
    }
    w.Family("laggard_net_speed_mbps", "gauge", "Negotiated link speed, Mb/s (absent when the link is down).");
    for (const auto& n : links.net_ifs) {
      if (n.speed_mbps) w.Sample("laggard_net_speed_mbps", with({{"iface", n.iface}}), static_cast<double>(*n.speed_mbps));
    }
  }
  if (!links.pcie_links.empty()) {
    struct PcieMetric {
      std::string_view name, help;
      std::optional<int32_t> PcieLinkSample::*field;
    };
    constexpr PcieMetric kPcie[] = {
        {"laggard_pcie_link_gen", "Current PCIe link generation of the device.", &PcieLinkSample::gen},
        {"laggard_pcie_link_gen_max", "Maximum PCIe link generation of the device.", &PcieLinkSample::max_gen},
        {"laggard_pcie_link_width", "Current PCIe link width (lanes).", &PcieLinkSample::width},
        {"laggard_pcie_link_width_max", "Maximum PCIe link width (lanes).", &PcieLinkSample::max_width},
    };
    for (const PcieMetric& m : kPcie) {
      w.Family(m.name, "gauge", m.help);
      for (const auto& l : links.pcie_links) {
        if (auto v = l.*m.field) {
          Labels labels = with({{"device", l.address}});
          if (l.device_class) labels.emplace_back("class", *l.device_class);
          w.Sample(m.name, labels, *v);
        }
      }
    }
  }
  return std::move(w.text());
}

}  // namespace laggard::agent
