// Other tools' straggler reports in the verdict (verdict_internal.h):
// Megatron's StragglerDetector and NVRx, ToolReportCulprit() and
// CiteToolReports().

#include <algorithm>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// Step times or traces of two ranks or more: laggard compares the ranks
// itself.
bool ComparesRanks(const Run& run, const Analyses& a) {
  return a.steps.ranks.size() >= 2 || a.traces.ranks.size() >= 2 || run.ranks.size() >= 2;
}

// Whether laggard has step times or a trace of `rank`.
bool Measured(const Analyses& a, int32_t rank) {
  return std::any_of(a.steps.ranks.begin(), a.steps.ranks.end(),
                     [&](const RankStepStats& r) { return r.info.rank == rank; }) ||
         std::any_of(a.traces.ranks.begin(), a.traces.ranks.end(),
                     [&](const auto& r) { return r.rank == rank; });
}

bool Names(const Culprit& c, int32_t rank) {
  return c.entity.rank == rank || std::find(c.ranks.begin(), c.ranks.end(), rank) != c.ranks.end();
}

bool Cites(const Culprit& c, const Finding& f) {
  return std::any_of(c.evidence.begin(), c.evidence.end(),
                     [&](const std::string& e) { return e.rfind(f.message, 0) == 0; });
}

// Warning or critical GPU and network findings: evidence a single healthy
// report does not clear.
bool HardwareOrNetworkWarns(const Analyses& a) {
  for (const auto* list : {&a.hardware.findings, &a.network.findings}) {
    for (const Finding& f : *list) {
      if (f.severity != Severity::kInfo) return true;
    }
  }
  return false;
}

// One tool's reading: its finding and the rank it puts slowest.
struct Reading {
  const Finding* finding;
  const ToolSlowestRank* slowest;
};

// Megatron's StragglerDetector's, then NVRx's, where each gave one.
std::vector<Reading> Readings(const Analyses& a) {
  std::vector<Reading> out;
  const Finding* sd = FirstOf(a.tool_reports.findings, FindingCode::kToolStragglerReport);
  if (sd != nullptr && a.tool_reports.slowest) out.push_back({sd, &*a.tool_reports.slowest});
  // NVRx's rank reading (its individual-score finding has no ToolSlowestRank).
  if (a.tool_reports.nvrx) {
    for (const Finding& f : a.tool_reports.findings) {
      if (f.code != FindingCode::kToolNvrxReport) continue;
      if (!f.cause) {  // not the individual-score finding
        out.push_back({&f, &*a.tool_reports.nvrx});
        break;
      }
    }
  }
  return out;
}

// A culprit's line about one tool's reading: agrees, disagrees, or empty.
std::string CiteLine(const Culprit& c, const Reading& r, const Analyses& a, bool& said_other) {
  const Finding& f = *r.finding;
  const ToolSlowestRank& s = *r.slowest;
  if (r.slowest->even) {
    if (said_other) return "";
    said_other = true;
    return fmt::format("{} — it disagrees on the size: laggard measured its own evidence above",
                       f.message);
  }
  if (Names(c, s.rank)) {
    return fmt::format("{} (agrees){}", f.message,
                       s.consistent ? "" : "; alone it would not name a straggler");
  }
  if (said_other) return "";
  said_other = true;
  return fmt::format(
      "{} — it disagrees: {}", f.message,
      Measured(a, s.rank)
          ? "laggard's evidence above names this culprit, and the tool's reports sum each "
            "interval up"
          : fmt::format("laggard has no step times or trace of rank {} to weigh it", s.rank));
}

// Other tools' tests of the hardware that name one GPU or one host.
struct HardwareTest {
  FindingCode code;
  const char* what;  // the test, as the evidence line names it
  bool gpu;          // it names a GPU (else a host)
};
constexpr HardwareTest kHardwareTests[] = {
    {FindingCode::kGpuP2pBandwidthLow, "the GPU link test (p2pBandwidthLatencyTest)", true},
    {FindingCode::kGpuThrottleHistory, "the driver's throttle counters (nvidia-smi -q)", true},
    {FindingCode::kNetBandwidthLow, "the node bandwidth tests", false},
};

std::string PlaceOf(const Entity& e, bool gpu) {
  return gpu ? fmt::format("{} GPU {}", e.host.value_or("?"), e.gpu.value_or(-1))
             : e.host.value_or("?");
}

