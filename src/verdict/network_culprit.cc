// The verdict's network culprits: hosts whose network evidence (a port
// down, a degraded link, low bandwidth, a socket fallback) is strong
// enough to blame on its own. Internal to src/verdict/.

#include <algorithm>
#include <string>
#include <vector>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {

bool IsNetCause(FindingCode c) {
  return c == FindingCode::kNetPortDown || c == FindingCode::kNetLinkDegraded ||
         c == FindingCode::kNetBandwidthLow || c == FindingCode::kNetSocketFallback ||
         c == FindingCode::kNetNoGdr || c == FindingCode::kNetPoorPath;
}

namespace {

// Hosts with strong network findings (a port down, a degraded link, low
// bandwidth, a socket fallback) not already named for communication in
// `v`, one culprit per host, a second signal on it raising its confidence.
std::vector<Culprit> HostCulprits(const Verdict& v, const Analyses& a,
                                  std::vector<std::string>& next_steps) {
  std::vector<Culprit> out;
  for (const Finding& f : a.network.findings) {
    if (!IsNetCause(f.code) || f.code == FindingCode::kNetPoorPath ||
        f.code == FindingCode::kNetNoGdr || !f.entity.host || f.severity != Severity::kCritical ||
        f.confidence < kStrongNetworkConfidence) {
      continue;
    }
    bool covered = std::any_of(v.culprits.begin(), v.culprits.end(), [&](const Culprit& c) {
      return c.entity.host == f.entity.host && c.cause_class == CauseClass::kCommunication;
    });
    if (covered) continue;
    // A host the job's ranks never ran on (a cluster-wide pair sweep, a
    // test of other nodes) does not slow this job: its finding stays a
    // finding.
    const std::vector<std::string>& job_hosts = a.ranks.hosts();
    if (!job_hosts.empty() &&
        std::find(job_hosts.begin(), job_hosts.end(), *f.entity.host) == job_hosts.end()) {
      continue;
    }
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Culprit& c) { return c.entity.host == f.entity.host; });
    if (it == out.end()) {
      Culprit c;
      c.entity.host = f.entity.host;
      c.entity.nic = f.entity.nic;
      c.entity.switch_name = f.entity.switch_name;
      c.cause_class = CauseClass::kCommunication;
      c.cause = f.cause;
      c.confidence = std::min(f.confidence, kSingleSourceCap);
      c.slowdown = f.slowdown;
      c.evidence.push_back("network: " + f.message);
      out.push_back(std::move(c));
    } else {
      // A second independent network signal on the same host; a direct
      // observation of the link names the cause better than a bandwidth test.
      if (f.code != FindingCode::kNetBandwidthLow) it->cause = f.cause;
      if (!it->entity.nic) it->entity.nic = f.entity.nic;
      if (!it->slowdown) it->slowdown = f.slowdown;
      it->evidence.push_back("network: " + f.message);
      it->confidence = Raised(it->confidence, kCauseObservedGain);
    }
    AddSteps(next_steps, f.next_steps);
  }
  return out;
}

// Hosts named by bandwidth alone with one downgraded GPU PCIe link: the GPU.
void PcieRails(std::vector<Culprit>& out, const Analyses& a, std::vector<std::string>& next_steps) {
  // A host named by nccl-tests bandwidth alone, one of whose GPUs runs its
  // PCIe link downgraded: that link is the slow rail (the GPU's share of
  // every ring, GPUDirect RDMA), so the GPU is the culprit, not the NIC.
  for (Culprit& c : out) {
    bool bandwidth_only =
        std::all_of(a.network.findings.begin(), a.network.findings.end(), [&](const Finding& f) {
          return !IsNetCause(f.code) || f.code == FindingCode::kNetBandwidthLow ||
                 !OnHost(f, c.entity.host);
        });
    if (!bandwidth_only || c.entity.rank) continue;
    const Finding* pcie = nullptr;
    size_t n = 0;
    for (const Finding& f : a.hardware.findings) {
      if (f.code == FindingCode::kGpuPcieDowngrade && OnHost(f, c.entity.host) && f.entity.gpu)
        pcie = &f, ++n;
    }
    if (n != 1) continue;
    c.entity.rank = pcie->entity.rank;
    c.entity.gpu = pcie->entity.gpu;
    c.entity.nic.reset();
    c.cause = "pcie_downgrade";
    c.evidence.push_back("GPU: " + pcie->message);
    c.confidence = Raised(c.confidence, kCauseObservedGain);
    PutStepsFirst(next_steps, pcie->next_steps);
  }
}

