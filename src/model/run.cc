#include "model/run.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>

namespace laggard {

uint64_t Run::total_steps() const {
  uint64_t n = 0;
  for (const StepSeries& s : ranks) n += s.steps.size();
  for (const StepSeries& s : unattributed) n += s.steps.size();
  return n;
}

bool Run::NothingUsable() const {
  return total_steps() == 0 && traces.empty() && hardware.gpus.empty() && network.empty() &&
         op_timelines.empty() && hang.dumps.empty() && hang.events.empty() && hang.ras.empty() &&
         tool_reports.empty() && nvrx_reports.empty();
}

const StepRecord* StepSeries::FindStep(int64_t step) const {
  auto it = std::lower_bound(steps.begin(), steps.end(), step,
                             [](const StepRecord& r, int64_t s) { return r.step < s; });
  return it != steps.end() && it->step == step ? &*it : nullptr;
}

const StepSeries* Run::FindRank(int32_t rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank,
                             [](const StepSeries& s, int32_t r) { return s.info.rank < r; });
  return (it != ranks.end() && it->info.rank == rank) ? &*it : nullptr;
}

void RunBuilder::AddSeries(int32_t rank) {
  series_.emplace_back();
  series_.back().info.rank = rank;
  pending_count_.push_back(0);
  slot_[static_cast<size_t>(rank - slot_base_)] = static_cast<uint32_t>(series_.size());
}

// Ranks read in descending order must not shift the table once per rank:
// it grows down by at least its own size (down to rank 0).
void RunBuilder::GrowSlotsDown(int32_t rank) {
  if (slot_.empty()) {
    slot_base_ = rank;
    return;
  }
  int64_t base = std::min<int64_t>(rank, int64_t{slot_base_} - static_cast<int64_t>(slot_.size()));
  base = std::max<int64_t>(base, 0);
  slot_.insert(slot_.begin(), static_cast<size_t>(slot_base_ - base), 0);
  slot_base_ = static_cast<int32_t>(base);
}

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* RunBuilder::AllocateHugePageHinted(size_t bytes) {
  if (bytes < 2 * kHugePage) return ::operator new(bytes);
  size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
  ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return p;
}

void RunBuilder::FreeHugePageHinted(void* p, size_t bytes) {
  if (bytes < 2 * kHugePage) {
    ::operator delete(p);
  } else {
    std::free(p);
  }
}

void RunBuilder::NewPendingBlock() {
  // Blocks double from 1,024 records (32 KiB) up to 1 Mi records (32 MiB,
  // mapped on their own by glibc as they are above its largest mmap
  // threshold, so each is returned to the system as soon as FlushSteps()
  // has scattered it).
  constexpr size_t kFirst = 1024, kMax = size_t{1} << 20;
  size_t next = pending_.capacity() == 0 ? kFirst : std::min(kMax, 2 * pending_.capacity());
  if (!pending_.empty()) pending_blocks_.push_back(std::move(pending_));
  pending_ = PendingBlock();
  pending_.reserve(next);
}

void RunBuilder::FlushSteps() {
  if (pending_.empty() && pending_blocks_.empty()) return;
  pending_blocks_.push_back(std::move(pending_));
  pending_ = PendingBlock();
  for (size_t i = 0; i < series_.size(); ++i) {
    if (pending_count_[i] > 0) {
      series_[i].steps.reserve(series_[i].steps.size() + pending_count_[i]);
      pending_count_[i] = 0;
    }
  }
  size_t next_start = 0, next_compute = 0;
  for (PendingBlock& block : pending_blocks_) {
    for (const PendingStep& p : block) {
      // Fields are stored in place: a StepRecord built on the stack and
      // copied would be written with its optional as 8 + 1 bytes and read
      // back as 16, a store-forwarding stall per record (g++ 12).
      StepRecord& r = series_[p.series].steps.emplace_back();
      r.step = p.step;
      r.duration_ns = p.duration_ns;
      r.src = SourceRef{p.file, p.line};
      if (p.flags & kHasStart) [[unlikely]]
        r.start_ns = pending_starts_[next_start++];
      if (p.flags & kHasCompute) [[unlikely]]
        r.compute_ns = pending_computes_[next_compute++];
    }
    PendingBlock().swap(block);
  }
  pending_blocks_.clear();
  std::vector<TimeNs>().swap(pending_starts_);
  std::vector<DurationNs>().swap(pending_computes_);
}

