#include "ingest/jobs.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "ingest/ingest.h"
#include "ingest/jobs_groups.h"

namespace laggard {
namespace {

using jobs_internal::Ambiguous;
using jobs_internal::FolderIndex;
using jobs_internal::Group;
using jobs_internal::RanksOf;
using jobs_internal::SortUnique;

void Widen(JobKeys& k, TimeNs t) {
  if (!IsWallClockTime(t)) return;
  k.first_ns = k.first_ns ? std::min(*k.first_ns, t) : t;
  k.last_ns = k.last_ns ? std::max(*k.last_ns, t) : t;
}

void StateWorld(JobKeys& k, int64_t world) {
  if (world < 1 || world > kMaxRank) return;
  // A file stating two world sizes keeps the larger: its ranks fit in it.
  k.world_size = std::max<int32_t>(k.world_size.value_or(0), static_cast<int32_t>(world));
}

std::string TraceLabel(const std::string& producer) {
  if (producer == "kineto") return "Kineto trace";
  if (producer == "nsys") return "nsys report";
  if (producer == "torch-legacy") return "torch profiler trace";
  return producer + " trace";
}

void KeysOfSteps(const RunBuilder& b, JobKeys& k) {
  for (const StepSeries& s : b.series()) {
    k.ranks.push_back(s.info.rank);
    if (s.info.host) k.hosts.push_back(*s.info.host);
    for (size_t i = 0; i < s.steps.size() && i < JobKeys::kPrintSteps; ++i) {
      k.prints.push_back({s.info.rank, 0, s.steps[i].step, s.steps[i].duration_ns});
    }
    for (const StepRecord& r : s.steps) {
      if (r.start_ns) Widen(k, *r.start_ns);
    }
  }
  for (const StepSeries& s : b.unattributed()) {
    ++k.unranked;
    for (const StepRecord& r : s.steps) {
      if (r.start_ns) Widen(k, *r.start_ns);
    }
  }
}

void KeysOfTraces(const RunBuilder& b, JobKeys& k) {
  for (const RankTrace& t : b.traces()) {
    if (t.rank) {
      k.ranks.push_back(*t.rank);
    } else {
      ++k.unranked;
    }
    if (t.world_size) StateWorld(k, *t.world_size);
    if (t.host) k.hosts.push_back(*t.host);
    for (size_t i = 0; t.rank && i < t.steps.size() && i < JobKeys::kPrintSteps; ++i) {
      const TraceStep& s = t.steps[i];
      if (s.end_ns > s.start_ns) k.prints.push_back({*t.rank, 1, s.step, s.end_ns - s.start_ns});
    }
    if (t.origin == TraceOrigin::kHostClock && !t.ops.empty()) {
      // Ops are sorted by start (model/trace.h); the last to end may be any.
      TimeNs end = t.ops.front().start_ns;
      for (const TraceOp& op : t.ops) end = std::max(end, op.start_ns + op.dur_ns);
      Widen(k, t.ops.front().start_ns);
      Widen(k, end);
    }
  }
}

// What the file holds, for the job list: its first kind of job data, else
// of machine data.
std::string Label(const RunBuilder& b) {
  if (!b.traces().empty()) return TraceLabel(b.traces().front().producer);
  if (!b.op_timelines().empty()) return "op timeline";
  if (!b.series().empty() || !b.unattributed().empty()) return "step log";
  if (!b.hang().dumps.empty()) return "Flight Recorder dump";
  if (!b.hang().events.empty()) return "hang log";
  if (!b.tool_reports().empty() || !b.nvrx_reports().empty()) return "straggler report log";
  if (!b.gpus().empty()) return "GPU metrics file";
  return "network file";
}

bool HasNetwork(const NetworkData& n) {
  return !n.ib_ports.empty() || !n.eth_links.empty() || !n.nccl_tests.empty() ||
         !n.nccl_ranks.empty() || !n.topologies.empty() || !n.port_counters.empty() ||
         !n.p2p_tests.empty() || !n.pair_bandwidths.empty() || !n.switch_of.empty();
}

void MachineHosts(const RunBuilder& b, JobKeys& k) {
  for (const GpuRecord& g : b.gpus()) {
    if (g.host && !g.host->empty()) k.hosts.push_back(*g.host);
  }
  std::vector<std::string> network = NetworkHosts(b.network());
  k.hosts.insert(k.hosts.end(), network.begin(), network.end());
}

// Timed files (in file order) into groups whose spans lie within the gap.
void GroupByTime(const std::vector<JobKeys>& files, std::vector<size_t> timed,
                 std::vector<Group>& groups) {
  std::stable_sort(timed.begin(), timed.end(),
                   [&](size_t a, size_t b) { return *files[a].first_ns < *files[b].first_ns; });
  Group* open = nullptr;
  for (size_t i : timed) {
    if (open == nullptr || !open->Near(files[i])) {
      groups.emplace_back();
      open = &groups.back();
    }
    open->Take(i, files[i]);
  }
}

// Timed files that state no world size (in file order) into groups: first
// into episodes, files whose spans overlap one another; then consecutive
// episodes within the gap into one job, unless the later one names some of
// the earlier one's ranks but not the same set (a run of another size after
// it: the same rank ran twice). The same ranks again are a restart; other
// ranks, other nodes of the job, timed a little apart.
void GroupEpisodes(const std::vector<JobKeys>& files, std::vector<size_t> timed,
                   std::vector<Group>& groups) {
  std::stable_sort(timed.begin(), timed.end(),
                   [&](size_t a, size_t b) { return *files[a].first_ns < *files[b].first_ns; });
  std::vector<Group> episodes;
  for (size_t i : timed) {
    if (episodes.empty() || *files[i].first_ns > *episodes.back().last_ns) episodes.emplace_back();
    episodes.back().Take(i, files[i]);
  }
  std::vector<int32_t> seen;  // ranks of the job being formed
  for (size_t e = 0; e < episodes.size(); ++e) {
    std::vector<int32_t> ranks = RanksOf(episodes[e], files);
    bool repeats = std::any_of(ranks.begin(), ranks.end(), [&](int32_t r) {
      return std::binary_search(seen.begin(), seen.end(), r);
    });
    bool same_job = e > 0 && groups.back().Near(files[episodes[e].files.front()]) &&
                    (!repeats || ranks == seen);
    if (!same_job) {
      groups.emplace_back();
      seen.clear();
    }
    for (size_t i : episodes[e].files) groups.back().Take(i, files[i]);
    seen.insert(seen.end(), ranks.begin(), ranks.end());
    SortUnique(seen);
  }
}

// A timed file whose span overlaps several groups of one world size (step
// logs over weeks, profiled on day 1 and day 5) joins those groups: one long
// job.
void BridgeSpans(const JobKeys& k, const std::vector<JobKeys>& files, std::vector<Group>& groups) {
  std::map<int32_t, std::vector<size_t>> overlapped;  // world -> groups
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].world && groups[g].Overlaps(k) && groups[g].Holds(k)) {
      overlapped[*groups[g].world].push_back(g);
    }
  }
  std::vector<size_t> gone;
  for (const auto& [world, list] : overlapped) {
    for (size_t n = 1; n < list.size(); ++n) {
      for (size_t i : groups[list[n]].files) groups[list[0]].Take(i, files[i]);
      gone.push_back(list[n]);
    }
  }
  std::sort(gone.rbegin(), gone.rend());
  for (size_t g : gone) groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(g));
}

