#include "history/fleet_report.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

namespace laggard::history {
namespace {

template <class Text>
std::string CauseOf(const std::optional<Text>& cause_class, const std::optional<Text>& cause) {
  std::string c(cause_class ? std::string_view(*cause_class) : std::string_view("unknown"));
  if (cause) (c += '/') += *cause;
  return c;
}

// Causes that say nothing against the part: the job's own work split
// (imbalance), and interference from outside it (external).
template <class Text>
bool NotThePart(const std::optional<Text>& cause_class) {
  return cause_class == "imbalance" || cause_class == "external";
}

using Seen = FleetTally::Seen;

template <class Part>
Seen SeenOf(const Part& p, bool decided, double min_confidence) {
  if (!decided) return Seen::kUnsure;
  if (!p.culprit) return Seen::kHealthy;
  if (NotThePart(p.cause_class)) return Seen::kUnsure;
  return p.confidence.value_or(0) >= min_confidence ? Seen::kCulprit : Seen::kUnsure;
}

std::string Ordinal(int d) {
  if (d % 100 >= 11 && d % 100 <= 13) return fmt::format("{}th", d);
  switch (d % 10) {
    case 1: return fmt::format("{}st", d);
    case 2: return fmt::format("{}nd", d);
    case 3: return fmt::format("{}rd", d);
    default: return fmt::format("{}th", d);
  }
}

int HourOf(int64_t when_s) { return static_cast<int>(((when_s % 86400) + 86400) % 86400 / 3600); }

}  // namespace

bool WeakIdentity(const PartRecord& p) {
  return (p.kind == PartKind::kGpu || p.kind == PartKind::kRank) &&
         p.identity != Identity::kHardware;
}

std::string_view StandingName(Standing s) {
  switch (s) {
    case Standing::kChronic: return "chronic";
    case Standing::kRecurring: return "recurring";
    case Standing::kTransient: return "transient";
  }
  return "transient";
}

std::string Offender::Name() const {
  const PartRecord& p = part;
  std::string host = p.host.value_or("?");
  if (node) return fmt::format("node {} (any of its parts)", host);
  switch (p.kind) {
    case PartKind::kGpu: {
      std::string where = p.gpu ? fmt::format("{} GPU {}", host, *p.gpu) : host;
      if (p.uuid) return fmt::format("GPU {} ({})", *p.uuid, where);
      if (p.serial) return fmt::format("GPU serial {} ({})", *p.serial, where);
      return fmt::format("GPU {} of {}", p.gpu.value_or(0), host);
    }
    case PartKind::kHost: return fmt::format("host {}", host);
    case PartKind::kNic: return fmt::format("NIC {} of {}", p.nic.value_or("?"), host);
    case PartKind::kSwitch: return fmt::format("switch {}", p.switch_name.value_or("?"));
    case PartKind::kRank: return fmt::format("rank {} (no host known)", p.rank.value_or(-1));
  }
  return p.key;
}

std::string Offender::MainCause() const {
  std::string best = "unknown";
  int n = 0;
  for (const auto& [cause, count] : causes) {
    if (count > n) {
      best = cause;
      n = count;
    }
  }
  return best;
}

void FleetTally::Expect(size_t parts, size_t hosts) {
  parts_.reserve(parts_.size() + parts);
  part_tracks_.reserve(part_tracks_.size() + parts);
  hosts_.reserve(hosts_.size() + hosts);
  node_tracks_.reserve(node_tracks_.size() + hosts);
  node_states_.reserve(node_states_.size() + hosts);
}

uint32_t FleetTally::AddPart(const PartRecord& identity) {
  PartRecord& p = parts_.emplace_back(identity);
  p.host.reset();
  p.gpu.reset();
  p.rank.reset();
  p.culprit = false;
  p.cause_class.reset();
  p.cause.reset();
  p.confidence.reset();
  p.slowdown.reset();
  p.evidence_codes.clear();
  part_tracks_.emplace_back().weak = WeakIdentity(p);
  return static_cast<uint32_t>(parts_.size() - 1);
}

uint32_t FleetTally::AddHost(const std::string& name) {
  hosts_.push_back(name);
  node_tracks_.emplace_back();
  node_states_.emplace_back();
  return static_cast<uint32_t>(hosts_.size() - 1);
}

uint32_t FleetTally::CauseIndex(const CompactPart& p) {
  std::string label = CauseOf(p.cause_class, p.cause);
  auto [it, added] = cause_index_.try_emplace(std::move(label), 0);
  if (added) {
    it->second = static_cast<uint32_t>(causes_.size());
    causes_.push_back(it->first);
  }
  return it->second;
}

FleetTally::RankTally& FleetTally::RankAt(int32_t rank) {
  if (rank < 0 || rank >= kDenseRanks) return other_ranks_[rank];
  if (static_cast<size_t>(rank) >= dense_ranks_.size()) dense_ranks_.resize(rank + 1);
  return dense_ranks_[rank];
}

// One more job of `t`, seen as `seen`; `hour`, the job's hour of the day.
inline void FleetTally::Count(Track& t, Seen seen, const CompactJob& job, int hour,
                              std::optional<int32_t> rank, uint32_t cause) {
  uint32_t position = t.jobs++;
  if (seen == Seen::kUnsure) ++t.unsure;
  if (seen == Seen::kHealthy && job.timed) {
    ++t.healthy_hours[hour];
    ++t.healthy_timed;
  }
  if (seen != Seen::kCulprit) return;
  if (!job_id_index_) {
    job_id_index_ = static_cast<uint32_t>(job_ids_.size());
    job_ids_.emplace_back(job.job_id);
  }
  t.hits.push_back(Hit{position, *job_id_index_, job.when_s, job.timed, rank, cause});
}

void FleetTally::AddJob(const CompactJob& job) {
  const uint32_t stamp = ++jobs_;
  int64_t when = job.when_s;
  r_.first_s = stamp == 1 ? when : std::min(r_.first_s, when);
  r_.last_s = std::max(r_.last_s, when);
  job_id_index_.reset();
  const int hour = HourOf(when);
  bool any = false, weak = false;
  bool decided = job.decided;
  // The parts' tracks are far apart in a large fleet: ask for them all
  // before the first is read.
  for (const CompactPart& p : job.parts) {
    const Track& t = part_tracks_[p.part];
    __builtin_prefetch(&t);
    if (job.timed) __builtin_prefetch(&t.healthy_hours[hour]);
  }
  if (decided) {
    job_ranks_.clear();
    for (const CompactPart& p : job.parts) {
      if (p.rank) job_ranks_.push_back(*p.rank);
    }
    std::sort(job_ranks_.begin(), job_ranks_.end());
    job_ranks_.erase(std::unique(job_ranks_.begin(), job_ranks_.end()), job_ranks_.end());
    for (int32_t rank : job_ranks_) ++RankAt(rank).decided_jobs;
  }
  job_hosts_.clear();
  for (const CompactPart& p : job.parts) {
    Seen seen = SeenOf(p, decided, o_.min_confidence);
    uint32_t cause = seen == Seen::kCulprit ? CauseIndex(p) : 0;
    Track& t = part_tracks_[p.part];
    t.host = p.host;
    t.gpu = p.gpu;
    t.rank = p.rank;
    Count(t, seen, job, hour, p.rank, cause);
    if (p.culprit && decided) any = true;
    if (seen == Seen::kCulprit) weak = weak || t.weak;
    // Rank numbers of culprits, imbalance included: what the rank-fixed
    // rule reads.
    bool rank_culprit = decided && p.culprit && p.cause_class != "external";
    if (rank_culprit && p.rank && p.confidence.value_or(0) >= o_.min_confidence) {
      RankTally& tally = RankAt(*p.rank);
      ++tally.jobs;
      ++tally.parts[p.part];
      if (p.cause_class == "imbalance") ++tally.imbalance;
    }
    if (!p.host) continue;
    // A host as a whole: the worst of its parts in this job, with the cause
    // of its first culprit part.
    NodeState& n = node_states_[*p.host];
    if (n.stamp != stamp) {
      n = NodeState{stamp, decided ? Seen::kHealthy : Seen::kUnsure, 0};
      job_hosts_.push_back(*p.host);
    }
    if (seen == Seen::kCulprit && n.seen != Seen::kCulprit) {
      n.seen = Seen::kCulprit;
      n.cause = cause;
    } else if (seen == Seen::kUnsure && n.seen == Seen::kHealthy) {
      n.seen = Seen::kUnsure;
    }
  }
  for (uint32_t host : job_hosts_) {
    const NodeState& n = node_states_[host];
    Count(node_tracks_[host], n.seen, job, hour, std::nullopt, n.cause);
  }
  if (!any && decided) ++r_.healthy_jobs;
  if (!any && !decided) ++r_.undecided_jobs;
  if (weak) ++r_.weak_jobs;
}

std::optional<std::string> FleetTally::Periodic(const Track& t) const {
  if (t.hits.size() < 3) return std::nullopt;
  // The hour of the day only of jobs whose own records are timed.
  std::array<uint32_t, 24> culprit_hours{};
  uint32_t culprit_timed = 0;
  for (const Hit& h : t.hits) {
    if (!h.timed) continue;
    ++culprit_hours[HourOf(h.when_s)];
    ++culprit_timed;
  }
  int best_hour = 0;
  uint32_t best = 0;
  for (int h = 0; h < 24; ++h) {
    uint32_t in = culprit_hours[h] + culprit_hours[(h + 1) % 24];
    if (in > best) {
      best = in;
      best_hour = h;
    }
  }
  uint32_t healthy_in = t.healthy_hours[best_hour] + t.healthy_hours[(best_hour + 1) % 24];
  if (culprit_timed >= 3 && t.healthy_timed > 0 && best * 4 >= culprit_timed * 3 &&
      healthy_in * 2 < t.healthy_timed) {
    return fmt::format("{:02}:00-{:02}:00 UTC in {} of {}", best_hour, (best_hour + 2) % 24, best,
                       culprit_timed);
  }
  uint32_t d = t.hits[1].position - t.hits[0].position;
  if (d < 2) return std::nullopt;
  for (size_t i = 2; i < t.hits.size(); ++i) {
    if (t.hits[i].position - t.hits[i - 1].position != d) return std::nullopt;
  }
  // The pattern holds to the end: no culprit job missing where it was due.
  if (t.hits.back().position + d < t.jobs) return std::nullopt;
  return fmt::format("every {} job", Ordinal(static_cast<int>(d)));
}

Offender FleetTally::Judge(const Track& t) const {
  Offender off;
  off.jobs_all = static_cast<int>(t.jobs);
  off.unsure_all = static_cast<int>(t.unsure);
  off.culprit_all = static_cast<int>(t.hits.size());
  std::set<int32_t> ranks;
  for (const Hit& h : t.hits) {
    ++off.causes[causes_[h.cause]];
    if (h.rank) ranks.insert(*h.rank);
    off.culprit_jobs.push_back(job_ids_[h.job]);
    off.last_culprit_s = std::max(off.last_culprit_s, h.when_s);
  }
  off.ranks.assign(ranks.begin(), ranks.end());
  // Every job it ran in counts in n, undecided ones too: chronic is "the
  // culprit in most of its jobs", and a job that could not tell is not one
  // where it was seen slow.
  off.jobs_last = static_cast<int>(std::min<int64_t>(std::max(o_.last_jobs, 0), t.jobs));
  const uint32_t first_last = t.jobs - static_cast<uint32_t>(off.jobs_last);
  for (const Hit& h : t.hits) {
    if (h.position >= first_last) ++off.culprit_last;
  }
  if (off.culprit_last >= o_.chronic_min_jobs &&
      off.culprit_last >= o_.chronic_share * off.jobs_last) {
    off.standing = Standing::kChronic;
  } else if (off.culprit_all >= 2) {
    off.standing = Standing::kRecurring;
  } else {
    off.standing = Standing::kTransient;
  }
  off.periodic = Periodic(t);
  return off;
}

FleetReport FleetTally::Finish() {
  FleetReport r = r_;
  r.jobs = static_cast<int>(jobs_);
  std::set<std::string> chronic_hosts;
  auto with_hits = [](const std::vector<Track>& tracks) {
    return std::count_if(tracks.begin(), tracks.end(),
                         [](const Track& t) { return !t.hits.empty(); });
  };
  r.offenders.reserve(with_hits(part_tracks_) + with_hits(node_tracks_));
  for (size_t i = 0; i < part_tracks_.size(); ++i) {
    const Track& t = part_tracks_[i];
    if (t.hits.empty()) continue;
    Offender off = Judge(t);
    off.part = parts_[i];
    if (t.host) off.part.host = hosts_[*t.host];
    off.part.gpu = t.gpu;
    off.part.rank = t.rank;
    if (off.standing == Standing::kChronic && off.part.host) chronic_hosts.insert(*off.part.host);
    r.offenders.push_back(std::move(off));
  }
  // A node stands on its own only where no part of it explains it.
  for (size_t i = 0; i < node_tracks_.size(); ++i) {
    const Track& t = node_tracks_[i];
    if (t.hits.empty()) continue;
    Offender off = Judge(t);
    if (off.standing != Standing::kChronic || chronic_hosts.count(hosts_[i]) != 0) continue;
    off.node = true;
    off.part.key = "node:" + hosts_[i];
    off.part.kind = PartKind::kHost;
    off.part.identity = Identity::kHardware;
    off.part.host = hosts_[i];
    r.offenders.push_back(std::move(off));
  }
  // Sorted by index: an offender is large to move.
  std::vector<uint32_t> order(r.offenders.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t i, uint32_t j) {
    const Offender& a = r.offenders[i];
    const Offender& b = r.offenders[j];
    if (a.standing != b.standing) return a.standing < b.standing;
    double sa = a.jobs_last > 0 ? double(a.culprit_last) / a.jobs_last : 0;
    double sb = b.jobs_last > 0 ? double(b.culprit_last) / b.jobs_last : 0;
    if (sa != sb) return sa > sb;
    if (a.culprit_all != b.culprit_all) return a.culprit_all > b.culprit_all;
    return a.part.key < b.part.key;
  });
  std::vector<Offender> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) sorted.push_back(std::move(r.offenders[i]));
  r.offenders = std::move(sorted);

  std::vector<std::pair<int32_t, const RankTally*>> by_rank;
  for (size_t rank = 0; rank < dense_ranks_.size(); ++rank) {
    by_rank.emplace_back(static_cast<int32_t>(rank), &dense_ranks_[rank]);
  }
  for (const auto& [rank, tally] : other_ranks_) by_rank.emplace_back(rank, &tally);
  std::sort(by_rank.begin(), by_rank.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [rank, t] : by_rank) {
    const RankTally& tally = *t;
    // The rank must be the culprit in a chronic share of the decided jobs
    // that had it: a few unrelated faults that happened to land on one rank
    // number are chance.
    if (tally.jobs < o_.chronic_min_jobs || tally.jobs < o_.chronic_share * tally.decided_jobs) {
      continue;
    }
    int most = 0;
    for (const auto& [part, n] : tally.parts) most = std::max(most, n);
    bool spread = tally.parts.size() >= 3 && most * 2 < tally.jobs;
    bool work = tally.imbalance * 2 > tally.jobs;
    if (!spread && !work) continue;
    RankFixed f;
    f.rank = rank;
    f.culprit_jobs = tally.jobs;
    f.imbalance_jobs = tally.imbalance;
    for (const auto& [part, n] : tally.parts) f.parts.push_back(parts_[part].key);
    std::sort(f.parts.begin(), f.parts.end());
    r.rank_fixed.push_back(std::move(f));
  }
  return r;
}

