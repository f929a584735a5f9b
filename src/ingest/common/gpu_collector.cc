#include "ingest/common/gpu_collector.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard::gpu_text {

bool IsUnavailable(std::string_view value) {
  value = Trim(value);
  if (value.size() >= 2 && value.front() == '[' && value.back() == ']') return true;
  static constexpr std::string_view kWords[] = {
      "N/A",           "Not Supported",
      "Not Available", "Unknown Error",
      "Unknown",       "Insufficient Permissions",
      "ERR!",          "GPU requires reset",
  };
  for (std::string_view w : kWords) {
    if (EqualsIgnoreCase(value, w)) return true;
  }
  return false;
}

Number ParseNumber(std::string_view value, std::string_view unit) {
  value = Trim(value);
  Number n;
  if (IsUnavailable(value)) return n;
  n.kind = Number::kGarbled;
  size_t p = 0;
  if (p < value.size() && (value[p] == '-' || value[p] == '+')) ++p;
  size_t digits = 0;
  while (p < value.size() && IsDigit(value[p])) ++p, ++digits;
  if (p < value.size() && value[p] == '.') {
    ++p;
    while (p < value.size() && IsDigit(value[p])) ++p, ++digits;
  }
  if (digits == 0) return n;
  auto v = ParseDouble(value.substr(0, p));
  std::string_view rest = Trim(value.substr(p));
  if (!v || !std::isfinite(*v) || !(rest.empty() || EqualsIgnoreCase(rest, unit))) return n;
  n.kind = Number::kValue;
  n.value = *v;
  return n;
}

std::optional<int32_t> PcieGenOfRate(double gts) {
  static constexpr std::pair<double, int32_t> kGens[] = {{2.5, 1}, {5, 2},  {8, 3},
                                                         {16, 4},  {32, 5}, {64, 6}};
  for (auto [rate, gen] : kGens) {
    if (std::abs(gts - rate) < 0.1) return gen;
  }
  return std::nullopt;
}

GpuRecord& GpuCollector::Gpu(int32_t index) {
  GpuRecord& g = gpus_[index];
  g.index = index;
  return g;
}

void GpuCollector::SetFacts(int32_t index, const GpuFacts& f) {
  GpuFacts& d = Gpu(index).facts;
  auto take = [](auto& dst, const auto& src) {
    if (src) dst = src;
  };
  take(d.name, f.name);
  take(d.serial, f.serial);
  take(d.driver_version, f.driver_version);
  take(d.max_sm_clock_mhz, f.max_sm_clock_mhz);
  take(d.max_mem_clock_mhz, f.max_mem_clock_mhz);
  take(d.app_sm_clock_mhz, f.app_sm_clock_mhz);
  take(d.default_power_limit_w, f.default_power_limit_w);
  take(d.enforced_power_limit_w, f.enforced_power_limit_w);
  take(d.min_power_limit_w, f.min_power_limit_w);
  take(d.max_power_limit_w, f.max_power_limit_w);
  take(d.slowdown_temp_c, f.slowdown_temp_c);
  take(d.shutdown_temp_c, f.shutdown_temp_c);
  take(d.max_operating_temp_c, f.max_operating_temp_c);
  take(d.pcie_gen_current, f.pcie_gen_current);
  take(d.pcie_gen_max, f.pcie_gen_max);
  take(d.pcie_gen_host_max, f.pcie_gen_host_max);
  take(d.pcie_width_current, f.pcie_width_current);
  take(d.pcie_width_max, f.pcie_width_max);
  take(d.nvlink_up, f.nvlink_up);
  take(d.nvlink_total, f.nvlink_total);
  take(d.nvlink_speed_gb_s, f.nvlink_speed_gb_s);
  take(d.ecc_uncorrected_volatile, f.ecc_uncorrected_volatile);
  take(d.ecc_uncorrected_aggregate, f.ecc_uncorrected_aggregate);
  take(d.retired_pages_dbe, f.retired_pages_dbe);
  take(d.retired_pages_pending, f.retired_pages_pending);
  take(d.remapping_failure, f.remapping_failure);
  take(d.remapped_rows_uncorrectable, f.remapped_rows_uncorrectable);
  take(d.remapped_rows_pending, f.remapped_rows_pending);
  take(d.diag_failed, f.diag_failed);
  d.xids.insert(d.xids.end(), f.xids.begin(), f.xids.end());
  d.diag_messages.insert(d.diag_messages.end(), f.diag_messages.begin(), f.diag_messages.end());
  take(d.src, f.src);
}

void GpuCollector::AddSample(int32_t index, GpuSample sample, uint32_t snapshot,
                             std::optional<TimeNs> time, uint64_t line) {
  GpuRecord& g = Gpu(index);
  pending_.push_back(PendingSample{index, g.samples.size(), snapshot, time, line});
  g.samples.push_back(std::move(sample));
}

size_t GpuCollector::Finish(ReaderContext& ctx, std::string_view tool) {
  if (gpus_.empty()) return 0;
  const PendingSample* undated = nullptr;
  for (const PendingSample& p : pending_) {
    if (!p.time) {
      undated = &p;
      break;
    }
  }
  for (const PendingSample& p : pending_) {
    GpuRecord& g = gpus_[p.index];
    g.samples[p.position].time_ns =
        undated ? static_cast<TimeNs>(p.snapshot) * 1'000'000'000 : *p.time;
    g.time_is_approximate = undated != nullptr;
  }
  if (undated) {
    ctx.diag().Add(DiagCode::kHwApproximateTime, ctx.path, undated->line,
                   "snapshot without a readable date: samples are placed 1 s apart");
  }
  if (!ctx.host_from_path) {
    ctx.diag().Add(DiagCode::kHwNoHost, ctx.path, 0,
                   fmt::format("{} does not print the host name and the path names none", tool));
  }
  size_t n = 0;
  for (auto& [index, g] : gpus_) {
    g.host = ctx.host_from_path;
    g.files.push_back(ctx.file_index);
    ctx.out->AddGpu(std::move(g));
    ++n;
  }
  gpus_.clear();
  pending_.clear();
  return n;
}

}  // namespace laggard::gpu_text