void RunBuilder::AddUnattributedStep(uint32_t file, int64_t step, DurationNs duration,
                                     std::optional<TimeNs> start, SourceRef src,
                                     DurationNs compute) {
  if (unattributed_.empty() || unattributed_.back().file != file) {
    auto it = std::find_if(unattributed_.begin(), unattributed_.end(),
                           [&](const StepSeries& s) { return s.file == file; });
    if (it == unattributed_.end()) {
      unattributed_.emplace_back();
      unattributed_.back().file = file;
      unattributed_.back().info.rank = -1;
    } else {
      std::rotate(it, it + 1, unattributed_.end());  // keep the active one last
    }
  }
  unattributed_.back().steps.push_back(StepRecord{step, duration, start, src, compute});
}

void RunBuilder::SetHost(int32_t rank, std::string_view host, std::string_view file,
                         uint64_t line) {
  StepSeries& s = SeriesFor(rank);
  if (!s.info.host) {
    s.info.host = std::string(host);
  } else if (*s.info.host != host) {
    diagnostics_.Add(DiagCode::kRankConflictingInfo, file, line,
                     fmt::format("rank {} given host '{}' after '{}'", rank, host, *s.info.host));
  }
}

void RunBuilder::SetLocalGpu(int32_t rank, int32_t gpu, std::string_view file, uint64_t line) {
  StepSeries& s = SeriesFor(rank);
  if (!s.info.local_gpu) {
    s.info.local_gpu = gpu;
  } else if (*s.info.local_gpu != gpu) {
    diagnostics_.Add(DiagCode::kRankConflictingInfo, file, line,
                     fmt::format("rank {} given GPU {} after {}", rank, gpu, *s.info.local_gpu));
  }
}

void RunBuilder::SetRole(int32_t rank, std::optional<int32_t> pipeline_stage,
                         std::optional<int32_t> data_parallel_index) {
  StepSeries& s = SeriesFor(rank);
  if (pipeline_stage && !s.info.pipeline_stage) s.info.pipeline_stage = pipeline_stage;
  if (data_parallel_index && !s.info.data_parallel_index)
    s.info.data_parallel_index = data_parallel_index;
}

void RunBuilder::SetHostWhereUnknown(const std::string& host) {
  for (StepSeries& s : series_) {
    if (!s.info.host) s.info.host = host;
  }
  for (RankTrace& t : traces_) {
    if (!t.host) t.host = host;
  }
}

