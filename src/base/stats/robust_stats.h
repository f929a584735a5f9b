// Robust statistics used by the detectors: median, quantiles, MAD.
//
// Functions taking std::vector<double> by value reorder their copy
// (nth_element); pass a copy you do not need. All return nullopt on empty
// input rather than inventing a number.

#ifndef LAGGARD_BASE_STATS_ROBUST_STATS_H_
#define LAGGARD_BASE_STATS_ROBUST_STATS_H_

#include <optional>
#include <span>
#include <vector>

namespace laggard {

// Scale factor that makes the MAD a consistent estimator of the standard
// deviation for normally distributed data (1 / Phi^-1(3/4)).
inline constexpr double kMadToSigma = 1.4826;

std::optional<double> Median(std::vector<double> values);
// Quantile q in [0,1] with linear interpolation between order statistics
// (R type 7, NumPy's default).
std::optional<double> Quantile(std::vector<double> values, double q);
// Several quantiles of `values` at once, same definition as Quantile():
// `qs` ascending in [0,1], one result per q in `out`. Reorders `values`
// (successive nth_element over the shrinking tail: O(n) per quantile instead
// of a sort). `values` must not be empty.
void QuantilesInPlace(std::span<double> values, std::span<const double> qs, std::span<double> out);
// Median absolute deviation from the median (unscaled).
std::optional<double> Mad(std::vector<double> values);
std::optional<double> Mean(std::span<const double> values);

struct Summary {
  size_t n = 0;
  double median = 0, mean = 0, p10 = 0, p90 = 0, mad = 0, min = 0, max = 0;
};
// All of the above from one copy (selection, not a sort). nullopt when empty.
std::optional<Summary> Summarize(std::span<const double> values);

}  // namespace laggard

#endif  // LAGGARD_BASE_STATS_ROBUST_STATS_H_
