// The metric half of the network detector (network_detector.h):
// MeasureNetwork.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "analysis/network/network_detector.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

int LinkRank(std::string_view link) {
  // Nearest first; NV# links are GPU-GPU only.
  if (link == "PIX") return 0;
  if (link == "PXB") return 1;
  if (link == "PHB") return 2;
  if (link == "NODE") return 3;
  if (link == "SYS") return 4;
  return -1;
}

bool IsNic(const std::string& device) {
  return device.rfind("NIC", 0) == 0 || device.rfind("mlx", 0) == 0;
}

void MeasureLinks(const NetworkData& net, NetworkMetrics& m) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> rates;  // (layer, type)
  std::map<std::pair<std::string, std::string>, std::vector<double>> widths;
  std::map<std::pair<std::string, int32_t>, size_t> active_elsewhere;  // (ca, port) -> hosts
  for (const IbPort& p : net.ib_ports) {
    if (p.state != "Active") continue;
    auto key = std::make_pair(p.link_layer.value_or(""), p.ca_type.value_or(""));
    if (p.rate_gbps) rates[key].push_back(*p.rate_gbps);
    if (p.width) widths[key].push_back(*p.width);
    ++active_elsewhere[{p.ca, p.port}];
  }
  std::map<std::pair<std::string, std::string>,
           std::pair<std::optional<double>, std::optional<double>>>
      medians;
  for (const IbPort& p : net.ib_ports) {
    IbPortMetrics& pm = m.ib_ports.emplace_back();
    auto key = std::make_pair(p.link_layer.value_or(""), p.ca_type.value_or(""));
    auto [it, fresh] = medians.emplace(key, std::make_pair(std::nullopt, std::nullopt));
    if (fresh) it->second = {Median(rates[key]), Median(widths[key])};
    pm.peer_rate_gbps = it->second.first;
    pm.peer_rates = rates[key].size();
    pm.peer_width = it->second.second;
    pm.peer_widths = widths[key].size();
    pm.active_elsewhere = active_elsewhere[{p.ca, p.port}];
  }
  std::map<std::string, std::vector<double>> speeds;  // iface -> speeds
  for (const EthLink& l : net.eth_links) {
    if (l.speed_mbps && l.link_detected != false)
      speeds[l.iface].push_back(static_cast<double>(*l.speed_mbps));
  }
  std::map<std::string, std::optional<double>> speed_medians;
  for (const EthLink& l : net.eth_links) {
    EthLinkMetrics& lm = m.eth_links.emplace_back();
    auto [it, fresh] = speed_medians.emplace(l.iface, std::nullopt);
    if (fresh) it->second = Median(speeds[l.iface]);
    lm.peer_speed_mbps = it->second;
    lm.peer_speeds = speeds[l.iface].size();
  }
}

void MeasureNcclTests(const NetworkData& net, NetworkMetrics& m) {
  for (size_t i = 0; i < net.nccl_tests.size(); ++i) {
    const NcclTestRun& r = net.nccl_tests[i];
    NcclTestStats st;
    st.run = i;
    st.collective = r.collective;
    std::set<std::string> hosts;
    for (const NcclTestRank& k : r.ranks) hosts.insert(k.host);
    if (hosts.empty() && r.host_from_path) hosts.insert(*r.host_from_path);
    st.hosts.assign(hosts.begin(), hosts.end());
    std::sort(st.hosts.begin(), st.hosts.end(), NaturalLess);
    int64_t largest = 0;
    for (const NcclTestRow& row : r.rows) largest = std::max(largest, row.size_bytes);
    std::vector<double> bw;
    for (const NcclTestRow& row : r.rows) {
      if (row.size_bytes * 4 >= largest && row.oop_busbw_gbps) bw.push_back(*row.oop_busbw_gbps);
    }
    st.large_busbw_gbps = Median(bw);
    m.nccl_tests.push_back(std::move(st));
  }
  // Compare like with like: same collective and rank count.
  std::map<std::pair<std::string, size_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < m.nccl_tests.size(); ++i) {
    groups[{m.nccl_tests[i].collective, net.nccl_tests[i].ranks.size()}].push_back(i);
  }
  for (auto& [key, members] : groups) {
    m.nccl_test_groups.push_back(NcclTestGroup{key.first, key.second, members});
    if (members.size() < 2) continue;
    for (size_t i : members) {
      std::vector<double> others;
      for (size_t j : members) {
        if (j != i && m.nccl_tests[j].large_busbw_gbps)
          others.push_back(*m.nccl_tests[j].large_busbw_gbps);
      }
      m.nccl_tests[i].peer_busbw_gbps = Median(others);
    }
  }
  // Per host, its best run against comparable runs (a healthy host paired
  // with a congested one looks slow in that run, not in all of them).
  for (const NcclTestStats& s : m.nccl_tests) {
    if (!s.large_busbw_gbps || !s.peer_busbw_gbps || *s.peer_busbw_gbps <= 0 || s.hosts.size() < 2)
      continue;
    double r = *s.large_busbw_gbps / *s.peer_busbw_gbps;
    for (const std::string& h : s.hosts) {
      auto [it, fresh] = m.best_busbw_ratio.emplace(h, r);
      if (!fresh) it->second = std::max(it->second, r);
    }
  }
}

