#include "simulator/run_writer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "base/text.h"
#include "simulator/writers/kineto_traces.h"
#include "simulator/writers/writers.h"

namespace laggard::sim {
namespace {

constexpr int64_t kSec = 1'000'000'000;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Appends `v / 10^decimals` with exactly `decimals` decimals (v >= 0):
// the step lines' hot path (16M lines at scale), without a format parse.
void AppendFixed(fmt::memory_buffer& b, int64_t v, int decimals) {
  static constexpr int64_t kPow[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  int64_t p = kPow[decimals];
  fmt::format_int whole(v / p);
  b.append(whole.data(), whole.data() + whole.size());
  b.push_back('.');
  int64_t frac = v % p;
  char digits[8];
  for (int i = decimals - 1; i >= 0; --i, frac /= 10)
    digits[i] = static_cast<char>('0' + frac % 10);
  b.append(digits, digits + decimals);
}

void AppendInt(fmt::memory_buffer& b, int64_t v) {
  fmt::format_int i(v);
  b.append(i.data(), i.data() + i.size());
}

void AppendStr(fmt::memory_buffer& b, std::string_view s) {
  b.append(s.data(), s.data() + s.size());
}

// The step logs of one rank: the article's line, CSV or JSON Lines, on its
// host's clock. Times are rounded to the printed precision in integer ns.
Status WriteStepLog(const RunContext& ctx, int rank, uint64_t* bytes, int* files) {
  const ClusterRun& run = ctx.run;
  const ClusterScenario& sc = run.scenario();
  int g = sc.gpus_per_node, node = rank / g;
  StepLogFormat format = *ctx.opt.step_format;
  const char* ext = format == StepLogFormat::kArticle ? "log"
                    : format == StepLogFormat::kCsv   ? "csv"
                                                      : "jsonl";
  OutFile f(fmt::format("{}/{}/rank-{}.{}", ctx.dir, HostName(node), rank, ext));
  fmt::memory_buffer& b = f.buf();
  b.reserve(static_cast<size_t>(sc.steps) * (format == StepLogFormat::kArticle ? 40 : 64));
  bool compute = ctx.opt.step_timing == StepTiming::kCompute;
  bool both = ctx.opt.step_timing == StepTiming::kBoth;
  std::string host = HostName(node);
  std::string rank_prefix = fmt::format("rank {}, step ", rank);
  std::string csv_mid = fmt::format(",{},{},{},", host, rank, rank % g);
  if (format == StepLogFormat::kCsv) {
    f.Raw(both ? "timestamp,host,rank,local_rank,step,step_time_ms,compute_ms\n"
               : "timestamp,host,rank,local_rank,step,step_time_ms\n");
  }
  for (int s = 0; s < sc.steps; ++s) {
    int64_t dur =
        std::max<int64_t>(0, compute ? run.compute_step_ns(rank, s) : run.step_ns(rank, s));
    int64_t start = ctx.host_ns(node, run.step_start_ns(rank, s));
    switch (format) {
      case StepLogFormat::kArticle:  // rank 3, step 17, time 0.8123s
        AppendStr(b, rank_prefix);
        AppendInt(b, s);
        AppendStr(b, ", time ");
        AppendFixed(b, (dur + 50'000) / 100'000, 4);
        AppendStr(b, "s\n");
        break;
      case StepLogFormat::kCsv:  // 1764000000.123456,node-00,3,3,17,812.345
        AppendFixed(b, start / 1000, 6);
        AppendStr(b, csv_mid);
        AppendInt(b, s);
        b.push_back(',');
        AppendFixed(b, (dur + 500) / 1000, 3);
        if (both) {
          b.push_back(',');
          AppendFixed(b, (std::max<int64_t>(0, run.compute_step_ns(rank, s)) + 500) / 1000, 3);
        }
        b.push_back('\n');
        break;
      case StepLogFormat::kJsonl:
        f.Print("{{\"rank\": {}, \"step\": {}, \"duration_s\": ", rank, s);
        AppendFixed(b, (dur + 500) / 1000, 6);
        if (both) {
          AppendStr(b, ", \"compute_s\": ");
          AppendFixed(b, (std::max<int64_t>(0, run.compute_step_ns(rank, s)) + 500) / 1000, 6);
        }
        f.Print(", \"host\": \"{}\", \"local_rank\": {}, \"start\": ", host, rank % g);
        AppendFixed(b, start / 1000, 6);
        AppendStr(b, "}\n");
        break;
    }
  }
  if (Status st = f.Close(bytes); !st.ok()) return st;
  ++*files;
  return Status::Ok();
}

// Runs tasks on `threads` threads; stops handing out work after a failure.
Status RunTasks(std::vector<std::function<Status(uint64_t*, int*)>>& tasks, int threads,
                uint64_t* bytes, int* files) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first_error;
  uint64_t total_bytes = 0;
  int total_files = 0;
  auto work = [&] {
    uint64_t b = 0;
    int n = 0;
    for (size_t i = next++; i < tasks.size() && !failed; i = next++) {
      Status st = tasks[i](&b, &n);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_error = st;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    total_bytes += b;
    total_files += n;
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  *bytes += total_bytes;
  *files += total_files;
  return failed ? first_error : Status::Ok();
}

}  // namespace

Status OutFile::Close(uint64_t* bytes) {
  std::FILE* f = std::fopen(path_.c_str(), "wb");
  if (!f) return Status::Error(fmt::format("{}: cannot write", path_));
  bool ok = std::fwrite(buf_.data(), 1, buf_.size(), f) == buf_.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return Status::Error(fmt::format("{}: write failed", path_));
  *bytes += buf_.size();
  buf_.clear();
  return Status::Ok();
}

Civil ToCivil(int64_t ns) {
  int64_t secs = ns >= 0 ? ns / kSec : -((-ns + kSec - 1) / kSec);
  int64_t rem_ns = ns - secs * kSec;
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t sod = secs - days * 86400;
  // Howard Hinnant's civil_from_days.
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  Civil c;
  c.year = static_cast<int>(y + (m <= 2 ? 1 : 0));
  c.month = static_cast<int>(m);
  c.day = static_cast<int>(d);
  c.hour = static_cast<int>(sod / 3600);
  c.minute = static_cast<int>(sod / 60 % 60);
  c.second = static_cast<int>(sod % 60);
  c.millis = static_cast<int>(rem_ns / 1'000'000);
  c.weekday = static_cast<int>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday
  return c;
}

int GpuBusId(int gpu) {
  static constexpr int kHgxBusIds[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb,
                                       0x19, 0x2b, 0x3b, 0x5e, 0x9b, 0xac, 0xbb, 0xdc};
  return kHgxBusIds[static_cast<size_t>(gpu) % std::size(kHgxBusIds)];
}

StatusOr<std::vector<int>> ParseRankList(std::string_view spec, int ranks) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view item =
        Trim(spec.substr(pos, comma == std::string_view::npos ? spec.npos : comma - pos));
    size_t dash = item.find('-');
    auto lo = ParseInt<int>(item.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : ParseInt<int>(item.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi >= ranks) {
      return Status::Error(
          fmt::format("rank list '{}': '{}' is not a rank or an inclusive range A-B within 0..{}",
                      spec, item, ranks - 1));
    }
    for (int r = *lo; r <= *hi; ++r) out.push_back(r);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int DefaultTraceFirstStep(int total_steps, int trace_steps) {
  return std::max(0, total_steps - trace_steps - 1);
}

StatusOr<RunSummary> WriteClusterRun(const ClusterScenario& scenario_in,
                                     const RunOutputOptions& opt, const std::string& dir) {
  auto t0 = std::chrono::steady_clock::now();
  ClusterScenario scenario = scenario_in;
  if (Status st = ResolveScenario(&scenario); !st.ok()) return st;
  bool hardware = opt.hardware;
  SimulateOptions so;
  so.record_steps = true;  // step starts place every other file on the timeline
  so.record_compute = opt.step_format && opt.step_timing != StepTiming::kEndToEnd;
  if (opt.step_timing == StepTiming::kBoth && opt.step_format == StepLogFormat::kArticle) {
    return Status::Error(
        "step timing 'both' needs the csv or jsonl step format: the "
        "article's line has no place for a compute time");
  }
  so.record_gpus = hardware;
  so.measure_effects = opt.measure_effects;
  int threads = opt.threads > 0
                    ? opt.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.threads = threads;
  if (opt.traces) {
    if (opt.trace_steps < 1) return Status::Error("trace steps must be at least 1");
    int steps = std::min(opt.trace_steps, scenario.steps);
    so.trace_steps = steps;
    so.trace_first_step =
        opt.trace_first_step.value_or(DefaultTraceFirstStep(scenario.steps, steps));
  }
  auto run = SimulateCluster(scenario, so);
  if (!run.ok()) return run.status();
  RunSummary summary;
  summary.simulate_s = Seconds(t0);
  auto t1 = std::chrono::steady_clock::now();

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(fmt::format("{}: cannot create: {}", dir, ec.message()));
  for (int n = 0; n < scenario.nodes; ++n) {
    std::filesystem::create_directories(dir + "/" + HostName(n), ec);
    if (ec)
      return Status::Error(fmt::format("{}/{}: cannot create: {}", dir, HostName(n), ec.message()));
  }
  if (opt.nccl_tests && NcclTestCount(*run, opt) > 0) {
    std::filesystem::create_directories(dir + "/nccl-tests", ec);
    if (ec)
      return Status::Error(fmt::format("{}/nccl-tests: cannot create: {}", dir, ec.message()));
  }

  RunContext ctx{*run, opt, dir};
  ctx.job_start_ns = run->step_start_ns(0, 0);
  ctx.job_end_ns = run->step_start_ns(0, scenario.steps);

  std::vector<std::function<Status(uint64_t*, int*)>> tasks;
  if (opt.step_format) {
    // Ranks in blocks, so a task is worth a thread hand-off.
    int block = 64;
    for (int r0 = 0; r0 < scenario.ranks(); r0 += block) {
      tasks.push_back([&ctx, r0, block, n = scenario.ranks()](uint64_t* b, int* f) {
        for (int r = r0; r < std::min(n, r0 + block); ++r) {
          if (Status st = WriteStepLog(ctx, r, b, f); !st.ok()) return st;
        }
        return Status::Ok();
      });
    }
  }
  for (int n = 0; n < scenario.nodes; ++n) {
    if (hardware)
      tasks.push_back([&ctx, n](uint64_t* b, int* f) { return WriteNvidiaSmiFiles(ctx, n, b, f); });
    if (opt.network)
      tasks.push_back([&ctx, n](uint64_t* b, int* f) { return WriteNetworkFiles(ctx, n, b, f); });
  }
  if (opt.network)
    tasks.push_back([&ctx](uint64_t* b, int* f) { return WriteSwitchMap(ctx, b, f); });
  if (opt.nccl_tests) {
    for (int i = 0; i < NcclTestCount(*run, opt); ++i) {
      tasks.push_back([&ctx, i](uint64_t* b, int* f) { return WriteNcclTest(ctx, i, b, f); });
    }
  }
  if (opt.nccl_debug)
    tasks.push_back([&ctx](uint64_t* b, int* f) { return WriteNcclDebug(ctx, b, f); });
  tasks.push_back([&ctx](uint64_t* b, int* f) { return WriteTruth(ctx, b, f); });

  if (Status st = RunTasks(tasks, threads, &summary.bytes, &summary.files); !st.ok()) return st;

  if (opt.traces) {
    TraceScenario ts;
    ts.ranks = scenario.ranks();
    ts.gpus_per_node = scenario.gpus_per_node;
    ts.steps = run->trace_steps();
    ts.first_step = *run->trace_first_step();
    ts.seed = scenario.seed;
    ts.jitter = std::min(0.05, scenario.jitter);
    ts.kernels_per_step = scenario.kernels_per_step;
    ts.collectives_per_step = scenario.collectives_per_step;
    ts.bucket_bytes = scenario.bucket_bytes;
    ts.clock_offsets_ns = run->clock_offsets_ns();
    ts.start_time_s = scenario.start_time_s;
    ts.write_truth = false;
    ts.traced_ranks = opt.trace_ranks;
    const ClusterRun& r = *run;
    ts.schedule = [&r](int rank, int i) -> const ScheduledStep& { return r.scheduled(rank, i); };
    if (Status st = WriteKinetoTraces(ts, dir, opt.gzip_traces); !st.ok()) return st;
    const std::vector<int> traced = TracedRanks(ts);
    summary.files += static_cast<int>(traced.size());
    for (int rank : traced) {
      summary.bytes +=
          std::filesystem::file_size(dir + "/" + KinetoTracePath(ts, rank, opt.gzip_traces), ec);
    }
  }
  summary.write_s = Seconds(t1);
  summary.mean_step_s = run->mean_step_s();
  summary.healthy_mean_step_s = run->healthy_mean_step_s();
  summary.headline = Headline(*run);
  return summary;
}

}  // namespace laggard::sim
