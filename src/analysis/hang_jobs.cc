#include "analysis/hang_jobs.h"

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

// The size of the default group a dump's pg_config gives.
std::optional<int32_t> WorldOfDump(const Run& run, const FlightRecorderDump& d) {
  for (const ProcessGroupInfo& g : run.hang.groups) {
    if (g.src.file != d.file || (g.desc != "default_pg" && g.id != "0")) continue;
    if (!g.ranks.empty()) return static_cast<int32_t>(g.ranks.size());
    if (g.size) return g.size;
  }
  return std::nullopt;
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
  std::map<std::optional<int32_t>, std::vector<size_t>> by_world;
  for (size_t i = 0; i < run.hang.dumps.size(); ++i) {
    by_world[WorldOfDump(run, run.hang.dumps[i])].push_back(i);
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
      if (!j.world) j.world = WorldOfDump(run, d);
    }
    j.ranks.assign(ranks.begin(), ranks.end());
    j.place = DumpPlace(run, run.hang.dumps[j.dumps.front()]);
    jobs.push_back(std::move(j));
  }
  auto latest = [&](const DumpJob& j) {
    std::optional<TimeNs> t;
    for (size_t i : j.dumps) {
      auto e = LatestEntry(run.hang.dumps[i]);
      if (e && (!t || *e > *t)) t = e;
    }
    return t;
  };
  std::stable_sort(jobs.begin(), jobs.end(), [&](const DumpJob& a, const DumpJob& b) {
    if (a.dumps.size() != b.dumps.size()) return a.dumps.size() > b.dumps.size();
    return latest(a) > latest(b);
  });
  return jobs;
}

Run RunOfDumpJob(const Run& run, const DumpJob& job) {
  Run out = run;
  std::set<uint32_t> files;
  out.hang.dumps.clear();
  for (size_t i : job.dumps) {
    out.hang.dumps.push_back(run.hang.dumps[i]);
    files.insert(run.hang.dumps[i].file);
  }
  // pg_config records of the other jobs' dumps are theirs; groups of log
  // lines and other inputs stay.
  std::set<uint32_t> other_dump_files;
  for (const FlightRecorderDump& d : run.hang.dumps) {
    if (!files.count(d.file)) other_dump_files.insert(d.file);
  }
  std::erase_if(out.hang.groups,
                [&](const ProcessGroupInfo& g) { return other_dump_files.count(g.src.file) > 0; });
  return out;
}

}  // namespace laggard
