#include "agent/agent.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "analysis/hangs/stall_detector.h"
#include "base/stats/robust_stats.h"
#include "base/text.h"

namespace laggard::agent {
namespace {

// A JSON number for a finite value, spelt as a Prometheus sample value:
// integers without a fraction, others shortest round-trip.
std::string JsonNumber(double v) { return FormatSampleValue(v); }

// Builds one JSON object line; keys are trusted literals.
class JsonLine {
 public:
  JsonLine(std::string_view record, TimeNs t, const std::string& host) {
    out_ = "{\"record\":";
    out_ += JsonString(record);
    Str("time", FormatTimestamp(t));
    Str("host", host);
  }
  JsonLine& Str(std::string_view key, std::string_view v) {
    Key(key);
    out_ += JsonString(v);
    return *this;
  }
  JsonLine& Num(std::string_view key, double v) {
    if (!std::isfinite(v)) return *this;
    Key(key);
    out_ += JsonNumber(v);
    return *this;
  }
  JsonLine& Opt(std::string_view key, const std::optional<double>& v, double scale = 1) {
    if (v) Num(key, *v * scale);
    return *this;
  }
  JsonLine& Raw(std::string_view key, std::string_view json) {
    Key(key);
    out_ += json;
    return *this;
  }
  std::string Done() {
    out_ += '}';
    return std::move(out_);
  }

