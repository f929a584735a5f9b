#include "analysis/hangs/hang_jobs.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace laggard {
namespace {

// "run1/nccl_trace_rank_#": the dump's path with the digits of its file
// name's last number replaced by '#'.
std::string PlaceOf(const std::string& path) {
  std::string s = path;
  size_t name = s.find_last_of('/');
  name = name == std::string::npos ? 0 : name + 1;
  size_t end = s.size();
  while (end > name && !(s[end - 1] >= '0' && s[end - 1] <= '9')) --end;
  size_t start = end;
  while (start > name && s[start - 1] >= '0' && s[start - 1] <= '9') --start;
  // One char, not a literal: g++ 12 misreads the literal copy as overlapping
  // (-Wrestrict, a known false positive).
  if (start < end) s.replace(start, end - start, 1, '#');
  return s;
}

// The size of the default group each dump file's pg_config gives, by
// file: the groups read once, not once per dump.
std::map<uint32_t, int32_t> DefaultGroupSizes(const Run& run) {
  std::map<uint32_t, int32_t> out;
  for (const ProcessGroupInfo& g : run.hang.groups) {
    if (g.desc != "default_pg" && g.id != "0") continue;
    std::optional<int32_t> size =
        g.ranks.empty() ? g.size : std::optional<int32_t>(static_cast<int32_t>(g.ranks.size()));
    if (size) out.try_emplace(g.src.file, *size);
  }
  return out;
}

std::optional<int32_t> WorldOfDump(const std::map<uint32_t, int32_t>& sizes,
                                   const FlightRecorderDump& d) {
  auto it = sizes.find(d.file);
  return it == sizes.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

std::optional<TimeNs> LatestEntry(const FlightRecorderDump& d) {
  std::optional<TimeNs> latest;
  for (const CollectiveRecord& e : d.entries) {
    if (e.created_ns && (!latest || *e.created_ns > *latest)) latest = e.created_ns;
  }
  return latest;
}

// The place of a dump's file; "" for a dump without one (a run built in
// memory).
std::string DumpPlace(const Run& run, const FlightRecorderDump& d) {
  return d.file < run.files.size() ? PlaceOf(run.files[d.file].path) : std::string();
}

// Splits `dumps` by place when some rank has two dumps in it.
void SplitByPlace(const Run& run, std::vector<size_t> dumps,
                  std::vector<std::vector<size_t>>& out) {
  std::set<int32_t> seen;
  bool twice = false;
  for (size_t i : dumps) {
    const auto& r = run.hang.dumps[i].rank;
    if (r && !seen.insert(*r).second) twice = true;
  }
  if (!twice) {
    out.push_back(std::move(dumps));
    return;
  }
  std::map<std::string, std::vector<size_t>> by_place;
  for (size_t i : dumps) {
    by_place[DumpPlace(run, run.hang.dumps[i])].push_back(i);
  }
  for (auto& [place, part] : by_place) out.push_back(std::move(part));
}

}  // namespace

std::vector<DumpJob> SplitDumpJobs(const Run& run) {
  if (run.hang.dumps.size() < 2) {
    std::vector<DumpJob> one;
    if (!run.hang.dumps.empty()) one.push_back(DumpJob{{0}, {}, std::nullopt, {}});
    return one;
  }
  const std::map<uint32_t, int32_t> sizes = DefaultGroupSizes(run);
  std::map<std::optional<int32_t>, std::vector<size_t>> by_world;
  for (size_t i = 0; i < run.hang.dumps.size(); ++i) {
    by_world[WorldOfDump(sizes, run.hang.dumps[i])].push_back(i);
  }
  // Dumps that give no world join the one world the others give.
  if (by_world.size() == 2 && by_world.count(std::nullopt)) {
    auto known = std::find_if(by_world.begin(), by_world.end(),
                              [](const auto& kv) { return kv.first.has_value(); });
    auto& unknown = by_world[std::nullopt];
    known->second.insert(known->second.end(), unknown.begin(), unknown.end());
    std::sort(known->second.begin(), known->second.end());
    by_world.erase(std::nullopt);
  }
  std::vector<std::vector<size_t>> parts;
  for (auto& [world, dumps] : by_world) SplitByPlace(run, std::move(dumps), parts);
  std::vector<DumpJob> jobs;
  for (std::vector<size_t>& part : parts) {
    DumpJob j;
    j.dumps = std::move(part);
    std::set<int32_t> ranks;
    for (size_t i : j.dumps) {
      const FlightRecorderDump& d = run.hang.dumps[i];
      if (d.rank) ranks.insert(*d.rank);
      if (!j.world) j.world = WorldOfDump(sizes, d);
    }
    j.ranks.assign(ranks.begin(), ranks.end());
    j.place = DumpPlace(run, run.hang.dumps[j.dumps.front()]);
    jobs.push_back(std::move(j));
  }
  if (jobs.size() < 2) return jobs;
  // The latest entry of each job, once: the tie-break of equal sizes.
  std::vector<std::pair<DumpJob, std::optional<TimeNs>>> keyed;
  for (DumpJob& j : jobs) {
    std::optional<TimeNs> t;
    for (size_t i : j.dumps) {
      auto e = LatestEntry(run.hang.dumps[i]);
      if (e && (!t || *e > *t)) t = e;
    }
    keyed.emplace_back(std::move(j), t);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.first.dumps.size() != b.first.dumps.size())
      return a.first.dumps.size() > b.first.dumps.size();
    return a.second > b.second;
  });
  jobs.clear();
  for (auto& [j, t] : keyed) jobs.push_back(std::move(j));
  return jobs;
}

Run RunOfDumpJob(const Run& run, const DumpJob& job) {
  // What the hang analysis reads: the files (for names), the hang data and
  // NCCL's rank lines. Step times and traces are not tied to a job, so they
  // stay out: the job's world is what its own dumps say.
  Run out;
  out.files = run.files;
  out.network.nccl_ranks = run.network.nccl_ranks;
  out.hang.events = run.hang.events;
  out.hang.logs = run.hang.logs;
  out.hang.ras = run.hang.ras;
  std::set<uint32_t> files, other_dump_files;
  for (size_t i : job.dumps) {
    out.hang.dumps.push_back(run.hang.dumps[i]);
    files.insert(run.hang.dumps[i].file);
  }
  for (const FlightRecorderDump& d : run.hang.dumps) {
    if (!files.count(d.file)) other_dump_files.insert(d.file);
  }
  // pg_config records of the other jobs' dumps are theirs; groups of log
  // lines and other inputs stay.
  for (const ProcessGroupInfo& g : run.hang.groups) {
    if (!other_dump_files.count(g.src.file)) out.hang.groups.push_back(g);
  }
  return out;
}

}  // namespace laggard
