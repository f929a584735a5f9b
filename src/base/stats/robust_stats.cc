#include "base/stats/robust_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace laggard {

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
  double out = 0;
  QuantilesInPlace(v, std::span<const double>(&q, 1), std::span<double>(&out, 1));
  return out;
}

void QuantilesInPlace(std::span<double> v, std::span<const double> qs, std::span<double> out) {
  // After nth_element at `from`, every element before it is <= every element
  // from it on, so the next (larger) quantile only partitions the tail.
  size_t from = 0;
  for (size_t i = 0; i < qs.size(); ++i) {
    double pos = std::clamp(qs[i], 0.0, 1.0) * static_cast<double>(v.size() - 1);
    size_t lo = std::max(from, static_cast<size_t>(std::floor(pos)));
    double frac = pos - static_cast<double>(lo);
    std::nth_element(v.begin() + static_cast<ptrdiff_t>(from),
                     v.begin() + static_cast<ptrdiff_t>(lo), v.end());
    from = lo;
    double a = v[lo];
    double b = a;
    if (frac > 0 && lo + 1 < v.size()) {
      b = *std::min_element(v.begin() + static_cast<ptrdiff_t>(lo + 1), v.end());
    }
    out[i] = a + (b - a) * frac;
  }
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
  // Selection instead of a sort: the detector summarises every rank's
  // thousands of steps. The order statistics are the sorted definition's.
  std::vector<double> v(values.begin(), values.end());
  Summary s;
  s.n = v.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  s.min = *mn;
  s.max = *mx;
  static constexpr double kQ[] = {0.1, 0.5, 0.9};
  double q[3];
  QuantilesInPlace(v, kQ, q);
  s.p10 = q[0];
  s.median = q[1];
  s.p90 = q[2];
  for (double& x : v) x = std::fabs(x - s.median);
  s.mad = *Median(std::move(v));
  return s;
}

}  // namespace laggard
