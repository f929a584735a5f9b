// Per-kernel comparison of a suspect rank's compute kernels with healthy
// peers', by kernel name and launch shape. The trace detector calls it when
// it has found a late rank, to tell compute-slow from waiting.
//
// Assumption: in data-parallel training every rank launches the same
// kernels with the same shapes, so a kernel (name + shape) that takes longer
// on one rank than on its peers runs on a slower GPU. Comparing by name only
// mixes shapes: a GEMM launched at two sizes has a median that follows
// whichever size is launched more often, and a slowdown of the other size
// disappears in it. So the key is (name, shape) when the reader knew the
// shape (Kineto grid / block, nsys gridX..blockZ), else the name alone.
//
// Metric, per key with >= min_launches launches on the suspect and on each
// peer counted: ratio = median duration on the suspect / median over the
// peers of their median durations; weight = the peers' median time in that
// key (median duration x launches). Overall ratio: the weighted geometric
// mean of the ratios. Communication ops are left out (their time is
// waiting). In a CPU-only trace the ops nest (aten::linear holds
// aten::addmm, an autograd node holds its backward ops), so an op's time
// there is its self time, its duration less its direct children's on the
// same thread: the innermost ops, where the work is, carry the weight, and
// a wrapper is not counted again for the work inside it. The reader caps distinct shapes per file
// (4096), so the keys stay bounded; ops past the cap fall back to their name.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_TRACES_KERNEL_COMPARE_H_
#define LAGGARD_ANALYSIS_TRACES_KERNEL_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace laggard {

struct KernelComparison {
  double ratio = 1.0;    // time-weighted geometric mean over the keys compared
  double weight_ns = 0;  // the peers' time in those keys; 0: nothing comparable
  size_t keys = 0;       // (name, shape) keys compared
  size_t keys_with_shape = 0;
  // The key that adds the most to the ratio (weight x log ratio).
  uint32_t top_name = 0;
  uint32_t top_shape = kNoShape;
  double top_ratio = 1.0;
  size_t top_launches = 0;  // on the suspect
};

KernelComparison CompareKernels(const RankTrace& suspect,
                                const std::vector<const RankTrace*>& peers,
                                size_t min_launches = 3);

// Each trace's comparison with up to max_peers of the others (the next
// ones in order, wrapping around), each trace's ops tallied once: the
// trace detector's per-rank op ratio, where any rank may be the slow one.
std::vector<KernelComparison> CompareEachWithPeers(const std::vector<const RankTrace*>& traces,
                                                   size_t max_peers, size_t min_launches = 3);

// "`sm90_xmma_gemm_…` [grid 132x1x1 block 128x1x1] 1.22x slower on rank 13
// across 480 launches vs the median of 3 peers" (names clipped to 60 bytes).
std::string DescribeTopKernel(const KernelComparison& k, const NameTable& names, int32_t rank,
                              size_t peers);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TRACES_KERNEL_COMPARE_H_