 private:
  void Key(std::string_view key) {
    out_ += ",\"";
    out_ += key;
    out_ += "\":";
  }
  std::string out_;
};

// The numeric fields of a gpu_sample record: (field, log key, scale).
struct SampleKey {
  GpuField field;
  std::string_view key;
  double scale;
};
constexpr SampleKey kSampleKeys[] = {
    {GpuField::kTempC, "temp_c", 1},
    {GpuField::kSmClockMhz, "sm_clock_mhz", 1},
    {GpuField::kMemClockMhz, "mem_clock_mhz", 1},
    {GpuField::kPowerW, "power_w", 1},
    {GpuField::kPowerLimitW, "power_limit_w", 1},
    {GpuField::kUtilPct, "util_pct", 1},
    {GpuField::kMemUtilPct, "mem_util_pct", 1},
    {GpuField::kPcieGen, "pcie_gen", 1},
    {GpuField::kPcieWidth, "pcie_width", 1},
    {GpuField::kPcieTxKbS, "pcie_tx_mb_s", 1e-3},
    {GpuField::kPcieRxKbS, "pcie_rx_mb_s", 1e-3},
    {GpuField::kClockEvents, "clock_events", 1},
    {GpuField::kEccUncorrectedVolatile, "ecc_uncorrected_volatile", 1},
};
constexpr SampleKey kInfoKeys[] = {
    {GpuField::kSmClockMaxMhz, "max_sm_clock_mhz", 1},
    {GpuField::kMemClockMaxMhz, "max_mem_clock_mhz", 1},
    {GpuField::kPowerLimitDefaultW, "default_power_limit_w", 1},
    {GpuField::kPcieGenMax, "pcie_gen_max", 1},
    {GpuField::kPcieWidthMax, "pcie_width_max", 1},
};

JsonLine GpuLine(std::string_view record, const GpuSnapshot& g, TimeNs t, const std::string& host) {
  JsonLine line(record, t, host);
  line.Num("gpu", g.index);
  if (g.uuid) line.Str("uuid", *g.uuid);
  return line;
}

std::string IbStateText(const IbPortSample& p) {
  return fmt::format("{}|{}|{}|{}", p.state.value_or(""), p.phys_state.value_or(""),
                     p.rate_gbps ? JsonNumber(*p.rate_gbps) : "",
                     p.width ? std::to_string(*p.width) : "");
}

std::string NetStateText(const NetIfSample& n) {
  return fmt::format("{}|{}", n.speed_mbps ? std::to_string(*n.speed_mbps) : "",
                     n.operstate.value_or(""));
}

}  // namespace

std::optional<DurationNs> ParseDurationFlag(std::string_view text) {
  text = Trim(text);
  size_t end = 0;
  while (end < text.size() && (IsDigit(text[end]) || text[end] == '.')) ++end;
  auto v = ParseDouble(text.substr(0, end));
  if (!v || *v < 0) return std::nullopt;
  std::string_view unit = Trim(text.substr(end));
  double scale_s;
  if (unit.empty()) scale_s = 1;
  else if (unit == "m" || unit == "min") scale_s = 60;
  else if (unit == "h") scale_s = 3600;
  else if (auto u = ParseTimeUnit(unit)) scale_s = static_cast<double>(NsPerUnit(*u)) / 1e9;
  else return std::nullopt;
  return ToDurationNs(*v * scale_s, TimeUnit::kSeconds);
}

Agent::Agent(AgentOptions options, std::unique_ptr<GpuBackend> backend, std::string backend_note,
             const Clock& clock)
    : o_(std::move(options)),
      backend_(std::move(backend)),
      backend_note_(std::move(backend_note)),
      clock_(clock),
      started_ns_(clock.Now()) {
  if (backend_) sampler_ = std::make_unique<GpuSampler>(*backend_);
  if (o_.sysfs_root) sysfs_.emplace(*o_.sysfs_root);
  if (o_.sysfs_root || o_.cpu_probe_ns > 0)
    host_cpu_sampler_.emplace(o_.sysfs_root.value_or(""), o_.cpu_probe_ns);
  if (o_.sysfs_root && o_.proc_scan_ns > 0) {
    proc_scanner_.emplace(*o_.sysfs_root);
    proc_pidns_ = ProcPidNamespace(*o_.sysfs_root);
  }
}

Agent::~Agent() { Stop(); }

Status Agent::Open() {
  if (o_.log_dir) {
    steps_log_ = std::make_unique<RollingLog>(*o_.log_dir, "steps", o_.log_max_bytes, o_.log_files);
    hw_log_ = std::make_unique<RollingLog>(*o_.log_dir, "hardware", o_.log_max_bytes, o_.log_files,
                                           [this] { return GpuInfoLines(clock_.Now()); });
    if (Status st = steps_log_->Open(); !st.ok()) return st;
    if (Status st = hw_log_->Open(); !st.ok()) return st;
  }
  intake_ = std::make_unique<StepIntake>(*this);
  if (Status st = intake_->Open(o_.intake); !st.ok()) return st;
  http_ = std::make_unique<net::HttpServer>(o_.http_threads);
  http_->Get("/metrics", [this] {
    net::HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = Metrics();
    return r;
  });
  http_->Get("/healthz", [this] { return Health(); });
  return http_->Listen(o_.listen);
}

void Agent::Start() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (running_) return;
    running_ = true;
    stopping_ = false;
  }
  if (intake_) intake_->Start();
  if (http_) http_->Start();
  sampling_thread_ = std::thread([this] { SamplingLoop(); });
}

void Agent::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (sampling_thread_.joinable()) sampling_thread_.join();
  if (http_) http_->Stop();
  if (intake_) intake_->Stop();
  FlushLogs();
  std::lock_guard<std::mutex> lock(stop_mu_);
  running_ = false;
}

void Agent::SamplingLoop() {
  using Steady = std::chrono::steady_clock;
  auto next = Steady::now();
  const auto interval = std::chrono::nanoseconds(o_.interval_ns);
  while (true) {
    SampleOnce();
    next += interval;
    auto now = Steady::now();
    if (next < now) next = now + interval;  // fell behind (slow NVML): skip, don't burst
    std::unique_lock<std::mutex> lock(stop_mu_);
    if (stop_cv_.wait_until(lock, next, [this] { return stopping_; })) return;
  }
}

