// Node pairs' bandwidth: a bad node or the fabric (pair_bandwidth.h).

#include "analysis/network/pair_bandwidth.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

// Evidence lines per finding: the pairs beyond are summed up in one line.
constexpr size_t kMaxPairLines = 12;

std::string PairText(const PairLink& p, double reference) {
  std::string s = fmt::format("{} with {}: {:.1f} GB/s ({:.2f}x the fast pairs' {:.1f})", p.a, p.b,
                              p.gbps, p.gbps / reference, reference);
  if (p.measurements > 1) s += fmt::format(", median of {} runs", p.measurements);
  if (p.note) s += fmt::format(" [{}]", *p.note);
  return s;
}

// Per host: its pairs (into d.pairs).
using HostPairs = std::map<std::string, std::vector<size_t>>;

HostPairs PairsOfHosts(const PairDecision& d) {
  HostPairs of;
  for (size_t i = 0; i < d.pairs.size(); ++i) {
    of[d.pairs[i].a].push_back(i);
    of[d.pairs[i].b].push_back(i);
  }
  return of;
}

const std::string& Partner(const PairLink& p, const std::string& h) { return p.a == h ? p.b : p.a; }

// The fast pairs of `x` with a node other than `h`: they show `x` healthy
// when it is slow with `h`.
std::vector<size_t> FastElsewhere(const PairDecision& d, const HostPairs& of, const std::string& x,
                                  const std::string& h) {
  std::vector<size_t> out;
  for (size_t i : of.at(x)) {
    if (d.pairs[i].fast && Partner(d.pairs[i], x) != h) out.push_back(i);
  }
  return out;
}

}  // namespace