void MeasureNcclTransports(const NetworkData& net, NetworkMetrics& m) {
  std::map<int32_t, std::vector<const NcclRankInfo*>> jobs;
  for (const NcclRankInfo& r : net.nccl_ranks) {
    if (r.host) jobs[r.nranks.value_or(-1)].push_back(&r);  // NCCL < 2.4: no host
  }
  for (const auto& [nranks, members] : jobs) {
    NcclJobTransports& j = m.nccl_jobs.emplace_back();
    for (const NcclRankInfo* r : members) {
      if (r->net) j.nets[*r->host].insert(*r->net);
      if (r->gdr) j.gdr[*r->host] = j.gdr[*r->host] || *r->gdr;
      j.where.emplace(*r->host, r->src);
    }
    for (auto& [h, s] : j.nets) j.ib_hosts += s.count("IB");
    for (auto& [h, g] : j.gdr) j.gdr_hosts += g ? 1 : 0;
  }
}

void MeasureTopology(const NetworkData& net, NetworkMetrics& m) {
  for (const TopologyMatrix& t : net.topologies) {
    for (size_t i = 0; i < t.devices.size(); ++i) {
      if (t.devices[i].rfind("GPU", 0) != 0 || i >= t.link.size()) continue;
      int best = -1;
      for (size_t j = 0; j < t.devices.size() && j < t.link[i].size(); ++j) {
        if (!IsNic(t.devices[j])) continue;
        int r = LinkRank(t.link[i][j]);
        if (r >= 0 && (best < 0 || r < best)) best = r;
      }
      if (best >= 0) m.gpu_nic_paths.push_back({t.host.value_or(""), t.devices[i], best, t.src});
    }
  }
  // Per host, each GPU's nearest NIC at PIX/PXB (a NIC on its own PCIe switch).
  for (size_t ti = 0; ti < net.topologies.size(); ++ti) {
    const TopologyMatrix& t = net.topologies[ti];
    std::vector<size_t> gpu_idx, nic_idx;
    for (size_t i = 0; i < t.devices.size(); ++i) {
      const std::string& d = t.devices[i];
      if (d.rfind("GPU", 0) == 0) gpu_idx.push_back(i);
      else if (IsNic(d)) nic_idx.push_back(i);
    }
    if (gpu_idx.empty() || nic_idx.size() < 2) continue;
    std::map<size_t, std::vector<std::string>> behind;  // NIC -> GPUs nearest to it
    for (size_t gi : gpu_idx) {
      if (gi >= t.link.size()) continue;
      int best = 2;
      std::optional<size_t> nic;
      for (size_t ni : nic_idx) {
        if (ni >= t.link[gi].size()) continue;
        int r = LinkRank(t.link[gi][ni]);
        if (r >= 0 && r < best) best = r, nic = ni;
      }
      if (nic) behind[*nic].push_back(t.devices[gi]);
    }
    size_t fair = (gpu_idx.size() + nic_idx.size() - 1) / nic_idx.size();
    for (auto& [ni, gpus] : behind)
      m.nic_loads.push_back(NicLoad{ti, ni, gpus, nic_idx.size(), fair});
  }
}

