// Pieces shared by the readers of GPU tools' human-readable outputs
// (nvidia-smi -q and its table, rocm-smi): value cells with units and
// "unavailable" markers, and the per-file collection of GPU records.
//
// An output may hold several snapshots in one file (`nvidia-smi -l 5`, a
// script appending runs): each gives one sample per GPU, and the facts of a
// GPU are those of its latest snapshot that printed them.
//
// Thread-safety: pure functions; a GpuCollector belongs to one Read() call.

#ifndef LAGGARD_INGEST_COMMON_GPU_COLLECTOR_H_
#define LAGGARD_INGEST_COMMON_GPU_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "ingest/common/text_reader.h"
#include "model/hardware.h"
#include "model/time.h"

namespace laggard::gpu_text {

// Whether a value cell says the tool had no value: "N/A", "Not Supported",
// "Unknown Error", "Insufficient Permissions", "ERR!", "Unknown", or anything
// in brackets ("[N/A]", "[Not Supported]", "[GPU requires reset]").
bool IsUnavailable(std::string_view value);

// A value cell read as a number: absent when the tool had none (see
// IsUnavailable), garbled when it is neither that nor a number.
struct Number {
  enum Kind : uint8_t { kValue, kUnavailable, kGarbled };
  Kind kind = kUnavailable;
  double value = 0;
  std::optional<double> get() const {
    return kind == kValue ? std::optional<double>(value) : std::nullopt;
  }
};

// Reads a number followed by `unit` ("250.00 W", "45 C", "1410 MHz",
// "0 %", "45C", "16x"); the unit may be left out, any other unit makes the
// value garbled. Units compare case-insensitively. Non-finite numbers are
// garbled.
Number ParseNumber(std::string_view value, std::string_view unit);

// A PCIe link rate in GT/s as its generation: 2.5 -> 1, 5 -> 2, 8 -> 3,
// 16 -> 4, 32 -> 5, 64 -> 6; nullopt for other rates.
std::optional<int32_t> PcieGenOfRate(double gts);

// The GPU records of one file, keyed by the GPU's index. Readers add facts
// and samples snapshot by snapshot and call Finish() once at the end.
class GpuCollector {
 public:
  // The record of GPU `index`, created on first use.
  GpuRecord& Gpu(int32_t index);

  // Fills the facts of GPU `index` from `facts`: every value `facts` holds
  // replaces the one seen before (a later snapshot is more recent).
  void SetFacts(int32_t index, const GpuFacts& facts);

  // Adds a sample of snapshot number `snapshot` (0-based, in file order),
  // taken at `time` when the snapshot printed a date, read from `line`.
  void AddSample(int32_t index, GpuSample sample, uint32_t snapshot, std::optional<TimeNs> time,
                 uint64_t line);

  // Sets the sample times and hands the records to ctx.out. When every
  // sample has a date, times are absolute; otherwise all of the file's
  // samples are placed at snapshot x 1 s, marked approximate, and
  // hardware.approximate_time is counted once. The host is
  // ctx.host_from_path; without one, hardware.no_host is counted once
  // (naming `tool`, which printed no host).
  // Returns the number of records handed over.
  size_t Finish(ReaderContext& ctx, std::string_view tool = "nvidia-smi");

 private:
  struct PendingSample {
    int32_t index;
    size_t position;  // in the record's samples
    uint32_t snapshot;
    std::optional<TimeNs> time;
    uint64_t line;
  };
  std::map<int32_t, GpuRecord> gpus_;
  std::vector<PendingSample> pending_;
};

}  // namespace laggard::gpu_text

#endif  // LAGGARD_INGEST_COMMON_GPU_COLLECTOR_H_