PairDecision DecidePairs(const std::vector<PairMeasure>& measures, double slow_ratio) {
  PairDecision d;
  std::map<std::pair<std::string, std::string>, std::vector<const PairMeasure*>> by_pair;
  for (const PairMeasure& m : measures) {
    if (m.a == m.b || !(m.gbps > 0) || !std::isfinite(m.gbps)) continue;
    bool in_order = NaturalLess(m.a, m.b);
    by_pair[{in_order ? m.a : m.b, in_order ? m.b : m.a}].push_back(&m);
  }
  std::set<std::string> hosts;
  for (const auto& [key, ms] : by_pair) {
    PairLink p;
    p.a = key.first;
    p.b = key.second;
    std::vector<double> v;
    for (const PairMeasure* m : ms) {
      v.push_back(m->gbps);
      if (!p.note && m->note) p.note = m->note;
    }
    p.gbps = *Median(v);
    p.measurements = ms.size();
    p.src = ms.front()->src;
    hosts.insert(p.a);
    hosts.insert(p.b);
    d.pairs.push_back(std::move(p));
  }
  d.hosts = hosts.size();
  if (d.pairs.empty()) return d;
  std::stable_sort(d.pairs.begin(), d.pairs.end(),
                   [](const PairLink& x, const PairLink& y) { return x.gbps > y.gbps; });
  d.decided = d.hosts >= 3 && d.pairs.size() >= 3;
  // The best third, leaving out the fastest pairs while each is above
  // kPairTooFast x the next (a typo, "8836" for 88.36, that would lift the
  // fast level over every healthy pair); a group of fast pairs stays.
  std::vector<const PairLink*> usable;
  for (const PairLink& p : d.pairs) usable.push_back(&p);
  while (usable.size() > 1 && usable[0]->gbps > kPairTooFast * usable[1]->gbps) {
    usable.erase(usable.begin());
  }
  const size_t best = d.decided ? (usable.size() + 2) / 3 : 1;
  std::vector<double> top;
  for (size_t i = 0; i < best && i < usable.size(); ++i) top.push_back(usable[i]->gbps);
  d.reference_gbps = *Median(top);
  for (PairLink& p : d.pairs) {
    p.slow = p.gbps <= slow_ratio * d.reference_gbps;
    p.fast = p.gbps >= kPairFastRatio * d.reference_gbps;
  }
  std::stable_sort(d.pairs.begin(), d.pairs.end(),
                   [](const PairLink& x, const PairLink& y) { return x.gbps < y.gbps; });
  if (!d.decided) {
    for (size_t i = 0; i < d.pairs.size(); ++i) {
      if (d.pairs[i].slow) d.open.push_back(i);
    }
    return d;
  }
  const HostPairs of = PairsOfHosts(d);
  auto cleared = [&](const std::string& x, const std::string& h) {
    return !FastElsewhere(d, of, x, h).empty();
  };
  for (const auto& [h, idx] : of) {
    size_t partners_cleared = 0;
    std::set<size_t> clearing;  // the distinct fast pairs that clear them
    bool all_slow = true;
    for (size_t i : idx) {
      all_slow = all_slow && d.pairs[i].slow;
      std::vector<size_t> fast = FastElsewhere(d, of, Partner(d.pairs[i], h), h);
      if (!fast.empty()) ++partners_cleared;
      clearing.insert(fast.begin(), fast.end());
    }
    if (!all_slow || idx.size() < 2 || partners_cleared == 0) continue;
    if (partners_cleared >= 2 && clearing.size() >= 2) {
      d.bad_nodes.push_back(h);
    } else {
      d.suspects.push_back({h, "its partners are shown fast by one pair only"});
    }
  }
  // Nodes slow with every partner but never tested with each other could
  // be one group behind one slow link (a leaf's uplink): not named.
  std::vector<std::string> apart;
  for (const std::string& u : d.bad_nodes) {
    for (const std::string& v : d.bad_nodes) {
      if (u == v || !NaturalLess(u, v)) continue;
      bool tested = std::any_of(d.pairs.begin(), d.pairs.end(), [&](const PairLink& p) {
        return (p.a == u && p.b == v) || (p.a == v && p.b == u);
      });
      if (!tested) {
        apart.push_back(u);
        apart.push_back(v);
        d.suspects.push_back(
            {u, fmt::format("so is {}, never tested with it: the two may sit behind one slow link "
                            "(test {} with {})",
                            v, u, v)});
        d.suspects.push_back(
            {v, fmt::format("so is {}, never tested with it: the two may sit behind one slow link "
                            "(test {} with {})",
                            u, u, v)});
      }
    }
  }
  std::erase_if(d.bad_nodes, [&](const std::string& h) {
    return std::find(apart.begin(), apart.end(), h) != apart.end();
  });
  std::sort(d.bad_nodes.begin(), d.bad_nodes.end(), NaturalLess);
  auto bad = [&](const std::string& h) {
    return std::find(d.bad_nodes.begin(), d.bad_nodes.end(), h) != d.bad_nodes.end() ||
           std::any_of(d.suspects.begin(), d.suspects.end(),
                       [&](const auto& s) { return s.first == h; });
  };
  for (size_t i = 0; i < d.pairs.size(); ++i) {
    const PairLink& p = d.pairs[i];
    if (!p.slow || bad(p.a) || bad(p.b)) continue;
    (cleared(p.a, p.b) && cleared(p.b, p.a) ? d.fabric : d.open).push_back(i);
  }
  return d;
}