// Steps 1 to 3 of the header: the job files into groups, those that fit
// several into `ambiguous`.
std::vector<Group> GroupJobFiles(const std::vector<JobKeys>& files,
                                 std::vector<Ambiguous>& ambiguous) {
  std::map<int32_t, std::vector<size_t>> by_world;
  std::vector<size_t> timed_free, untimed_free;
  for (size_t i = 0; i < files.size(); ++i) {
    const JobKeys& k = files[i];
    if (k.kind != JobKeys::Kind::kJob) continue;
    if (k.world_size) {
      by_world[*k.world_size].push_back(i);
    } else {
      (k.first_ns ? timed_free : untimed_free).push_back(i);
    }
  }
  std::vector<Group> groups;
  std::vector<std::pair<int32_t, size_t>> untimed;  // (world, file)
  for (const auto& [world, members] : by_world) {
    std::vector<size_t> timed;
    for (size_t i : members) {
      if (files[i].first_ns) {
        timed.push_back(i);
      } else {
        untimed.emplace_back(world, i);
      }
    }
    size_t before = groups.size();
    GroupByTime(files, timed, groups);
    if (groups.size() == before) groups.emplace_back();
    for (size_t g = before; g < groups.size(); ++g) groups[g].world = world;
  }
  for (size_t i : timed_free) BridgeSpans(files[i], files, groups);
  for (const auto& [world, i] : untimed) {
    std::vector<size_t> same_world;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].world == world) same_world.push_back(g);
    }
    if (same_world.size() == 1) {
      groups[same_world[0]].Take(i, files[i]);
    } else {
      ambiguous.push_back({i, same_world});  // spans of one world far apart
    }
  }
  std::vector<size_t> alone;
  for (size_t i : timed_free) {
    std::vector<size_t> fits, overlaps;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (!groups[g].Near(files[i]) || !groups[g].Holds(files[i])) continue;
      fits.push_back(g);
      if (groups[g].Overlaps(files[i])) overlaps.push_back(g);
    }
    if (fits.size() == 1 || overlaps.size() == 1) {
      groups[fits.size() == 1 ? fits[0] : overlaps[0]].Take(i, files[i]);
    } else if (fits.empty()) {
      alone.push_back(i);
    } else {
      ambiguous.push_back({i, fits});
    }
  }
  GroupEpisodes(files, alone, groups);
  if (groups.empty() && !untimed_free.empty()) groups.emplace_back();
  for (size_t i : untimed_free) {
    if (groups.size() == 1) {
      groups[0].Take(i, files[i]);
    } else {
      ambiguous.push_back({i, {}});
    }
  }
  return groups;
}

