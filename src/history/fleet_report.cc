#include "history/fleet_report.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace laggard::history {
namespace {

enum class Seen : uint8_t { kHealthy, kCulprit, kUnsure };

struct Entry {
  size_t job = 0;
  bool timed = false;  // the job's time is when it ran, not when it was recorded
  Seen seen = Seen::kHealthy;
  std::optional<int32_t> rank;
  std::string cause;
  int64_t when_s = 0;
};

struct Track {
  PartRecord part;
  bool node = false;
  std::vector<Entry> entries;  // in job order
};

std::string CauseOf(const PartRecord& p) {
  std::string c = p.cause_class.value_or("unknown");
  if (p.cause) c += "/" + *p.cause;
  return c;
}

// A verdict that decides: a straggler named, none found, or who stopped a
// hung job. Inconclusive, job-wide and communication-bound verdicts say
// nothing of one part's health.
bool Decided(const JobRecord& job) {
  return job.status == "straggler" || job.status == "no_straggler" || job.status == "hang";
}

// Causes that say nothing against the part: the job's own work split
// (imbalance), and interference from outside it (external).
bool NotThePart(const PartRecord& p) {
  return p.cause_class == "imbalance" || p.cause_class == "external";
}

Seen SeenOf(const PartRecord& p, bool decided, double min_confidence) {
  if (!decided) return Seen::kUnsure;
  if (!p.culprit) return Seen::kHealthy;
  if (NotThePart(p)) return Seen::kUnsure;
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

std::optional<std::string> Periodic(const std::vector<Entry>& entries) {
  // The hour of the day only of jobs whose own records are timed.
  std::vector<const Entry*> culprit, healthy;
  std::vector<size_t> positions;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].seen == Seen::kCulprit) {
      positions.push_back(i);
      if (entries[i].timed) culprit.push_back(&entries[i]);
    } else if (entries[i].seen == Seen::kHealthy && entries[i].timed) {
      healthy.push_back(&entries[i]);
    }
  }
  if (positions.size() < 3) return std::nullopt;
  auto hour = [](const Entry* e) {
    return static_cast<int>(((e->when_s % 86400) + 86400) % 86400 / 3600);
  };
  int best_hour = 0;
  size_t best = 0;
  for (int h = 0; h < 24; ++h) {
    size_t in = std::count_if(culprit.begin(), culprit.end(), [&](const Entry* e) {
      int x = hour(e);
      return x == h || x == (h + 1) % 24;
    });
    if (in > best) {
      best = in;
      best_hour = h;
    }
  }
  size_t healthy_in = std::count_if(healthy.begin(), healthy.end(), [&](const Entry* e) {
    int x = hour(e);
    return x == best_hour || x == (best_hour + 1) % 24;
  });
  if (culprit.size() >= 3 && !healthy.empty() && best * 4 >= culprit.size() * 3 &&
      healthy_in * 2 < healthy.size()) {
    return fmt::format("{:02}:00-{:02}:00 UTC in {} of {}", best_hour, (best_hour + 2) % 24, best,
                       culprit.size());
  }
  size_t d = positions[1] - positions[0];
  if (d < 2) return std::nullopt;
  for (size_t i = 2; i < positions.size(); ++i) {
    if (positions[i] - positions[i - 1] != d) return std::nullopt;
  }
  // The pattern holds to the end: no culprit job missing where it was due.
  if (positions.back() + d < entries.size()) return std::nullopt;
  return fmt::format("every {} job", Ordinal(static_cast<int>(d)));
}

