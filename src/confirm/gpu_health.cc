#include "confirm/gpu_health.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "ingest/ingest.h"
#include "ingest/readers.h"

namespace laggard::confirm {
namespace {

// dcgmi diag's Deployment tests check the host's setup (persistence mode,
// libraries, permissions), not the GPU: their failure means the diagnostic
// could not run, which says nothing against the card.
bool DeploymentTest(std::string_view message) {
  static constexpr std::string_view kSetup[] = {
      "denylist",           "blacklist",          "nvml library",     "cuda main library",
      "cuda toolkit",       "permissions and os", "persistence mode", "environment",
      "graphics processes", "fabric manager",
  };

  std::string lower(message);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view k : kSetup) {
    if (lower.rfind(k, 0) == 0) return true;
  }
  // DCGM 4's "software" test holds setup checks and the card's own
  // (pending row remaps, page retirement, inforom): those count.
  if (lower.rfind("software", 0) == 0) {
    for (std::string_view card : {"remap", "retire", "inforom", "pending", "ecc"}) {
      if (lower.find(card) != std::string::npos) return false;
    }
    return true;
  }
  return false;
}

// What one GPU record's facts and last sample say against it; `setup` gets
// why a diagnostic could not run.
void FaultsOf(const GpuRecord& g, std::vector<std::string>& out, std::vector<std::string>& setup) {
  const GpuFacts& f = g.facts;
  if (f.diag_failed.value_or(false)) {
    std::vector<std::string> real, deploy;
    for (const std::string& m : f.diag_messages) (DeploymentTest(m) ? deploy : real).push_back(m);
    auto first = [](const std::vector<std::string>& v) {
      return fmt::format("{}",
                         fmt::join(v.begin(), v.begin() + std::min<size_t>(v.size(), 3), "; "));
    };
    if (!real.empty() || f.diag_messages.empty()) {
      out.push_back("dcgmi diag failed" + (real.empty() ? "" : ": " + first(real)));
    } else {
      setup.push_back("dcgmi diag could not test it: " + first(deploy));
    }
  }
  // Clock event reasons only while the GPU works: an idle card's flags
  // (power cap at 0%, a lowered applications clock it does not use) say
  // nothing of its speed under load.
  if (!g.samples.empty() && g.samples.back().clock_events) {
    const GpuSample& last = g.samples.back();
    bool idle = (*last.clock_events & clock_event::kGpuIdle) != 0 || last.util_pct.value_or(0) < 50;
    uint64_t bad = *last.clock_events &
                   (clock_event::kSwPowerCap | clock_event::kHwSlowdown |
                    clock_event::kSwThermalSlowdown | clock_event::kHwThermalSlowdown |
                    clock_event::kHwPowerBrakeSlowdown | clock_event::kApplicationsClocksSetting);
    if (bad != 0 && !idle) {
      out.push_back(fmt::format("clocks held back while busy: {}", ClockEventNames(bad)));
    }
  }
  if (f.enforced_power_limit_w && f.default_power_limit_w &&
      *f.enforced_power_limit_w < 0.95 * *f.default_power_limit_w) {
    out.push_back(fmt::format("power limit {:.0f} W of its default {:.0f} W",
                              *f.enforced_power_limit_w, *f.default_power_limit_w));
  }
  if (f.pcie_width_current && f.pcie_width_max && *f.pcie_width_current < *f.pcie_width_max &&
      !g.samples.empty() && g.samples.back().util_pct.value_or(0) >= 50) {
    out.push_back(
        fmt::format("PCIe x{} of x{} while busy", *f.pcie_width_current, *f.pcie_width_max));
  }
  if (f.ecc_uncorrected_volatile.value_or(0) > 0) {
    out.push_back(fmt::format("{} uncorrected ECC errors since the driver loaded",
                              *f.ecc_uncorrected_volatile));
  }
  if (f.retired_pages_pending.value_or(false)) out.push_back("a page retirement waits for a reset");
  if (f.remapped_rows_pending.value_or(false)) out.push_back("a row remap waits for a reset");
  if (f.remapping_failure.value_or(false)) out.push_back("a row remapping failed");
}

}  // namespace

GpuHealth JudgeGpuHealth(const std::vector<std::string>& suspect_files,
                         const std::vector<std::string>& control_files,
                         std::optional<int32_t> gpu) {
  GpuHealth h;
  auto readers = MakeDefaultTextReaders(std::nullopt);
  if (!readers.ok()) return h;
  std::vector<std::string> setup;
  // Each file alone: a page of one GPU is that GPU (nvidia-smi -q -i G
  // numbers it 0); a page of several (-i not honoured, or the host's every
  // GPU) gives the record of the GPU asked for, or all of them when none was.
  auto read = [&](const std::vector<std::string>& files, std::vector<std::string>& faults) {
    size_t records = 0;
    for (const std::string& file : files) {
      auto run = Ingest({file}, readers->readers, IngestOptions{});
      if (!run.ok()) continue;
      const std::vector<GpuRecord>& gpus = run->hardware.gpus;
      for (const GpuRecord& g : gpus) {
        if (gpus.size() > 1 && gpu && g.index != *gpu) continue;
        FaultsOf(g, faults, setup);
        ++records;
      }
    }
    return records;
  };
  std::vector<std::string> control_faults;
  h.records = read(suspect_files, h.faults);
  size_t control = read(control_files, control_faults);
  if (h.records == 0) {
    h.verdict = "not judged";
    h.figures = "its health checks gave no GPU record to read";
    return h;
  }
  if (!h.faults.empty() && control > 0 && !control_faults.empty()) {
    h.verdict = "inconclusive";
    h.figures = fmt::format(
        "{}; the control GPU shows trouble too ({}): the host or the test, not this GPU alone",
        fmt::join(h.faults, "; "), fmt::join(control_faults, "; "));
    return h;
  }
  if (!h.faults.empty()) {
    h.verdict = "confirmed";
    h.figures = fmt::format("{}{}", fmt::join(h.faults, "; "),
                            control > 0 ? "; the control GPU's checks found nothing" : "");
    return h;
  }
  h.verdict = "inconclusive";
  h.figures =
      "its health checks found nothing (clocks while busy, power limit, PCIe, errors, dcgmi "
      "diag): a slowness they cannot see; time a GEMM on it against a peer";
  if (!setup.empty()) h.figures = fmt::format("{}; {}", setup.front(), h.figures);
  return h;
}

}  // namespace laggard::confirm
