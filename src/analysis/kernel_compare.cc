#include "analysis/kernel_compare.h"

#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/robust_stats.h"
#include "base/text.h"

namespace laggard {
namespace {

uint64_t KeyOf(const TraceOp& op) { return (uint64_t{op.shape} << 32) | op.name; }

struct KeyStats {
  double median_ns = 0;
  size_t launches = 0;
};

// Median duration and launches per (name, shape) of the compute ops.
std::unordered_map<uint64_t, KeyStats> PerKey(const RankTrace& t) {
  std::unordered_map<uint64_t, std::vector<double>> durations;
  for (const TraceOp& op : t.ops) {
    if (op.cls != OpClass::kCommunication) durations[KeyOf(op)].push_back(static_cast<double>(op.dur_ns));
  }
  std::unordered_map<uint64_t, KeyStats> out;
  out.reserve(durations.size());
  for (auto& [key, d] : durations) {
    size_t n = d.size();
    out[key] = KeyStats{Median(std::move(d)).value_or(0), n};
  }
  return out;
}

}  // namespace

KernelComparison CompareKernels(const RankTrace& suspect, const std::vector<const RankTrace*>& peers,
                                size_t min_launches) {
  KernelComparison k;
  std::unordered_map<uint64_t, KeyStats> mine = PerKey(suspect);
  // Per key: each peer's median duration and time in it (peers one at a
  // time, so only one peer's durations are held).
  std::unordered_map<uint64_t, std::pair<std::vector<double>, std::vector<double>>> theirs;
  for (const RankTrace* p : peers) {
    for (const auto& [key, st] : PerKey(*p)) {
      auto it = mine.find(key);
      if (it == mine.end() || st.launches < min_launches || st.median_ns <= 0) continue;
      auto& [medians, times] = theirs[key];
      medians.push_back(st.median_ns);
      times.push_back(st.median_ns * static_cast<double>(st.launches));
    }
  }
  double log_sum = 0, top_gain = 0;
  for (auto& [key, peer] : theirs) {
    const KeyStats& m = mine[key];
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

std::string DescribeTopKernel(const KernelComparison& k, const NameTable& names, int32_t rank,
                              size_t peers) {
  std::string name = Printable(names.Get(k.top_name), 60);
  std::string shape = k.top_shape == kNoShape ? std::string() : fmt::format(" [{}]", names.Get(k.top_shape));
  return fmt::format("`{}`{} {:.2f}x {} on rank {} across {} launches vs {}", name, shape, k.top_ratio,
                     k.top_ratio >= 1 ? "slower" : "faster", rank, k.top_launches,
                     peers == 1 ? std::string("a healthy peer") : fmt::format("the median of {} peers", peers));
}

}  // namespace laggard
