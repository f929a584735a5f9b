// A job's parts packed into one value: the job_scan row of the store
// (store.h), so that a query of 10^6 jobs reads 10^6 rows, not one per
// part. Parts in key order, each with its place and, for a culprit, its
// cause and confidence; ids are the store's parts and hosts rows.
//
// Layout: varint count, then per part a flags byte (ScanFlag), the part id
// as a zigzag varint delta from the previous part's, the host id (zigzag
// varint; absent when the part has none or shares the previous part's), GPU and
// rank (zigzag varints), cause class and cause (varint length + bytes),
// confidence (8 bytes, IEEE 754 little-endian; a NaN is left out, as SQLite
// stores it as NULL).

#ifndef LAGGARD_HISTORY_SCAN_CODEC_H_
#define LAGGARD_HISTORY_SCAN_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace laggard::history {

struct ScanPart {
  int64_t part = 0;             // parts.id
  std::optional<int64_t> host;  // hosts.id
  std::optional<int32_t> gpu;
  std::optional<int32_t> rank;
  bool culprit = false;
  // Culprits only. Encoding: the strings must outlive the call; decoding:
  // views into the blob.
  std::optional<std::string_view> cause_class;
  std::optional<std::string_view> cause;
  std::optional<double> confidence;
};

std::string EncodeScanParts(const std::vector<ScanPart>& parts);
// False when `blob` is damaged (cut, or a length past its end); `out` then
// holds what was read before.
bool DecodeScanParts(std::string_view blob, std::vector<ScanPart>& out);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_SCAN_CODEC_H_
