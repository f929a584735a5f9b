#include "ingest/nvidia_smi_text.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard::nvsmi {
namespace {

constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::string_view kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

// Splits at runs of blanks, up to `max` words; false when there are more.
bool Words(std::string_view s, std::vector<std::string_view>& out, size_t max) {
  out.clear();
  size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && IsSpace(s[p])) ++p;
    if (p == s.size()) break;
    size_t e = p;
    while (e < s.size() && !IsSpace(s[e])) ++e;
    if (out.size() == max) return false;
    out.push_back(s.substr(p, e - p));
    p = e;
  }
  return true;
}

std::optional<int> Digits(std::string_view s, size_t min_len, size_t max_len) {
  if (s.size() < min_len || s.size() > max_len) return std::nullopt;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
  }
  return ParseInt<int>(s);
}

}  // namespace

std::optional<TimeNs> ParseCtime(std::string_view text) {
  std::vector<std::string_view> w;
  if (!Words(text, w, 5) || w.size() != 5) return std::nullopt;
  int weekday = -1;
  for (int i = 0; i < 7; ++i) {
    if (EqualsIgnoreCase(w[0], kWeekdays[i])) weekday = i;
  }
  unsigned month = 0;
  for (unsigned i = 0; i < 12; ++i) {
    if (EqualsIgnoreCase(w[1], kMonths[i])) month = i + 1;
  }
  auto day = Digits(w[2], 1, 2);
  auto year = Digits(w[4], 4, 4);
  std::string_view hms = w[3];
  if (weekday < 0 || month == 0 || !day || !year || hms.size() != 8 || hms[2] != ':' ||
      hms[5] != ':') {
    return std::nullopt;
  }
  auto hour = Digits(hms.substr(0, 2), 2, 2);
  auto minute = Digits(hms.substr(3, 2), 2, 2);
  auto second = Digits(hms.substr(6, 2), 2, 2);
  // 60 is a leap second, which asctime can print.
  if (!hour || !minute || !second || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{*year}, std::chrono::month{month},
                     std::chrono::day{static_cast<unsigned>(*day)}};
  if (!ymd.ok()) return std::nullopt;
  sys_days date{ymd};
  if (std::chrono::weekday{date}.c_encoding() != static_cast<unsigned>(weekday)) {
    return std::nullopt;
  }
  int64_t secs = static_cast<int64_t>(date.time_since_epoch().count()) * 86400 + *hour * 3600 +
                 *minute * 60 + *second;
  return secs * 1'000'000'000;
}

bool IsUnavailable(std::string_view value) {
  value = Trim(value);
  if (value.size() >= 2 && value.front() == '[' && value.back() == ']') return true;
  static constexpr std::string_view kWords[] = {
      "N/A",     "Not Supported",            "Not Available", "Unknown Error",
      "Unknown", "Insufficient Permissions", "ERR!",          "GPU requires reset",
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

Number ParsePerfState(std::string_view value) {
  value = Trim(value);
  Number n;
  if (IsUnavailable(value)) return n;
  n.kind = Number::kGarbled;
  if (value.size() < 2 || (value[0] != 'P' && value[0] != 'p')) return n;
  auto state = Digits(value.substr(1), 1, 2);
  if (!state || *state > 15) return n;
  n.kind = Number::kValue;
  n.value = *state;
  return n;
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

size_t GpuCollector::Finish(ReaderContext& ctx) {
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
                   "nvidia-smi does not print the host name and the path names none");
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

}  // namespace laggard::nvsmi