// The counters of each (host, LID, port) as of its last snapshot: the
// latest time_ns, else the last in file order (a sampling loop's snapshots
// are cumulative, so summing them would count the early traffic again).
// Records without a LID stand alone.
std::vector<const IbPortCounters*> LastSnapshots(const std::vector<IbPortCounters>& all) {
  std::map<std::tuple<std::string, int64_t, int32_t>, size_t> last;
  std::vector<const IbPortCounters*> out;
  for (size_t i = 0; i < all.size(); ++i) {
    const IbPortCounters& c = all[i];
    if (!c.lid) {
      out.push_back(&c);
      continue;
    }
    auto [it, fresh] = last.emplace(std::make_tuple(c.host.value_or(""), *c.lid, c.port), i);
    if (fresh) continue;
    const IbPortCounters& was = all[it->second];
    if (!c.time_ns || !was.time_ns || *c.time_ns >= *was.time_ns) it->second = i;
  }
  for (auto& [key, i] : last) out.push_back(&all[i]);
  return out;
}

// Per host, PortXmitWait / PortXmitData summed over its ports: the share of
// sending time spent waiting for credits per byte sent, which every host of
// a ring all-reduce shows a little of (ordinary incast) and hosts behind a
// congested leaf much more of. Only hosts that carried the job's traffic
// over InfiniBand (not one that fell back to sockets, whose ports only
// carry management traffic).
void MeasurePortWaits(const NetworkData& net, const NetworkDetectorOptions& o, NetworkMetrics& m) {
  if (net.switch_of.empty() || net.port_counters.empty()) return;
  struct Host {
    double wait_ticks = 0, data_bytes = 0;
    std::optional<SourceRef> src;
  };
  std::map<std::string, Host> hosts;
  for (const IbPortCounters* cp : LastSnapshots(net.port_counters)) {
    const IbPortCounters& c = *cp;
    if (!c.host || !c.xmit_wait_ticks || !c.xmit_data_bytes) continue;
    Host& h = hosts[*c.host];
    h.wait_ticks += static_cast<double>(*c.xmit_wait_ticks);
    h.data_bytes += static_cast<double>(*c.xmit_data_bytes);
    if (!h.src) h.src = c.src;
  }
  std::vector<double> data;
  for (auto& [h, v] : hosts) data.push_back(v.data_bytes);
  double typical = Median(data).value_or(0);
  for (auto& [h, v] : hosts) {
    if (v.data_bytes <= 0 || v.wait_ticks <= 0 || v.data_bytes < o.port_min_data_share * typical)
      continue;
    if (!net.switch_of.count(h)) continue;
    m.port_wait_log_ratio[h] = std::log(v.wait_ticks / v.data_bytes);
    m.port_wait_src[h] = v.src;
  }
}

// Per host on the switch map with >= 3 snapshots of each port, its ports
// summed per snapshot, in time order (file order when untimed).
std::map<std::string, std::vector<PortSample>> PortSeries(const NetworkData& net) {
  // host -> (lid, port) -> the port's snapshots in file order.
  std::map<std::string, std::map<std::pair<int64_t, int32_t>, std::vector<const IbPortCounters*>>>
      series;
  for (const IbPortCounters& c : net.port_counters) {
    if (!c.host || !c.lid || !c.xmit_wait_ticks || !c.xmit_data_bytes) continue;
    if (!net.switch_of.count(*c.host)) continue;
    series[*c.host][{*c.lid, c.port}].push_back(&c);
  }
  std::map<std::string, std::vector<PortSample>> hosts;
  for (auto& [h, ports] : series) {
    size_t n = SIZE_MAX;
    for (auto& [key, v] : ports) {
      bool timed = std::all_of(v.begin(), v.end(),
                               [](const IbPortCounters* c) { return c->time_ns.has_value(); });
      if (timed) {
        std::stable_sort(v.begin(), v.end(), [](const IbPortCounters* a, const IbPortCounters* b) {
          return *a->time_ns < *b->time_ns;
        });
      }
      n = std::min(n, v.size());
    }
    std::vector<PortSample> samples(n);
    for (size_t k = 0; k < n; ++k) {
      for (auto& [key, v] : ports) {
        PortSample& sm = samples[k];
        sm.wait_ticks += static_cast<double>(*v[k]->xmit_wait_ticks);
        sm.data_bytes += static_cast<double>(*v[k]->xmit_data_bytes);
        if (v[k]->time_ns && (!sm.time_ns || *v[k]->time_ns > *sm.time_ns))
          sm.time_ns = v[k]->time_ns;
        if (!sm.src) sm.src = v[k]->src;
      }
    }
    if (n >= 3) hosts[h] = std::move(samples);
  }
  return hosts;
}

