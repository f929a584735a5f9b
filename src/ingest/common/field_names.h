// Column / key names of tabular step records (CSV headers, JSON Lines keys),
// in one catalogue shared by the CSV and JSONL readers.
//
//   rank      rank, global_rank, rank_id, process_rank, worker
//   step      step, iteration, iter, global_step, step_idx, step_index, batch_idx
//   duration  duration, step_time, elapsed, elapsed_time, iteration_time,
//             step_duration, latency, dt, time (only when no other duration
//             column exists), each optionally with a unit: `_s`, `_sec`,
//             `_ms`, `_us`, `_ns` suffix or "(ms)" / "[ms]" / " ms"
//   start     start, start_time, start_ts, timestamp, ts, wall_time, datetime, begin
//   host      host, hostname, node, node_name, nodename
//   gpu       gpu, gpu_index, gpu_id, local_rank, local_gpu, device, cuda_device
//   stage     pipeline_stage, pp_rank, stage, pp_stage (optional role)
//   dp_rank   dp_rank, data_parallel_rank, dp_index (optional role)
//   compute   compute, compute_time, compute_only, compute_step_time,
//             phase_compute (the agent's step log), each optionally with a
//             unit like durations: the step's compute-only part, without
//             waiting in collectives (optional)
//   cpu       cpu_time, on_cpu, process_cpu, phase_cpu (the agent's step
//             log), and cpu with a unit (cpu_s, cpu_ms): the rank's
//             process's time on a CPU during the step (optional)
//   cpu_wait  cpu_wait, runq_wait, run_delay, runqueue_wait, sched_wait,
//             phase_cpu_wait: its time runnable but waiting for a CPU
//             (optional)
//   cpu_probe cpu_probe, phase_cpu_probe: the time of the reporter's fixed
//             CPU probe in the step (optional)
//
// Matching ignores case, surrounding blanks and quotes.

#ifndef LAGGARD_INGEST_COMMON_FIELD_NAMES_H_
#define LAGGARD_INGEST_COMMON_FIELD_NAMES_H_

#include <optional>
#include <string_view>
#include <vector>

#include "model/time.h"

namespace laggard {

enum class StepField {
  kNone,
  kRank,
  kStep,
  kDuration,
  kAmbiguousTime,
  kStart,
  kHost,
  kGpu,
  kStage,
  kDpRank,
  kCompute,
  kCpu,
  kCpuWait,
  kCpuProbe
};

// The CPU fields of a step record (model/run.h StepCpu), in StepCpuField order.
enum StepCpuField { kOnCpuField, kCpuWaitField, kCpuProbeField, kStepCpuFields };

// A step record's CPU fields as written, with the units of their names,
// by StepCpuField (ingest/common/field_names.h).
struct StepCpuText {
  std::optional<std::string_view> text[kStepCpuFields];
  std::optional<TimeUnit> unit[kStepCpuFields];
  bool any() const { return text[0] || text[1] || text[2]; }
};

struct FieldName {
  StepField field = StepField::kNone;
  std::optional<TimeUnit> unit;  // for durations, from the name
};

FieldName ClassifyFieldName(std::string_view name);

// kCpu, kCpuWait, kCpuProbe -> their StepCpuField.
int CpuFieldOf(StepField f);

// Maps a header / key list to column indexes; -1 when absent. A plain "time"
// becomes the duration when no other duration column exists.
struct FieldLayout {
  int rank = -1, step = -1, duration = -1, start = -1, host = -1, gpu = -1, stage = -1,
      dp_rank = -1, compute = -1;
  int cpu[kStepCpuFields] = {-1, -1, -1};  // by StepCpuField
  std::optional<TimeUnit> duration_unit;
  std::optional<TimeUnit> compute_unit;
  std::optional<TimeUnit> cpu_unit[kStepCpuFields];
  bool has_cpu() const { return cpu[0] >= 0 || cpu[1] >= 0 || cpu[2] >= 0; }
  bool usable(bool rank_known_elsewhere) const {
    return step >= 0 && duration >= 0 && (rank >= 0 || rank_known_elsewhere);
  }
};
FieldLayout LayoutFromNames(const std::vector<std::string_view>& names);

// The delimiter a header line uses most: ',', '\t' or ';' (',' when it
// holds none of them).
char GuessDelimiter(std::string_view header);

// Reads a duration value: a number, optionally followed by its own unit
// ("812ms", "0.81 s"); `default_unit` (or seconds) applies otherwise. Sets
// `unit_used` to the unit applied.
std::optional<DurationNs> ParseDurationValue(std::string_view text,
                                             std::optional<TimeUnit> default_unit,
                                             TimeUnit& unit_used);

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_FIELD_NAMES_H_
