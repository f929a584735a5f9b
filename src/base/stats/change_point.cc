#include "base/stats/change_point.h"

#include <algorithm>
#include <cmath>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

struct Split {
  size_t at = 0;
  double gain = 0;  // reduction of the sum of squared errors
  double shift = 0;
};

// Best single split of w[b, e) using prefix sums s1 (sum) and s2 (sum of squares).
Split BestSplit(const std::vector<double>& s1, const std::vector<double>& s2, size_t b, size_t e,
                size_t min_segment) {
  Split best;
  if (e - b < 2 * min_segment) return best;
  auto sse = [&](size_t i, size_t j) {
    double n = static_cast<double>(j - i);
    double sum = s1[j] - s1[i];
    return (s2[j] - s2[i]) - sum * sum / n;
  };
  double total = sse(b, e);
  for (size_t k = b + min_segment; k + min_segment <= e; ++k) {
    double gain = total - sse(b, k) - sse(k, e);
    if (gain > best.gain) {
      best.gain = gain;
      best.at = k;
      best.shift = (s1[e] - s1[k]) / static_cast<double>(e - k) -
                   (s1[k] - s1[b]) / static_cast<double>(k - b);
    }
  }
  return best;
}

}  // namespace

std::vector<Segment> Segmentize(const std::vector<double>& x, const ChangePointOptions& options) {
  std::vector<Segment> out;
  if (x.empty()) return out;
  // Winsorise.
  std::vector<double> w = x;
  double med = *Median(x);
  double mad = *Mad(x);
  double lim = std::max(5 * kMadToSigma * mad, 4 * options.min_shift);
  for (double& v : w) v = std::clamp(v, med - lim, med + lim);
  std::vector<double> s1(w.size() + 1, 0), s2(w.size() + 1, 0);
  for (size_t i = 0; i < w.size(); ++i) {
    s1[i + 1] = s1[i] + w[i];
    s2[i + 1] = s2[i] + w[i] * w[i];
  }
  std::vector<size_t> cuts = {0, w.size()};
  size_t max_segments = std::max<size_t>(1, options.max_segments);
  while (cuts.size() - 1 < max_segments) {
    Split best;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      Split s = BestSplit(s1, s2, cuts[i], cuts[i + 1], std::max<size_t>(1, options.min_segment));
      if (std::fabs(s.shift) >= options.min_shift && s.gain > best.gain) best = s;
    }
    if (best.gain <= 0) break;
    cuts.insert(std::upper_bound(cuts.begin(), cuts.end(), best.at), best.at);
  }
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    std::vector<double> part(x.begin() + static_cast<ptrdiff_t>(cuts[i]),
                             x.begin() + static_cast<ptrdiff_t>(cuts[i + 1]));
    out.push_back(Segment{cuts[i], cuts[i + 1], *Median(std::move(part))});
  }
  // Neighbouring segments whose medians are closer than min_shift are one.
  std::vector<Segment> merged;
  for (const Segment& s : out) {
    if (!merged.empty() && std::fabs(merged.back().median - s.median) < options.min_shift) {
      std::vector<double> part(x.begin() + static_cast<ptrdiff_t>(merged.back().begin),
                               x.begin() + static_cast<ptrdiff_t>(s.end));
      merged.back().end = s.end;
      merged.back().median = *Median(std::move(part));
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

}  // namespace laggard