// The hosts of one switch as a culprit outside the job, and the switch as
// the cause of hosts already named.
void SwitchCulprits(const Verdict& v, const Analyses& a, std::vector<Culprit>& out,
                    std::vector<std::string>& next_steps) {
  // Hosts of one switch slow together in nccl-tests, no host of it blamed
  // otherwise: while the job's step times show slowdowns of the whole job
  // (episodes, or synchronised steps with a communication-bound trace) —
  // what a congested switch does to a ring — or synchronised step times
  // (what any slow link looks like from the ranks), the switch's hosts are
  // the culprit, outside the job.
  // Port counters that show every host of one switch waiting for credits
  // far more than the rest name the switch on their own (a direct
  // observation of the congestion, at most kSingleSourceCap), more when the job's steps
  // slow down together as well.
  for (const Finding& f : a.network.findings) {
    if (f.code != FindingCode::kNetSharedSwitch ||
        (f.pattern != Pattern::kSwitchGroup && f.pattern != Pattern::kPortCounters)) {
      continue;
    }
    const bool counters = f.pattern == Pattern::kPortCounters;
    bool covered = std::any_of(out.begin(), out.end(),
                               [&](const Culprit& c) {
                                 return c.entity.switch_name == f.entity.switch_name;
                               }) ||
                   std::any_of(v.culprits.begin(), v.culprits.end(), [&](const Culprit& c) {
                     return c.entity.host && std::find(f.ranks.begin(), f.ranks.end(),
                                                       c.entity.rank.value_or(-1)) != f.ranks.end();
                   });
    if (covered || (v.status == VerdictStatus::kStraggler && !counters)) continue;
    const Finding* episodes = FirstOf(a.steps, FindingCode::kPeriodicSlowdown);
    if (!episodes) episodes = FirstOf(a.steps, FindingCode::kJobSlowdown);
    const Finding* comm = FirstOf(a.traces.findings, FindingCode::kTraceCommBound);
    const Finding* sync = FirstOf(a.steps, FindingCode::kStepsSynchronised);
    if (!episodes && !comm && !sync && !counters) continue;
    Culprit c;
    c.entity.host = f.entity.host;
    c.entity.switch_name = f.entity.switch_name;
    c.ranks = f.ranks;
    c.cause_class = CauseClass::kExternal;
    c.cause = "shared_switch";
    c.slowdown = f.slowdown;
    if (counters) {
      c.confidence = std::min(kSingleSourceCap, f.confidence);
      if (episodes) {
        c.confidence = std::min(kSwitchCountersCap,
                                c.confidence + (comm ? kCauseObservedGain : kAgreeingSignalGain));
      }
    } else {
      c.confidence =
          std::min(kSingleSourceCap,
                   f.confidence + (episodes && comm ? kCauseObservedGain : kAgreeingSignalGain));
    }
    c.evidence.push_back("switch: " + f.message);
    if (episodes) c.evidence.push_back("step times: " + episodes->message);
    if (comm) c.evidence.push_back("traces: " + comm->message);
    AddSteps(next_steps, f.next_steps);
    out.push_back(std::move(c));
  }
  for (const Finding& f : a.network.findings) {
    if (f.code != FindingCode::kNetSharedSwitch) continue;
    for (Culprit& c : out) {
      if (c.entity.switch_name == f.entity.switch_name && c.cause != "shared_switch") {
        c.cause_class = CauseClass::kExternal;
        c.cause = "shared_switch";
        c.evidence.push_back("switch: " + f.message);
      }
    }
    AddSteps(next_steps, f.next_steps);
  }
}

}  // namespace

// Hosts whose network evidence is strong enough to blame on its own.
std::vector<Culprit> NetworkCulprits(const Verdict& v, const Analyses& a,
                                     std::vector<std::string>& next_steps) {
  // Every rank of the job on one host (and the traces' world size, when
  // known, says that is all of it): NCCL moves the job's data over NVLink,
  // PCIe or shared memory, never the host's NICs, so a NIC fault cannot
  // slow it.
  if (auto sole = a.ranks.SoleHost()) {
    bool whole = !a.traces.world_size ||
                 static_cast<size_t>(*a.traces.world_size) == a.ranks.RanksOnHost(*sole).size();
    if (whole) return {};
  }
  std::vector<Culprit> out = HostCulprits(v, a, next_steps);
  PcieRails(out, a, next_steps);
  SwitchCulprits(v, a, out, next_steps);
  return out;
}

}  // namespace laggard::verdict_internal