void Agent::SampleOnce() {
  auto t0 = std::chrono::steady_clock::now();
  TimeNs now = clock_.Now();
  std::vector<GpuSnapshot> gpus;
  if (sampler_) gpus = sampler_->Sample(now);
  HostLinks links;
  if (sysfs_) links = sysfs_->Read();
  HostCpu cpu;
  if (host_cpu_sampler_) cpu = host_cpu_sampler_->Sample();
  std::map<int64_t, int64_t> rank_of_pid;
  std::optional<ProcScan> procs = ScanProcesses(rank_of_pid);
  LogHardware(gpus, links, now);
  LogHostCpu(cpu, procs, rank_of_pid, now);
  FlushLogs();
  DurationNs took =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  std::lock_guard<std::mutex> lock(mu_);
  counters_.sysfs_parse_errors +=
      links.parse_errors + cpu.parse_errors + (procs ? procs->parse_errors : 0);
  host_cpu_ = std::move(cpu);
  gpus_ = std::move(gpus);
  links_ = std::move(links);
  ++counters_.samples;
  counters_.last_sample_ns = now;
  counters_.last_sample_duration_ns = took;
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    if (now - it->second.last_report_ns > o_.rank_ttl_ns) {
      it = ranks_.erase(it);
      ++counters_.ranks_expired;
    } else {
      ++it;
    }
  }
  ++version_;
}

std::vector<std::string> Agent::GpuInfoLines(TimeNs now) const {
  std::vector<std::string> lines;
  for (const GpuSnapshot& g : logged_gpus_) {
    JsonLine line = GpuLine("gpu_info", g, now, o_.host);
    if (g.bus_id) line.Str("bus_id", *g.bus_id);
    if (g.name) line.Str("name", *g.name);
    for (const SampleKey& k : kInfoKeys) line.Opt(k.key, g[k.field], k.scale);
    if (g.nvlinks_known) line.Num("nvlink_total", static_cast<double>(g.nvlinks.size()));
    lines.push_back(line.Done());
  }
  return lines;
}

void Agent::LogHardware(const std::vector<GpuSnapshot>& gpus, const HostLinks& links, TimeNs now) {
  if (!hw_log_) return;
  std::lock_guard<std::mutex> lock(log_mu_);
  std::vector<bool> was_lost(gpus.size(), false);
  for (size_t i = 0; i < gpus.size() && i < logged_gpus_.size(); ++i)
    was_lost[i] = logged_gpus_[i].lost;
  logged_gpus_ = gpus;
  if (!gpu_info_logged_ && !gpus.empty()) {
    for (const std::string& l : GpuInfoLines(now)) hw_log_->Append(l);
    gpu_info_logged_ = true;
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuSnapshot& g = gpus[i];
    if (g.lost) {
      if (!was_lost[i]) hw_log_->Append(GpuLine("gpu_lost", g, now, o_.host).Done());
      continue;
    }
    JsonLine line = GpuLine("gpu_sample", g, now, o_.host);
    for (const SampleKey& k : kSampleKeys) line.Opt(k.key, g[k.field], k.scale);
    if (auto n = g.nvlinks_active()) line.Num("nvlink_up", *n);
    hw_log_->Append(line.Done());
    for (uint64_t xid : g.new_xids) {
      hw_log_->Append(
          GpuLine("gpu_xid", g, now, o_.host).Num("xid", static_cast<double>(xid)).Done());
    }
  }
  bool periodic = now - links_logged_ns_ >= o_.link_log_interval_ns;
  if (periodic) links_logged_ns_ = now;
  for (const IbPortSample& p : links.ib_ports) {
    std::string key = fmt::format("ib:{}:{}", p.ca, p.port);
    std::string state = IbStateText(p);
    auto [it, inserted] = link_state_logged_.try_emplace(key, state);
    if (!periodic && !inserted && it->second == state) continue;
    it->second = state;
    JsonLine line("ib_port", now, o_.host);
    line.Str("ca", p.ca).Num("port", p.port);
    if (p.state) line.Str("state", *p.state);
    if (p.phys_state) line.Str("phys_state", *p.phys_state);
    line.Opt("rate_gbps", p.rate_gbps);
    if (p.width) line.Num("width", *p.width);
    if (p.link_layer) line.Str("link_layer", *p.link_layer);
    if (!p.counters.empty()) {
      std::string c = "{";
      for (const auto& [name, v] : p.counters) {
        if (c.size() > 1) c += ',';
        c += JsonString(name) + ":" + std::to_string(v);
      }
      line.Raw("counters", c + "}");
    }
    hw_log_->Append(line.Done());
  }
  for (const NetIfSample& n : links.net_ifs) {
    std::string key = "net:" + n.iface;
    std::string state = NetStateText(n);
    auto [it, inserted] = link_state_logged_.try_emplace(key, state);
    if (!periodic && !inserted && it->second == state) continue;
    it->second = state;
    JsonLine line("net_link", now, o_.host);
    line.Str("iface", n.iface);
    if (n.speed_mbps) line.Num("speed_mbps", static_cast<double>(*n.speed_mbps));
    if (n.operstate) line.Str("operstate", *n.operstate);
    hw_log_->Append(line.Done());
  }
}