Offender Judge(const Track& t, const std::vector<JobRecord>& jobs, const ReportOptions& o) {
  Offender off;
  off.part = t.part;
  off.node = t.node;
  std::set<int32_t> ranks;
  for (const Entry& e : t.entries) {
    ++off.jobs_all;
    if (e.seen == Seen::kUnsure) ++off.unsure_all;
    if (e.seen != Seen::kCulprit) continue;
    ++off.culprit_all;
    ++off.causes[e.cause];
    if (e.rank) ranks.insert(*e.rank);
    off.culprit_jobs.push_back(jobs[e.job].job_id);
    off.last_culprit_s = std::max(off.last_culprit_s, e.when_s);
  }
  off.ranks.assign(ranks.begin(), ranks.end());
  // Every job it ran in counts in n, undecided ones too: chronic is "the
  // culprit in most of its jobs", and a job that could not tell is not one
  // where it was seen slow.
  for (auto it = t.entries.rbegin(); it != t.entries.rend() && off.jobs_last < o.last_jobs; ++it) {
    ++off.jobs_last;
    if (it->seen == Seen::kCulprit) ++off.culprit_last;
  }
  if (off.culprit_last >= o.chronic_min_jobs &&
      off.culprit_last >= o.chronic_share * off.jobs_last) {
    off.standing = Standing::kChronic;
  } else if (off.culprit_all >= 2) {
    off.standing = Standing::kRecurring;
  } else {
    off.standing = Standing::kTransient;
  }
  off.periodic = Periodic(t.entries);
  return off;
}

// What the rank-fixed rule counts of one rank number.
struct RankTally {
  int decided_jobs = 0;  // decided jobs that had this rank
  int jobs = 0;          // of them, those it was the culprit in
  int imbalance = 0;     // of those, for the job's own work split
  std::map<std::string, int> parts;
};

std::vector<RankFixed> RankFixedOf(const std::map<int32_t, RankTally>& by_rank,
                                   const ReportOptions& o) {
  std::vector<RankFixed> out;
  for (const auto& [rank, tally] : by_rank) {
    // The rank must be the culprit in a chronic share of the decided jobs
    // that had it: a few unrelated faults that happened to land on one rank
    // number are chance.
    if (tally.jobs < o.chronic_min_jobs || tally.jobs < o.chronic_share * tally.decided_jobs) {
      continue;
    }
    int most = 0;
    for (const auto& [key, n] : tally.parts) most = std::max(most, n);
    bool spread = tally.parts.size() >= 3 && most * 2 < tally.jobs;
    bool work = tally.imbalance * 2 > tally.jobs;
    if (!spread && !work) continue;
    RankFixed f;
    f.rank = rank;
    f.culprit_jobs = tally.jobs;
    f.imbalance_jobs = tally.imbalance;
    for (const auto& [key, n] : tally.parts) f.parts.push_back(key);
    out.push_back(std::move(f));
  }
  return out;
}

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