// Beside each culprit, what those tests say of its GPU or host: the same
// place (agrees), or another host of the job (disagrees, and why the
// culprit stands). Warnings only (an info finding is a test that could not
// tell); a GPU of the culprit's own host under another index says nothing
// (CUDA and nvidia-smi may number them apart); hosts outside the job are
// not its evidence. At most two lines of each per culprit.
void CiteHardwareTests(Verdict& v, const Analyses& a) {
  const std::vector<std::string>& job_hosts = a.ranks.hosts();
  auto in_job = [&](const std::string& h) {
    return job_hosts.empty() || std::find(job_hosts.begin(), job_hosts.end(), h) != job_hosts.end();
  };
  for (Culprit& c : v.culprits) {
    if (!c.entity.host) continue;
    int agreements = 0, disagreements = 0;
    for (const HardwareTest& t : kHardwareTests) {
      for (const auto* list : {&a.hardware.findings, &a.network.findings}) {
        for (const Finding& f : *list) {
          if (f.code != t.code || !f.entity.host || (t.gpu && !f.entity.gpu)) continue;
          if (f.severity == Severity::kInfo || !in_job(*f.entity.host)) continue;
          bool said = std::any_of(c.evidence.begin(), c.evidence.end(), [&](const std::string& e) {
            return e.find(f.message) != std::string::npos;
          });
          if (said) continue;
          bool same = t.gpu ? OnGpu(f, c.entity) : OnHost(f, c.entity.host);
          // Another culprit's place is that culprit's evidence, not against this one.
          bool others = std::any_of(v.culprits.begin(), v.culprits.end(), [&](const Culprit& o) {
            return &o != &c && (t.gpu ? OnGpu(f, o.entity) : OnHost(f, o.entity.host));
          });
          if (!same && others) continue;
          if (same) {
            if (agreements++ < 2) {
              c.evidence.push_back(fmt::format("{}: {} (agrees)", t.what, f.message));
            }
          } else if (t.gpu && (!c.entity.gpu || f.entity.host == c.entity.host)) {
            continue;  // its GPU unknown, or the same host's under another number
          } else if (disagreements++ < 2) {
            c.evidence.push_back(fmt::format(
                "{} names {}, not this culprit's {}: {} — it disagrees: this culprit was named "
                "from the job's own evidence above, the test examined the hardware apart from "
                "the job",
                t.what, PlaceOf(f.entity, t.gpu), PlaceOf(c.entity, t.gpu), f.message));
          }
        }
      }
    }
  }
}

}  // namespace

std::optional<Culprit> ToolReportCulprit(const Verdict& v, const Analyses& a,
                                         std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kInconclusive &&
      (a.steps.ranks.size() >= 2 || a.traces.ranks.size() >= 2)) {
    return std::nullopt;
  }
  for (const Reading& r : Readings(a)) {
    if (!r.slowest->consistent) continue;
    Culprit c = CulpritOf(*r.finding, CauseClass::kUnknown, kSingleSourceCap);
    c.evidence.push_back(r.finding->message);
    for (const Evidence& e : r.finding->evidence) c.evidence.push_back(e.text);
    const Finding* data = FirstOf(a.tool_reports.findings, FindingCode::kToolDataLoaderSlow);
    if (data != nullptr && data->entity.rank == r.slowest->rank)
      c.evidence.push_back(data->message);
    // Its GPU's and host's findings, as for a culprit of laggard's own.
    EnrichRankCulprit(c, a, next_steps);
    return c;
  }
  return std::nullopt;
}

void CiteToolReports(Verdict& v, const Run& run, const Analyses& a,
                     std::vector<std::string>& next_steps) {
  if (const Finding* data = FirstOf(a.tool_reports.findings, FindingCode::kToolDataLoaderSlow)) {
    AddSteps(next_steps, data->next_steps);
  }
  if (v.status == VerdictStatus::kStraggler) CiteHardwareTests(v, a);
  std::vector<Reading> readings = Readings(a);
  if (readings.empty()) return;
  if (v.status == VerdictStatus::kStraggler) {
    for (const Reading& r : readings) {
      bool said_other = false;
      for (Culprit& c : v.culprits) {
        if (Cites(c, *r.finding) || !(c.entity.rank || !c.ranks.empty())) continue;
        std::string line = CiteLine(c, r, a, said_other);
        if (!line.empty()) c.evidence.push_back(std::move(line));
      }
    }
    return;
  }
  for (const Reading& r : readings) AddSteps(next_steps, r.finding->next_steps);
  if (!ComparesRanks(run, a) && !HardwareOrNetworkWarns(a)) {
    // Nothing else speaks about the ranks: the tools' reading is the
    // verdict. The extremes they print bound every rank of their intervals.
    // NVRx scores GPU kernels only: alone, an even reading is not enough
    // for "no straggler".
    bool even = std::all_of(readings.begin(), readings.end(),
                            [](const Reading& r) { return r.slowest->even; }) &&
                readings.front().finding->code == FindingCode::kToolStragglerReport;
    v.status = even ? VerdictStatus::kNoStraggler : VerdictStatus::kInconclusive;
    v.summary = std::string(even ? "verdict: no straggler found — " : "verdict: inconclusive — ") +
                readings.front().finding->message;
    for (size_t i = 1; i < readings.size(); ++i) v.summary += "; " + readings[i].finding->message;
    return;
  }
  for (const Reading& r : readings) {
    const ToolSlowestRank& s = *r.slowest;
    v.summary += fmt::format("; {}", r.finding->message);
    if (s.even) continue;
    if (!Measured(a, s.rank)) {
      v.summary += fmt::format(
          " — laggard has no step times or trace of rank {}: add them to weigh it", s.rank);
    } else if (s.consistent && v.status == VerdictStatus::kNoStraggler) {
      v.summary += fmt::format(
          " — laggard's own comparison of the ranks, which holds rank {} too, finds none", s.rank);
    }
  }
}

}  // namespace laggard::verdict_internal