void RunBuilder::MergeFrom(RunBuilder&& other) {
  FlushSteps();
  other.FlushSteps();
  for (StepSeries& src : other.series_) {
    int32_t rank = src.info.rank;
    if (!present(rank)) {
      SeriesFor(rank) = std::move(src);
      continue;
    }
    StepSeries& dst = SeriesFor(rank);
    if (src.info.host) {
      if (!dst.info.host) dst.info.host = src.info.host;
      else if (*dst.info.host != *src.info.host)
        diagnostics_.Add(DiagCode::kRankConflictingInfo, "", 0,
                         fmt::format("rank {} given host '{}' and '{}' in different files", rank,
                                     *dst.info.host, *src.info.host));
    }
    if (src.info.local_gpu) {
      if (!dst.info.local_gpu) dst.info.local_gpu = src.info.local_gpu;
      else if (*dst.info.local_gpu != *src.info.local_gpu)
        diagnostics_.Add(DiagCode::kRankConflictingInfo, "", 0,
                         fmt::format("rank {} given GPU {} and {} in different files", rank,
                                     *dst.info.local_gpu, *src.info.local_gpu));
    }
    if (!dst.info.pipeline_stage) dst.info.pipeline_stage = src.info.pipeline_stage;
    if (!dst.info.data_parallel_index) dst.info.data_parallel_index = src.info.data_parallel_index;
    dst.steps.insert(dst.steps.end(), src.steps.begin(), src.steps.end());
    std::vector<StepRecord>().swap(src.steps);
    dst.cpu.insert(dst.cpu.end(), src.cpu.begin(), src.cpu.end());
  }
  for (StepSeries& s : other.unattributed_) unattributed_.push_back(std::move(s));
  // Traces: re-map the other builder's name ids into ours.
  std::vector<uint32_t> remap(other.names_.size());
  for (uint32_t i = 0; i < remap.size(); ++i) remap[i] = names_.Intern(other.names_.Get(i));
  for (RankTrace& t : other.traces_) {
    for (TraceOp& op : t.ops) op.name = remap[op.name];
    for (CollectiveCall& c : t.collectives) {
      c.kernel = remap[c.kernel];
      c.collective = remap[c.collective];
      if (c.group) c.group = remap[*c.group];
    }
    traces_.push_back(std::move(t));
  }
  for (OpTimeline& t : other.op_timelines_) op_timelines_.push_back(std::move(t));
  for (const LayoutStatement& l : other.layouts_) layouts_.push_back(l);
  for (ToolReport& r : other.tool_reports_) tool_reports_.push_back(std::move(r));
  for (NvrxReport& r : other.nvrx_reports_) nvrx_reports_.push_back(std::move(r));
  for (GpuRecord& g : other.gpus_) gpus_.push_back(std::move(g));
  for (HostCpuLog& h : other.host_cpu_) host_cpu_.push_back(std::move(h));
  auto append = [](auto& dst, auto& src) {
    for (auto& x : src) dst.push_back(std::move(x));
  };
  append(network_.ib_ports, other.network_.ib_ports);
  append(network_.eth_links, other.network_.eth_links);
  append(network_.nccl_tests, other.network_.nccl_tests);
  append(network_.nccl_ranks, other.network_.nccl_ranks);
  append(network_.topologies, other.network_.topologies);
  append(network_.port_counters, other.network_.port_counters);
  append(network_.p2p_tests, other.network_.p2p_tests);
  append(network_.pair_bandwidths, other.network_.pair_bandwidths);
  for (auto& [host, sw] : other.network_.switch_of) {
    if (network_.switch_of.emplace(host, sw).second) {
      network_.switch_src[host] = other.network_.switch_src[host];
    }
  }
  append(hang_.groups, other.hang_.groups);
  append(hang_.dumps, other.hang_.dumps);
  append(hang_.events, other.hang_.events);
  append(hang_.logs, other.hang_.logs);
  append(hang_.ras, other.hang_.ras);
  diagnostics_.MergeFrom(other.diagnostics_);
  other = RunBuilder();
}

namespace {

// A step given again by another file (the article's log lines and a step CSV
// written by the same loop) is a copy, not bad data: counted once per pair of
// files as step.repeated_by_another_file, with how far the two files'
// durations are apart. A step repeated within one file is step.duplicate.
struct RepeatedFiles {
  uint64_t steps = 0;
  uint32_t first_line = 0;  // of the repeating file
  double max_rel_diff = 0;  // |d2 - d1| / d1 over the repeated steps
};

// Two files' records of one step are copies when their durations agree
// within printing precision: the article's "%.4fs" rounds to 0.05 ms, and a
// second timer around the same loop differs by well under 2%.
constexpr double kSameStepRelTolerance = 0.02;
constexpr DurationNs kSameStepAbsToleranceNs = 500'000;

// The CPU records of a series, by step: the first of a step stays (a second
// file of the same loop repeats it), and a step the series lacks is dropped.
void SortAndDedupCpu(StepSeries& series) {
  auto& cpu = series.cpu;
  if (cpu.empty()) return;
  std::stable_sort(cpu.begin(), cpu.end(),
                   [](const StepCpu& a, const StepCpu& b) { return a.step < b.step; });
  size_t out = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (out > 0 && cpu[out - 1].step == cpu[i].step) {
      if (!cpu[out - 1].on_cpu_ns) cpu[out - 1].on_cpu_ns = cpu[i].on_cpu_ns;
      if (!cpu[out - 1].runq_wait_ns) cpu[out - 1].runq_wait_ns = cpu[i].runq_wait_ns;
      if (!cpu[out - 1].probe_ns) cpu[out - 1].probe_ns = cpu[i].probe_ns;
      continue;
    }
    if (series.FindStep(cpu[i].step) != nullptr) cpu[out++] = cpu[i];
  }
  cpu.resize(out);
  cpu.shrink_to_fit();
}

