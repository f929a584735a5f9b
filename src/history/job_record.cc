#include "history/job_record.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "model/job_span.h"

namespace laggard::history {
namespace {

class Parts {
 public:
  PartRecord& Gpu(const GpuRecord& g) {
    PartRecord p;
    p.kind = PartKind::kGpu;
    p.host = g.host;
    p.gpu = g.index;
    p.uuid = g.uuid;
    p.serial = g.facts.serial;
    if (g.uuid) {
      p.key = "gpu:" + *g.uuid;
      p.identity = Identity::kHardware;
    } else if (g.facts.serial) {
      p.key = "gpu:serial:" + *g.facts.serial;
      p.identity = Identity::kHardware;
    } else {
      p.key = fmt::format("gpu@{}/{}", g.host.value_or("?"), g.index);
    }
    PartRecord& added = Add(std::move(p));
    if (g.host) gpu_at_.try_emplace({*g.host, g.index}, &added);
    return added;
  }
  // The GPU at a place: the one described there, else one known by place
  // only (a rank's, without GPU metrics).
  PartRecord& GpuAt(const std::string& host, int32_t gpu) {
    auto [it, added] = gpu_at_.try_emplace({host, gpu}, nullptr);
    if (!added) return *it->second;
    PartRecord& p =
        Add(Of(PartKind::kGpu, Identity::kLocation, fmt::format("gpu@{}/{}", host, gpu)));
    p.host = host;
    p.gpu = gpu;
    it->second = &p;
    return p;
  }
  // A host is the node, as the scheduler names it.
  PartRecord& Host(const std::string& host) {
    PartRecord& p = Add(Of(PartKind::kHost, Identity::kHardware, "host:" + host));
    p.host = host;
    return p;
  }
  PartRecord& Nic(const std::string& host, const std::string& nic) {
    PartRecord& p =
        Add(Of(PartKind::kNic, Identity::kLocation, fmt::format("nic:{}/{}", host, nic)));
    p.host = host;
    p.nic = nic;
    return p;
  }
  PartRecord& Switch(const std::string& name) {
    PartRecord& p = Add(Of(PartKind::kSwitch, Identity::kLocation, "switch:" + name));
    p.switch_name = name;
    return p;
  }
  PartRecord& Rank(int32_t rank) {
    PartRecord& p = Add(Of(PartKind::kRank, Identity::kRank, fmt::format("rank:{}", rank)));
    p.rank = rank;
    return p;
  }

  PartRecord* Find(const std::string& key) {
    auto it = parts_.find(key);
    return it == parts_.end() ? nullptr : &it->second;
  }
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (auto& [key, p] : parts_) fn(p);
  }

  std::vector<PartRecord> Take() {
    std::vector<PartRecord> out;
    out.reserve(parts_.size());
    for (auto& [key, p] : parts_) out.push_back(std::move(p));
    return out;
  }

 private:
  static PartRecord Of(PartKind kind, Identity identity, std::string key) {
    PartRecord p;
    p.kind = kind;
    p.identity = identity;
    p.key = std::move(key);
    return p;
  }
  // The part already there under the same key wins (the first description).
  PartRecord& Add(PartRecord p) {
    auto [it, added] = parts_.try_emplace(p.key, std::move(p));
    return it->second;
  }

