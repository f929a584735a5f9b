#include "history/drain.h"

#include <map>

#include <fmt/format.h>

namespace laggard::history {
namespace {

std::string What(const Offender& o) {
  const PartRecord& p = o.part;
  if (o.node) return "node";
  switch (p.kind) {
    case PartKind::kGpu:
      return p.uuid ? fmt::format("GPU {} ({})", p.gpu.value_or(0), *p.uuid)
                    : fmt::format("GPU {}", p.gpu.value_or(0));
    case PartKind::kNic: return fmt::format("NIC {}", p.nic.value_or("?"));
    default: return "host";
  }
}

// A taint value: letters, digits, '-', '_' and '.', at most 63.
std::string TaintValue(std::string cause) {
  for (char& c : cause) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (c == '/') c = '.';
    if (!ok && c != '.') c = '_';
  }
  if (cause.size() > 63) cause.resize(63);
  return cause;
}

}  // namespace

std::optional<Scheduler> ParseScheduler(std::string_view name) {
  if (name == "slurm") return Scheduler::kSlurm;
  if (name == "kubernetes" || name == "k8s") return Scheduler::kKubernetes;
  return std::nullopt;
}

DrainPlan PlanDrain(const FleetReport& report, Scheduler scheduler) {
  DrainPlan plan;
  std::map<std::string, size_t> index_of;
  for (const Offender& o : report.offenders) {
    if (o.standing != Standing::kChronic) continue;
    const PartRecord& p = o.part;
    if (p.kind == PartKind::kSwitch) {
      plan.not_drained.push_back(
          fmt::format("{}: chronic ({} of {} jobs, {}), not a node: take it to the network team",
                      o.Name(), o.culprit_last, o.jobs_last, o.MainCause()));
      continue;
    }
    if (!p.host) {
      plan.not_drained.push_back(fmt::format(
          "{}: chronic ({} of {} jobs) but no host is known; record runs whose inputs name "
          "hosts (step logs with host names, nvidia-smi -q) to drain it",
          o.Name(), o.culprit_last, o.jobs_last));
      continue;
    }
    std::string why =
        fmt::format("{} {} in {} of {} jobs", What(o), o.MainCause(), o.culprit_last, o.jobs_last);
    auto [it, added] = index_of.try_emplace(*p.host, plan.commands.size());
    if (!added) {
      plan.commands[it->second].reason += "; " + why;
      continue;
    }
    DrainCommand c;
    c.host = *p.host;
    c.reason = "laggard: " + why;
    c.cause = o.MainCause();
    plan.commands.push_back(std::move(c));
  }
  for (DrainCommand& c : plan.commands) {
    if (scheduler == Scheduler::kSlurm) {
      c.argvs.push_back(
          {"scontrol", "update", "NodeName=" + c.host, "State=DRAIN", "Reason=" + c.reason});
    } else {
      c.argvs.push_back({"kubectl", "cordon", c.host});
      c.argvs.push_back({"kubectl", "taint", "nodes", c.host,
                         "laggard.dev/straggler=" + TaintValue(c.cause) + ":NoSchedule",
                         "--overwrite"});
    }
  }
  return plan;
}

}  // namespace laggard::history
