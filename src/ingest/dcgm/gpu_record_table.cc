#include "ingest/dcgm/gpu_record_table.h"

namespace laggard {

size_t GpuRecordTable::Get(const std::optional<std::string>& host, int32_t index,
                           const std::optional<std::string>& mig_instance, uint64_t line) {
  std::optional<std::string> h = host ? host : ctx_.host_from_path;
  auto key = std::make_tuple(h.value_or(""), h.has_value(), index, mig_instance.value_or(""),
                             mig_instance.has_value());
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  if (!h && !no_host_counted_) {
    no_host_counted_ = true;
    ctx_.diag().Add(DiagCode::kHwNoHost, ctx_.path, line,
                    "the file names no host and neither does its path");
  }
  size_t i = records_.size();
  index_.emplace(key, i);
  GpuRecord& r = records_.emplace_back();
  r.host = h;
  r.index = index;
  r.mig_instance = mig_instance;
  r.files.push_back(ctx_.file_index);
  sample_at_.emplace_back();
  return i;
}

GpuSample& GpuRecordTable::SampleAt(size_t i, TimeNs time_ns, uint64_t line) {
  GpuRecord& record = records_[i];
  auto& at = sample_at_[i];
  auto [it, inserted] = at.try_emplace(time_ns, record.samples.size());
  if (inserted) {
    GpuSample& s = record.samples.emplace_back();
    s.time_ns = time_ns;
    s.src = ctx_.Ref(line);
    return s;
  }
  return record.samples[it->second];
}

size_t GpuRecordTable::Commit() {
  size_t n = records_.size();
  for (GpuRecord& r : records_) ctx_.out->AddGpu(std::move(r));
  records_.clear();
  index_.clear();
  sample_at_.clear();
  return n;
}

}  // namespace laggard
