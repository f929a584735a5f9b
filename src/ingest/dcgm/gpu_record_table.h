// The GPU records one hardware reader builds from one file, keyed by (host,
// GPU index, MIG instance), handed to the RunBuilder at the end of the file
// in the order they were first seen. Used by the DCGM readers
// (dcgmi_dmon.cc, dcgmi_diag.cc, dcgm_exporter.cc).
//
// Thread-safety: one table per Read() call.

#ifndef LAGGARD_INGEST_DCGM_GPU_RECORD_TABLE_H_
#define LAGGARD_INGEST_DCGM_GPU_RECORD_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ingest/common/text_reader.h"
#include "model/hardware.h"

namespace laggard {

class GpuRecordTable {
 public:
  explicit GpuRecordTable(ReaderContext& ctx) : ctx_(ctx) {}

  // The index of a GPU's record (created on first use). `host` is the host
  // the content names; without one, the host of the file's path is used,
  // and when that is unknown too hardware.no_host is counted once for the
  // file (at `line`). Indices are stable; references returned by at() and
  // SampleAt() are valid until the next Get() or SampleAt().
  size_t Get(const std::optional<std::string>& host, int32_t index,
             const std::optional<std::string>& mig_instance, uint64_t line);
  GpuRecord& at(size_t record) { return records_[record]; }

  // The sample of record `record` at `time_ns` (created, with `line` as its
  // source, on first use): values of one time share one GpuSample.
  GpuSample& SampleAt(size_t record, TimeNs time_ns, uint64_t line);

  std::vector<GpuRecord>& records() { return records_; }
  bool empty() const { return records_.empty(); }

  // Moves every record into ctx.out. Returns the number of records.
  size_t Commit();

 private:
  ReaderContext& ctx_;
  bool no_host_counted_ = false;
  std::map<std::tuple<std::string, bool, int32_t, std::string, bool>, size_t> index_;
  std::vector<GpuRecord> records_;
  std::vector<std::unordered_map<TimeNs, size_t>> sample_at_;  // per record: time -> sample
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_DCGM_GPU_RECORD_TABLE_H_