namespace {

// The host with the most fast pairs, for the next steps (in a full mesh
// with a bad node every host has one slow pair).
std::string FastHost(const PairDecision& d, const std::set<std::string>& avoid) {
  std::string best = "HEALTHY_HOST";
  size_t most = 0;
  for (const auto& [h, idx] : PairsOfHosts(d)) {
    if (avoid.count(h)) continue;
    size_t fast = static_cast<size_t>(
        std::count_if(idx.begin(), idx.end(), [&](size_t i) { return d.pairs[i].fast; }));
    if (fast > most) most = fast, best = h;
  }
  return best;
}

void AddPairEvidence(Finding& f, const PairDecision& d, const std::vector<size_t>& idx,
                     std::string_view source) {
  for (size_t k = 0; k < idx.size() && k < kMaxPairLines; ++k) {
    f.evidence.push_back(
        {fmt::format("{}: {}", source, PairText(d.pairs[idx[k]], d.reference_gbps)),
         d.pairs[idx[k]].src});
  }
  if (idx.size() > kMaxPairLines) {
    f.evidence.push_back({fmt::format("and {} more pairs", idx.size() - kMaxPairLines), {}});
  }
}

void NodeFindings(const PairDecision& d, const RankMap& ranks, const NetworkData& net,
                  std::string_view source, const NetworkDetectorOptions& o, NetworkDecision& out) {
  const HostPairs of = PairsOfHosts(d);
  for (const std::string& h : d.bad_nodes) {
    Finding f = HostFinding(FindingCode::kNetBandwidthLow, h, ranks, net.switch_of);
    f.cause = "nic_degraded";
    std::vector<double> ratios;
    std::vector<size_t> slow, clearing;  // clearing: one fast pair per cleared partner
    for (size_t i : of.at(h)) {
      slow.push_back(i);
      ratios.push_back(d.pairs[i].gbps / d.reference_gbps);
      std::vector<size_t> fast = FastElsewhere(d, of, Partner(d.pairs[i], h), h);
      if (!fast.empty()) clearing.push_back(fast.front());
    }
    const double ratio = Median(ratios).value_or(1);
    f.message = fmt::format(
        "{} is slow with every partner: {} pairs at {:.2f}x the fast pairs' {:.1f} GB/s, while "
        "{} of its partners are fast with other nodes; the node or its own link, not the "
        "fabric{}",
        h, slow.size(), ratio, d.reference_gbps, clearing.size(), RanksText(f.ranks));
    f.slowdown = 1 - ratio;
    f.confidence = clearing.size() >= 3 ? o.confidence.pair_node_cleared : o.confidence.pair_node;
    AddPairEvidence(f, d, slow, source);
    AddPairEvidence(f, d, clearing, source);
    f.next_steps.push_back(
        fmt::format("check {}'s NICs, cables and switch ports: `ibstat`, `ethtool`, `perfquery` "
                    "on it",
                    h));
    f.next_steps.push_back(PairTestCommand(h, FastHost(d, {h})));
    out.bad_hosts.insert(h);
    out.a.findings.push_back(std::move(f));
  }
}

// The nodes in groups joined by fast pairs, largest first.
std::vector<std::vector<std::string>> FastGroups(const PairDecision& d) {
  std::map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> root = [&](const std::string& h) {
    auto it = parent.find(h);
    if (it == parent.end() || it->second == h) return h;
    return it->second = root(it->second);
  };
  for (const PairLink& p : d.pairs) {
    parent.emplace(p.a, p.a);
    parent.emplace(p.b, p.b);
  }
  for (const PairLink& p : d.pairs) {
    if (p.fast) parent[root(p.a)] = root(p.b);
  }
  std::map<std::string, std::vector<std::string>> by_root;
  for (const auto& [h, r] : parent) by_root[root(h)].push_back(h);
  std::vector<std::vector<std::string>> groups;
  for (auto& [r, members] : by_root) {
    std::sort(members.begin(), members.end(), NaturalLess);
    groups.push_back(std::move(members));
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& x, const auto& y) { return x.size() > y.size(); });
  return groups;
}