// Sorts by step (stable: the first record of a step stays first) and drops
// later repeats of a step.
void SortAndDedup(StepSeries& series, const Run& run, Diagnostics& diag) {
  auto& steps = series.steps;
  // Usually the steps are already strictly increasing: one read pass, no writes.
  auto not_increasing = [](const StepRecord& a, const StepRecord& b) { return a.step >= b.step; };
  if (std::adjacent_find(steps.begin(), steps.end(), not_increasing) == steps.end()) {
    if (steps.capacity() > steps.size() + steps.size() / 4) steps.shrink_to_fit();
    return;
  }
  auto by_step = [](const StepRecord& a, const StepRecord& b) { return a.step < b.step; };
  if (!std::is_sorted(steps.begin(), steps.end(), by_step)) {
    std::stable_sort(steps.begin(), steps.end(), by_step);
  }
  auto path = [&](uint32_t file) -> const std::string& {
    static const std::string kNone;
    return file < run.files.size() ? run.files[file].path : kNone;
  };
  std::string who = series.info.rank >= 0 ? fmt::format("rank {}", series.info.rank)
                                          : std::string("job-level series");
  std::map<std::pair<uint32_t, uint32_t>, RepeatedFiles> repeated;  // (first, repeating)
  size_t out = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (out > 0 && steps[out - 1].step == steps[i].step) {
      const StepRecord& kept = steps[out - 1];
      const StepRecord& dup = steps[i];
      DurationNs diff_ns = std::abs(dup.duration_ns - kept.duration_ns);
      double rel = kept.duration_ns > 0
                       ? static_cast<double>(diff_ns) / static_cast<double>(kept.duration_ns)
                       : 1.0;
      if (dup.src.file != kept.src.file &&
          (rel <= kSameStepRelTolerance || diff_ns <= kSameStepAbsToleranceNs)) {
        // The article's lines carry no compute time; a CSV of the same loop may.
        if (kept.compute_ns == 0) steps[out - 1].compute_ns = dup.compute_ns;
        RepeatedFiles& r = repeated[{kept.src.file, dup.src.file}];
        if (r.steps++ == 0) r.first_line = dup.src.line;
        r.max_rel_diff = std::max(r.max_rel_diff, rel);
        continue;
      }
      std::string where = dup.src.file == kept.src.file
                              ? fmt::format("first at line {}", kept.src.line)
                              : fmt::format("first at {}:{}", path(kept.src.file), kept.src.line);
      diag.Add(DiagCode::kStepDuplicate, path(dup.src.file), dup.src.line,
               fmt::format("{} step {} repeated ({})", who, dup.step, where));
      continue;
    }
    steps[out++] = steps[i];
  }
  steps.resize(out);
  if (steps.capacity() > steps.size() + steps.size() / 4) steps.shrink_to_fit();
  for (const auto& [files, r] : repeated) {
    diag.Add(DiagCode::kStepRepeatedByAnotherFile, path(files.second), r.first_line,
             fmt::format("{}: {} steps also given by {}; durations differ by at most {:.1f}%, "
                         "the first file's were kept",
                         who, r.steps, path(files.first), 100.0 * r.max_rel_diff));
  }
}