  std::map<std::string, PartRecord> parts_;  // by key
  // (host, GPU index) -> its part in parts_ (map nodes do not move): a
  // job of 16k ranks places each rank's GPU without a scan.
  std::map<std::pair<std::string, int32_t>, PartRecord*> gpu_at_;
};

bool Matches(const Entity& f, const Entity& c) {
  if (c.rank && f.rank == c.rank) return true;
  if (c.host && f.host == c.host) {
    if (c.gpu) return f.gpu == c.gpu || !f.gpu;
    if (c.nic) return f.nic == c.nic || !f.nic;
    return true;
  }
  return c.switch_name && f.switch_name == c.switch_name;
}

void MarkCulprit(PartRecord& p, const Culprit& c, std::span<const Finding* const> findings,
                 std::optional<int32_t> rank = std::nullopt) {
  if (p.culprit && p.confidence && *p.confidence >= c.confidence) return;
  p.culprit = true;
  if (rank) p.rank = rank;
  p.cause_class = std::string(CauseClassName(c.cause_class));
  p.cause = c.cause;
  p.confidence = c.confidence;
  p.slowdown = c.slowdown;
  std::set<std::string> codes;
  for (const Finding* f : findings) {
    if (Matches(f->entity, c.entity)) codes.insert(std::string(Describe(f->code).name));
  }
  p.evidence_codes.assign(codes.begin(), codes.end());
}

// The host a rank ran on, when an input says: its GPU's, its step log's,
// its trace's.
std::optional<std::string> HostOfRank(const Run& run, const RankMap& ranks, int32_t rank) {
  if (auto at = ranks.GpuOf(rank)) return at->first;
  if (const StepSeries* s = run.FindRank(rank); s != nullptr && s->info.host) return s->info.host;
  for (const RankTrace& t : run.traces) {
    if (t.rank == rank && t.host) return t.host;
  }
  return std::nullopt;
}

// Marks the part a rank culprit ran on: its GPU when placed, else its host
// (the rank recorded with it), else the bare rank.
void MarkRank(Parts& parts, const Run& run, const RankMap& ranks, int32_t rank, const Culprit& c,
              std::span<const Finding* const> findings) {
  if (auto at = ranks.GpuOf(rank)) {
    const GpuRecord* g = run.hardware.Find(at->first, at->second);
    MarkCulprit(g != nullptr ? parts.Gpu(*g) : parts.GpuAt(at->first, at->second), c, findings,
                rank);
    return;
  }
  if (auto host = HostOfRank(run, ranks, rank)) {
    MarkCulprit(parts.Host(*host), c, findings, rank);
    return;
  }
  MarkCulprit(parts.Rank(rank), c, findings, rank);
}

// A NIC as the culprit names it, matched to the host's NIC of the same
// device when the names differ in form ("mlx5_1" and "mlx5_1 port 1").
PartRecord& NicPart(Parts& parts, const std::string& host, const std::string& nic) {
  if (PartRecord* same = parts.Find(fmt::format("nic:{}/{}", host, nic))) return *same;
  PartRecord* match = nullptr;
  int matches = 0;
  parts.ForEach([&](PartRecord& p) {
    if (p.kind != PartKind::kNic || p.host != host || !p.nic) return;
    const std::string& have = *p.nic;
    bool prefix = (have.size() > nic.size() && have.compare(0, nic.size(), nic) == 0 &&
                   have[nic.size()] == ' ') ||
                  (nic.size() > have.size() && nic.compare(0, have.size(), have) == 0 &&
                   nic[have.size()] == ' ');
    if (prefix) {
      match = &p;
      ++matches;
    }
  });
  return matches == 1 ? *match : parts.Nic(host, nic);
}

void MarkCulprits(Parts& parts, const Run& run, const RankMap& ranks, const Verdict& v,
                  std::span<const Finding* const> findings) {
  for (const Culprit& c : v.culprits) {
    const Entity& e = c.entity;
    // Interference from outside the job: the host's switch when known (a
    // shared switch), never the host alone.
    if (c.cause_class == CauseClass::kExternal) {
      std::optional<std::string> sw = e.switch_name;
      if (!sw && e.host) {
        auto it = run.network.switch_of.find(*e.host);
        if (it != run.network.switch_of.end()) sw = it->second;
      }
      if (sw) MarkCulprit(parts.Switch(*sw), c, findings);
      if (e.host) MarkCulprit(parts.Host(*e.host), c, findings);
      continue;
    }
    if (e.host && !e.gpu && !e.nic && !e.rank) {
      // A host, or a host's ranks late together (a group culprit).
      MarkCulprit(parts.Host(*e.host), c, findings);
      continue;
    }
    if (!c.ranks.empty()) {
      for (int32_t r : c.ranks) MarkRank(parts, run, ranks, r, c, findings);
      continue;
    }
    if (e.rank) {
      MarkRank(parts, run, ranks, *e.rank, c, findings);
    } else if (e.host && e.gpu) {
      const GpuRecord* g = run.hardware.Find(*e.host, *e.gpu);
      MarkCulprit(g != nullptr ? parts.Gpu(*g) : parts.GpuAt(*e.host, *e.gpu), c, findings);
    } else if (e.host && e.nic) {
      MarkCulprit(NicPart(parts, *e.host, *e.nic), c, findings);
    } else if (e.switch_name) {
      MarkCulprit(parts.Switch(*e.switch_name), c, findings);
    }
    // The job as a whole names no part.
  }
}

void Span(const Run& run, JobRecord& r) {
  WallSpan span = JobWallSpan(run);
  r.first_ns = span.first_ns;
  r.last_ns = span.last_ns;
}

// FNV-1a over what the job's inputs hold.
class Fingerprint {
 public:
  void Add(int64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void Add(std::string_view text) {
    Add(static_cast<int64_t>(text.size()));
    for (char ch : text) Byte(static_cast<uint8_t>(ch));
  }
  std::string Hex() const { return fmt::format("{:016x}", h_); }

 private:
  void Byte(uint8_t b) {
    h_ ^= b;
    h_ *= 0x100000001b3ULL;
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

std::string FingerprintOf(const Run& run) {
  Fingerprint f;
  f.Add(static_cast<int64_t>(run.ranks.size()));
  for (const StepSeries& s : run.ranks) {
    f.Add(s.info.rank);
    f.Add(static_cast<int64_t>(s.steps.size()));
    DurationNs total = 0;
    for (const StepRecord& st : s.steps) total += st.duration_ns;
    f.Add(total);
    if (!s.steps.empty()) {
      f.Add(s.steps.front().step);
      f.Add(s.steps.front().start_ns.value_or(0));
    }
  }
  f.Add(static_cast<int64_t>(run.traces.size()));
  for (const RankTrace& t : run.traces) {
    f.Add(t.rank.value_or(-1));
    f.Add(static_cast<int64_t>(t.ops.size()));
    f.Add(static_cast<int64_t>(t.collectives.size()));
    if (!t.ops.empty()) f.Add(t.ops.front().start_ns);
  }
  f.Add(static_cast<int64_t>(run.op_timelines.size()));
  for (const GpuRecord& g : run.hardware.gpus) {
    f.Add(g.host.value_or(""));
    f.Add(g.index);
    f.Add(static_cast<int64_t>(g.samples.size()));
    if (!g.samples.empty()) f.Add(g.samples.front().time_ns);
  }
  f.Add(static_cast<int64_t>(run.hang.dumps.size()));
  return f.Hex();
}

// The hosts the job ran on: its ranks' (step logs, traces, the rank map),
// and the hosts of GPU records that hold one of its ranks. A site-wide
// switch map or a GPU table of idle cards adds none.
std::set<std::string> JobHosts(const Run& run, const RankMap& ranks) {
  std::set<std::string> hosts;
  for (const StepSeries& s : run.ranks) {
    if (auto h = HostOfRank(run, ranks, s.info.rank)) hosts.insert(*h);
  }
  for (const RankTrace& t : run.traces) {
    if (t.host) hosts.insert(*t.host);
    if (t.rank) {
      if (auto at = ranks.GpuOf(*t.rank)) hosts.insert(at->first);
    }
  }
  return hosts;
}

}  // namespace

std::string_view PartKindName(PartKind k) {
  switch (k) {
    case PartKind::kGpu: return "gpu";
    case PartKind::kHost: return "host";
    case PartKind::kNic: return "nic";
    case PartKind::kSwitch: return "switch";
    case PartKind::kRank: return "rank";
  }
  return "rank";
}

std::optional<PartKind> ParsePartKind(std::string_view name) {
  for (PartKind k :
       {PartKind::kGpu, PartKind::kHost, PartKind::kNic, PartKind::kSwitch, PartKind::kRank}) {
    if (PartKindName(k) == name) return k;
  }
  return std::nullopt;
}

std::string_view IdentityName(Identity i) {
  switch (i) {
    case Identity::kHardware: return "hardware";
    case Identity::kLocation: return "location";
    case Identity::kRank: return "rank";
  }
  return "rank";
}

std::optional<Identity> ParseIdentity(std::string_view name) {
  for (Identity i : {Identity::kHardware, Identity::kLocation, Identity::kRank}) {
    if (IdentityName(i) == name) return i;
  }
  return std::nullopt;
}

JobRecord RecordOfJob(const Run& run, const RankMap& ranks, const Verdict& verdict,
                      std::span<const Finding* const> findings, std::string job_id,
                      int64_t recorded_at_s) {
  JobRecord r;
  r.job_id = std::move(job_id);
  r.fingerprint = FingerprintOf(run);
  r.recorded_at_s = recorded_at_s;
  r.status = std::string(VerdictStatusName(verdict.status));
  r.summary = verdict.summary;
  r.throughput_lost = verdict.throughput_lost;
  if (verdict.throughput_lost)
    r.impact_method = std::string(ImpactMethodName(verdict.impact_method));
  Span(run, r);

  Parts parts;
  std::set<std::string> hosts = JobHosts(run, ranks);
  // Its GPUs: those holding one of its ranks; all GPU records when none
  // does (GPU metrics alone, no ranks to tie).
  bool any_tied = std::any_of(
      run.hardware.gpus.begin(), run.hardware.gpus.end(),
      [&](const GpuRecord& g) { return g.host && ranks.RankOf(*g.host, g.index).has_value(); });
  for (const GpuRecord& g : run.hardware.gpus) {
    std::optional<int32_t> rank = g.host ? ranks.RankOf(*g.host, g.index) : std::nullopt;
    if (any_tied && !rank) continue;
    PartRecord& p = parts.Gpu(g);
    p.rank = rank;
    if (g.host) hosts.insert(*g.host);
  }
  for (const StepSeries& s : run.ranks) {
    int32_t rank = s.info.rank;
    if (auto at = ranks.GpuOf(rank)) {
      if (run.hardware.Find(at->first, at->second) == nullptr) {
        parts.GpuAt(at->first, at->second).rank = rank;
      }
    } else if (!HostOfRank(run, ranks, rank)) {
      parts.Rank(rank);
    }
  }
  // Network parts of its hosts only; with no host known, all of them.
  bool all_hosts = hosts.empty();
  auto in_job = [&](const std::optional<std::string>& h) {
    return h && (all_hosts || hosts.count(*h) > 0);
  };
  for (const IbPort& port : run.network.ib_ports) {
    if (in_job(port.host)) parts.Nic(*port.host, fmt::format("{} port {}", port.ca, port.port));
  }
  for (const EthLink& l : run.network.eth_links) {
    if (in_job(l.host)) parts.Nic(*l.host, l.iface);
  }
  std::set<std::string> nic_hosts;
  parts.ForEach([&](PartRecord& p) {
    if (p.kind == PartKind::kNic) nic_hosts.insert(*p.host);
  });
  hosts.insert(nic_hosts.begin(), nic_hosts.end());
  for (const std::string& h : hosts) {
    parts.Host(h);
    auto sw = run.network.switch_of.find(h);
    if (sw != run.network.switch_of.end()) parts.Switch(sw->second);
  }
  // Only a verdict that decides names culprits: a straggler, or who stopped
  // a hung job. Job-wide, communication-bound and inconclusive verdicts
  // blame no part (their parts are recorded, as undecided).
  if (verdict.status == VerdictStatus::kStraggler || verdict.status == VerdictStatus::kHang) {
    MarkCulprits(parts, run, ranks, verdict, findings);
    // A culprit's host ran the job even when only the culprit names it.
    std::set<std::string> named;
    parts.ForEach([&](PartRecord& p) {
      if (p.host) named.insert(*p.host);
    });
    for (const std::string& h : named) parts.Host(h);
  }
  r.parts = parts.Take();
  return r;
}

bool DecidesParts(std::string_view status) {
  return status == "straggler" || status == "no_straggler" || status == "hang";
}

void FeedJobs(const std::vector<JobRecord>& jobs, JobSink& sink) {
  std::unordered_map<std::string, uint32_t> part_index, host_index;
  CompactJob c;
  for (const JobRecord& job : jobs) {
    c.job_id = job.job_id;
    c.decided = DecidesParts(job.status);
    c.when_s = job.when_s();
    c.timed = job.first_ns.has_value();
    c.parts.clear();
    for (const PartRecord& p : job.parts) {
      CompactPart& cp = c.parts.emplace_back(CompactOf(p));
      auto [part, new_part] = part_index.try_emplace(p.key, 0);
      if (new_part) part->second = sink.AddPart(p);
      cp.part = part->second;
      if (p.host) {
        auto [host, new_host] = host_index.try_emplace(*p.host, 0);
        if (new_host) host->second = sink.AddHost(*p.host);
        cp.host = host->second;
      }
    }
    sink.AddJob(c);
  }
}

}  // namespace laggard::history
