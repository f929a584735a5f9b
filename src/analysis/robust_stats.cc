#include "analysis/robust_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace laggard {
namespace {

double SortedQuantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  double lower = *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

std::optional<double> Quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return SortedQuantile(v, std::clamp(q, 0.0, 1.0));
}

std::optional<double> Mad(std::vector<double> v) {
  auto med = Median(v);
  if (!med) return std::nullopt;
  for (double& x : v) x = std::fabs(x - *med);
  return Median(std::move(v));
}

std::optional<double> Mean(std::span<const double> v) {
  if (v.empty()) return std::nullopt;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::optional<Summary> Summarize(std::span<const double> values) {
  if (values.empty()) return std::nullopt;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  Summary s;
  s.n = sorted.size();
  s.median = SortedQuantile(sorted, 0.5);
  s.p10 = SortedQuantile(sorted, 0.1);
  s.p90 = SortedQuantile(sorted, 0.9);
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  for (double& x : sorted) x = std::fabs(x - s.median);
  s.mad = *Median(std::move(sorted));
  return s;
}

}  // namespace laggard
