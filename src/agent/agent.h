// `laggard agent`: the per-node agent. Each round (default every second) it
// samples the GPUs through a GpuBackend (real NVML or scripted fakes) and the
// host links from sysfs; between rounds it takes step reports from training
// processes (step_intake.h). It serves everything as Prometheus metrics on
// /metrics (metrics.h; laggard_rank_stalled: a rank of this host that stopped
// behind the others, analysis/hangs/stall_detector.h, decided at each scrape), its
// own health on /healthz, and keeps two rolling
// JSON Lines logs that `laggard diagnose` reads like any other input:
//
//   <log-dir>/steps.jsonl      one line per step report, in the JSONL step
//                              format of ingest/step_logs/jsonl_reader.cc
//   <log-dir>/hardware.jsonl   GPU samples, facts, XIDs, lost GPUs and link
//                              states, read by ingest/agent_log/agent_log.cc
//
// Errors never stop the agent once it runs: a lost GPU is a metric, a failed
// NVML query a counter, a bad datagram a counter, a failed log write a
// counter. Only Open() fails, when an address cannot be bound or the log
// directory cannot be created.
//
// Threads: the sampling thread (SampleOnce every interval), the intake
// thread, the HTTP accept thread and its worker pool. State shared between
// them sits behind one mutex; /metrics renders it at most once per change.

#ifndef LAGGARD_AGENT_AGENT_H_
#define LAGGARD_AGENT_AGENT_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/clock.h"
#include "agent/gpu_sampler.h"
#include "agent/host_cpu.h"
#include "agent/host_procs.h"
#include "agent/metrics.h"
#include "agent/nvml.h"
#include "agent/rolling_log.h"
#include "agent/step_intake.h"
#include "agent/sysfs.h"
#include "net/http.h"

namespace laggard::agent {

struct AgentOptions {
  std::string listen = "127.0.0.1:9400";
  DurationNs interval_ns = 1'000'000'000;       // 100 ms (10 Hz) .. 1 h
  IntakeOptions intake;                         // CLI default: UDP 127.0.0.1:9401
  std::optional<std::string> log_dir;           // no rolling log when unset
  uint64_t log_max_bytes = 64ull << 20;         // per file
  int log_files = 5;                            // per log, the current one included
  std::optional<std::string> sysfs_root = "/";  // nullopt: do not read sysfs
  std::string host;                             // label and log host
  std::optional<std::string> job;
  DurationNs rank_ttl_ns = 600'000'000'000;  // forget ranks silent this long
  size_t max_ranks = 4096;
  int http_threads = 8;
  DurationNs link_log_interval_ns = 60'000'000'000;  // link records in the log
  std::string version;
  // The host-CPU speed probe's budget per round (host_cpu.h), 0: none.
  // /proc/stat is read under sysfs_root, not at all when it is unset.
  DurationNs cpu_probe_ns = 200'000;
  // How often the processes of the host are scanned (host_procs.h) for
  // the hardware log's host_proc records, 0: never. Under sysfs_root.
  DurationNs proc_scan_ns = 5'000'000'000;
};

class Agent final : public StepSink {
 public:
  // `backend` may be null (no NVML on this machine); `backend_note` then says
  // why, for /healthz.
  Agent(AgentOptions options, std::unique_ptr<GpuBackend> backend, std::string backend_note,
        const Clock& clock);
  ~Agent() override;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Opens the logs, binds HTTP and the step sockets.
  Status Open();
  // Starts the sampling, intake and HTTP threads.
  void Start();
  // Stops every thread, then flushes and closes the logs. Idempotent.
  void Stop();

  // One sampling round at the clock's time (the sampling thread's body;
  // tests call it directly).
  void SampleOnce();

  // What GET /metrics and GET /healthz answer.
  std::string Metrics();
  net::HttpResponse Health();

  int http_port() const { return http_ ? http_->port() : 0; }
  int udp_port() const { return intake_ ? intake_->udp_port() : 0; }
  StepIntake* intake() { return intake_.get(); }
  void FlushLogs();

  // StepSink (the intake thread).
  void OnStep(const StepReport& report, StepSource source) override;
  void OnBadLine(BadLine why, StepSource source, std::string_view detail) override;
  void OnDatagram(StepSource source) override;

 private:
  void SamplingLoop();
  // Marks the ranks the stall detector finds stalled at `now` (under mu_).
  void UpdateStalls(TimeNs now);
  void LogHardware(const std::vector<GpuSnapshot>& gpus, const HostLinks& links, TimeNs now);
  void LogHostCpu(const HostCpu& cpu, const std::optional<ProcScan>& procs,
                  const std::map<int64_t, int64_t>& rank_of_pid, TimeNs now);
  // The host's processes when a scan is due, else nullopt; `rank_of_pid`
  // gets the job's pids (from their step reports).
  std::optional<ProcScan> ScanProcesses(std::map<int64_t, int64_t>& rank_of_pid);
  std::vector<std::string> GpuInfoLines(TimeNs now) const;

  AgentOptions o_;
  std::unique_ptr<GpuBackend> backend_;
  std::string backend_note_;
  const Clock& clock_;
  std::unique_ptr<GpuSampler> sampler_;
  std::optional<SysfsReader> sysfs_;
  std::optional<HostCpuSampler> host_cpu_sampler_;
  std::optional<ProcScanner> proc_scanner_;
  std::optional<uint64_t> proc_pidns_;  // the PID namespace of the /proc read
  std::optional<std::chrono::steady_clock::time_point> procs_scanned_;
  std::unique_ptr<StepIntake> intake_;
  std::unique_ptr<net::HttpServer> http_;
  TimeNs started_ns_;

  // Shared state, under mu_.
  std::mutex mu_;
  std::vector<GpuSnapshot> gpus_;
  HostLinks links_;
  HostCpu host_cpu_;
  std::map<int64_t, RankSteps> ranks_;
  AgentCounters counters_;
  uint64_t version_ = 1;
  uint64_t rendered_version_ = 0;
  std::string rendered_;
  std::atomic<uint64_t> scrapes_{0};

  // Logs, under log_mu_ (steps from the intake thread, hardware from the
  // sampling thread).
  std::mutex log_mu_;
  std::unique_ptr<RollingLog> steps_log_;
  std::unique_ptr<RollingLog> hw_log_;
  std::vector<GpuSnapshot> logged_gpus_;  // for the hardware log's header
  bool gpu_info_logged_ = false;
  std::map<std::string, std::string> link_state_logged_;  // link key -> state text
  TimeNs links_logged_ns_ = 0;

  // Sampling thread control.
  std::thread sampling_thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool running_ = false;
};

// Flag values: "1s", "500ms", "0.25", "10m", "1h" (no unit: seconds).
std::optional<DurationNs> ParseDurationFlag(std::string_view text);

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_AGENT_H_
