// Turns a GpuBackend's NVML return codes into per-GPU snapshots, the one
// place where the agent's error policy lives:
//
//   SUCCESS                               value present
//   NOT_SUPPORTED, FUNCTION_NOT_FOUND,    field absent (no metric, no log
//   NO_PERMISSION, NOT_FOUND              key); not an error
//   GPU_IS_LOST                           the GPU is marked lost (metric
//                                         laggard_gpu_lost 1, a gpu_lost log
//                                         record); the rest of its queries are
//                                         skipped this round and retried next
//   anything else (TIMEOUT, UNKNOWN ...)  field absent this round, counted per
//                                         (field, error) in query_errors
//
// Static fields (max clocks, default power limit, max PCIe link, names) are
// read until they succeed or are reported absent, then cached.
//
// Thread-safety: one sampler per backend, used by the sampling thread;
// snapshots are plain values handed to other threads by copy.

#ifndef LAGGARD_AGENT_GPU_SAMPLER_H_
#define LAGGARD_AGENT_GPU_SAMPLER_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/nvml.h"
#include "model/time.h"

namespace laggard::agent {

struct GpuSnapshot {
  unsigned index = 0;
  TimeNs time_ns = 0;
  std::optional<std::string> uuid, bus_id, name;
  std::array<std::optional<double>, kGpuFieldCount> fields{};
  // One entry per NVLink the GPU has: true when active. Empty when the GPU
  // has no NVLink or the driver does not say.
  std::vector<bool> nvlinks;
  bool nvlinks_known = false;
  bool lost = false;
  std::optional<TimeNs> lost_since_ns;  // first round it was seen lost
  // XIDs seen this round, and counts since the agent started.
  std::vector<uint64_t> new_xids;
  std::map<uint64_t, uint64_t> xid_counts;
  std::optional<uint64_t> last_xid;
  // (field name, NVML error name) -> count, since the agent started.
  std::map<std::pair<std::string, std::string>, uint64_t> query_errors;

  const std::optional<double>& operator[](GpuField f) const {
    return fields[static_cast<size_t>(f)];
  }
  std::optional<int32_t> nvlinks_active() const;
};

class GpuSampler {
 public:
  explicit GpuSampler(GpuBackend& backend);

  // Queries every GPU once; the result has one snapshot per GPU, by index.
  const std::vector<GpuSnapshot>& Sample(TimeNs now);
  const std::vector<GpuSnapshot>& last() const { return gpus_; }

 private:
  struct Cache {
    std::array<std::optional<double>, kGpuFieldCount> statics{};
    std::array<bool, kGpuFieldCount> static_done{};
    std::array<bool, 3> text_done{};
    bool nvlink_done = false;
    unsigned nvlink_count = 0;
    bool xids_supported = true;
  };

  void SampleOne(unsigned gpu, TimeNs now);
  // Applies the policy to one return code. Returns false when the GPU is lost.
  bool Check(GpuSnapshot& s, std::string_view what, int rc);

  GpuBackend& backend_;
  std::vector<GpuSnapshot> gpus_;
  std::vector<Cache> cache_;
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_GPU_SAMPLER_H_