std::optional<ProcScan> Agent::ScanProcesses(std::map<int64_t, int64_t>& rank_of_pid) {
  if (!proc_scanner_) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  if (procs_scanned_ && now - *procs_scanned_ < std::chrono::nanoseconds(o_.proc_scan_ns))
    return std::nullopt;
  procs_scanned_ = now;
  std::set<int64_t> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [rank, r] : ranks_) {
      if (r.pid) {
        rank_of_pid[*r.pid] = rank;
        job.insert(*r.pid);
      }
    }
  }
  return proc_scanner_->Scan(std::chrono::duration<double>(now.time_since_epoch()).count(), job);
}

void Agent::LogHostCpu(const HostCpu& cpu, const std::optional<ProcScan>& procs,
                       const std::map<int64_t, int64_t>& rank_of_pid, TimeNs now) {
  if (!hw_log_) return;
  std::lock_guard<std::mutex> lock(log_mu_);
  if (!cpu.cores.empty() || cpu.procs_running) {
    // Per-core values as parallel arrays, null where not measured.
    std::string ids, busy, steal, probe, speed;
    // Shares and speeds to 3 decimals, the probe to 0.1 us: a line stays
    // about 30 bytes a core.
    auto add = [](std::string& a, const std::optional<double>& v, double per) {
      a += a.empty() ? "[" : ",";
      a += v && std::isfinite(*v) ? JsonNumber(std::round(*v * per) / per) : "null";
    };
    for (const CoreSample& c : cpu.cores) {
      add(ids, c.cpu, 1);
      add(busy, c.busy_ratio, 1e3);
      add(steal, c.steal_ratio, 1e3);
      add(probe, c.probe_s, 1e7);
      add(speed, c.speed_ratio, 1e3);
    }
    JsonLine line("host_cpu", now, o_.host);
    if (cpu.procs_running) line.Num("procs_running", static_cast<double>(*cpu.procs_running));
    if (cpu.procs_blocked) line.Num("procs_blocked", static_cast<double>(*cpu.procs_blocked));
    if (!ids.empty()) {
      line.Raw("cpu", ids + "]").Raw("busy", busy + "]").Raw("steal", steal + "]");
      line.Raw("probe_s", probe + "]").Raw("speed", speed + "]");
    }
    hw_log_->Append(line.Done());
  }
  if (!procs) return;
  for (const ProcSample& p : procs->listed) {
    JsonLine line("host_proc", now, o_.host);
    line.Num("pid", static_cast<double>(p.pid)).Num("ppid", static_cast<double>(p.ppid));
    line.Str("comm", p.comm);
    line.Num("cpu_share", std::round(p.cpu_share * 1000) / 1000);
    if (p.last_cpu) line.Num("last_cpu", *p.last_cpu);
    if (p.cpus_allowed) line.Str("cpus_allowed", *p.cpus_allowed);
    if (auto it = rank_of_pid.find(p.pid); it != rank_of_pid.end())
      line.Num("rank", static_cast<double>(it->second));
    line.Str("cmdline", p.cmdline);
    hw_log_->Append(line.Done());
  }
}