// " (a, b, c) and (d, e)" when the slow pairs are exactly those between
// groups of >= 2 nodes joined by fast pairs; "" otherwise.
std::string SplitText(const PairDecision& d) {
  std::vector<std::vector<std::string>> groups = FastGroups(d);
  if (groups.size() < 2 || groups.size() > 4 ||
      std::any_of(groups.begin(), groups.end(), [](const auto& g) { return g.size() < 2; })) {
    return "";
  }
  auto group_of = [&](const std::string& h) {
    for (size_t k = 0; k < groups.size(); ++k) {
      if (std::find(groups[k].begin(), groups[k].end(), h) != groups[k].end()) return k;
    }
    return groups.size();
  };
  for (size_t i : d.fabric) {
    if (group_of(d.pairs[i].a) == group_of(d.pairs[i].b)) return "";
  }
  std::vector<std::string> parts;
  for (const auto& g : groups) parts.push_back("(" + HostList(g) + ")");
  std::string s;
  for (size_t k = 0; k < parts.size(); ++k) {
    s += (k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ") + parts[k];
  }
  return s;
}

void FabricFinding(const PairDecision& d, const NetworkData& net, std::string_view source,
                   const NetworkDetectorOptions& o, NetworkDecision& out) {
  if (d.fabric.empty()) return;
  Finding f = MakeFinding(FindingCode::kNetPairFabric);
  f.cause = "fabric";
  std::set<std::string> nodes;
  std::vector<double> ratios;
  for (size_t i : d.fabric) {
    nodes.insert(d.pairs[i].a);
    nodes.insert(d.pairs[i].b);
    ratios.push_back(d.pairs[i].gbps / d.reference_gbps);
  }
  const double ratio = Median(ratios).value_or(1);
  if (d.fabric.size() == 1) {
    const PairLink& p = d.pairs[d.fabric[0]];
    f.message = fmt::format(
        "{} and {} are slow together ({:.2f}x the fast pairs' {:.1f} GB/s) though each is fast "
        "with other nodes: the path between them (switches, cables, routing), not a node",
        p.a, p.b, ratio, d.reference_gbps);
    f.confidence = o.confidence.pair_fabric_one;
  } else if (std::string split = SplitText(d); !split.empty()) {
    f.message = fmt::format(
        "the nodes split into groups, fast within and slow between: {}; the {} pairs between "
        "them run at {:.2f}x the fast pairs' {:.1f} GB/s: the links between the groups (leaf "
        "uplinks, spine, routing), not a node",
        split, d.fabric.size(), ratio, d.reference_gbps);
    f.confidence = o.confidence.pair_fabric_split;
  } else {
    const bool disjoint = nodes.size() == 2 * d.fabric.size();
    f.message = fmt::format(
        "{} slow node pairs ({:.2f}x the fast pairs' {:.1f} GB/s){} and each of their nodes is "
        "fast with another partner: the fabric between them (switches, cables, routing), not a "
        "node",
        d.fabric.size(), ratio, d.reference_gbps, disjoint ? " share no node," : "");
    f.confidence = disjoint ? o.confidence.pair_fabric_disjoint : o.confidence.pair_fabric;
  }
  f.message = fmt::format("{}: {}", source, f.message);
  f.slowdown = 1 - ratio;
  AddPairEvidence(f, d, d.fabric, source);
  std::set<std::string> switches;
  for (const std::string& h : nodes) {
    auto sw = net.switch_of.find(h);
    if (sw != net.switch_of.end()) switches.insert(sw->second);
  }
  f.next_steps.push_back(fmt::format(
      "trace the slow pairs' routes (`ibtracert` between their LIDs) and compare the switches "
      "they cross with the fast pairs'{}; read those switches' port counters (`perfquery` on "
      "the switch ports) for errors and congestion",
      switches.empty()
          ? ""
          : fmt::format(" (the nodes hang on {})", HostList({switches.begin(), switches.end()}))));
  out.a.findings.push_back(std::move(f));
}

void OpenFindings(const PairDecision& d, const RankMap& ranks, const NetworkData& net,
                  std::string_view source, const NetworkDetectorOptions& o, NetworkDecision& out) {
  const HostPairs of = PairsOfHosts(d);
  for (size_t i : d.open) {
    const PairLink& p = d.pairs[i];
    Finding f = HostFinding(FindingCode::kNetPairSlow, std::nullopt, ranks, net.switch_of);
    f.cause = "undetermined";
    const bool a_fast = !FastElsewhere(d, of, p.a, p.b).empty();
    const bool b_fast = !FastElsewhere(d, of, p.b, p.a).empty();
    f.message =
        d.decided
            ? fmt::format(
                  "{} and {} are slow together ({:.2f}x the fast pairs' {:.1f} GB/s); {}", p.a, p.b,
                  p.gbps / d.reference_gbps, d.reference_gbps,
                  a_fast || b_fast
                      ? fmt::format("{} is fast with another node, {} is not shown fast "
                                    "with any: {}, or the path between them",
                                    a_fast ? p.a : p.b, a_fast ? p.b : p.a, a_fast ? p.b : p.a)
                      : "neither is shown fast with another node: either node, or the "
                        "path between them")
            : fmt::format(
                  "{} and {} at {:.2f}x the best pair's {:.1f} GB/s; {} pairs of {} hosts "
                  "are too few to tell a node from the fabric (3 hosts in 3 pairs needed)",
                  p.a, p.b, p.gbps / d.reference_gbps, d.reference_gbps, d.pairs.size(), d.hosts);
    f.slowdown = 1 - p.gbps / d.reference_gbps;
    f.confidence = o.confidence.pair_slow;
    f.evidence.push_back({fmt::format("{}: {}", source, PairText(p, d.reference_gbps)), p.src});
    const std::string fast = FastHost(d, {p.a, p.b});
    f.next_steps.push_back(PairTestCommand(p.a, fast));
    f.next_steps.push_back(PairTestCommand(p.b, fast));
    out.a.findings.push_back(std::move(f));
  }
}

// One finding per node the pairs cannot pin down, with every reason.
void SuspectFindings(const PairDecision& d, const RankMap& ranks, const NetworkData& net,
                     std::string_view source, const NetworkDetectorOptions& o,
                     NetworkDecision& out) {
  std::map<std::string, std::vector<std::string>> reasons;
  for (const auto& [h, why] : d.suspects) {
    auto& r = reasons[h];
    if (std::find(r.begin(), r.end(), why) == r.end()) r.push_back(why);
  }
  const auto of = PairsOfHosts(d);
  for (const auto& [h, why] : reasons) {
    Finding f = HostFinding(FindingCode::kNetPairSlow, std::nullopt, ranks, net.switch_of);
    f.cause = "undetermined";
    std::vector<double> ratios;
    std::vector<size_t> slow;
    for (size_t i : of.at(h)) {
      slow.push_back(i);
      ratios.push_back(d.pairs[i].gbps / d.reference_gbps);
    }
    const double ratio = Median(ratios).value_or(1);
    std::string reason;
    for (size_t k = 0; k < why.size(); ++k) reason += (k ? "; " : "") + why[k];
    f.message = fmt::format(
        "{} is slow with every partner ({} pairs at {:.2f}x the fast pairs' {:.1f} GB/s), but "
        "{}: the node, or a link it shares with others; not named",
        h, slow.size(), ratio, d.reference_gbps, reason);
    f.slowdown = 1 - ratio;
    f.confidence = o.confidence.pair_slow_node;
    AddPairEvidence(f, d, slow, source);
    f.next_steps.push_back(PairTestCommand(h, FastHost(d, {h})));
    out.a.findings.push_back(std::move(f));
  }
}

struct PairSet {
  std::string source;
  PairDecision d;
  std::vector<size_t> runs;  // nccl-tests runs it holds
};

}  // namespace

