// `amd-smi metric`, its default human-readable form: per GPU a YAML dump
// with sections at 4 blanks and fields at 8 (sub-fields at 12):
//
//   GPU: 0
//       USAGE:
//           GFX_ACTIVITY: 100 %
//       POWER:
//           SOCKET_POWER: 234 W
//       CLOCK:
//           GFX_0:
//               CLK: 2102 MHz
//               MAX_CLK: 2102 MHz
//       TEMPERATURE:
//           EDGE: N/A
//           HOTSPOT: 43 °C
//       PCIE:
//           WIDTH: 16
//           SPEED: 32 GT/s
//
// Read: GFX_ACTIVITY (utilisation), SOCKET_POWER (AVERAGE_SOCKET_POWER in
// early builds), the GFX clocks (one per XCD on an MI300X: the sample's SM
// clock is their median, the max clock their largest MAX_CLK), MEM_0 (the
// memory clock), EDGE temperature (not HOTSPOT, the junction: MI300 has no
// edge sensor, so no temperature) and MEM, PCIe WIDTH and SPEED (the
// current link, kept at >= 50% busy; clocks only with a utilisation). Values are `N/A`, or a
// number and its unit (`28 °C`, `28 C` where stdout is not UTF-8); lists
// and their folded continuation lines, and other sections, are skipped. A
// section collapsed to `USAGE: N/A` is unknown. A field read here whose
// value is neither is hardware.bad_record. The output names no host (the
// path) and no time (a second `GPU: i` for an index already read starts a
// second snapshot, 1 s apart). THROTTLE_STATUS is not read: on MI300 it is
// N/A, and on RDNA3 it flips at idle.

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/amd_smi/amd_smi_readers.h"
#include "ingest/common/gpu_collector.h"
#include "ingest/common/sniff.h"

namespace laggard {
namespace {

using gpu_text::GpuCollector;
using gpu_text::Number;
using gpu_text::ParseNumber;

size_t Indent(std::string_view line) {
  size_t n = line.find_first_not_of(' ');
  return n == std::string_view::npos ? line.size() : n;
}

// "GPU: 0" (and "GPU 0:" of early builds) -> 0.
std::optional<int32_t> GpuHeader(std::string_view t) {
  if (StartsWith(t, "GPU: ")) return ParseInt<int32_t>(Trim(t.substr(5)));
  if (StartsWith(t, "GPU ") && EndsWith(t, ":")) {
    return ParseInt<int32_t>(Trim(t.substr(4, t.size() - 5)));
  }
  return std::nullopt;
}

bool IsSection(std::string_view key) {
  for (std::string_view s : {"USAGE", "POWER", "CLOCK", "TEMPERATURE", "PCIE", "ECC", "FAN",
                             "ENERGY", "MEM_USAGE", "VOLTAGE", "THROTTLE"}) {
    if (key == s) return true;
  }
  return false;
}

class MetricFile {
 public:
  explicit MetricFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    std::string_view text;
    while (lines.Next(text)) {
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      Line(text, lines.line_number());
    }
    EndGpu();
    return collector_.Finish(ctx_, "amd-smi");
  }

 private:
  void Line(std::string_view text, uint64_t n) {
    std::string_view t = Trim(text);
    if (t.empty()) return;
    const size_t indent = Indent(text);
    if (indent == 0) {
      if (std::optional<int32_t> index = GpuHeader(t); index && *index >= 0 && *index <= 4096) {
        EndGpu();
        if (seen_.count(*index)) {  // the same GPU again: the next snapshot
          ++snapshot_;
          seen_.clear();
        }
        seen_.insert(*index);
        gpu_ = *index;
        sample_ = GpuSample();
        sample_.src = ctx_.Ref(n);
        first_line_ = n;
      }
      return;
    }
    if (!gpu_) return;
    size_t colon = t.find(':');
    if (colon == std::string_view::npos) return;  // a folded list's continuation
    std::string_view key = Trim(t.substr(0, colon));
    std::string_view value = Trim(t.substr(colon + 1));
    if (indent <= 4) {
      section_ = IsSection(key) ? std::string(key) : std::string();
      sub_.clear();
      return;
    }
    if (indent <= 8 && value.empty()) {
      sub_ = std::string(key);  // "GFX_0:"
      return;
    }
    Field(indent <= 8 ? std::string_view() : std::string_view(sub_), key, value, n);
  }

  std::optional<double> Value(std::string_view value, std::string_view unit, uint64_t n,
                              std::string_view key) {
    if (StartsWith(value, "N/A")) return std::nullopt;  // also "N/A mV" (ROCm 6.2)
    Number v = ParseNumber(value, unit);
    // "28 C" where stdout could not print the degree sign.
    if (v.kind == Number::kGarbled && unit == "°C") v = ParseNumber(value, "C");
    if (v.kind == Number::kGarbled) {
      ctx_.diag().Add(DiagCode::kHwBadRecord, ctx_.path, n,
                      fmt::format("amd-smi metric: {} \"{}\" is not a number of {}",
                                  Printable(key, 40), Printable(value, 40), unit));
    }
    return v.get();
  }

