// Prometheus text exposition (format 0.0.4) of everything the agent knows:
// GPUs, host links, steps per rank and the agent's own health. Metric names,
// labels and their DCGM equivalents are listed in docs/agent.md; renaming
// one breaks dashboards and `laggard watch`, so names are append-only.
//
// Labels: host (the agent's --host) on every series, job when --job is set
// (Prometheus renames it exported_job unless the scrape uses honor_labels),
// gpu and uuid on GPU series, rank (and gpu / uuid when the rank said which
// GPU it drives) on step series.
//
// Thread-safety: pure functions over the values passed in.

#ifndef LAGGARD_AGENT_METRICS_H_
#define LAGGARD_AGENT_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/gpu_sampler.h"
#include "agent/host_cpu.h"
#include "agent/step_intake.h"
#include "agent/sysfs.h"
#include "model/time.h"

namespace laggard::agent {

// What the agent keeps per reporting rank.
struct RankSteps {
  int64_t rank = 0;
  std::optional<int32_t> gpu;  // local GPU index, when the rank said
  std::optional<int64_t> pid;  // its process, when the rank said
  int64_t last_step = 0;
  DurationNs last_duration_ns = 0;
  TimeNs last_report_ns = 0;
  uint64_t reports = 0;
  double seconds_total = 0;  // sum of reported step times
  std::map<std::string, DurationNs> last_phase_ns;
  std::map<std::string, double> phase_seconds_total;
  // The last kRecentSteps step times, oldest overwritten first (the stall
  // detector's typical step: their median).
  static constexpr size_t kRecentSteps = 32;
  std::vector<DurationNs> recent_ns;
  size_t recent_next = 0;
  // The stall detector's word at the last /metrics (analysis/hangs/stall_detector.h):
  // silent for well over a step while other ranks of this host are ahead.
  bool stalled = false;
};

struct AgentCounters {
  uint64_t samples = 0;
  DurationNs last_sample_duration_ns = 0;
  TimeNs last_sample_ns = 0;
  std::array<uint64_t, static_cast<size_t>(StepSource::kCount)> datagrams{};
  std::array<uint64_t, static_cast<size_t>(StepSource::kCount)> steps{};
  std::array<std::array<uint64_t, static_cast<size_t>(StepSource::kCount)>,
             static_cast<size_t>(BadLine::kCount)>
      bad_lines{};
  uint64_t ranks_expired = 0;
  uint64_t pids_other_namespace = 0;  // step reports whose pid is of another PID namespace
  uint64_t sysfs_parse_errors = 0;
  // Rolling logs, by stem ("steps", "hardware").
  std::map<std::string, uint64_t> log_bytes;
  std::map<std::string, uint64_t> log_write_errors;
  std::map<std::string, uint64_t> log_rotations;
};

struct MetricsInput {
  std::string host;
  std::optional<std::string> job;
  std::string version;
  std::string gpu_backend;  // "nvml", "fake", "none"
  const std::vector<GpuSnapshot>* gpus = nullptr;
  const HostLinks* links = nullptr;
  const HostCpu* host_cpu = nullptr;
  const std::vector<RankSteps>* ranks = nullptr;
  const AgentCounters* counters = nullptr;
};

std::string RenderMetrics(const MetricsInput& in);

// Building blocks, exposed for tests.
using Labels = std::vector<std::pair<std::string_view, std::string>>;
// Label value escaping: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view v);
// Sample value: integers without a fraction, others shortest round-trip,
// NaN / +Inf / -Inf as Prometheus spells them.
std::string FormatSampleValue(double v);

class PromWriter {
 public:
  // Starts a metric family: "# HELP" and "# TYPE" lines. Every sample of the
  // family must follow before the next Family().
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const Labels& labels, double value);
  std::string& text() { return out_; }

 private:
  std::string out_;
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_METRICS_H_