// Fills the unknown facts of `dst` from `src`; returns the names of facts on
// which they disagree.
std::vector<std::string_view> MergeFacts(GpuFacts& dst, const GpuFacts& src) {
  std::vector<std::string_view> conflicts;
  auto fill = [&](auto& d, const auto& s, std::string_view name) {
    if (!s) return;
    if (!d) d = s;
    else if (*d != *s) conflicts.push_back(name);
  };
  fill(dst.name, src.name, "name");
  fill(dst.serial, src.serial, "serial");
  fill(dst.driver_version, src.driver_version, "driver version");
  fill(dst.max_sm_clock_mhz, src.max_sm_clock_mhz, "max SM clock");
  fill(dst.max_mem_clock_mhz, src.max_mem_clock_mhz, "max memory clock");
  fill(dst.app_sm_clock_mhz, src.app_sm_clock_mhz, "applications SM clock");
  fill(dst.default_power_limit_w, src.default_power_limit_w, "default power limit");
  // The enforced power limit can be set at run time (`nvidia-smi -pl`):
  // inputs taken at other times may differ without disagreeing. MergeGpus()
  // gives the record the last sampled value.
  if (!dst.enforced_power_limit_w) dst.enforced_power_limit_w = src.enforced_power_limit_w;
  fill(dst.min_power_limit_w, src.min_power_limit_w, "min power limit");
  fill(dst.max_power_limit_w, src.max_power_limit_w, "max power limit");
  fill(dst.slowdown_temp_c, src.slowdown_temp_c, "slowdown temperature");
  fill(dst.shutdown_temp_c, src.shutdown_temp_c, "shutdown temperature");
  fill(dst.max_operating_temp_c, src.max_operating_temp_c, "max operating temperature");
  // Current link state changes with load: the first value is kept quietly.
  if (!dst.pcie_gen_current) dst.pcie_gen_current = src.pcie_gen_current;
  if (!dst.pcie_width_current) dst.pcie_width_current = src.pcie_width_current;
  fill(dst.pcie_gen_max, src.pcie_gen_max, "max PCIe generation");
  fill(dst.pcie_gen_host_max, src.pcie_gen_host_max, "host max PCIe generation");
  fill(dst.pcie_width_max, src.pcie_width_max, "max PCIe width");
  fill(dst.nvlink_up, src.nvlink_up, "active NVLinks");
  fill(dst.nvlink_total, src.nvlink_total, "NVLinks");
  fill(dst.nvlink_speed_gb_s, src.nvlink_speed_gb_s, "NVLink speed");
  auto take_max = [](auto& d, const auto& s) {
    if (s && (!d || *s > *d)) d = s;
  };
  take_max(dst.ecc_uncorrected_volatile, src.ecc_uncorrected_volatile);
  take_max(dst.ecc_uncorrected_aggregate, src.ecc_uncorrected_aggregate);
  take_max(dst.retired_pages_dbe, src.retired_pages_dbe);
  take_max(dst.remapped_rows_uncorrectable, src.remapped_rows_uncorrectable);
  if (src.retired_pages_pending && !dst.retired_pages_pending.value_or(false))
    dst.retired_pages_pending = src.retired_pages_pending;
  if (src.remapping_failure && !dst.remapping_failure.value_or(false))
    dst.remapping_failure = src.remapping_failure;
  if (src.remapped_rows_pending && !dst.remapped_rows_pending.value_or(false))
    dst.remapped_rows_pending = src.remapped_rows_pending;
  if (src.diag_failed && !dst.diag_failed.value_or(false)) dst.diag_failed = src.diag_failed;
  dst.xids.insert(dst.xids.end(), src.xids.begin(), src.xids.end());
  dst.diag_messages.insert(dst.diag_messages.end(), src.diag_messages.begin(),
                           src.diag_messages.end());
  if (!dst.src) dst.src = src.src;
  if (src.lost_at_ns && (!dst.lost_at_ns || *src.lost_at_ns < *dst.lost_at_ns)) {
    dst.lost_at_ns = src.lost_at_ns;
  }
  return conflicts;
}