void DecidePairTests(const NetworkMetrics& m, const RankMap& ranks, const NetworkDetectorOptions& o,
                     NetworkDecision& d, std::set<size_t>& handled) {
  const NetworkData& net = *m.net;
  std::vector<PairSet> sets;
  // Each table and test on its own: tables of other days or fabrics, and
  // tests of other collectives or GPU counts, are not pooled.
  std::map<std::pair<uint32_t, std::string>, std::vector<PairMeasure>> tables;
  for (const PairBandwidth& p : net.pair_bandwidths) {
    tables[{p.src.file, p.group}].push_back({p.host_a, p.host_b, p.gbps, p.src, p.note});
  }
  for (const auto& [key, measures] : tables) {
    sets.push_back({key.second.empty() ? "pair table" : "pair table, " + key.second,
                    DecidePairs(measures, o.bandwidth_ratio),
                    {}});
  }
  for (const NcclTestGroup& g : m.nccl_test_groups) {
    std::vector<PairMeasure> measures;
    std::vector<size_t> runs;
    std::set<std::string> hosts;
    for (size_t i : g.runs) {
      const NcclTestStats& s = m.nccl_tests[i];
      if (s.hosts.size() != 2 || !s.large_busbw_gbps) continue;
      measures.push_back(
          {s.hosts[0], s.hosts[1], *s.large_busbw_gbps, net.nccl_tests[s.run].src, std::nullopt});
      runs.push_back(i);
      hosts.insert(s.hosts.begin(), s.hosts.end());
    }
    if (hosts.size() < 3 || measures.size() < 3) continue;
    sets.push_back(
        {g.collective + " (nccl-tests)", DecidePairs(measures, o.bandwidth_ratio), runs});
  }
  std::set<std::string> named;
  for (size_t k = 0; k < sets.size(); ++k) {
    PairDecision& pd = sets[k].d;
    std::vector<std::string> keep;
    for (const std::string& h : pd.bad_nodes) {
      std::optional<std::string> why;
      // Fast with a partner in another table or test: not the node.
      for (size_t other = 0; other < sets.size() && !why; ++other) {
        if (other == k) continue;
        for (const PairLink& p : sets[other].d.pairs) {
          if (p.fast && (p.a == h || p.b == h)) {
            why = fmt::format("it is fast with {} in {}", Partner(p, h), sets[other].source);
            break;
          }
        }
      }
      // Alone on its switch among the nodes tested: its switch's uplink
      // slows every pair of it as much.
      auto sw = net.switch_of.find(h);
      if (!why && sw != net.switch_of.end()) {
        bool alone = true;
        for (const PairLink& p : pd.pairs) {
          for (const std::string* x : {&p.a, &p.b}) {
            auto xs = net.switch_of.find(*x);
            if (*x != h && xs != net.switch_of.end() && xs->second == sw->second) alone = false;
          }
        }
        if (alone) {
          why = fmt::format(
              "it is the only node tested on switch {}, whose uplink would slow "
              "every pair of it as much",
              sw->second);
        }
      }
      if (why) {
        pd.suspects.push_back({h, *why});
      } else {
        keep.push_back(h);
      }
    }
    // A node named by an earlier table or test (a summary and the logs it
    // sums up, read together) is one finding: the same runs are no second
    // signal.
    std::erase_if(keep, [&](const std::string& h) {
      if (named.count(h) == 0) return false;
      for (Finding& f : d.a.findings) {
        if (f.code == FindingCode::kNetBandwidthLow && f.entity.host == h) {
          f.evidence.push_back(
              {fmt::format("{}: {} is slow with every partner here too", sets[k].source, h), {}});
          return true;
        }
      }
      return false;
    });
    named.insert(keep.begin(), keep.end());
    pd.bad_nodes = std::move(keep);
    NodeFindings(pd, ranks, net, sets[k].source, o, d);
    FabricFinding(pd, net, sets[k].source, o, d);
    SuspectFindings(pd, ranks, net, sets[k].source, o, d);
    OpenFindings(pd, ranks, net, sets[k].source, o, d);
    handled.insert(sets[k].runs.begin(), sets[k].runs.end());
  }
}

}  // namespace laggard
