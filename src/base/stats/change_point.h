// Change-point detection for a rank's own history: from which step did it
// become slow, and did it recover?
//
// Method: binary segmentation with a least-squares mean-shift cost. The
// series is first winsorised at median +- max(5 sigma, 4 min_shift) so
// single spikes cannot create a segment. A split is accepted when both sides have at least
// `min_segment` points and their means differ by at least `min_shift`
// (absolute, in the series' units). Segments are then described by their
// median. O(n log n) with prefix sums.
//
// Worked example: x = [0,0,0,0,0.2,0.2,0.2,0.2] with min_segment 2,
// min_shift 0.05 -> one split at index 4: segments [0,4) median 0 and
// [4,8) median 0.2.

#ifndef LAGGARD_BASE_STATS_CHANGE_POINT_H_
#define LAGGARD_BASE_STATS_CHANGE_POINT_H_

#include <cstddef>
#include <vector>

namespace laggard {

struct Segment {
  size_t begin = 0;  // index into the series
  size_t end = 0;    // one past the last
  double median = 0;
};

struct ChangePointOptions {
  size_t min_segment = 5;
  double min_shift = 0.05;
  size_t max_segments = 4;
};

// Segments covering [0, x.size()) in order; one segment when no change.
std::vector<Segment> Segmentize(const std::vector<double>& x, const ChangePointOptions& options);

}  // namespace laggard

#endif  // LAGGARD_BASE_STATS_CHANGE_POINT_H_
