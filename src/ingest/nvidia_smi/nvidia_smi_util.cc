#include "ingest/nvidia_smi/nvidia_smi_util.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard {

bool IsAbsentValue(std::string_view value) {
  value = Trim(value);
  if (value.empty() || value == "-") return true;
  if (value.front() == '[' && value.back() == ']') return true;
  return EqualsIgnoreCase(value, "N/A") || EqualsIgnoreCase(value, "Not Supported") ||
         EqualsIgnoreCase(value, "Unknown");
}

std::optional<double> ParseNumberWithUnit(std::string_view value, std::string_view unit) {
  value = Trim(value);
  size_t blank = value.find(' ');
  std::string_view number = value.substr(0, blank);
  if (blank != std::string_view::npos) {
    std::string_view printed = Trim(value.substr(blank));
    if (!unit.empty()) {
      if (!EqualsIgnoreCase(printed, unit)) return std::nullopt;
    } else {
      if (printed.size() > 8) return std::nullopt;
      for (char c : printed) {
        bool unit_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%' || c == '/';
        if (!unit_char) return std::nullopt;
      }
    }
  }
  return ParseDouble(number);
}

std::optional<TimeNs> ParseNvidiaSmiTimestamp(std::string_view text) {
  text = Trim(text);
  // "YYYY/MM/DD HH:MM:SS[.mmm]": make it ISO 8601 for ParseTimestamp().
  if (text.size() < 19 || text.size() > 40 || (text[4] != '/' && text[4] != '-') ||
      (text[7] != '/' && text[7] != '-') || text[10] != ' ') {
    return std::nullopt;
  }
  std::string iso(text);
  iso[4] = '-';
  iso[7] = '-';
  // A zone written after the time ("+0800") is not something nvidia-smi
  // prints; anything but digits, ':' and '.' after the date is refused so
  // that ParseTimestamp() reads only the form above.
  for (size_t i = 11; i < iso.size(); ++i) {
    if (!IsDigit(iso[i]) && iso[i] != ':' && iso[i] != '.') return std::nullopt;
  }
  return ParseTimestamp(iso);
}

namespace {

// Seconds or milliseconds after an option, as the next token or after '='.
std::optional<double> OptionValue(const std::vector<std::string_view>& tokens, size_t i,
                                  std::string_view option) {
  std::string_view t = tokens[i];
  if (t == option) {
    if (i + 1 < tokens.size()) return ParseDouble(tokens[i + 1]);
    return std::nullopt;
  }
  if (t.size() > option.size() + 1 && StartsWith(t, option) && t[option.size()] == '=') {
    return ParseDouble(t.substr(option.size() + 1));
  }
  return std::nullopt;
}

}  // namespace

std::optional<DurationNs> IntervalFromCommandLine(std::string_view line, SmiCommand command) {
  bool dmon = command == SmiCommand::kDmon;
  if (line.find("nvidia-smi") == std::string_view::npos ||
      (dmon ? line.find("dmon") : line.find("--query-gpu")) == std::string_view::npos) {
    return std::nullopt;
  }
  std::vector<std::string_view> tokens = SplitBlanks(line);
  for (size_t i = 0; i < tokens.size(); ++i) {
    static constexpr struct {
      std::string_view option;
      TimeUnit unit;
      SmiCommand command;
    } kOptions[] = {
        {"-d", TimeUnit::kSeconds, SmiCommand::kDmon},
        {"--delay", TimeUnit::kSeconds, SmiCommand::kDmon},
        {"-l", TimeUnit::kSeconds, SmiCommand::kQueryGpu},
        {"--loop", TimeUnit::kSeconds, SmiCommand::kQueryGpu},
        {"-lms", TimeUnit::kMilliseconds, SmiCommand::kQueryGpu},
        {"--loop-ms", TimeUnit::kMilliseconds, SmiCommand::kQueryGpu},
    };
    for (const auto& o : kOptions) {
      if (o.command != command) continue;
      auto v = OptionValue(tokens, i, o.option);
      if (!v || *v <= 0 || *v > (o.unit == TimeUnit::kSeconds ? 86400 : 86'400'000)) continue;
      auto d = ToDurationNs(*v, o.unit);
      if (d && *d > 0) return d;
    }
  }
  return std::nullopt;
}

bool HasAnyFact(const GpuFacts& f) {
  return f.name || f.serial || f.driver_version || f.max_sm_clock_mhz || f.max_mem_clock_mhz ||
         f.app_sm_clock_mhz || f.default_power_limit_w || f.enforced_power_limit_w ||
         f.min_power_limit_w || f.max_power_limit_w || f.slowdown_temp_c || f.shutdown_temp_c ||
         f.max_operating_temp_c || f.pcie_gen_current || f.pcie_gen_max || f.pcie_gen_host_max ||
         f.pcie_width_current || f.pcie_width_max || f.nvlink_up || f.nvlink_total ||
         f.nvlink_speed_gb_s || f.ecc_uncorrected_volatile || f.ecc_uncorrected_aggregate ||
         f.retired_pages_dbe || f.retired_pages_pending || f.remapping_failure ||
         f.remapped_rows_uncorrectable || !f.xids.empty() || f.diag_failed ||
         !f.diag_messages.empty();
}

void EmitGpuRecords(ReaderContext& ctx, std::vector<GpuRecord>& gpus, bool time_is_approximate,
                    std::string_view how_time_was_found) {
  bool any = false;
  bool any_samples = false;
  for (GpuRecord& gpu : gpus) {
    if (gpu.samples.empty() && !HasAnyFact(gpu.facts) && !gpu.uuid && !gpu.bus_id) continue;
    any = true;
    any_samples = any_samples || !gpu.samples.empty();
    gpu.host = ctx.host_from_path;
    gpu.time_is_approximate = time_is_approximate && !gpu.samples.empty();
    gpu.files = {ctx.file_index};
    ctx.out->AddGpu(std::move(gpu));
  }
  gpus.clear();
  if (!any) return;
  if (!ctx.host_from_path) {
    ctx.diag().Add(DiagCode::kHwNoHost, ctx.path, 0,
                   "the output does not name its host; put it in a folder named after the host "
                   "(run/node-01/...) or pass --host-from");
  }
  if (time_is_approximate && any_samples) {
    ctx.diag().Add(DiagCode::kHwApproximateTime, ctx.path, 0, std::string(how_time_was_found));
  }
}

void EmitGpuRecords(ReaderContext& ctx, std::map<int32_t, GpuRecord>& by_index,
                    bool time_is_approximate, std::string_view how_time_was_found) {
  std::vector<GpuRecord> gpus;
  for (auto& [index, gpu] : by_index) {
    gpu.index = index;
    gpus.push_back(std::move(gpu));
  }
  by_index.clear();
  EmitGpuRecords(ctx, gpus, time_is_approximate, how_time_was_found);
}

}  // namespace laggard
