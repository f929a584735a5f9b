#include "simulator/writers/step_logs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "simulator/rng.h"

namespace laggard::sim {
namespace {

bool Active(int step, int onset, std::optional<int> end, std::optional<int> period, int burst) {
  if (step < onset || (end && step > *end)) return false;
  if (!period) return true;
  return (step - onset) % *period < burst;
}

}  // namespace

std::string HostName(int node) { return fmt::format("node-{:02d}", node); }

std::vector<std::vector<double>> SimulateStepTimes(const StepLogScenario& sc) {
  Rng rng(sc.seed);
  std::vector<std::vector<double>> t(static_cast<size_t>(sc.ranks),
                                     std::vector<double>(static_cast<size_t>(sc.steps)));
  // When each rank last read its clock (timer_noise_s model).
  std::vector<double> last_read(static_cast<size_t>(sc.ranks), 0);
  for (int s = 0; s < sc.steps; ++s) {
    double job = 1;
    for (const JobSlowdown& j : sc.job_slowdowns) {
      int len = j.end_step - j.start_step;
      if (Active(s, j.start_step, j.period ? std::nullopt : std::optional<int>(j.end_step),
                 j.period, len + 1)) {
        job *= j.factor;
      }
    }
    double step_max = 0;
    for (int r = 0; r < sc.ranks; ++r) {
      double v = sc.base_step_s * std::max(0.5, 1 + sc.jitter * rng.Normal()) * job;
      for (const RankSlowdown& d : sc.rank_slowdowns) {
        if (d.rank == r && Active(s, d.onset_step, d.end_step, d.period, d.burst))
          v *= 1 + d.slowdown;
      }
      if (sc.spike_probability > 0 && rng.Uniform() < sc.spike_probability) v *= 1 + sc.spike_size;
      t[static_cast<size_t>(r)][static_cast<size_t>(s)] = v;
      step_max = std::max(step_max, v);
    }
    if (sc.synchronised && sc.timer_noise_s > 0) {
      for (int r = 0; r < sc.ranks; ++r) {
        double read = sc.timer_noise_s * rng.Normal();
        double& prev = last_read[static_cast<size_t>(r)];
        t[static_cast<size_t>(r)][static_cast<size_t>(s)] =
            std::max(0.5 * step_max, step_max + read - prev);
        prev = read;
      }
    } else if (sc.synchronised) {
      for (int r = 0; r < sc.ranks; ++r) {
        t[static_cast<size_t>(r)][static_cast<size_t>(s)] = step_max + 0.0002 * rng.Uniform();
      }
    }
  }
  return t;
}

void WriteArticleLines(const StepLogScenario& sc, std::ostream& out) {
  auto t = SimulateStepTimes(sc);
  for (int s = 0; s < sc.steps; ++s) {
    for (int r = 0; r < sc.ranks; ++r) {
      out << fmt::format("rank {}, step {}, time {:.4f}s\n", r, s,
                         t[static_cast<size_t>(r)][static_cast<size_t>(s)]);
    }
  }
}

Status WriteStepLogs(const StepLogScenario& sc, StepLogFormat format, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(fmt::format("{}: cannot create: {}", dir, ec.message()));
  auto t = SimulateStepTimes(sc);
  int nodes = (sc.ranks + sc.gpus_per_node - 1) / sc.gpus_per_node;
  const char* ext = format == StepLogFormat::kArticle ? "log"
                    : format == StepLogFormat::kCsv   ? "csv"
                                                      : "jsonl";
  for (int n = 0; n < nodes; ++n) {
    std::string path = fmt::format("{}/{}.{}", dir, HostName(n), ext);
    std::ofstream out(path);
    if (!out) return Status::Error(fmt::format("{}: cannot write", path));
    if (format == StepLogFormat::kCsv) out << "timestamp,host,rank,local_rank,step,step_time_ms\n";
    // Each rank's clock: start + sum of its previous steps.
    std::vector<double> clock(static_cast<size_t>(sc.gpus_per_node),
                              static_cast<double>(sc.start_time_s));
    for (int s = 0; s < sc.steps; ++s) {
      for (int g = 0; g < sc.gpus_per_node; ++g) {
        int r = n * sc.gpus_per_node + g;
        if (r >= sc.ranks) break;
        double v = t[static_cast<size_t>(r)][static_cast<size_t>(s)];
        double start = clock[static_cast<size_t>(g)];
        clock[static_cast<size_t>(g)] += v;
        switch (format) {
          case StepLogFormat::kArticle:
            out << fmt::format("[rank{}]: rank {}, step {}, time {:.4f}s\n", r, r, s, v);
            break;
          case StepLogFormat::kCsv:
            out << fmt::format("{:.3f},{},{},{},{},{:.3f}\n", start, HostName(n), r, g, s, v * 1e3);
            break;
          case StepLogFormat::kJsonl:
            out << fmt::format(
                "{{\"rank\": {}, \"step\": {}, \"duration_s\": {:.6f}, \"host\": \"{}\", "
                "\"local_rank\": {}, \"start\": {:.3f}}}\n",
                r, s, v, HostName(n), g, start);
            break;
        }
      }
    }
    if (!out) return Status::Error(fmt::format("{}: write failed", path));
  }
  return Status::Ok();
}

}  // namespace laggard::sim