// One record per (host, index, MIG instance): facts merged, samples sorted
// by time. Samples of the two time bases are never mixed: when a GPU has
// both absolute and approximate samples, the approximate ones stay in a
// second record that carries the same facts. Facts-only records (nvlink,
// dcgmi diag) join whichever record there is.
void MergeGpus(std::vector<GpuRecord>& gpus, const Run& run, Diagnostics& diag) {
  // GPUs of unknown host are the same GPU only within one file: GPU 0 of
  // two anonymous nvidia-smi dumps may be two machines.
  auto key = [](const GpuRecord& g) {
    std::string host =
        g.host ? "h:" + *g.host : "f:" + std::to_string(g.files.empty() ? 0 : g.files.front());
    return std::make_tuple(host, g.index, g.mig_instance.value_or(""));
  };
  std::stable_sort(gpus.begin(), gpus.end(),
                   [&](const GpuRecord& a, const GpuRecord& b) { return key(a) < key(b); });
  auto absorb = [&](GpuRecord& dst, GpuRecord& g) {
    for (std::string_view what : MergeFacts(dst.facts, g.facts)) {
      uint32_t file = g.files.empty() ? 0 : g.files.front();
      diag.Add(DiagCode::kHwConflictingFacts, file < run.files.size() ? run.files[file].path : "",
               0,
               fmt::format("GPU {} of host '{}': {} differs between inputs", g.index,
                           g.host.value_or("?"), what));
    }
    if (!dst.uuid) dst.uuid = g.uuid;
    if (!dst.bus_id) dst.bus_id = g.bus_id;
    dst.samples.insert(dst.samples.end(), g.samples.begin(), g.samples.end());
    for (uint32_t f : g.files) {
      if (std::find(dst.files.begin(), dst.files.end(), f) == dst.files.end())
        dst.files.push_back(f);
    }
  };
  std::vector<GpuRecord> out;
  for (size_t i = 0; i < gpus.size();) {
    size_t j = i;
    while (j < gpus.size() && key(gpus[j]) == key(gpus[i])) ++j;
    // The primary record: absolute samples if any record has them.
    std::optional<GpuRecord> absolute, approximate;
    std::vector<GpuRecord*> facts_only;
    for (size_t k = i; k < j; ++k) {
      GpuRecord& g = gpus[k];
      if (g.samples.empty()) {
        facts_only.push_back(&g);
        continue;
      }
      std::optional<GpuRecord>& slot = g.time_is_approximate ? approximate : absolute;
      if (!slot) {
        GpuRecord fresh = g;
        fresh.samples.clear();
        fresh.files.clear();
        fresh.facts = GpuFacts();
        slot = std::move(fresh);
      }
      absorb(*slot, g);
    }
    GpuRecord* primary = absolute ? &*absolute : approximate ? &*approximate : nullptr;
    if (primary == nullptr) {
      GpuRecord fresh = *facts_only.front();
      fresh.facts = GpuFacts();
      fresh.files.clear();
      fresh.time_is_approximate = false;
      out.push_back(std::move(fresh));
      primary = &out.back();
    }
    for (GpuRecord* g : facts_only) absorb(*primary, *g);
    if (absolute && approximate) {
      // Both: the approximate record gets the same facts without counting
      // conflicts twice.
      GpuFacts facts = absolute->facts;
      MergeFacts(facts, approximate->facts);
      absolute->facts = facts;
      approximate->facts = facts;
    }
    if (absolute) out.push_back(std::move(*absolute));
    if (approximate) out.push_back(std::move(*approximate));
    i = j;
  }
  for (GpuRecord& g : out) {
    std::stable_sort(g.samples.begin(), g.samples.end(),
                     [](const GpuSample& a, const GpuSample& b) { return a.time_ns < b.time_ns; });
    // The limit in force now: the latest sample's (a change during the run
    // is read from the samples, hardware_detector.h).
    for (auto s = g.samples.rbegin(); s != g.samples.rend(); ++s) {
      if (s->power_limit_w) {
        g.facts.enforced_power_limit_w = s->power_limit_w;
        break;
      }
    }
  }
  gpus = std::move(out);
}

