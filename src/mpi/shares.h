// Which process of an MPI job reads which input files (laggard diagnose
// --mpi): shares balanced by bytes, with the files that name one rank kept
// in one share.
//
// Every process computes the same shares from the same listing, so no
// message is needed to agree on them.

#ifndef LAGGARD_MPI_SHARES_H_
#define LAGGARD_MPI_SHARES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace laggard {

// Splits files 0..n-1 among `processes` shares. `bytes[i]` is file i's size
// and `rank[i]` the rank its path names, if any: the files of one rank form
// one group, and every other file is a group of its own. Groups are dealt
// largest first to the share with the fewest bytes so far (the lowest
// process on a tie), so no share exceeds the ideal by more than its largest
// group. Each share lists its files in ascending order; a share may be
// empty (more processes than groups). Deterministic.
std::vector<std::vector<uint32_t>> AssignShares(std::span<const uint64_t> bytes,
                                                std::span<const std::optional<int32_t>> rank,
                                                int processes);

}  // namespace laggard

#endif  // LAGGARD_MPI_SHARES_H_