// Rows of one snapshot per host: by index when all hosts have as many, else
// by time (each of the sparsest host's snapshots matched within
// port_interval_align_s on every host). Empty when they cannot be aligned
// or fewer than 3 rows remain.
std::map<std::string, std::vector<PortSample>> AlignPortSeries(
    const std::map<std::string, std::vector<PortSample>>& hosts, const NetworkDetectorOptions& o) {
  std::map<std::string, std::vector<PortSample>> rows;  // host -> aligned samples
  if (hosts.empty()) return rows;
  size_t n_min = SIZE_MAX, n_max = 0;
  for (auto& [h, v] : hosts) {
    n_min = std::min(n_min, v.size());
    n_max = std::max(n_max, v.size());
  }
  if (n_min == n_max) return hosts;
  const std::vector<PortSample>* sparsest = nullptr;
  for (auto& [h, v] : hosts) {
    if (v.size() == n_min) sparsest = &v;
    for (const PortSample& sm : v) {
      if (!sm.time_ns) return {};  // counts differ and no times to align by
    }
  }
  auto tolerance = static_cast<TimeNs>(o.port_interval_align_s * 1e9);
  for (const PortSample& ref : *sparsest) {
    std::map<std::string, PortSample> row;
    for (auto& [h, v] : hosts) {
      const PortSample* best = nullptr;
      for (const PortSample& sm : v) {
        TimeNs d = std::abs(*sm.time_ns - *ref.time_ns);
        if (d <= tolerance && (!best || d < std::abs(*best->time_ns - *ref.time_ns))) best = &sm;
      }
      if (!best) break;
      row[h] = *best;
    }
    if (row.size() != hosts.size()) continue;  // not every host sampled then
    for (auto& [h, sm] : row) rows[h].push_back(sm);
  }
  if (rows.empty() || rows.begin()->second.size() < 3) return {};
  return rows;
}

// Congestion that comes and goes, from snapshots over time (a sampling loop
// of `date; perfquery -x`): per interval between consecutive rows, each
// host's delta PortXmitWait / delta PortXmitData.
void MeasurePortIntervals(const NetworkData& net, const NetworkDetectorOptions& o,
                          NetworkMetrics& m) {
  if (net.switch_of.empty() || net.port_counters.empty()) return;
  std::map<std::string, std::vector<PortSample>> hosts = PortSeries(net);
  m.port_series_hosts = hosts.size();
  m.port_rows = AlignPortSeries(hosts, o);
  if (m.port_rows.empty()) return;
  const size_t n = m.port_rows.begin()->second.size();
  for (size_t k = 1; k < n; ++k) {
    std::map<std::string, double>& ratio = m.port_interval_ratio.emplace_back();
    std::vector<double> data;
    for (auto& [h, v] : m.port_rows) data.push_back(v[k].data_bytes - v[k - 1].data_bytes);
    double typical = Median(data).value_or(0);
    for (auto& [h, v] : m.port_rows) {
      double dw = v[k].wait_ticks - v[k - 1].wait_ticks, dd = v[k].data_bytes - v[k - 1].data_bytes;
      // Counters reset, or a host that did not carry the job's traffic.
      if (dw < 0 || dd <= 0 || dd < o.port_min_data_share * typical) continue;
      ratio[h] = dw / dd;
    }
  }
}

}  // namespace

NetworkMetrics MeasureNetwork(const Run& run, const NetworkDetectorOptions& o) {
  NetworkMetrics m;
  const NetworkData& net = run.network;
  m.net = &net;
  MeasureLinks(net, m);
  MeasureNcclTests(net, m);
  MeasureNcclTransports(net, m);
  MeasureTopology(net, m);
  MeasurePortWaits(net, o, m);
  MeasurePortIntervals(net, o, m);
  return m;
}

}  // namespace laggard
