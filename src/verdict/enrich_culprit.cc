// The verdict's enrichment of a culprit named by step times or traces: the
// hardware and network evidence of its GPU and host, for a rank and for a
// group of ranks. Internal to src/verdict/.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// PCIe / NVLink link faults slow the GPU's transfers (input copies, its
// share of every collective), not its kernels: communication, as the
// HardwareOnlyCulprits rule and the simulator's truth class them; the other
// GPU causes slow the kernels.
CauseClass GpuCauseClass(FindingCode c) {
  return c == FindingCode::kGpuPcieDowngrade || c == FindingCode::kGpuNvlinkDown
             ? CauseClass::kCommunication
             : CauseClass::kComputeSlow;
}

}  // namespace

bool OnGpu(const Finding& f, const Entity& e) {
  if (f.entity.rank && e.rank && *f.entity.rank == *e.rank) return true;
  return f.entity.host && e.host && f.entity.gpu && e.gpu && *f.entity.host == *e.host &&
         *f.entity.gpu == *e.gpu;
}

bool OnHost(const Finding& f, const std::optional<std::string>& host) {
  return host && f.entity.host && *f.entity.host == *host;
}

// Adds the hardware and network evidence of the culprit's GPU and host.
// Returns true when it changed the culprit's cause or confidence.
bool EnrichRankCulprit(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (!c.entity.rank) return false;
  if (auto g = a.ranks.GpuOf(*c.entity.rank)) {
    if (!c.entity.host) c.entity.host = g->first;
    if (!c.entity.gpu && c.entity.host == g->first) c.entity.gpu = g->second;
  }
  bool changed = false;
  const Finding* hw = nullptr;
  for (const Finding& f : a.hardware.findings) {
    if (!IsGpuCause(f.code) || !OnGpu(f, c.entity)) continue;
    auto score = [](const Finding* x) {
      return (x->overlaps_slow_steps == true ? 1.0 : 0.0) + x->confidence;
    };
    if (hw == nullptr || score(&f) > score(hw)) hw = &f;
  }
  if (hw != nullptr) {
    changed = true;
    c.evidence.push_back("GPU: " + hw->message);
    if (hw->overlaps_slow_steps == false) {
      c.confidence = std::min(c.confidence, kContradictedCap);
    } else if (c.cause_class == CauseClass::kHostStall) {
      c.evidence.push_back("contradiction: the trace shows a host stall, not slow kernels");
      c.confidence = std::min(c.confidence, kContradictedCap);
    } else {
      c.cause_class = GpuCauseClass(hw->code);
      c.cause = hw->cause;
      c.confidence = Raised(std::max(c.confidence, hw->confidence), kCauseObservedGain);
      // The traces' "check its hardware metrics" is answered by the GPU
      // finding, whose own step (cooling, power limit, clocks) replaces it.
      for (const Finding& t : a.traces.findings) {
        if (t.code == FindingCode::kTraceComputeSlow && t.entity.rank == c.entity.rank)
          RemoveSteps(next_steps, t.next_steps);
      }
      PutStepsFirst(next_steps, hw->next_steps);
    }
  }
  for (const Finding& f : a.hardware.findings) {
    if (f.code != FindingCode::kGpuErrors || !OnGpu(f, c.entity)) continue;
    c.evidence.push_back("GPU errors: " + f.message);
    c.confidence = Raised(c.confidence, kErrorsGain);
    AddSteps(next_steps, f.next_steps);
    changed = true;
  }
  const Finding* net = nullptr;
  for (const Finding& f : a.network.findings) {
    if (!IsNetCause(f.code)) continue;
    bool mine = f.code == FindingCode::kNetPoorPath ? OnGpu(f, c.entity) : OnHost(f, c.entity.host);
    if (mine && (net == nullptr || f.confidence > net->confidence)) net = &f;
  }
  if (net != nullptr) {
    changed = true;
    c.evidence.push_back("network: " + net->message);
    if (c.cause_class == CauseClass::kUnknown) {
      c.cause_class = CauseClass::kCommunication;
      c.cause = net->cause;
      c.confidence = Raised(std::max(c.confidence, net->confidence), kAgreeingSignalGain);
      PutStepsFirst(next_steps, net->next_steps);
    }
  }
  for (const Finding& f : a.network.findings) {
    if (f.code == FindingCode::kNetSharedSwitch &&
        std::find(f.ranks.begin(), f.ranks.end(), *c.entity.rank) != f.ranks.end()) {
      c.evidence.push_back("switch: " + f.message);
      if (c.cause_class == CauseClass::kUnknown || c.cause_class == CauseClass::kCommunication) {
        c.cause_class = CauseClass::kExternal;
        c.cause = "shared_switch";
      }
      AddSteps(next_steps, f.next_steps);
      changed = true;
    }
  }
  return changed;
}

// A group culprit whose GPUs show a hardware cause during the slow steps
// is compute-slow (a host-wide thermal / power problem), not imbalance;
// the GPU with the strongest finding becomes the named entity.
bool EnrichGroupCulprit(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (c.ranks.size() < 2 || c.cause_class == CauseClass::kHostStall) return false;
  const Finding* hw = nullptr;
  Entity at;
  for (int32_t r : c.ranks) {
    Entity e;
    e.rank = r;
    if (auto g = a.ranks.GpuOf(r)) e.host = g->first, e.gpu = g->second;
    for (const Finding& f : a.hardware.findings) {
      if (!IsGpuCause(f.code) || !OnGpu(f, e) || f.overlaps_slow_steps == false) continue;
      if (hw == nullptr || f.confidence > hw->confidence) hw = &f, at = e;
    }
  }
  if (hw == nullptr) return false;
  c.entity.rank = at.rank;
  c.entity.host = at.host;
  c.entity.gpu = at.gpu;
  c.cause_class = GpuCauseClass(hw->code);
  c.cause = hw->cause;
  std::erase_if(c.evidence, [](const std::string& e) { return e.rfind("no GPU metric", 0) == 0; });
  c.evidence.push_back("GPU: " + hw->message);
  c.confidence = Raised(std::max(c.confidence, hw->confidence), kCauseObservedGain);
  PutStepsFirst(next_steps, hw->next_steps);
  return true;
}

}  // namespace laggard::verdict_internal
