#include "analysis/hangs/hang_rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

namespace laggard::hang_internal {

std::string RankList(const std::vector<int32_t>& ranks, size_t max) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size() && i < max; ++i) parts.push_back(std::to_string(ranks[i]));
  std::string s = fmt::format("{}", fmt::join(parts, ", "));
  if (ranks.size() > max) s += fmt::format(" (+{} more)", ranks.size() - max);
  return s;
}

std::string Ranks(const std::vector<int32_t>& ranks, size_t max) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + RankList(ranks, max);
}

std::string FramesText(const std::vector<StackFrame>& frames) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < frames.size() && i < 4; ++i) {
    parts.push_back(fmt::format("{} ({}:{})", frames[i].name, frames[i].file, frames[i].line));
  }
  return fmt::format("{}", fmt::join(parts, " <- "));
}

std::string GroupName(const HangGroupState& g) {
  if (g.pg_id == "?") return "a process group the lines do not name";
  std::string what = g.pg_desc;
  if (g.matched && !g.members.empty() && g.pg_desc != "default_pg") {
    what += fmt::format("{}ranks {}", what.empty() ? "" : ", ", RankListText(g.members));
  }
  return what.empty() ? fmt::format("process group {}", g.pg_id)
                      : fmt::format("process group {} ({})", g.pg_id, what);
}

double ConfidenceOf(const HangGroupState& g) {
  bool dumps = std::all_of(g.ranks.begin(), g.ranks.end(),
                           [](const HangRankState& s) { return s.from_dump; });
  if (!dumps) return kConfidenceLines;
  return !g.members.empty() && g.ranks.size() == g.members.size() ? kConfidenceAllDumps
                                                                  : kConfidencePartial;
}

void AddStateEvidence(Finding& f, const HangRankState& s) {
  std::string where = fmt::format("rank {}: last enqueued #{}, last completed #{}", s.rank,
                                  s.enqueued ? std::to_string(*s.enqueued) : "?",
                                  s.completed ? std::to_string(*s.completed) : "?");
  if (s.started && s.started != s.enqueued) where += fmt::format(", last started #{}", *s.started);
  if (!s.op_waiting.empty()) {
    where += fmt::format(", waiting in {}", s.op_waiting);
    if (!s.sizes_waiting.empty() && s.sizes_waiting != "[]") where += " " + s.sizes_waiting;
  }
  if (s.timed_out) where += fmt::format(", watchdog on #{}", *s.timed_out);
  f.evidence.push_back({where, s.src});
  if (!s.frames.empty()) {
    f.evidence.push_back(
        {fmt::format("rank {}'s last entry's stack: {}", s.rank, FramesText(s.frames)), s.src});
  }
}

void AddMatchingEvidence(Finding& f, size_t dumps_without_config) {
  if (dumps_without_config == 0) return;
  f.evidence.push_back(
      {fmt::format("{} Flight Recorder dump{} without pg_config (older versions): {} groups "
                   "could not be matched across ranks and were taken by id, which each process "
                   "counts on its own; one id may name different groups on different ranks",
                   dumps_without_config, dumps_without_config == 1 ? "" : "s",
                   dumps_without_config == 1 ? "its" : "their"),
       std::nullopt});
  f.confidence = std::min(f.confidence, kConfidencePartial);
}

}  // namespace laggard::hang_internal
