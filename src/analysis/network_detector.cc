#include "analysis/network_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/robust_stats.h"

namespace laggard {
namespace {

// A net.shared_switch finding naming switch `sw` and its hosts (sorted,
// the first as the entity's host) with all their ranks.
Finding SwitchFinding(const std::string& sw, const std::vector<std::string>& sorted, Pattern pattern,
                      const RankMap& ranks) {
  Finding f;
  f.code = FindingCode::kNetSharedSwitch;
  f.severity = Describe(f.code).severity;
  f.entity.switch_name = sw;
  f.entity.host = sorted.front();
  f.cause = "shared_switch";
  f.pattern = pattern;
  for (const std::string& h : sorted) {
    auto r = ranks.RanksOnHost(h);
    f.ranks.insert(f.ranks.end(), r.begin(), r.end());
  }
  return f;
}

std::string HostList(const std::vector<std::string>& hosts) {
  std::string s;
  for (size_t i = 0; i < hosts.size(); ++i) s += (i ? ", " : "") + hosts[i];
  return s;
}

Finding HostFinding(FindingCode code, const std::optional<std::string>& host, const RankMap& ranks,
                    const std::map<std::string, std::string>& switch_of) {
  Finding f;
  f.code = code;
  f.severity = Describe(code).severity;
  f.entity.host = host;
  if (host) {
    f.ranks = ranks.RanksOnHost(*host);
    auto sw = switch_of.find(*host);
    if (sw != switch_of.end()) f.entity.switch_name = sw->second;
  }
  return f;
}

std::string RanksText(const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return "";
  std::string s = " (ranks ";
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) s += ",...";
  return s + ")";
}

// A healthy host to compare with: the first host, in natural order, without
// findings of its own.
std::string HealthyHost(const RankMap& ranks, const std::set<std::string>& bad) {
  for (const std::string& h : ranks.hosts()) {
    if (!bad.count(h)) return h;
  }
  return "HEALTHY_HOST";
}

std::string PairTestCommand(const std::string& suspect, const std::string& healthy) {
  return fmt::format(
      "run nccl-tests between {} and healthy {}: `mpirun -np 16 -H {}:8,{}:8 -x NCCL_DEBUG=INFO "
      "./build/all_reduce_perf -b 1G -e 8G -f 2 -g 1` (or `srun -N2 -w {},{} --ntasks-per-node=8 "
      "--gpus-per-node=8 ./build/all_reduce_perf -b 1G -e 8G -f 2 -g 1`)",
      suspect, healthy, suspect, healthy, suspect, healthy);
}

int LinkRank(std::string_view link) {
  // Nearest first; NV# links are GPU-GPU only.
  if (link == "PIX") return 0;
  if (link == "PXB") return 1;
  if (link == "PHB") return 2;
  if (link == "NODE") return 3;
  if (link == "SYS") return 4;
  return -1;
}

// Slowdowns that come and go together on the hosts of one switch point
// outside the job (issue 5, the article's shared-switch pitfall). Per host,
// its best nccl-tests run against comparable runs (a healthy host paired
// with a congested one looks slow in that run, not in all of them); one
// switch whose every host (>= 2) is at or below switch_group_ratio while
// every host on the other switches (>= 2) is at or above
// switch_peer_ratio.
std::optional<Finding> SwitchGroupFinding(const NetworkAnalysis& a, const NetworkData& net,
                                          const RankMap& ranks, const NetworkDetectorOptions& o) {
  if (net.switch_of.empty()) return std::nullopt;
  std::map<std::string, double> best;  // host -> best ratio
  for (const NcclTestStats& s : a.nccl_tests) {
    if (!s.large_busbw_gbps || !s.peer_busbw_gbps || *s.peer_busbw_gbps <= 0 || s.hosts.size() < 2) continue;
    double r = *s.large_busbw_gbps / *s.peer_busbw_gbps;
    for (const std::string& h : s.hosts) {
      auto [it, fresh] = best.emplace(h, r);
      if (!fresh) it->second = std::max(it->second, r);
    }
  }
  std::map<std::string, std::vector<std::string>> by_switch;
  for (auto& [h, r] : best) {
    auto sw = net.switch_of.find(h);
    if (sw == net.switch_of.end()) return std::nullopt;  // cannot say the others are fine
    by_switch[sw->second].push_back(h);
  }
  for (auto& [sw, hosts] : by_switch) {
    if (hosts.size() < 2) continue;
    size_t on_switch = 0;
    for (auto& [h, s2] : net.switch_of) on_switch += s2 == sw;
    if (hosts.size() < on_switch) continue;  // some of its hosts were not measured
    bool all_slow = std::all_of(hosts.begin(), hosts.end(),
                                [&](const std::string& h) { return best[h] <= o.switch_group_ratio; });
    size_t others = 0;
    bool others_fine = true;
    for (auto& [h, r] : best) {
      if (net.switch_of.at(h) == sw) continue;
      ++others;
      others_fine = others_fine && r >= o.switch_peer_ratio;
    }
    if (!all_slow || !others_fine || others < 2) continue;
    std::vector<std::string> sorted = hosts;
    std::sort(sorted.begin(), sorted.end(), NaturalLess);
    std::vector<double> ratios;
    for (const std::string& h : sorted) ratios.push_back(best[h]);
    double ratio = Median(ratios).value_or(1);
    Finding f = SwitchFinding(sw, sorted, Pattern::kSwitchGroup, ranks);
    f.slowdown = 1 - ratio;
    f.confidence = 0.5;
    f.message = fmt::format(
        "every host on switch {} ({}) is slow in nccl-tests, its best run at {:.2f}x the bus "
        "bandwidth of comparable runs, while the {} hosts on other switches reach >= {:.2f}x: "
        "the hosts of one switch slow down together, likely traffic from outside the job",
        sw, HostList(sorted), ratio, others, o.switch_peer_ratio);
    auto src = net.switch_src.find(sorted.front());
    f.evidence.push_back({f.message, src != net.switch_src.end() ? std::optional<SourceRef>(src->second)
                                                                 : std::nullopt});
    f.next_steps.push_back(fmt::format(
        "check switch {}'s other tenants and its port counters (congestion, pause frames, "
        "PortXmitWait with `perfquery` on the hosts' ports); ask the network team whether another "
        "job shares it; rerun nccl-tests between {} and a host on another switch while the job is slow",
        sw, sorted.front()));
    return f;
  }
  return std::nullopt;
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

// Per-switch congestion from port counters (issue: shared_switch_congestion
// leaves no trace in step times or nccl-tests taken while the switch is
// quiet). Per host, PortXmitWait / PortXmitData summed over its ports: the
// share of sending time spent waiting for credits per byte sent, which
// every host of a ring all-reduce shows a little of (ordinary incast) and
// hosts behind a congested leaf much more of. One switch whose every host
// (all of its mapped hosts measured; one host alone on its switch at lower
// confidence) has a log ratio >=
// port_wait_z robust z above the hosts on the other switches (>= 3; median
// and MAD of their log ratios, MAD floored at port_wait_mad_floor), with
// the switch's median >= port_wait_ratio x the others' median; or, with
// fewer than 3 hosts elsewhere or a spread too wide for z, every host of the
// switch above every host elsewhere by multiples (port_wait_apart_*), at
// lower confidence.
std::optional<Finding> PortCounterSwitchFinding(const NetworkData& net, const RankMap& ranks,
                                                const NetworkDetectorOptions& o) {
  if (net.switch_of.empty() || net.port_counters.empty()) return std::nullopt;
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
  // Hosts that carried the job's traffic over InfiniBand (not one that fell
  // back to sockets, whose ports only carry management traffic).
  std::vector<double> data;
  for (auto& [h, v] : hosts) data.push_back(v.data_bytes);
  double typical = Median(data).value_or(0);
  std::map<std::string, double> log_ratio;
  for (auto& [h, v] : hosts) {
    if (v.data_bytes <= 0 || v.wait_ticks <= 0 || v.data_bytes < o.port_min_data_share * typical) continue;
    if (!net.switch_of.count(h)) continue;
    log_ratio[h] = std::log(v.wait_ticks / v.data_bytes);
  }
  std::map<std::string, std::vector<std::string>> by_switch;
  for (auto& [h, r] : log_ratio) by_switch[net.switch_of.at(h)].push_back(h);
  if (by_switch.size() < 2) return std::nullopt;
  std::optional<Finding> best;
  double best_z = 0;
  for (auto& [sw, members] : by_switch) {
    size_t on_switch = 0;
    for (auto& [h, s2] : net.switch_of) on_switch += s2 == sw;
    // A host alone on its switch (per the map) counts too: its waits are
    // the switch port in front of it withholding credits on every rail, so
    // the switch or what lies behind it, not one NIC or cable; with no
    // neighbour to confirm it, at lower confidence.
    if (members.size() < on_switch) continue;
    std::vector<double> others, mine;
    for (auto& [h, r] : log_ratio) (net.switch_of.at(h) == sw ? mine : others).push_back(r);
    if (others.empty()) continue;
    double m = Median(others).value_or(0);
    double least = *std::min_element(mine.begin(), mine.end());
    double times = std::exp(Median(mine).value_or(m) - m);
    // Robust z against the others' spread, when there are enough of them.
    std::optional<double> min_z;
    if (others.size() >= 3) {
      double scale = std::max(1.4826 * Mad(others).value_or(0), o.port_wait_mad_floor);
      min_z = (least - m) / scale;
    }
    bool by_z = min_z && *min_z >= o.port_wait_z && times >= o.port_wait_ratio;
    // Or apart: above every other host, by multiples.
    // (One host against one or two others is no pattern: its own link's far
    // end could be it.)
    bool apart = (mine.size() >= 2 || others.size() >= 3) &&
                 least > *std::max_element(others.begin(), others.end()) &&
                 std::exp(least - m) >= o.port_wait_apart_min && times >= o.port_wait_apart_ratio;
    if (!by_z && !apart) continue;
    // Rank switches by z; one apart without a z ranks by its margin in log.
    double score = min_z.value_or(0) + (least - m);
    if (best && score <= best_z) continue;
    std::vector<std::string> sorted = members;
    std::sort(sorted.begin(), sorted.end(), NaturalLess);
    Finding f = SwitchFinding(sw, sorted, Pattern::kPortCounters, ranks);
    if (by_z) {
      f.confidence = *min_z >= 2 * o.port_wait_z && times >= 2 * o.port_wait_ratio ? 0.65 : 0.6;
    } else {
      f.confidence = 0.55;
    }
    if (sorted.size() == 1) f.confidence = 0.5;
    std::string spread =
        min_z ? fmt::format("its least-waiting host {:.1f} robust deviations above theirs", *min_z)
              : std::string("too few hosts elsewhere for a spread");
    if (!by_z) {
      spread += fmt::format("; even its least-waiting host waits {:.1f}x their median and more "
                            "than any of them",
                            std::exp(least - m));
    }
    f.message = fmt::format(
        "{} on switch {} ({}) waits {:.1f}x as long per byte sent as the {} host{} on the "
        "other switches (PortXmitWait / PortXmitData over the run, {}): credit back-pressure on "
        "that switch's links only, likely traffic from outside the job",
        sorted.size() == 1 ? "the only host of the job" : "every host", sw, HostList(sorted), times,
        others.size(), others.size() == 1 ? "" : "s", spread);
    f.evidence.push_back({f.message, hosts[sorted.front()].src});
    f.next_steps.push_back(fmt::format(
        "ask the network team what else runs through switch {} (`perfquery` PortXmitWait on its "
        "uplink ports, the switch's congestion counters); move the job off it or rerun nccl-tests "
        "between {} and a host on another switch while the job is slow",
        sw, sorted.front()));
    best = std::move(f);
    best_z = score;
  }
  return best;
}

// Congestion that comes and goes, from snapshots over time (a sampling loop
// of `date; perfquery -x`; issue: a switch congested a quarter of the run
// rises only 1.3-1.45x in the run's totals, inside host-to-host noise).
// Per host, its ports summed, snapshots in time order (file order when
// untimed); hosts are aligned by snapshot index when all have as many, else
// by time (each of the sparsest host's snapshots matched within
// port_interval_align_s on every host). Per interval between consecutive
// snapshots, a host's delta PortXmitWait / delta PortXmitData; a switch is
// congested in it when every one of its hosts (>= port_interval_min_hosts,
// all of its mapped hosts measured) is above every host elsewhere (>=
// port_interval_min_hosts of them, or one against >=
// port_interval_min_hosts_vs_one on the switch) and >= port_interval_ratio x their
// median. The switch congested in >= port_interval_min_count intervals and
// >= port_interval_dominance x as many as any other switch is named.
std::optional<Finding> PortCounterIntervalFinding(const NetworkData& net, const RankMap& ranks,
                                                  const NetworkDetectorOptions& o) {
  if (net.switch_of.empty() || net.port_counters.empty()) return std::nullopt;
  struct Sample {
    std::optional<TimeNs> time_ns;
    double wait_ticks = 0, data_bytes = 0;
    std::optional<SourceRef> src;
  };
  // host -> (lid, port) -> the port's snapshots in file order.
  std::map<std::string, std::map<std::pair<int64_t, int32_t>, std::vector<const IbPortCounters*>>> series;
  for (const IbPortCounters& c : net.port_counters) {
    if (!c.host || !c.lid || !c.xmit_wait_ticks || !c.xmit_data_bytes) continue;
    if (!net.switch_of.count(*c.host)) continue;
    series[*c.host][{*c.lid, c.port}].push_back(&c);
  }
  std::map<std::string, std::vector<Sample>> hosts;
  for (auto& [h, ports] : series) {
    size_t n = SIZE_MAX;
    for (auto& [key, v] : ports) {
      bool timed = std::all_of(v.begin(), v.end(), [](const IbPortCounters* c) { return c->time_ns.has_value(); });
      if (timed) {
        std::stable_sort(v.begin(), v.end(), [](const IbPortCounters* a, const IbPortCounters* b) {
          return *a->time_ns < *b->time_ns;
        });
      }
      n = std::min(n, v.size());
    }
    std::vector<Sample> samples(n);
    for (size_t k = 0; k < n; ++k) {
      for (auto& [key, v] : ports) {
        Sample& sm = samples[k];
        sm.wait_ticks += static_cast<double>(*v[k]->xmit_wait_ticks);
        sm.data_bytes += static_cast<double>(*v[k]->xmit_data_bytes);
        if (v[k]->time_ns && (!sm.time_ns || *v[k]->time_ns > *sm.time_ns)) sm.time_ns = v[k]->time_ns;
        if (!sm.src) sm.src = v[k]->src;
      }
    }
    if (n >= 3) hosts[h] = std::move(samples);
  }
  if (hosts.size() < o.port_interval_min_hosts + 1) return std::nullopt;
  // Align: rows of one snapshot per host.
  size_t n_min = SIZE_MAX, n_max = 0;
  for (auto& [h, v] : hosts) {
    n_min = std::min(n_min, v.size());
    n_max = std::max(n_max, v.size());
  }
  std::map<std::string, std::vector<Sample>> rows;  // host -> aligned samples
  if (n_min == n_max) {
    rows = hosts;
  } else {
    const std::vector<Sample>* sparsest = nullptr;
    for (auto& [h, v] : hosts) {
      if (v.size() == n_min) sparsest = &v;
      for (const Sample& sm : v) {
        if (!sm.time_ns) return std::nullopt;  // counts differ and no times to align by
      }
    }
    auto tolerance = static_cast<TimeNs>(o.port_interval_align_s * 1e9);
    for (const Sample& ref : *sparsest) {
      std::map<std::string, Sample> row;
      for (auto& [h, v] : hosts) {
        const Sample* best = nullptr;
        for (const Sample& sm : v) {
          TimeNs d = std::abs(*sm.time_ns - *ref.time_ns);
          if (d <= tolerance && (!best || d < std::abs(*best->time_ns - *ref.time_ns))) best = &sm;
        }
        if (!best) break;
        row[h] = *best;
      }
      if (row.size() != hosts.size()) continue;  // not every host sampled then
      for (auto& [h, sm] : row) rows[h].push_back(sm);
    }
    if (rows.empty() || rows.begin()->second.size() < 3) return std::nullopt;
  }
  size_t n = rows.begin()->second.size();
  std::map<std::string, std::vector<std::string>> by_switch;
  for (auto& [h, v] : rows) by_switch[net.switch_of.at(h)].push_back(h);
  if (by_switch.size() < 2) return std::nullopt;
  std::map<std::string, std::vector<size_t>> congested;  // switch -> intervals (index of the end snapshot)
  size_t intervals = 0;
  for (size_t k = 1; k < n; ++k) {
    std::map<std::string, double> ratio;
    std::vector<double> data;
    for (auto& [h, v] : rows) data.push_back(v[k].data_bytes - v[k - 1].data_bytes);
    double typical = Median(data).value_or(0);
    for (auto& [h, v] : rows) {
      double dw = v[k].wait_ticks - v[k - 1].wait_ticks, dd = v[k].data_bytes - v[k - 1].data_bytes;
      // Counters reset, or a host that did not carry the job's traffic.
      if (dw < 0 || dd <= 0 || dd < o.port_min_data_share * typical) continue;
      ratio[h] = dw / dd;
    }
    if (ratio.size() < o.port_interval_min_hosts + 1) continue;
    ++intervals;
    for (auto& [sw, members] : by_switch) {
      size_t on_switch = 0;
      for (auto& [h, s2] : net.switch_of) on_switch += s2 == sw;
      std::vector<double> mine, others;
      for (auto& [h, r] : ratio) (net.switch_of.at(h) == sw ? mine : others).push_back(r);
      // One host elsewhere is enough against port_interval_min_hosts_vs_one
      // hosts on the switch (each must be above it).
      size_t need_others = mine.size() >= o.port_interval_min_hosts_vs_one ? 1 : o.port_interval_min_hosts;
      if (mine.size() < std::max(on_switch, o.port_interval_min_hosts) || others.size() < need_others) {
        continue;
      }
      double least = *std::min_element(mine.begin(), mine.end());
      double m = Median(others).value_or(0);
      if (least > *std::max_element(others.begin(), others.end()) && least >= o.port_interval_ratio * m) {
        congested[sw].push_back(k);
      }
    }
  }
  std::string top;
  size_t top_count = 0, second = 0;
  for (auto& [sw, ks] : congested) {
    if (ks.size() > top_count) {
      second = top_count;
      top = sw;
      top_count = ks.size();
    } else {
      second = std::max(second, ks.size());
    }
  }
  if (top_count < o.port_interval_min_count || top_count < o.port_interval_dominance * second) {
    return std::nullopt;
  }
  std::vector<std::string> sorted = by_switch[top];
  std::sort(sorted.begin(), sorted.end(), NaturalLess);
  const std::vector<Sample>& first_host = rows[sorted.front()];
  auto when = [&](size_t k) {
    const Sample& end = first_host[k];
    const Sample& begin = first_host[k - 1];
    if (begin.time_ns && end.time_ns) {
      return fmt::format("{} to {}", FormatTimestamp(*begin.time_ns), FormatTimestamp(*end.time_ns));
    }
    return fmt::format("snapshots {} to {}", k, k + 1);
  };
  const std::vector<size_t>& ks = congested[top];
  Finding f = SwitchFinding(top, sorted, Pattern::kPortCounters, ranks);
  f.confidence = 0.6;
  f.message = fmt::format(
      "every host on switch {} ({}) waited >= {:.0f}x as long per byte sent as the median host on "
      "the other switches, and longer than any of them, in {} of {} intervals between perfquery "
      "snapshots (PortXmitWait / PortXmitData deltas; first {}, last {}); other switches at most "
      "{}: credit back-pressure on that switch's links that comes and goes, likely traffic from "
      "outside the job",
      top, HostList(sorted), o.port_interval_ratio, ks.size(), intervals, when(ks.front()), when(ks.back()),
      second);
  f.evidence.push_back({f.message, first_host[ks.front()].src});
  f.next_steps.push_back(fmt::format(
      "ask the network team what else runs through switch {} at those times (`perfquery` "
      "PortXmitWait on its uplink ports, the switch's congestion counters); move the job off it or "
      "rerun nccl-tests between {} and a host on another switch while it is congested",
      top, sorted.front()));
  return f;
}

}  // namespace

NetworkAnalysis AnalyzeNetwork(const Run& run, const RankMap& ranks,
                               const std::vector<SuspectRank>& suspects,
                               const NetworkDetectorOptions& o) {
  NetworkAnalysis a;
  const NetworkData& net = run.network;
  std::set<std::string> bad_hosts;

  // InfiniBand ports.
  {
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
    for (const IbPort& p : net.ib_ports) {
      std::string nic = fmt::format("{} port {}", p.ca, p.port);
      if (p.state && *p.state != "Active") {
        Finding f = HostFinding(FindingCode::kNetPortDown, p.host, ranks, net.switch_of);
        f.entity.nic = nic;
        f.cause = "port_down";
        size_t peers = active_elsewhere[{p.ca, p.port}];
        f.message = fmt::format("{} on {}: state {}, physical state {}{}", nic,
                                p.host.value_or("unknown host"), *p.state,
                                p.phys_state.value_or("?"), RanksText(f.ranks));
        if (peers > 0) f.message += fmt::format("; the same port is Active on {} other host{}", peers, peers == 1 ? "" : "s");
        f.confidence = peers > 0 ? 0.85 : 0.5;
        if (peers == 0) f.severity = Severity::kWarning;
        f.evidence.push_back({f.message, p.src});
        f.next_steps.push_back(fmt::format(
            "check the cable and switch port of {} on {}: `ibstat {} {}`, `ibportstate` / "
            "`mlxlink -d {} -m`; reseat or replace the cable",
            nic, p.host.value_or("the host"), p.ca, p.port, p.ca));
        if (p.host) bad_hosts.insert(*p.host);
        a.findings.push_back(std::move(f));
        continue;
      }
      if (p.state != "Active") continue;
      auto key = std::make_pair(p.link_layer.value_or(""), p.ca_type.value_or(""));
      std::optional<double> med_rate = Median(rates[key]);
      std::optional<double> med_width = Median(widths[key]);
      std::string what;
      if (p.rate_gbps && med_rate && rates[key].size() >= 3 && *p.rate_gbps < o.rate_ratio * *med_rate) {
        what = fmt::format("rate {:.0f} Gb/s vs {:.0f} Gb/s on its peers", *p.rate_gbps, *med_rate);
      }
      if (p.width && med_width && widths[key].size() >= 3 && *p.width < *med_width) {
        what += fmt::format("{}width {}X vs {:.0f}X", what.empty() ? "" : ", ", *p.width, *med_width);
      }
      if (what.empty()) continue;
      Finding f = HostFinding(FindingCode::kNetLinkDegraded, p.host, ranks, net.switch_of);
      f.entity.nic = nic;
      f.cause = "nic_degraded";
      f.message = fmt::format("{} on {}: {}{}", nic, p.host.value_or("unknown host"), what, RanksText(f.ranks));
      f.confidence = 0.8;
      f.evidence.push_back({f.message, p.src});
      f.next_steps.push_back(fmt::format(
          "check {} on {}: `ibstat {} {}` (Rate), `mlxlink -d {} -m` for the negotiated speed and "
          "errors; reseat or replace the cable / transceiver",
          nic, p.host.value_or("the host"), p.ca, p.port, p.ca));
      if (p.host) bad_hosts.insert(*p.host);
      a.findings.push_back(std::move(f));
    }
  }

  // Ethernet links.
  {
    std::map<std::string, std::vector<double>> speeds;  // iface -> speeds
    for (const EthLink& l : net.eth_links) {
      if (l.speed_mbps && l.link_detected != false) speeds[l.iface].push_back(static_cast<double>(*l.speed_mbps));
    }
    for (const EthLink& l : net.eth_links) {
      if (l.link_detected == false) {
        Finding f = HostFinding(FindingCode::kNetPortDown, l.host, ranks, net.switch_of);
        f.entity.nic = l.iface;
        f.cause = "port_down";
        f.message = fmt::format("{} on {}: link not detected{}", l.iface, l.host.value_or("unknown host"),
                                RanksText(f.ranks));
        f.confidence = speeds[l.iface].empty() ? 0.5 : 0.8;
        f.evidence.push_back({f.message, l.src});
        f.next_steps.push_back(fmt::format("check cable and switch port of {} on {}: `ethtool {}`, "
                                           "`ip link show {}`",
                                           l.iface, l.host.value_or("the host"), l.iface, l.iface));
        if (l.host) bad_hosts.insert(*l.host);
        a.findings.push_back(std::move(f));
        continue;
      }
      std::optional<double> med = Median(speeds[l.iface]);
      if (!l.speed_mbps || !med || speeds[l.iface].size() < 3 ||
          static_cast<double>(*l.speed_mbps) >= o.rate_ratio * *med) {
        continue;
      }
      Finding f = HostFinding(FindingCode::kNetLinkDegraded, l.host, ranks, net.switch_of);
      f.entity.nic = l.iface;
      f.cause = "nic_degraded";
      f.message = fmt::format("{} on {}: {} Mb/s vs {:.0f} Mb/s on its peers{}", l.iface,
                              l.host.value_or("unknown host"), *l.speed_mbps, *med, RanksText(f.ranks));
      f.confidence = 0.8;
      f.evidence.push_back({f.message, l.src});
      f.next_steps.push_back(fmt::format("check the negotiated speed of {} on {}: `ethtool {}`; "
                                         "reseat or replace the cable / transceiver",
                                         l.iface, l.host.value_or("the host"), l.iface));
      if (l.host) bad_hosts.insert(*l.host);
      a.findings.push_back(std::move(f));
    }
  }

  // nccl-tests.
  {
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
      a.nccl_tests.push_back(std::move(st));
    }
    // Compare like with like: same collective and rank count.
    std::map<std::pair<std::string, size_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < a.nccl_tests.size(); ++i) {
      groups[{a.nccl_tests[i].collective, net.nccl_tests[i].ranks.size()}].push_back(i);
    }
    // (group, host) -> (low runs, runs): a host is judged within each group.
    std::map<std::pair<std::pair<std::string, size_t>, std::string>, std::pair<size_t, size_t>> host_low;
    std::vector<size_t> low_runs;
    for (auto& [key, members] : groups) {
      if (members.size() < 2) continue;
      for (size_t i : members) {
        std::vector<double> others;
        for (size_t j : members) {
          if (j != i && a.nccl_tests[j].large_busbw_gbps) others.push_back(*a.nccl_tests[j].large_busbw_gbps);
        }
        a.nccl_tests[i].peer_busbw_gbps = Median(others);
        bool low = a.nccl_tests[i].large_busbw_gbps && a.nccl_tests[i].peer_busbw_gbps &&
                   *a.nccl_tests[i].large_busbw_gbps <= o.bandwidth_ratio * *a.nccl_tests[i].peer_busbw_gbps;
        for (const std::string& h : a.nccl_tests[i].hosts) {
          auto& c = host_low[{key, h}];
          c.second++;
          if (low) c.first++;
        }
        if (low) low_runs.push_back(i);
      }
    }
    std::vector<std::string> culprits;
    for (auto& [gh, c] : host_low) {
      if (c.first >= 2 && c.first == c.second &&
          std::find(culprits.begin(), culprits.end(), gh.second) == culprits.end()) {
        culprits.push_back(gh.second);
      }
    }
    std::sort(culprits.begin(), culprits.end(), NaturalLess);
    auto run_text = [&](size_t i) {
      const NcclTestStats& s = a.nccl_tests[i];
      return fmt::format("{} on {}: {:.1f} GB/s bus bandwidth at large sizes vs {:.1f} GB/s median of "
                         "comparable runs ({:.2f}x)",
                         s.collective, HostList(s.hosts), *s.large_busbw_gbps, *s.peer_busbw_gbps,
                         *s.large_busbw_gbps / *s.peer_busbw_gbps);
    };
    if (!culprits.empty()) {
      for (const std::string& h : culprits) {
        Finding f = HostFinding(FindingCode::kNetBandwidthLow, h, ranks, net.switch_of);
        f.cause = "nic_degraded";
        size_t n = 0;
        std::vector<double> ratios;
        for (size_t i : low_runs) {
          const NcclTestStats& s = a.nccl_tests[i];
          if (std::find(s.hosts.begin(), s.hosts.end(), h) == s.hosts.end()) continue;
          ++n;
          ratios.push_back(*s.large_busbw_gbps / *s.peer_busbw_gbps);
          f.evidence.push_back({run_text(i), net.nccl_tests[i].src});
        }
        f.message = fmt::format("every nccl-tests run with {} is slow: {} runs at {:.2f}x the bus "
                                "bandwidth of comparable runs{}",
                                h, n, Median(ratios).value_or(0), RanksText(f.ranks));
        f.slowdown = 1 - Median(ratios).value_or(1);
        f.confidence = 0.8;
        f.next_steps.push_back(fmt::format("check {}'s NICs: `ibstat` and `ethtool` on it", h));
        f.next_steps.push_back(PairTestCommand(h, HealthyHost(ranks, std::set<std::string>(culprits.begin(), culprits.end()))));
        bad_hosts.insert(h);
        a.findings.push_back(std::move(f));
      }
    } else {
      for (size_t i : low_runs) {
        const NcclTestStats& s = a.nccl_tests[i];
        Finding f = HostFinding(FindingCode::kNetBandwidthLow,
                                s.hosts.size() == 1 ? std::optional<std::string>(s.hosts[0]) : std::nullopt,
                                ranks, net.switch_of);
        f.cause = "nic_degraded";
        f.message = run_text(i);
        f.slowdown = 1 - *s.large_busbw_gbps / *s.peer_busbw_gbps;
        f.confidence = 0.65;
        f.evidence.push_back({run_text(i), net.nccl_tests[i].src});
        if (!s.hosts.empty()) {
          f.next_steps.push_back(fmt::format("check the NICs of {}: `ibstat` and `ethtool` on each", HostList(s.hosts)));
          f.next_steps.push_back(PairTestCommand(s.hosts.front(), HealthyHost(ranks, std::set<std::string>(s.hosts.begin(), s.hosts.end()))));
        }
        for (const std::string& h : s.hosts) bad_hosts.insert(h);
        a.findings.push_back(std::move(f));
      }
    }
    for (size_t i = 0; i < net.nccl_tests.size(); ++i) {
      const NcclTestRun& r = net.nccl_tests[i];
      int64_t wrong = 0;
      for (const NcclTestRow& row : r.rows) wrong += row.oop_wrong.value_or(0) + row.ip_wrong.value_or(0);
      if (wrong == 0 && r.errors.empty()) continue;
      const NcclTestStats& s = a.nccl_tests[i];
      Finding f = HostFinding(FindingCode::kNetTestErrors,
                              s.hosts.size() == 1 ? std::optional<std::string>(s.hosts[0]) : std::nullopt,
                              ranks, net.switch_of);
      f.message = fmt::format("{} on {}: {} wrong results{}", s.collective, HostList(s.hosts), wrong,
                              r.errors.empty() ? "" : "; " + r.errors.front());
      f.confidence = 0.7;
      f.evidence.push_back({f.message, r.src});
      f.next_steps.push_back("rerun the test with NCCL_DEBUG=INFO and check the hosts' GPUs with `dcgmi diag -r 2`");
      a.findings.push_back(std::move(f));
    }
  }

  // NCCL transports, compared among the processes of one job (same number
  // of ranks): logs of unrelated jobs in one directory are not peers.
  {
    std::map<int32_t, std::vector<const NcclRankInfo*>> jobs;
    for (const NcclRankInfo& r : net.nccl_ranks) {
      if (r.host) jobs[r.nranks.value_or(-1)].push_back(&r);  // NCCL < 2.4: no host
    }
    for (const auto& [nranks, members] : jobs) {
      std::map<std::string, std::set<std::string>> nets;  // host -> nets
      std::map<std::string, bool> gdr;                     // host -> any GDR
      std::map<std::string, SourceRef> where;
      for (const NcclRankInfo* r : members) {
        if (r->net) nets[*r->host].insert(*r->net);
        if (r->gdr) gdr[*r->host] = gdr[*r->host] || *r->gdr;
        where.emplace(*r->host, r->src);
      }
      size_t ib_hosts = 0;
      for (auto& [h, s] : nets) ib_hosts += s.count("IB");
      for (auto& [h, s] : nets) {
        if (!s.count("Socket") || s.count("IB") || ib_hosts * 2 < nets.size()) continue;
        Finding f = HostFinding(FindingCode::kNetSocketFallback, h, ranks, net.switch_of);
        f.cause = "socket_fallback";
        f.message = fmt::format("NCCL on {} uses NET/Socket while {} of {} hosts use NET/IB{}", h,
                                ib_hosts, nets.size(), RanksText(f.ranks));
        f.confidence = 0.85;
        f.evidence.push_back({f.message, where[h]});
        f.next_steps.push_back(fmt::format(
            "on {}: check `ibstat` (ports Active?), that the IB verbs libraries are installed, and "
            "NCCL_IB_HCA / NCCL_SOCKET_IFNAME; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET",
            h));
        bad_hosts.insert(h);
        a.findings.push_back(std::move(f));
      }
      size_t gdr_hosts = 0;
      for (auto& [h, g] : gdr) gdr_hosts += g ? 1 : 0;
      for (auto& [h, g] : gdr) {
        if (g || gdr_hosts * 2 < gdr.size() || gdr_hosts == 0) continue;
        Finding f = HostFinding(FindingCode::kNetNoGdr, h, ranks, net.switch_of);
        f.cause = "no_gdr";
        f.message = fmt::format(
            "NCCL on {} connects without GPU Direct RDMA while {} of {} hosts use it{}", h,
            gdr_hosts, gdr.size(), RanksText(f.ranks));
        f.confidence = 0.7;
        f.evidence.push_back({f.message, where[h]});
        f.next_steps.push_back(fmt::format(
            "on {}: check that the nvidia-peermem (nv_peer_mem) module is loaded (`lsmod | grep "
            "peermem`) and the PCIe ACS settings",
            h));
        a.findings.push_back(std::move(f));
      }
    }
  }

  // Topology: GPU to nearest NIC.
  {
    struct Near { std::string host; std::string gpu; int rank; SourceRef src; };
    std::vector<Near> near;
    for (const TopologyMatrix& t : net.topologies) {
      for (size_t i = 0; i < t.devices.size(); ++i) {
        if (t.devices[i].rfind("GPU", 0) != 0 || i >= t.link.size()) continue;
        int best = -1;
        for (size_t j = 0; j < t.devices.size() && j < t.link[i].size(); ++j) {
          const std::string& d = t.devices[j];
          bool nic = d.rfind("NIC", 0) == 0 || d.rfind("mlx", 0) == 0;
          if (!nic) continue;
          int r = LinkRank(t.link[i][j]);
          if (r >= 0 && (best < 0 || r < best)) best = r;
        }
        if (best >= 0) near.push_back({t.host.value_or(""), t.devices[i], best, t.src});
      }
    }
    size_t close = 0;
    for (const Near& n : near) close += n.rank <= 1 ? 1 : 0;
    if (close * 2 > near.size()) {
      for (const Near& n : near) {
        if (n.rank < 3) continue;
        std::optional<std::string> host = n.host.empty() ? std::nullopt : std::optional<std::string>(n.host);
        Finding f = HostFinding(FindingCode::kNetPoorPath, host, ranks, net.switch_of);
        f.cause = "poor_path";
        int32_t gpu = std::atoi(n.gpu.c_str() + 3);
        f.entity.gpu = gpu;
        if (host) {
          f.entity.rank = ranks.RankOf(*host, gpu);
          f.ranks.clear();
          if (f.entity.rank) f.ranks.push_back(*f.entity.rank);
        }
        f.message = fmt::format("{} of {}: nearest NIC is {} away (across the CPU interconnect) while "
                                "{} of {} GPUs have one on their PCIe switch",
                                n.gpu, n.host.empty() ? "unknown host" : n.host,
                                n.rank == 3 ? "NODE" : "SYS", close, near.size());
        f.severity = Severity::kWarning;
        f.confidence = 0.6;
        f.evidence.push_back({f.message, n.src});
        f.next_steps.push_back("check `nvidia-smi topo -m` and NCCL's NIC choice (NCCL_DEBUG=INFO, "
                               "NCCL_IB_HCA); pin the rank to the GPU next to its NIC");
        a.findings.push_back(std::move(f));
      }
    }
  }

  // GPUs sharing one NIC: per host, each GPU's nearest NIC at PIX/PXB (a
  // NIC on its own PCIe switch); more GPUs behind one NIC than the host's
  // NICs share out evenly (ceil(GPUs / NICs)) means their traffic queues on
  // it while another NIC idles.
  for (const TopologyMatrix& t : net.topologies) {
    std::vector<size_t> gpu_idx, nic_idx;
    for (size_t i = 0; i < t.devices.size(); ++i) {
      const std::string& d = t.devices[i];
      if (d.rfind("GPU", 0) == 0) gpu_idx.push_back(i);
      else if (d.rfind("NIC", 0) == 0 || d.rfind("mlx", 0) == 0) nic_idx.push_back(i);
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
    for (const auto& [ni, gpus] : behind) {
      if (gpus.size() <= fair) continue;
      Finding f = HostFinding(FindingCode::kNetNicShared, t.host, ranks, net.switch_of);
      f.cause = "nic_shared";
      f.entity.nic = t.devices[ni];
      std::string list;
      for (const std::string& g : gpus) list += (list.empty() ? "" : ", ") + g;
      f.message = fmt::format("{} of {}: {} GPUs ({}) are nearest to it while {} NICs could serve {} "
                              "each",
                              t.devices[ni], t.host.value_or("unknown host"), gpus.size(), list,
                              nic_idx.size(), fair);
      f.confidence = 0.6;
      f.evidence.push_back({f.message, t.src});
      f.next_steps.push_back("check `nvidia-smi topo -m` and which NIC each rank uses (NCCL_DEBUG=INFO "
                             "\"NET/IB : Using\"); set NCCL_IB_HCA or fix the PCIe placement so each "
                             "GPU has its own rail");
      a.findings.push_back(std::move(f));
    }
  }

  // Shared switch.
  bool shared_switch_named = false;
  if (!net.switch_of.empty()) {
    std::set<std::string> slow = bad_hosts;
    for (const SuspectRank& s : suspects) {
      if (auto g = ranks.GpuOf(s.rank)) slow.insert(g->first);
    }
    // A slow host with a fault of its own (a port down, a degraded link,
    // NCCL over sockets) is explained by it; two such hosts on one switch are
    // two faults, not the switch.
    std::set<std::string> explained;
    for (const Finding& f : a.findings) {
      if ((f.code == FindingCode::kNetPortDown || f.code == FindingCode::kNetLinkDegraded ||
           f.code == FindingCode::kNetSocketFallback) &&
          f.entity.host) {
        explained.insert(*f.entity.host);
      }
    }
    std::map<std::string, std::vector<std::string>> by_switch;
    std::map<std::string, size_t> unexplained;
    for (const std::string& h : slow) {
      auto it = net.switch_of.find(h);
      if (it == net.switch_of.end()) continue;
      by_switch[it->second].push_back(h);
      unexplained[it->second] += explained.count(h) == 0;
    }
    std::set<std::string> switches;
    for (auto& [h, sw] : net.switch_of) switches.insert(sw);
    if (by_switch.size() == 1 && by_switch.begin()->second.size() >= 2 && switches.size() >= 2 &&
        unexplained[by_switch.begin()->first] >= 2) {
      const auto& [sw, hosts] = *by_switch.begin();
      Finding f;
      f.code = FindingCode::kNetSharedSwitch;
      f.severity = Describe(f.code).severity;
      f.entity.switch_name = sw;
      f.cause = "shared_switch";
      std::vector<std::string> sorted = hosts;
      std::sort(sorted.begin(), sorted.end(), NaturalLess);
      for (const std::string& h : sorted) {
        auto r = ranks.RanksOnHost(h);
        f.ranks.insert(f.ranks.end(), r.begin(), r.end());
      }
      f.message = fmt::format("the slow hosts {} all hang off switch {}, hosts on the other {} "
                              "switch{} are fine: likely traffic from outside the job",
                              HostList(sorted), sw, switches.size() - 1, switches.size() == 2 ? "" : "es");
      f.confidence = 0.6;
      auto src = net.switch_src.find(sorted.front());
      f.evidence.push_back({f.message, src != net.switch_src.end() ? std::optional<SourceRef>(src->second)
                                                                   : std::nullopt});
      f.next_steps.push_back(fmt::format(
          "check switch {}'s other tenants and its port counters (congestion, pause frames); ask "
          "the network team whether another job shares it",
          sw));
      a.findings.push_back(std::move(f));
      shared_switch_named = true;
    }
  }
  if (!shared_switch_named) {
    if (auto f = SwitchGroupFinding(a, net, ranks, o)) a.findings.push_back(std::move(*f));
  }
  std::optional<Finding> counters = PortCounterSwitchFinding(net, ranks, o);
  if (!counters) counters = PortCounterIntervalFinding(net, ranks, o);
  if (auto& f = counters) {
    // The counters confirm a switch already named from the hosts' slowness:
    // one finding, with both pieces of evidence.
    auto same = std::find_if(a.findings.begin(), a.findings.end(), [&](const Finding& g) {
      return g.code == FindingCode::kNetSharedSwitch && g.entity.switch_name == f->entity.switch_name;
    });
    if (same != a.findings.end()) {
      same->evidence.push_back(f->evidence.front());
      same->confidence = std::min(0.8, std::max(same->confidence, f->confidence) + 0.1);
      same->pattern = Pattern::kPortCounters;
    } else {
      a.findings.push_back(std::move(*f));
    }
  }
  return a;
}

}  // namespace laggard