// `ethtool -S IFACE` read from another file than `ethtool IFACE` of the same
// interface: the statistics-only record joins the settings record of the
// same host (or, without a host, the same directory) and interface that has
// no counters yet. Records are otherwise kept as read.
void MergeEthCounters(std::vector<EthLink>& links, const Run& run) {
  auto scope = [&](const EthLink& e) {
    if (e.host) return "host:" + *e.host;
    std::string path = e.src.file < run.files.size() ? run.files[e.src.file].path : "";
    return "dir:" + std::filesystem::path(path).parent_path().string();
  };
  auto counters_only = [](const EthLink& e) {
    return !e.speed_mbps && !e.duplex && !e.link_detected && !e.port && !e.auto_negotiation &&
           e.supported_link_modes.empty() && e.advertised_link_modes.empty();
  };
  std::map<std::pair<std::string, std::string>, size_t> settings;
  for (size_t i = 0; i < links.size(); ++i) {
    if (!counters_only(links[i]) && links[i].counters.empty()) {
      settings.emplace(std::make_pair(scope(links[i]), links[i].iface), i);
    }
  }
  if (settings.empty()) return;
  std::vector<bool> merged(links.size(), false);
  for (size_t i = 0; i < links.size(); ++i) {
    EthLink& e = links[i];
    if (e.iface.empty() || e.counters.empty() || !counters_only(e)) continue;
    auto it = settings.find(std::make_pair(scope(e), e.iface));
    if (it == settings.end() || !links[it->second].counters.empty()) continue;
    links[it->second].counters = std::move(e.counters);
    merged[i] = true;
  }
  size_t out = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    if (merged[i]) continue;
    if (out != i) links[out] = std::move(links[i]);
    ++out;
  }
  links.resize(out);
}

}  // namespace

std::optional<StepTimeSpan> StepTimesOf(const Run& run) {
  std::optional<StepTimeSpan> span;
  for (const StepSeries& s : run.ranks) {
    for (const StepRecord& st : s.steps) {
      if (!st.start_ns) continue;
      if (!span) span = StepTimeSpan{*st.start_ns, *st.start_ns + st.duration_ns};
      span->first = std::min(span->first, *st.start_ns);
      span->end = std::max(span->end, *st.start_ns + st.duration_ns);
    }
  }
  return span;
}

namespace {

// A rank whose step records name no host is on the host whose agent tied a
// process to it (its step reports' pid) within the job's span, when exactly
// one host did; said as rank.host_from_agent. Without step times to bound
// the job, only where the logs tie one pid to the rank (an agent that ran
// through several jobs tied their ranks too, with other pids). Not a rank
// whose trace names its host (that name, spelled its own way, stays).
void HostsFromAgent(Run& run, Diagnostics& diagnostics) {
  if (run.hardware.host_cpu.empty()) return;
  const std::optional<StepTimeSpan> span = StepTimesOf(run);
  struct Seen {
    std::map<std::string, const HostProcReading*> hosts;  // host -> its first record
    std::set<int64_t> pids;
  };
  std::map<int32_t, Seen> seen;  // by rank
  for (const HostCpuLog& log : run.hardware.host_cpu) {
    if (log.host.empty()) continue;
    for (const HostProcReading& p : log.procs) {
      if (!p.rank || !InJobSpan(span, p.time_ns)) continue;
      Seen& s = seen[*p.rank];
      s.hosts.try_emplace(log.host, &p);
      s.pids.insert(p.pid);
    }
  }
  if (seen.empty()) return;
  std::set<int32_t> traced;  // ranks whose trace names a host
  for (const RankTrace& t : run.traces) {
    if (t.rank && t.host) traced.insert(*t.rank);
  }
  for (StepSeries& s : run.ranks) {
    auto it = seen.find(s.info.rank);
    if (s.info.host || it == seen.end() || it->second.hosts.size() != 1 ||
        (!span && it->second.pids.size() != 1) || traced.count(s.info.rank))
      continue;
    const auto& [host, p] = *it->second.hosts.begin();
    s.info.host = host;
    diagnostics.Add(DiagCode::kRankHostFromAgent,
                    p->src.file < run.files.size() ? run.files[p->src.file].path : "", p->src.line,
                    fmt::format("rank {}: its step records name no host; the agent on {} saw its "
                                "process (pid {}, {})",
                                s.info.rank, host, p->pid, p->comm));
  }
}

}  // namespace

