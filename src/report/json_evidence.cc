// The `hardware` and `network` sections of the JSON report
// (docs/json-report.md): what was read and measured per GPU, port, link and
// nccl-tests run, so a user can check each finding's numbers.

#include "report/json_document.h"

namespace laggard::report_json {
namespace {

Json Files(const Run& run, const std::vector<uint32_t>& files) {
  Json j = Json::array();
  for (uint32_t f : files) {
    if (f < run.files.size()) j.push_back(run.files[f].path);
  }
  return j;
}

}  // namespace

Json HardwareJson(const Run& run, const HardwareAnalysis& hw) {
  Json gpus = Json::array();
  for (size_t i = 0; i < run.hardware.gpus.size() && i < hw.gpus.size(); ++i) {
    const GpuRecord& g = run.hardware.gpus[i];
    const GpuStats& st = hw.gpus[i];
    const GpuFacts& f = g.facts;
    Json j;
    j["host"] = Opt(g.host);
    j["gpu"] = g.index;
    j["rank"] = Opt(st.rank);
    j["uuid"] = Opt(g.uuid);
    j["bus_id"] = Opt(g.bus_id);
    j["mig_instance"] = Opt(g.mig_instance);
    j["model"] = Opt(f.name);
    j["samples"] = st.samples;
    j["loaded_samples"] = st.loaded_samples;
    j["time_is_approximate"] = g.time_is_approximate;
    j["sm_clock_mhz"] = Opt(st.sm_clock_mhz);
    j["peer_sm_clock_mhz"] = Opt(st.peer_sm_clock_mhz);
    j["max_sm_clock_mhz"] = Opt(f.max_sm_clock_mhz);
    j["temp_c_max"] = Opt(st.temp_c_max);
    j["temp_c_median"] = Opt(st.temp_c_median);
    j["slowdown_temp_c"] = Opt(f.slowdown_temp_c);
    j["power_w_median"] = Opt(st.power_w_median);
    j["power_limit_w"] = Opt(st.power_limit_w);
    j["default_power_limit_w"] = Opt(f.default_power_limit_w);
    Json changes = Json::array();
    for (const PowerLimitChange& c : st.power_limit_changes) {
      changes.push_back({{"time", g.time_is_approximate ? Json(nullptr) : TimeJson(c.time_ns)},
                         {"from_w", Num(c.from_w)},
                         {"to_w", Num(c.to_w)},
                         {"source", SourceJson(run, c.src)}});
    }
    j["power_limit_changes"] = std::move(changes);
    j["util_pct_median"] = Opt(st.util_pct_median);
    j["hot_share"] = Num(st.hot_share);
    j["thermal_reason_share"] = Num(st.thermal_reason_share);
    j["power_reason_share"] = Num(st.power_reason_share);
    j["pinned_share"] = Num(st.pinned_share);
    j["pcie"] = {{"gen_current", Opt(f.pcie_gen_current)},
                 {"gen_max", Opt(f.pcie_gen_max)},
                 {"gen_host_max", Opt(f.pcie_gen_host_max)},
                 {"width_current", Opt(f.pcie_width_current)},
                 {"width_max", Opt(f.pcie_width_max)}};
    j["nvlink_up"] = Opt(f.nvlink_up);
    j["nvlink_total"] = Opt(f.nvlink_total);
    j["xids"] = f.xids;
    j["diag_failed"] = Opt(f.diag_failed);
    j["files"] = Files(run, g.files);
    gpus.push_back(std::move(j));
  }
  return {{"gpus", std::move(gpus)}};
}

Json NetworkJson(const Run& run, const NetworkAnalysis& na) {
  const NetworkData& net = run.network;
  Json ports = Json::array();
  for (const IbPort& p : net.ib_ports) {
    ports.push_back({{"host", Opt(p.host)},
                     {"ca", p.ca},
                     {"port", p.port},
                     {"state", Opt(p.state)},
                     {"phys_state", Opt(p.phys_state)},
                     {"rate_gbps", Opt(p.rate_gbps)},
                     {"width", Opt(p.width)},
                     {"link_layer", Opt(p.link_layer)},
                     {"ca_type", Opt(p.ca_type)}});
  }
  Json links = Json::array();
  for (const EthLink& l : net.eth_links) {
    links.push_back({{"host", Opt(l.host)},
                     {"iface", l.iface},
                     {"speed_mbps", Opt(l.speed_mbps)},
                     {"duplex", Opt(l.duplex)},
                     {"link_detected", Opt(l.link_detected)}});
  }
  Json tests = Json::array();
  for (const NcclTestStats& s : na.nccl_tests) {
    const NcclTestRun& r = net.nccl_tests[s.run];
    tests.push_back({{"collective", s.collective},
                     {"hosts", s.hosts},
                     {"ranks", r.ranks.size()},
                     {"rows", r.rows.size()},
                     {"large_busbw_gbps", Opt(s.large_busbw_gbps)},
                     {"peer_busbw_gbps", Opt(s.peer_busbw_gbps)},
                     {"avg_busbw_gbps", Opt(r.avg_busbw_gbps)},
                     {"file", r.src.file < run.files.size() ? Json(run.files[r.src.file].path)
                                                            : Json(nullptr)}});
  }
  Json nccl = Json::array();
  for (const NcclRankInfo& r : net.nccl_ranks) {
    nccl.push_back({{"host", Opt(r.host)},
                    {"pid", Opt(r.pid)},
                    {"cuda_device", Opt(r.cuda_device)},
                    {"rank", Opt(r.rank)},
                    {"nranks", Opt(r.nranks)},
                    {"nccl_version", Opt(r.nccl_version)},
                    {"net", Opt(r.net)},
                    {"gdr", Opt(r.gdr)},
                    {"connections", r.connections.size()},
                    {"warnings", r.warnings.size()}});
  }
  Json topo = Json::array();
  for (const TopologyMatrix& t : net.topologies) {
    topo.push_back({{"host", Opt(t.host)}, {"devices", t.devices}});
  }
  Json sw = Json::object();
  for (const auto& [h, s] : net.switch_of) sw[h] = s;
  return {{"ib_ports", std::move(ports)},   {"eth_links", std::move(links)},
          {"nccl_tests", std::move(tests)}, {"nccl", std::move(nccl)},
          {"topologies", std::move(topo)},  {"switch_of", std::move(sw)}};
}

}  // namespace laggard::report_json