// The hosts a group's files name.
std::vector<std::string> HostsOf(const Group& g, const std::vector<JobKeys>& files) {
  std::vector<std::string> hosts;
  for (size_t i : g.files) hosts.insert(hosts.end(), files[i].hosts.begin(), files[i].hosts.end());
  SortUnique(hosts);
  return hosts;
}

bool SharesHost(const std::vector<std::string>& sorted, const std::vector<std::string>& hosts) {
  return std::any_of(hosts.begin(), hosts.end(), [&](const std::string& h) {
    return std::binary_search(sorted.begin(), sorted.end(), h);
  });
}

JobInfo InfoOf(const Group& g, const std::vector<JobKeys>& files,
               const std::vector<std::string>& paths) {
  JobInfo info;
  std::vector<size_t> members = g.files;
  std::sort(members.begin(), members.end());
  info.files = static_cast<uint32_t>(members.size());
  if (!members.empty()) info.first_file = paths[members.front()];
  std::vector<int32_t> ranks;
  uint32_t unranked = 0;
  std::vector<std::pair<std::string, int>> kinds;  // in order of first appearance
  for (size_t i : members) {
    const JobKeys& k = files[i];
    ranks.insert(ranks.end(), k.ranks.begin(), k.ranks.end());
    unranked += k.unranked;
    info.bytes += k.bytes;
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&](const auto& p) { return p.first == k.what; });
    if (it == kinds.end()) {
      kinds.emplace_back(k.what, 1);
    } else {
      ++it->second;
    }
  }
  SortUnique(ranks);
  info.ranks = static_cast<uint32_t>(ranks.size()) + unranked;
  for (const auto& [what, n] : kinds) {
    info.what +=
        fmt::format("{}{} {}{}", info.what.empty() ? "" : ", ", n, what, n == 1 ? "" : "s");
  }
  info.world_size = g.world;
  info.first_ns = g.first_ns;
  info.last_ns = g.last_ns;
  info.hosts = HostsOf(g, files);
  return info;
}

}  // namespace

JobKeys KeysOfFile(const RunBuilder& b, uint64_t bytes) {
  JobKeys k;
  k.bytes = bytes;
  const HangData& hang = b.hang();
  // A trace or timeline with nothing in it (an nsys report without kernels)
  // names no job: its notes go with the job diagnosed.
  bool traced = std::any_of(b.traces().begin(), b.traces().end(), [](const RankTrace& t) {
    return !t.ops.empty() || !t.steps.empty() || !t.collectives.empty();
  });
  bool timeline = std::any_of(b.op_timelines().begin(), b.op_timelines().end(),
                              [](const OpTimeline& t) { return !t.ops.empty(); });
  bool job = !b.series().empty() || !b.unattributed().empty() || traced || timeline ||
             !b.tool_reports().empty() || !b.nvrx_reports().empty() || !hang.dumps.empty() ||
             !hang.events.empty();
  bool machine = !b.gpus().empty() || HasNetwork(b.network());
  if (!job && !machine) return k;
  k.kind = job ? JobKeys::Kind::kJob : JobKeys::Kind::kMachine;
  k.what = Label(b);
  if (job) {
    KeysOfSteps(b, k);
    KeysOfTraces(b, k);
    for (const OpTimeline& t : b.op_timelines()) {
      if (t.layout) StateWorld(k, t.layout->world());
      for (const TimelineWorker& w : t.workers) {
        if (w.rank) {
          k.ranks.push_back(*w.rank);
        } else {
          ++k.unranked;
        }
      }
    }
    for (const LayoutStatement& l : b.layouts()) StateWorld(k, l.layout.world());
    for (const FlightRecorderDump& d : hang.dumps) {
      if (d.rank) k.ranks.push_back(*d.rank);
    }
    for (const HangEvent& e : hang.events) {
      if (!e.host.empty()) k.hosts.push_back(e.host);
    }
  }
  MachineHosts(b, k);
  SortUnique(k.ranks);
  SortUnique(k.hosts);
  return k;
}

