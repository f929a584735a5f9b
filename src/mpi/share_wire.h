// The message one process of `laggard diagnose --mpi` sends to process 0:
// what reading its share of the input files gave, one IngestFileResult per
// file (model/wire.h encodes each file's RunBuilder). Process 0 decodes every
// share into one slot per listed file and merges them in file order
// (MergeIngest), exactly as a single process merges what it read.
//
// Layout, little-endian:
//   "LGSH" u32 version u64 files
//   per file: u32 index, u32 format length, format, u64 bytes, u64 records,
//             the file's builder (EncodeBuilder)

#ifndef LAGGARD_MPI_SHARE_WIRE_H_
#define LAGGARD_MPI_SHARE_WIRE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ingest/ingest.h"

namespace laggard {

// Encodes `results` (parallel to `files`, the plan indices of the share) and
// empties them as it goes, so a share's memory is held once.
std::string EncodeShare(std::span<const uint32_t> files, std::vector<IngestFileResult>& results);

// Decodes one share into `slots` (one per listed file). A file index past
// the listing, or one that already has a result (given by two shares), is an
// error, as is any damage to the bytes.
Status DecodeShare(std::string_view bytes, std::vector<std::optional<IngestFileResult>>& slots);

}  // namespace laggard

#endif  // LAGGARD_MPI_SHARE_WIRE_H_