void RunBuilder::Finalize(Run& run) {
  FlushSteps();
  run.ranks.clear();
  for (StepSeries& series : series_) {
    if (!series.steps.empty()) run.ranks.push_back(std::move(series));
  }
  std::sort(run.ranks.begin(), run.ranks.end(),
            [](const StepSeries& x, const StepSeries& y) { return x.info.rank < y.info.rank; });
  series_.clear();
  slot_.clear();
  slot_base_ = INT32_MAX;
  pending_count_.clear();
  for (StepSeries& s : run.ranks) {
    SortAndDedup(s, run, diagnostics_);
    SortAndDedupCpu(s);
  }
  run.unattributed = std::move(unattributed_);
  run.traces = std::move(traces_);
  run.op_timelines = std::move(op_timelines_);
  run.layouts = std::move(layouts_);
  run.tool_reports = std::move(tool_reports_);
  run.nvrx_reports = std::move(nvrx_reports_);
  run.names = std::move(names_);
  MergeGpus(gpus_, run, diagnostics_);
  run.hardware.gpus = std::move(gpus_);
  run.hardware.host_cpu = std::move(host_cpu_);
  MergeEthCounters(network_.eth_links, run);
  run.network = std::move(network_);
  run.hang = std::move(hang_);
  for (StepSeries& s : run.unattributed) SortAndDedup(s, run, diagnostics_);
  HostsFromAgent(run, diagnostics_);

  // Traces of one job: the same rank twice, or several world sizes.
  {
    std::map<std::pair<int32_t, int32_t>, uint32_t> seen;  // (world size, rank) -> file
    std::map<int32_t, size_t> world_sizes;
    for (const RankTrace& t : run.traces) {
      if (t.world_size) ++world_sizes[*t.world_size];
      if (!t.rank) continue;
      auto [it, fresh] = seen.emplace(std::make_pair(t.world_size.value_or(-1), *t.rank), t.file);
      if (!fresh) {
        diagnostics_.Add(DiagCode::kTraceDuplicateRank, run.files[t.file].path, 0,
                         fmt::format("rank {} already traced in {}; this trace is not matched",
                                     *t.rank, run.files[it->second].path));
      }
    }
    if (world_sizes.size() > 1) {
      std::string list;
      for (auto [w, n] : world_sizes)
        list += fmt::format("{}{} trace{} of world size {}", list.empty() ? "" : ", ", n,
                            n == 1 ? "" : "s", w);
      diagnostics_.Add(DiagCode::kTraceMixedJobs, "", 0,
                       list + "; ranks are matched only within the job with the most traces");
    }
  }

  // Gaps in the rank numbering.
  if (!run.ranks.empty()) {
    int32_t max_rank = run.ranks.back().info.rank;
    uint64_t missing = static_cast<uint64_t>(max_rank) + 1 - run.ranks.size();
    if (missing > 0) {
      std::string list;
      int listed = 0;
      int32_t expect = 0;
      for (const StepSeries& s : run.ranks) {
        for (; expect < s.info.rank && listed < 10; ++expect, ++listed) {
          list += (list.empty() ? "" : ", ") + std::to_string(expect);
        }
        expect = s.info.rank + 1;
      }
      if (missing > static_cast<uint64_t>(listed)) list += ", ...";
      diagnostics_.Add(
          DiagCode::kRankMissing, "", 0,
          fmt::format("{} of ranks 0..{} have no step records: {}", missing, max_rank, list),
          missing);
    }
    // Uneven step counts: compare with the most common count.
    std::map<size_t, size_t> count_freq;
    for (const StepSeries& s : run.ranks) ++count_freq[s.steps.size()];
    size_t mode = 0, mode_freq = 0;
    for (auto [count, freq] : count_freq) {
      if (freq > mode_freq) mode = count, mode_freq = freq;
    }
    for (const StepSeries& s : run.ranks) {
      if (s.steps.size() == mode) continue;
      diagnostics_.Add(DiagCode::kRankStepCountMismatch, "", 0,
                       fmt::format("rank {} has {} steps, most ranks have {}", s.info.rank,
                                   s.steps.size(), mode));
    }
  }
  run.diagnostics.MergeFrom(diagnostics_);
  diagnostics_ = Diagnostics();
}

}  // namespace laggard