  void Field(std::string_view sub, std::string_view key, std::string_view value, uint64_t n) {
    if (section_ == "USAGE" && key == "GFX_ACTIVITY") {
      sample_.util_pct = Value(value, "%", n, key);
    } else if (section_ == "POWER" && (key == "SOCKET_POWER" || key == "AVERAGE_SOCKET_POWER")) {
      sample_.power_w = Value(value, "W", n, key);
    } else if (section_ == "CLOCK" && StartsWith(sub, "GFX_")) {
      if (key == "CLK") {
        if (auto v = Value(value, "MHz", n, key)) gfx_.push_back(*v);
      } else if (key == "MAX_CLK") {
        if (auto v = Value(value, "MHz", n, key)) max_gfx_ = std::max(max_gfx_.value_or(0), *v);
      }
    } else if (section_ == "CLOCK" && sub == "MEM_0") {
      if (key == "CLK") sample_.mem_clock_mhz = Value(value, "MHz", n, key);
      if (key == "MAX_CLK") facts_.max_mem_clock_mhz = Value(value, "MHz", n, key);
    } else if (section_ == "TEMPERATURE") {
      if (key == "EDGE") edge_ = Value(value, "°C", n, key);
      if (key == "HOTSPOT") Value(value, "°C", n, key);  // checked, not kept
      if (key == "MEM") sample_.mem_temp_c = Value(value, "°C", n, key);
    } else if (section_ == "PCIE" && sub.empty()) {
      if (key == "WIDTH") {
        if (auto v = Value(value, "", n, key)) sample_.pcie_width = static_cast<int32_t>(*v);
      } else if (key == "SPEED") {
        if (auto v = Value(value, "GT/s", n, key)) sample_.pcie_gen = gpu_text::PcieGenOfRate(*v);
      }
    }
  }

  void EndGpu() {
    if (!gpu_) return;
    // As for rocm-smi (rocm_smi.cc): the edge temperature only (HOTSPOT is
    // the junction, 10-20 C above it); clocks only with a utilisation (idle
    // GPUs sleep); the current PCIe link only at >= 50% busy (idle links
    // drop to a lower DPM level).
    sample_.temp_c = edge_;
    const bool busy = sample_.util_pct && *sample_.util_pct >= 50;
    if (!busy) {
      sample_.pcie_gen.reset();
      sample_.pcie_width.reset();
    }
    if (!sample_.util_pct) {
      gfx_.clear();
      sample_.mem_clock_mhz.reset();
    }
    if (!gfx_.empty()) {
      std::sort(gfx_.begin(), gfx_.end());
      const size_t m = gfx_.size() / 2;
      sample_.sm_clock_mhz = gfx_.size() % 2 ? gfx_[m] : (gfx_[m - 1] + gfx_[m]) / 2;
    }
    facts_.max_sm_clock_mhz = max_gfx_;
    facts_.pcie_gen_current = sample_.pcie_gen;
    facts_.pcie_width_current = sample_.pcie_width;
    facts_.src = ctx_.Ref(first_line_);
    facts_.name = "AMD GPU";  // metric prints no name; `amd-smi static` does
    collector_.SetFacts(*gpu_, facts_);
    collector_.AddSample(*gpu_, sample_, snapshot_, std::nullopt, first_line_);
    gpu_.reset();
    facts_ = GpuFacts();
    gfx_.clear();
    max_gfx_.reset();
    edge_.reset();
    section_.clear();
    sub_.clear();
  }

  ReaderContext& ctx_;
  GpuCollector collector_;
  std::optional<int32_t> gpu_;
  std::set<int32_t> seen_;  // GPUs of the current snapshot
  uint32_t snapshot_ = 0;
  uint64_t first_line_ = 0;
  GpuSample sample_;
  GpuFacts facts_;
  std::vector<double> gfx_;
  std::optional<double> max_gfx_, edge_;
  std::string section_, sub_;
};

int Sniff(std::string_view head) {
  bool gpu = false;
  int score = kSniffNo;
  ForEachHeadLine(head, {}, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (t.empty()) return true;
    if (Indent(line) == 0) {
      gpu = GpuHeader(t).has_value();
      return true;
    }
    if (gpu && Indent(line) == 4 && EndsWith(t, ":") && IsSection(t.substr(0, t.size() - 1))) {
      score = kSniffSure;
      return false;
    }
    if (gpu && Indent(line) == 4 && StartsWith(t, "USAGE: N/A")) {
      score = kSniffSure;
      return false;
    }
    gpu = false;
    return true;
  });
  return score;
}

}  // namespace

std::unique_ptr<TextReader> MakeAmdSmiMetricReader() {
  return MakeFileReader<MetricFile>("amd-smi-metric", Sniff);
}

}  // namespace laggard