FleetReport BuildFleetReport(const std::vector<JobRecord>& jobs, const ReportOptions& o) {
  FleetTally tally(o);
  FeedJobs(jobs, tally);
  return tally.Finish();
}

std::map<std::string, HostState> HostStatesOf(const JobRecord& job, const ReportOptions& o) {
  std::map<std::string, HostState> out;
  bool decided = DecidesParts(job.status);
  for (const PartRecord& p : job.parts) {
    if (!p.host) continue;
    Seen seen = SeenOf(p, decided, o.min_confidence);
    auto [it, added] = out.try_emplace(*p.host);
    HostState& h = it->second;
    if (added && seen != Seen::kCulprit)
      h.kind = decided ? HostState::kHealthy : HostState::kUnsure;
    if (seen == Seen::kCulprit && h.kind != HostState::kCulprit) {
      h.kind = HostState::kCulprit;
      h.cause = CauseOf(p.cause_class, p.cause);
      h.what = p.kind == PartKind::kGpu   ? fmt::format("GPU {}", p.gpu.value_or(0))
               : p.kind == PartKind::kNic ? fmt::format("NIC {}", p.nic.value_or("?"))
                                          : std::string(PartKindName(p.kind));
    } else if (seen == Seen::kUnsure && h.kind == HostState::kHealthy) {
      h.kind = HostState::kUnsure;
    }
  }
  return out;
}

}  // namespace laggard::history
