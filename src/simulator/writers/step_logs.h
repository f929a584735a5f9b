// Synthetic per-rank step times with injected slowdowns, written in the real
// step-log formats (the article's lines, CSV, JSON Lines). Used by
// `laggard demo`, the scenario tests and the benchmarks.
//
// The simulator never includes analysis code: what it injects is the truth
// the detectors are tested against.
//
// Model: rank r's step s takes base * (1 + jitter * N(0,1)) * slowdown(r, s)
// * job_factor(s). With `synchronised`, every rank reports the step's maximum
// (end-to-end timing in synchronous training: the collective waits for the
// slowest rank), plus sub-millisecond timer noise.
//
// Deterministic for a seed (own normal generator, independent of the
// standard library's distributions).

#ifndef LAGGARD_SIMULATOR_WRITERS_STEP_LOGS_H_
#define LAGGARD_SIMULATOR_WRITERS_STEP_LOGS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"

namespace laggard::sim {

struct RankSlowdown {
  int rank = 0;
  double slowdown = 0.2;        // +20%
  int onset_step = 0;           // first slow step
  std::optional<int> end_step;  // last slow step (recovered after it)
  std::optional<int> period;    // slow only every `period` steps ...
  int burst = 1;                // ... for `burst` consecutive steps
};

struct JobSlowdown {
  int start_step = 0;
  int end_step = 0;
  double factor = 10;         // 0.8 s -> 8 s
  std::optional<int> period;  // repeat every `period` steps from start_step
};

struct StepLogScenario {
  int ranks = 16;
  int gpus_per_node = 8;
  int steps = 300;
  double base_step_s = 0.8;
  double jitter = 0.02;  // relative standard deviation per step
  uint64_t seed = 1;
  bool synchronised = false;
  // With `synchronised`: each rank reads its clock at the end of every step
  // with this much normal noise (seconds, standard deviation), so its step
  // s reports step_max + e[r][s] - e[r][s-1] (timer placement, host jitter).
  // 0 keeps the plain model: step_max plus uniform noise under 0.2 ms.
  double timer_noise_s = 0;
  int64_t start_time_s = 1'764'000'000;  // 2025-11-24T16:00:00Z
  std::vector<RankSlowdown> rank_slowdowns;
  std::vector<JobSlowdown> job_slowdowns;
  // Rare random spikes on random ranks: probability per rank-step, size.
  double spike_probability = 0;
  double spike_size = 0.3;
};

std::string HostName(int node);  // "node-00", "node-01", ...

// Step time in seconds of every rank and step: [rank][step].
std::vector<std::vector<double>> SimulateStepTimes(const StepLogScenario& scenario);

enum class StepLogFormat { kArticle, kCsv, kJsonl };

// Writes one file per node into `dir` (created): node-00.log / .csv / .jsonl.
Status WriteStepLogs(const StepLogScenario& scenario, StepLogFormat format, const std::string& dir);

// Writes every rank's lines in the article's format to `out`, step by step.
void WriteArticleLines(const StepLogScenario& scenario, std::ostream& out);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_WRITERS_STEP_LOGS_H_