void Agent::FlushLogs() {
  std::lock_guard<std::mutex> lock(log_mu_);
  if (hw_log_) hw_log_->Flush();
  if (steps_log_) steps_log_->Flush();
  std::lock_guard<std::mutex> state_lock(mu_);
  for (auto [name, log] : {std::pair<const char*, RollingLog*>{"steps", steps_log_.get()},
                           {"hardware", hw_log_.get()}}) {
    if (log == nullptr) continue;
    counters_.log_bytes[name] = log->bytes_written();
    counters_.log_write_errors[name] = log->write_errors();
    counters_.log_rotations[name] = log->rotations();
  }
  ++version_;
}

void Agent::OnDatagram(StepSource source) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.datagrams[static_cast<size_t>(source)];
  ++version_;
}

void Agent::OnBadLine(BadLine why, StepSource source, std::string_view) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.bad_lines[static_cast<size_t>(why)][static_cast<size_t>(source)];
  ++version_;
}

void Agent::OnStep(const StepReport& report, StepSource source) {
  TimeNs now = clock_.Now();
  TimeNs end = report.end_ns.value_or(now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranks_.find(report.rank);
    if (it == ranks_.end()) {
      if (ranks_.size() >= o_.max_ranks) {
        ++counters_
              .bad_lines[static_cast<size_t>(BadLine::kTooManyRanks)][static_cast<size_t>(source)];
        ++version_;
        return;
      }
      it = ranks_.emplace(report.rank, RankSteps{}).first;
      it->second.rank = report.rank;
    }
    RankSteps& r = it->second;
    if (report.gpu) r.gpu = report.gpu;
    if (report.pid) {
      // A pid of another namespace names another process in our /proc.
      if (report.pidns && proc_pidns_ && *report.pidns != *proc_pidns_)
        ++counters_.pids_other_namespace;
      else r.pid = report.pid;
    }
    r.last_step = report.step;
    r.last_duration_ns = report.duration_ns;
    r.last_report_ns = now;
    ++r.reports;
    r.seconds_total += static_cast<double>(report.duration_ns) / 1e9;
    if (r.recent_ns.size() < RankSteps::kRecentSteps) {
      r.recent_ns.push_back(report.duration_ns);
    } else {
      r.recent_ns[r.recent_next] = report.duration_ns;
      r.recent_next = (r.recent_next + 1) % RankSteps::kRecentSteps;
    }
    for (const auto& [phase, d] : report.phases) {
      if (r.last_phase_ns.size() >= kMaxPhases && !r.last_phase_ns.count(phase)) continue;
      r.last_phase_ns[phase] = d;
      r.phase_seconds_total[phase] += static_cast<double>(d) / 1e9;
    }
    ++counters_.steps[static_cast<size_t>(source)];
    ++version_;
  }
  if (!steps_log_) return;
  // A line of the JSONL step format (ingest/common/field_names.h): "timestamp" is the
  // step's start; phases get a "phase_" prefix so no phase name can collide
  // with a step field.
  std::string line = fmt::format(
      "{{\"rank\":{},\"step\":{},\"step_time_s\":{},\"timestamp\":{},\"host\":{}", report.rank,
      report.step, JsonNumber(static_cast<double>(report.duration_ns) / 1e9),
      JsonString(FormatTimestamp(end - report.duration_ns)), JsonString(o_.host));
  if (report.gpu) line += fmt::format(",\"gpu\":{}", *report.gpu);
  if (o_.job) line += ",\"job\":" + JsonString(*o_.job);
  for (const auto& [phase, d] : report.phases) {
    line += fmt::format(",\"phase_{}_s\":{}", phase, JsonNumber(static_cast<double>(d) / 1e9));
  }
  line += '}';
  std::lock_guard<std::mutex> lock(log_mu_);
  steps_log_->Append(line);
}

