// `laggard history drain`: the scheduler commands that take the chronic
// offenders' nodes out of service (docs/history.md).
//
//   Slurm       scontrol update NodeName=H State=DRAIN Reason="laggard: ..."
//   Kubernetes  kubectl cordon H
//               kubectl taint nodes H laggard.dev/straggler=CAUSE:NoSchedule --overwrite
//
// Only chronic offenders (fleet_report.h, with the thresholds given) with a
// host are drained; a chronic switch, or a rank without a host, is listed
// as not drained, with why. Printing is the default; RunDrain() runs the
// commands (no shell: each is an argv) and the caller records what it did.

#ifndef LAGGARD_HISTORY_DRAIN_H_
#define LAGGARD_HISTORY_DRAIN_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/process.h"
#include "history/fleet_report.h"

namespace laggard::history {

enum class Scheduler : uint8_t { kSlurm, kKubernetes };
std::optional<Scheduler> ParseScheduler(std::string_view name);  // "slurm", "kubernetes"|"k8s"

struct DrainCommand {
  std::string host;
  std::string reason;  // "laggard: GPU 3 compute_slow/thermal in 4 of 5 jobs"
  std::string cause;   // the first offender's main cause, "compute_slow/thermal"
  std::vector<std::vector<std::string>> argvs;
};

struct DrainPlan {
  std::vector<DrainCommand> commands;  // one per host, in offender order
  std::vector<std::string> not_drained;
};

DrainPlan PlanDrain(const FleetReport& report, Scheduler scheduler);

}  // namespace laggard::history

#endif  // LAGGARD_HISTORY_DRAIN_H_
