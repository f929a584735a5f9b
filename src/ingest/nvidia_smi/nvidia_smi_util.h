// Pieces shared by the nvidia-smi readers (nvidia_smi_dmon.cc,
// nvidia_smi_query_csv.cc, nvidia_smi_nvlink.cc): how nvidia-smi writes a
// value it does not have, its timestamp format, the sampling interval a
// captured command line names, the times of rows printed without one, and
// handing the per-GPU records of one file to the run.
//
// Pure functions except EmitGpuRecords(), which writes to ctx, and
// RowGroupClock, one per file being read.

#ifndef LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_UTIL_H_
#define LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "ingest/common/text_reader.h"
#include "model/hardware.h"
#include "model/time.h"

namespace laggard {

// Largest GPU index a reader accepts; a garbled index must not create
// thousands of GPU records.
inline constexpr int32_t kMaxGpuIndex = 1023;

// True for the ways nvidia-smi writes a value it does not have: "" , "-",
// any bracketed text ("[N/A]", "[Not Supported]", "[Unknown Error]",
// "[Insufficient Permissions]", "[GPU is lost]"), "N/A", "Not Supported",
// "Unknown".
bool IsAbsentValue(std::string_view value);

// A number as nvidia-smi prints it, with or without a unit after a blank
// ("250.00 W", "1410 MHz", "45 %", "23028 MiB", "16"). `unit`, when not
// empty, must match the printed unit if there is one. nullopt when the text
// is not such a number (the caller has checked IsAbsentValue() first).
std::optional<double> ParseNumberWithUnit(std::string_view value, std::string_view unit = {});

// nvidia-smi's timestamp "2024/01/31 12:34:56.789" (also with '-' between
// the date parts), taken as UTC: nvidia-smi prints local time and does not
// say which zone.
std::optional<TimeNs> ParseNvidiaSmiTimestamp(std::string_view text);

// The sampling interval named by a captured command line (a shell prompt
// line kept above the output), e.g. "$ nvidia-smi dmon -s pucvmt -d 2" ->
// 2 s, "nvidia-smi --query-gpu=... --format=csv -lms 500" -> 500 ms.
// kDmon: `-d N` / `--delay[=]N` (seconds) on a line naming nvidia-smi and
// dmon; kQueryGpu: `-l N` / `--loop[=]N` (seconds), `-lms N` /
// `--loop-ms[=]N` (milliseconds) on a line naming nvidia-smi and
// --query-gpu.
enum class SmiCommand : uint8_t { kDmon, kQueryGpu };
std::optional<DurationNs> IntervalFromCommandLine(std::string_view line, SmiCommand command);

// The times of rows that carry none (dmon without a Time column, a query
// without timestamp): rows are grouped into samples, a group ending when a
// GPU index repeats, and group g is at g x interval.
class RowGroupClock {
 public:
  // The time of the next row, of GPU `index` (0..kMaxGpuIndex); nullopt
  // when g x interval does not fit in TimeNs.
  std::optional<TimeNs> Next(int32_t index, DurationNs interval) {
    size_t i = static_cast<size_t>(index);
    if (i >= in_group_.size()) in_group_.resize(i + 1, false);
    if (in_group_[i]) {
      ++group_;
      std::fill(in_group_.begin(), in_group_.end(), false);
    }
    in_group_[i] = true;
    TimeNs at = 0;
    if (__builtin_mul_overflow(group_, interval, &at)) return std::nullopt;
    return at;
  }

 private:
  int64_t group_ = 0;
  std::vector<bool> in_group_;  // GPU indices seen in the current group
};

// Adds the GPU records of one file (index set) to ctx.out: each gets the
// file's index and the host from the path (when known); one
// hardware.no_host note for the file when the host is unknown and one
// hardware.approximate_time note (message `how_time_was_found`) when the
// records' times are row offsets. Records with neither samples, facts, uuid
// nor bus id are dropped. Leaves `gpus` empty.
void EmitGpuRecords(ReaderContext& ctx, std::vector<GpuRecord>& gpus, bool time_is_approximate,
                    std::string_view how_time_was_found);
// The same for records keyed by GPU index, which each record gets; leaves
// `by_index` empty.
void EmitGpuRecords(ReaderContext& ctx, std::map<int32_t, GpuRecord>& by_index,
                    bool time_is_approximate, std::string_view how_time_was_found);

// Whether any fact of `facts` is known.
bool HasAnyFact(const GpuFacts& facts);

}  // namespace laggard

#endif  // LAGGARD_INGEST_NVIDIA_SMI_NVIDIA_SMI_UTIL_H_