std::string Agent::Metrics() {
  uint64_t scrapes = scrapes_.fetch_add(1) + 1;
  std::string body;
  {
    std::lock_guard<std::mutex> lock(mu_);
    UpdateStalls(clock_.Now());
    if (rendered_version_ != version_) {
      std::vector<RankSteps> ranks;
      ranks.reserve(ranks_.size());
      for (const auto& [rank, r] : ranks_) ranks.push_back(r);
      MetricsInput in;
      in.host = o_.host;
      in.job = o_.job;
      in.version = o_.version;
      in.gpu_backend = backend_ ? std::string(backend_->kind()) : "none";
      in.gpus = &gpus_;
      in.links = &links_;
      in.host_cpu = &host_cpu_;
      in.ranks = &ranks;
      in.counters = &counters_;
      rendered_ = RenderMetrics(in);
      rendered_version_ = version_;
    }
    body = rendered_;
  }
  // Per-scrape values are added outside the cache.
  PromWriter w;
  w.Family("laggard_agent_scrapes_total", "counter", "Requests to /metrics, this one included.");
  Labels l = {{"host", o_.host}};
  if (o_.job) l.emplace_back("job", *o_.job);
  w.Sample("laggard_agent_scrapes_total", l, static_cast<double>(scrapes));
  body += w.text();
  return body;
}

void Agent::UpdateStalls(TimeNs now) {
  std::vector<RankProgress> progress;
  progress.reserve(ranks_.size());
  std::vector<double> recent;
  for (const auto& [rank, r] : ranks_) {
    if (r.recent_ns.empty()) continue;
    RankProgress p;
    p.rank = static_cast<int32_t>(std::clamp<int64_t>(rank, 0, INT32_MAX));
    p.last_step = r.last_step;
    p.last_report_ns = r.last_report_ns;
    p.reports = r.reports;
    recent.assign(r.recent_ns.begin(), r.recent_ns.end());
    p.typical_ns = static_cast<DurationNs>(Median(recent).value_or(0));
    progress.push_back(p);
  }
  StallAnalysis stall = FindStalls(progress, now);
  for (auto& [rank, r] : ranks_) {
    bool stalled = std::any_of(stall.stalled.begin(), stall.stalled.end(),
                               [&](const StalledRank& s) { return s.rank == rank; });
    if (stalled == r.stalled) continue;
    r.stalled = stalled;
    ++version_;
  }
}

net::HttpResponse Agent::Health() {
  TimeNs now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  size_t lost = 0;
  for (const GpuSnapshot& g : gpus_) lost += g.lost ? 1 : 0;
  // Stalled: no round for three intervals plus 5 s of grace (a hung NVML
  // call, a stuck sysfs read).
  DurationNs limit = 3 * o_.interval_ns + 5'000'000'000;
  TimeNs last = counters_.samples > 0 ? counters_.last_sample_ns : started_ns_;
  bool stalled = now - last > limit;
  net::HttpResponse r;
  r.status = stalled ? 503 : 200;
  r.content_type = "application/json";
  r.body = fmt::format(
      "{{\"status\":{},\"host\":{},\"gpu_backend\":{},\"gpu_backend_note\":{},\"gpus\":{},"
      "\"gpus_lost\":{},\"samples\":{},\"last_sample_age_s\":{},\"ranks\":{}}}\n",
      JsonString(stalled ? "stalled" : "ok"), JsonString(o_.host),
      JsonString(backend_ ? backend_->kind() : "none"), JsonString(backend_note_), gpus_.size(),
      lost, counters_.samples,
      counters_.samples > 0 ? JsonNumber(static_cast<double>(now - last) / 1e9) : "null",
      ranks_.size());
  return r;
}

}  // namespace laggard::agent
