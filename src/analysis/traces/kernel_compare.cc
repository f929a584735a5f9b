#include "analysis/traces/kernel_compare.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"
#include "base/text.h"

namespace laggard {
namespace {

uint64_t KeyOf(const TraceOp& op) { return (uint64_t{op.shape} << 32) | op.name; }

struct KeyStats {
  double median_ns = 0;
  size_t launches = 0;
};

// Each op's self time: its duration less that of the ops directly inside
// it on the same thread (stream). Ops of one thread nest (a CPU op calls
// others: aten::linear holds aten::addmm), so an outer op's duration
// counts its children's work again; its self time is its own. GPU kernels
// of one stream never nest: their self time is their duration.
// Example: aten::linear [0, 100) holding aten::t [2, 5) and aten::addmm
// [6, 96): self times 7, 3 and 90.
std::vector<DurationNs> SelfTimes(const std::vector<TraceOp>& ops) {
  std::vector<DurationNs> self(ops.size());
  // Outer before inner where two start together.
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops[a].start_ns != ops[b].start_ns ? ops[a].start_ns < ops[b].start_ns
                                              : ops[a].dur_ns > ops[b].dur_ns;
  });
  std::unordered_map<int32_t, std::vector<size_t>> open;  // per thread, the ops that hold the next
  for (size_t i : order) {
    const TraceOp& op = ops[i];
    self[i] = op.dur_ns;
    std::vector<size_t>& stack = open[op.stream];
    while (!stack.empty() && ops[stack.back()].start_ns + ops[stack.back()].dur_ns <= op.start_ns) {
      stack.pop_back();
    }
    if (!stack.empty() &&
        op.start_ns + op.dur_ns <= ops[stack.back()].start_ns + ops[stack.back()].dur_ns) {
      self[stack.back()] -= op.dur_ns;
    }
    stack.push_back(i);
  }
  return self;
}

// Median time and launches per (name, shape) of the compute ops: their
// duration, or in a CPU-only trace their self time (ops nest there).
using KeyTable = std::unordered_map<uint64_t, KeyStats>;

KeyTable PerKey(const RankTrace& t) {
  std::vector<DurationNs> self;
  if (t.cpu_only) self = SelfTimes(t.ops);
  std::unordered_map<uint64_t, std::vector<double>> durations;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TraceOp& op = t.ops[i];
    if (op.cls == OpClass::kCommunication) continue;
    durations[KeyOf(op)].push_back(static_cast<double>(t.cpu_only ? self[i] : op.dur_ns));
  }
  KeyTable out;
  out.reserve(durations.size());
  for (auto& [key, d] : durations) {
    size_t n = d.size();
    out[key] = KeyStats{Median(std::move(d)).value_or(0), n};
  }
  return out;
}

// The comparison of one rank's table with its peers' (see the header).
KernelComparison Compare(const KeyTable& mine, const std::vector<const KeyTable*>& peers,
                         size_t min_launches) {
  KernelComparison k;
  // Per key: each peer's median duration and time in it.
  std::unordered_map<uint64_t, std::pair<std::vector<double>, std::vector<double>>> theirs;
  for (const KeyTable* p : peers) {
    for (const auto& [key, st] : *p) {
      auto it = mine.find(key);
      if (it == mine.end() || st.launches < min_launches || st.median_ns <= 0) continue;
      auto& [medians, times] = theirs[key];
      medians.push_back(st.median_ns);
      times.push_back(st.median_ns * static_cast<double>(st.launches));
    }
  }
  double log_sum = 0, top_gain = 0;
  for (auto& [key, peer] : theirs) {
    const KeyStats& m = mine.at(key);
    if (m.launches < min_launches || m.median_ns <= 0) continue;
    double pm = Median(peer.first).value_or(0);
    double weight = Median(peer.second).value_or(0);
    if (pm <= 0 || weight <= 0) continue;
    double ratio = m.median_ns / pm;
    log_sum += weight * std::log(ratio);
    k.weight_ns += weight;
    ++k.keys;
    uint32_t shape = static_cast<uint32_t>(key >> 32);
    if (shape != kNoShape) ++k.keys_with_shape;
    double gain = weight * std::log(ratio);
    if (k.keys == 1 || gain > top_gain) {
      top_gain = gain;
      k.top_name = static_cast<uint32_t>(key & 0xFFFFFFFFu);
      k.top_shape = shape;
      k.top_ratio = ratio;
      k.top_launches = m.launches;
    }
  }
  if (k.weight_ns > 0) k.ratio = std::exp(log_sum / k.weight_ns);
  return k;
}

}  // namespace

KernelComparison CompareKernels(const RankTrace& suspect,
                                const std::vector<const RankTrace*>& peers, size_t min_launches) {
  KeyTable mine = PerKey(suspect);
  std::vector<KeyTable> tables;
  tables.reserve(peers.size());
  for (const RankTrace* p : peers) tables.push_back(PerKey(*p));
  std::vector<const KeyTable*> theirs;
  for (const KeyTable& t : tables) theirs.push_back(&t);
  return Compare(mine, theirs, min_launches);
}

std::vector<KernelComparison> CompareEachWithPeers(const std::vector<const RankTrace*>& traces,
                                                   size_t max_peers, size_t min_launches) {
  std::vector<KeyTable> tables;
  tables.reserve(traces.size());
  for (const RankTrace* t : traces) tables.push_back(PerKey(*t));
  std::vector<KernelComparison> out;
  const size_t n = traces.size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<const KeyTable*> peers;
    for (size_t j = 1; j < n && peers.size() < max_peers; ++j)
      peers.push_back(&tables[(i + j) % n]);
    out.push_back(Compare(tables[i], peers, min_launches));
  }
  return out;
}

std::string DescribeTopKernel(const KernelComparison& k, const NameTable& names, int32_t rank,
                              size_t peers) {
  std::string name = Printable(names.Get(k.top_name), 60);
  std::string shape =
      k.top_shape == kNoShape ? std::string() : fmt::format(" [{}]", names.Get(k.top_shape));
  return fmt::format(
      "`{}`{} {:.2f}x {} on rank {} across {} launches vs {}", name, shape, k.top_ratio,
      k.top_ratio >= 1 ? "slower" : "faster", rank, k.top_launches,
      peers == 1 ? std::string("a healthy peer") : fmt::format("the median of {} peers", peers));
}

}  // namespace laggard