FleetReport BuildFleetReport(const std::vector<JobRecord>& jobs, const ReportOptions& o) {
  FleetReport r;
  r.jobs = static_cast<int>(jobs.size());
  std::map<std::string, Track> tracks;
  std::map<int32_t, RankTally> by_rank;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobRecord& job = jobs[j];
    int64_t when = job.when_s();
    r.first_s = j == 0 ? when : std::min(r.first_s, when);
    r.last_s = std::max(r.last_s, when);
    bool any = false, weak = false;
    bool decided = Decided(job);
    bool timed = job.first_ns.has_value();
    if (decided) {
      std::set<int32_t> job_ranks;
      for (const PartRecord& p : job.parts) {
        if (p.rank) job_ranks.insert(*p.rank);
      }
      for (int32_t rank : job_ranks) ++by_rank[rank].decided_jobs;
    }
    // A host as a whole: the worst of its parts in this job.
    std::map<std::string, Entry> hosts;
    for (const PartRecord& p : job.parts) {
      Seen seen = SeenOf(p, decided, o.min_confidence);
      Track& t = tracks[p.key];
      if (t.entries.empty()) {
        // Its identity, once; its culprit fields are per job (the entries).
        t.part = p;
        t.part.culprit = false;
        t.part.cause_class.reset();
        t.part.cause.reset();
        t.part.confidence.reset();
        t.part.slowdown.reset();
        t.part.evidence_codes.clear();
      }
      // Its latest place: a card moves between hosts.
      t.part.host = p.host;
      t.part.gpu = p.gpu;
      t.part.rank = p.rank;
      t.entries.push_back({j, timed, seen, p.rank, p.culprit ? CauseOf(p) : std::string(), when});
      if (p.culprit && decided) any = true;
      if (seen == Seen::kCulprit) weak = weak || WeakIdentity(p);
      // Rank numbers of culprits, imbalance included: what the rank-fixed
      // rule reads.
      bool rank_culprit = decided && p.culprit && p.cause_class != "external";
      if (rank_culprit && p.rank && p.confidence.value_or(0) >= o.min_confidence) {
        RankTally& tally = by_rank[*p.rank];
        ++tally.jobs;
        ++tally.parts[p.key];
        if (p.cause_class == "imbalance") ++tally.imbalance;
      }
      if (!p.host) continue;
      auto [it, added] = hosts.try_emplace(
          *p.host, Entry{j, timed, decided ? Seen::kHealthy : Seen::kUnsure, {}, "", when});
      if (seen == Seen::kCulprit || (seen == Seen::kUnsure && it->second.seen == Seen::kHealthy)) {
        if (it->second.seen != Seen::kCulprit) it->second.cause = CauseOf(p);
        it->second.seen = seen == Seen::kCulprit              ? Seen::kCulprit
                          : it->second.seen == Seen::kCulprit ? Seen::kCulprit
                                                              : Seen::kUnsure;
      }
    }
    for (auto& [host, e] : hosts) {
      Track& t = tracks["node:" + host];
      t.node = true;
      t.part = PartRecord{};
      t.part.key = "node:" + host;
      t.part.kind = PartKind::kHost;
      t.part.identity = Identity::kHardware;
      t.part.host = host;
      t.entries.push_back(e);
    }
    if (!any && decided) ++r.healthy_jobs;
    if (!any && !decided) ++r.undecided_jobs;
    if (weak) ++r.weak_jobs;
  }

  std::set<std::string> chronic_hosts;
  std::vector<Offender> nodes;
  for (const auto& [key, t] : tracks) {
    Offender off = Judge(t, jobs, o);
    if (off.culprit_all == 0) continue;
    if (t.node) {
      nodes.push_back(std::move(off));
      continue;
    }
    if (off.standing == Standing::kChronic && off.part.host) chronic_hosts.insert(*off.part.host);
    r.offenders.push_back(std::move(off));
  }
  // A node stands on its own only where no part of it explains it.
  for (Offender& n : nodes) {
    if (n.standing == Standing::kChronic && chronic_hosts.count(*n.part.host) == 0) {
      r.offenders.push_back(std::move(n));
    }
  }
  std::sort(r.offenders.begin(), r.offenders.end(), [](const Offender& a, const Offender& b) {
    if (a.standing != b.standing) return a.standing < b.standing;
    double sa = a.jobs_last > 0 ? double(a.culprit_last) / a.jobs_last : 0;
    double sb = b.jobs_last > 0 ? double(b.culprit_last) / b.jobs_last : 0;
    if (sa != sb) return sa > sb;
    if (a.culprit_all != b.culprit_all) return a.culprit_all > b.culprit_all;
    return a.part.key < b.part.key;
  });

  r.rank_fixed = RankFixedOf(by_rank, o);
  return r;
}

std::map<std::string, HostState> HostStatesOf(const JobRecord& job, const ReportOptions& o) {
  std::map<std::string, HostState> out;
  bool decided = Decided(job);
  for (const PartRecord& p : job.parts) {
    if (!p.host) continue;
    Seen seen = SeenOf(p, decided, o.min_confidence);
    auto [it, added] = out.try_emplace(*p.host);
    HostState& h = it->second;
    if (added && seen != Seen::kCulprit)
      h.kind = decided ? HostState::kHealthy : HostState::kUnsure;
    if (seen == Seen::kCulprit && h.kind != HostState::kCulprit) {
      h.kind = HostState::kCulprit;
      h.cause = CauseOf(p);
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
