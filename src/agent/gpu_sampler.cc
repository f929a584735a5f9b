#include "agent/gpu_sampler.h"

namespace laggard::agent {

std::optional<int32_t> GpuSnapshot::nvlinks_active() const {
  if (!nvlinks_known) return std::nullopt;
  int32_t n = 0;
  for (bool up : nvlinks) n += up ? 1 : 0;
  return n;
}

GpuSampler::GpuSampler(GpuBackend& backend) : backend_(backend) {
  unsigned n = backend_.DeviceCount();
  gpus_.resize(n);
  cache_.resize(n);
  for (unsigned i = 0; i < n; ++i) gpus_[i].index = i;
}

const std::vector<GpuSnapshot>& GpuSampler::Sample(TimeNs now) {
  for (unsigned i = 0; i < gpus_.size(); ++i) SampleOne(i, now);
  return gpus_;
}

bool GpuSampler::Check(GpuSnapshot& s, std::string_view what, int rc) {
  if (rc == kNvmlSuccess || NvmlFieldAbsent(rc)) return true;
  if (rc == kNvmlErrorGpuIsLost) return false;
  ++s.query_errors[{std::string(what), NvmlErrorName(rc)}];
  return true;
}

void GpuSampler::SampleOne(unsigned gpu, TimeNs now) {
  GpuSnapshot& s = gpus_[gpu];
  Cache& c = cache_[gpu];
  s.time_ns = now;
  s.new_xids.clear();
  bool was_lost = s.lost;
  s.lost = false;
  auto lost = [&] {
    s.fields.fill(std::nullopt);
    s.nvlinks.clear();
    s.nvlinks_known = false;
    s.lost = true;
    if (!was_lost) s.lost_since_ns = now;
  };

  // Names first: they label every metric of the GPU.
  constexpr std::pair<GpuText, std::string_view> kTexts[] = {
      {GpuText::kUuid, "uuid"}, {GpuText::kBusId, "bus_id"}, {GpuText::kName, "name"}};
  for (size_t t = 0; t < std::size(kTexts); ++t) {
    if (c.text_done[t]) continue;
    std::string value;
    int rc = backend_.ReadText(gpu, kTexts[t].first, value);
    if (!Check(s, kTexts[t].second, rc)) return lost();
    if (rc == kNvmlSuccess) {
      std::optional<std::string>& slot = t == 0 ? s.uuid : (t == 1 ? s.bus_id : s.name);
      slot = std::move(value);
    }
    c.text_done[t] = rc == kNvmlSuccess || NvmlFieldAbsent(rc);
  }

  for (size_t f = 0; f < kGpuFieldCount; ++f) {
    GpuField field = static_cast<GpuField>(f);
    bool is_static = GpuFieldIsStatic(field);
    if (is_static && c.static_done[f]) {
      s.fields[f] = c.statics[f];
      continue;
    }
    double v = 0;
    int rc = backend_.Read(gpu, field, v);
    if (!Check(s, GpuFieldName(field), rc)) return lost();
    s.fields[f] = rc == kNvmlSuccess ? std::optional<double>(v) : std::nullopt;
    if (is_static && (rc == kNvmlSuccess || NvmlFieldAbsent(rc))) {
      c.static_done[f] = true;
      c.statics[f] = s.fields[f];
    }
  }

  // NVLink: probe how many links exist once, then read their states.
  if (!c.nvlink_done) {
    unsigned n = 0;
    bool decided = true;
    for (; n < kMaxNvLinks; ++n) {
      bool up = false;
      int rc = backend_.NvLinkActive(gpu, n, up);
      if (rc == kNvmlErrorGpuIsLost) return lost();
      if (rc == kNvmlSuccess) continue;
      if (rc != kNvmlErrorInvalidArgument && !NvmlFieldAbsent(rc)) {
        Check(s, "nvlink", rc);
        decided = false;  // a transient error: probe again next round
      }
      break;
    }
    if (decided) {
      c.nvlink_done = true;
      c.nvlink_count = n;
    }
  }
  s.nvlinks.assign(c.nvlink_count, false);
  s.nvlinks_known = c.nvlink_done && c.nvlink_count > 0;
  for (unsigned l = 0; l < c.nvlink_count; ++l) {
    bool up = false;
    int rc = backend_.NvLinkActive(gpu, l, up);
    if (!Check(s, "nvlink", rc)) return lost();
    if (rc != kNvmlSuccess) {
      s.nvlinks_known = false;
      break;
    }
    s.nvlinks[l] = up;
  }
  if (!s.nvlinks_known) s.nvlinks.clear();

  if (c.xids_supported) {
    std::vector<uint64_t> xids;
    int rc = backend_.PollXids(gpu, xids);
    if (!Check(s, "xid", rc)) return lost();
    if (NvmlFieldAbsent(rc)) c.xids_supported = false;
    for (uint64_t x : xids) {
      s.new_xids.push_back(x);
      ++s.xid_counts[x];
      s.last_xid = x;
    }
  }
  if (!s.lost) s.lost_since_ns.reset();
}

}  // namespace laggard::agent