JobAssignment AssignJobs(const std::vector<JobKeys>& files, const std::vector<std::string>& paths,
                         std::optional<int32_t> wanted) {
  JobAssignment out;
  out.job_of_file.assign(files.size(), 0);
  std::vector<Ambiguous> ambiguous;
  std::vector<Group> groups = GroupJobFiles(files, ambiguous);
  jobs_internal::SplitRunsSideBySide(groups, files, paths, ambiguous);
  if (groups.size() <= 1) {
    // One job or none: every file is read, as before jobs were told apart.
    if (!groups.empty()) out.split.jobs.push_back(InfoOf(groups[0], files, paths));
    return out;
  }
  std::vector<std::vector<std::string>> hosts;
  for (const Group& g : groups) hosts.push_back(HostsOf(g, files));
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].kind != JobKeys::Kind::kMachine) continue;
    std::vector<size_t> fits;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (SharesHost(hosts[g], files[i].hosts)) fits.push_back(g);
    }
    if (fits.size() == 1) {
      groups[fits[0]].files.push_back(i);
    } else {
      ambiguous.push_back({i, fits});
    }
  }
  // By folder, against the groups as the evidence formed them.
  const FolderIndex folders(groups, paths);
  std::vector<std::pair<size_t, size_t>> by_folder;
  std::vector<size_t> unplaced;
  for (const Ambiguous& a : ambiguous) {
    if (std::optional<size_t> g = folders.Nearest(paths[a.file], a.among)) {
      by_folder.emplace_back(a.file, *g);
    } else {
      unplaced.push_back(a.file);
    }
  }
  for (const auto& [i, g] : by_folder) groups[g].files.push_back(i);
  // Jobs in the order of their first file.
  for (Group& g : groups) std::sort(g.files.begin(), g.files.end());
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.files.front() < b.files.front(); });
  for (size_t g = 0; g < groups.size(); ++g) {
    out.split.jobs.push_back(InfoOf(groups[g], files, paths));
    for (size_t i : groups[g].files) out.job_of_file[i] = static_cast<int32_t>(g);
  }
  for (size_t i : unplaced) out.job_of_file[i] = kUnplacedFile;
  out.split.unplaced = static_cast<uint32_t>(unplaced.size());

  const std::vector<JobInfo>& jobs = out.split.jobs;
  if (wanted && *wanted >= 1 && static_cast<size_t>(*wanted) <= jobs.size()) {
    out.split.chosen = static_cast<size_t>(*wanted - 1);
    out.split.chosen_by_flag = true;
  } else {
    auto size_of = [](const JobInfo& j) { return std::make_tuple(j.ranks, j.files, j.bytes); };
    for (size_t g = 1; g < jobs.size(); ++g) {
      if (size_of(jobs[g]) > size_of(jobs[out.split.chosen])) out.split.chosen = g;
    }
  }
  // Files nothing was read from keep their data-quality notes in the
  // diagnosis.
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].kind == JobKeys::Kind::kNone) {
      out.job_of_file[i] = static_cast<int32_t>(out.split.chosen);
    }
  }
  return out;
}

void NoteLeftOut(JobAssignment& jobs, Run& run) {
  if (!jobs.split.several()) return;
  const std::vector<JobInfo>& list = jobs.split.jobs;
  for (size_t i = 0; i < run.files.size(); ++i) {
    int32_t job = jobs.job_of_file[i];
    if (job == static_cast<int32_t>(jobs.split.chosen)) continue;
    const std::string& path = run.files[i].path;
    if (job == kUnplacedFile) {
      run.diagnostics.Add(
          DiagCode::kJobUnplaced, path, 0,
          fmt::format("read as {}, but the evidence fits several of the {} jobs found, or "
                      "none (world size, time, ranks, hosts, folder): left out rather than "
                      "guessed; diagnose its job's files alone to use it",
                      run.files[i].format, list.size()));
      continue;
    }
    const JobInfo& j = list[static_cast<size_t>(job)];
    run.diagnostics.Add(DiagCode::kJobOther, path, 0,
                        fmt::format("belongs to job {} of {} ({}): not diagnosed here; `--job {}` "
                                    "diagnoses it",
                                    job + 1, list.size(), j.what, job + 1));
  }
  run.jobs = std::move(jobs.split);
}

}  // namespace laggard
