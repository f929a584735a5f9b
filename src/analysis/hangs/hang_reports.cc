#include "analysis/hangs/hang_reports.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace laggard {
namespace {

constexpr double kConfidenceReport = 0.6;    // a tool that compared every rank's record
constexpr double kConfidenceUnplaced = 0.4;  // lines that name no group nor global rank
constexpr size_t kEvidenceLines = 4;

void AddLines(Finding& f, const std::vector<const HangEvent*>& lines) {
  for (size_t i = 0; i < lines.size() && i < kEvidenceLines; ++i) {
    f.evidence.push_back({lines[i]->text, lines[i]->src});
  }
}

std::string GroupText(const HangEvent& e) {
  if (e.pg_id.empty() && e.pg_desc.empty()) return "a process group";
  if (e.pg_desc.empty()) return fmt::format("process group {}", e.pg_id);
  if (e.pg_id.empty()) return fmt::format("process group {}", e.pg_desc);
  return fmt::format("process group {} ({})", e.pg_id, e.pg_desc);
}

}  // namespace

std::string OpKey(std::string_view op) {
  if (size_t colon = op.find(':'); colon != std::string_view::npos) op.remove_prefix(colon + 1);
  std::string out;
  for (char c : op) {
    if (c != '_') out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  }
  return out;
}

bool SizesMustAgree(std::string_view key) {
  static constexpr std::string_view kSame[] = {
      "allreduce",         "broadcast",           "reduce", "allgatherbase", "allgatherintotensor",
      "reducescatterbase", "reducescattertensor", "barrier"};
  return std::find(std::begin(kSame), std::end(kSame), key) != std::end(kSame);
}

std::optional<Finding> DecideFrTrace(const std::vector<HangEvent>& events) {
  std::vector<const HangEvent*> missing_lines, mismatch_lines;
  std::set<int32_t> missing, differing;
  for (const HangEvent& e : events) {
    if (e.kind == HangEventKind::kFrTraceNotJoined && !e.ranks_named.empty()) {
      missing.insert(e.ranks_named.begin(), e.ranks_named.end());
      missing_lines.push_back(&e);
    } else if (e.kind == HangEventKind::kFrTraceMismatch) {
      differing.insert(e.ranks_named.begin(), e.ranks_named.end());
      mismatch_lines.push_back(&e);
    }
  }
  if (!missing.empty()) {
    const HangEvent& first = *missing_lines.front();
    Finding f = MakeFinding(FindingCode::kHangNotJoined);
    f.ranks.assign(missing.begin(), missing.end());
    f.entity.rank = f.ranks.front();
    f.message = fmt::format(
        "torch's Flight Recorder analyser (fr_trace) compared the ranks' dumps: {} {} never "
        "joined collective{} of {}{}",
        f.ranks.size() == 1 ? "rank" : "ranks", RankListText(f.ranks),
        first.seq ? fmt::format(" #{}", *first.seq) : std::string(), GroupText(first),
        first.op.empty() ? std::string() : " (" + first.op + ")");
    f.confidence = kConfidenceReport;
    AddLines(f, missing_lines);
    f.next_steps.push_back(fmt::format(
        "see where rank {} is: `py-spy dump --pid PID` on its host; check its GPU (`dmesg | grep "
        "-i xid`) and host",
        f.ranks.front()));
    return f;
  }
  if (mismatch_lines.empty()) return std::nullopt;
  const HangEvent& first = *mismatch_lines.front();
  Finding f = MakeFinding(FindingCode::kHangDesync);
  f.entity.job = true;
  f.message = fmt::format(
      "torch's Flight Recorder analyser (fr_trace) found collective{} of {}{} not the same on "
      "every rank{}{}; it compares each rank with one reference rank and calls every rank that "
      "differs a culprit, so which side took the wrong path is not shown: no rank is named",
      first.seq ? fmt::format(" #{}", *first.seq) : std::string(), GroupText(first),
      first.op.empty() ? std::string() : " (" + first.op + ")",
      differing.empty() ? std::string()
                        : fmt::format(": ranks {} differ from the reference",
                                      RankListText({differing.begin(), differing.end()})),
      first.detail.empty() ? std::string() : " (" + first.detail + ")");
  f.confidence = kConfidenceReport;
  AddLines(f, mismatch_lines);
  f.next_steps.push_back(
      "compare the code paths of the ranks at this collective: a collective under a condition "
      "only some ranks take, or tensors of rank-dependent shape; TORCH_DISTRIBUTED_DEBUG=DETAIL "
      "catches the mismatch at its call");
  return f;
}

namespace {

// The one rank whose last logged step is beyond every other rank's, with
// step logs of >= 3 ranks that all end at one step but it; nullopt
// otherwise (logs flushed unevenly end at different steps: no one is ahead
// for sure).
std::optional<std::pair<int32_t, int64_t>> OneRankAhead(const Run& run, int64_t& others_last) {
  constexpr size_t kMinRanks = 3;  // with 2, either end may be the odd one
  std::vector<std::pair<int64_t, int32_t>> last;
  for (const StepSeries& s : run.ranks) {
    if (!s.steps.empty()) last.emplace_back(s.steps.back().step, s.info.rank);
  }
  if (last.size() < kMinRanks) return std::nullopt;
  std::sort(last.begin(), last.end());
  const auto& [top, rank] = last.back();
  others_last = last[last.size() - 2].first;
  if (top <= others_last || last.front().first != others_last) return std::nullopt;
  return std::make_pair(rank, top);
}

}  // namespace

std::optional<Finding> DecideNetSizeMismatch(const Run& run, const std::vector<HangEvent>& events) {
  std::vector<const HangEvent*> lines;
  std::set<std::string> ends;
  bool nccl = false;
  for (const HangEvent& e : events) {
    if (e.kind != HangEventKind::kNetSizeMismatch) continue;
    lines.push_back(&e);
    if (!e.host.empty()) ends.insert(e.host);
    if (!e.peer.empty()) ends.insert(e.peer);
    nccl = nccl || e.detail.find("gloo") == std::string::npos;
  }
  if (lines.empty()) return std::nullopt;
  const HangEvent& first = *lines.front();
  Finding f = MakeFinding(FindingCode::kHangDesync);
  f.entity.job = true;
  f.message = fmt::format(
      "{} found the two ends of a connection posting different sizes{}{}: the ranks disagree on "
      "a collective (a mismatch in the code{})",
      nccl ? "NCCL's network transport" : "gloo",
      first.host.empty() && first.peer.empty()
          ? std::string()
          : fmt::format(" between {}", fmt::join(ends, " and ")),
      first.detail.empty() ? std::string() : " (" + first.detail + ")",
      nccl ? ", or different NCCL settings or versions on the hosts" : "");
  f.confidence = kConfidenceReport;
  AddLines(f, lines);
  int64_t others_last = 0;
  if (auto ahead = OneRankAhead(run, others_last)) {
    f.entity.job = false;
    f.entity.rank = ahead->first;
    f.ranks = {ahead->first};
    f.message += fmt::format(
        "; rank {}'s log goes on to step {} while every other rank's ends at step {} or before: "
        "it went past the collective the others were in, and called a different one",
        ahead->first, ahead->second, others_last);
    f.next_steps.push_back(fmt::format(
        "find where rank {} skips or adds a collective that the others call (a condition on the "
        "rank or its data around step {}); TORCH_DISTRIBUTED_DEBUG=DETAIL names both sides",
        ahead->first, ahead->second));
  } else {
    f.message += "; neither end is named, since either may be the odd one";
  }
  f.next_steps.push_back(
      nccl ? "compare NCCL's version and NCCL_* settings on both hosts (NCCL_DEBUG=INFO prints "
             "them at init), then the collectives the ranks call around the error "
             "(TORCH_DISTRIBUTED_DEBUG=DETAIL)"
           : "find the collectives the ranks call around the error "
             "(TORCH_DISTRIBUTED_DEBUG=DETAIL checks that they match)");
  return f;
}

std::optional<Finding> DecideUnplacedMismatch(const std::vector<HangEvent>& events) {
  // Every timeout line that names no group and no global rank.
  std::vector<const HangEvent*> lines;
  for (const HangEvent& e : events) {
    if (e.kind != HangEventKind::kWatchdogTimeout || e.rank || !e.pg_id.empty() ||
        !e.pg_desc.empty() || !e.pg_guid.empty())
      continue;
    if (!e.group_rank || !e.seq || e.op.empty()) return std::nullopt;  // cannot be compared
    lines.push_back(&e);
  }
  if (lines.size() < 2) return std::nullopt;
  // One number and one timeout: one group's lines, not several jobs'.
  for (const HangEvent* e : lines) {
    if (e->seq != lines.front()->seq || e->timeout_ms != lines.front()->timeout_ms)
      return std::nullopt;
  }
  std::map<std::string, std::set<int32_t>> by_op;
  std::set<int32_t> seen;
  for (const HangEvent* e : lines) {
    std::string key = e->op;
    if (SizesMustAgree(OpKey(e->op)) && e->numel_in)
      key += fmt::format(" (numel {})", *e->numel_in);
    by_op[key].insert(*e->group_rank);
    seen.insert(*e->group_rank);
  }
  if (by_op.size() < 2 || seen.size() < 2) return std::nullopt;
  for (const auto& [op, ranks] : by_op) {
    for (const auto& [other, other_ranks] : by_op) {
      if (&op == &other) continue;
      for (int32_t r : ranks) {
        if (other_ranks.count(r)) return std::nullopt;  // one rank, two ops: not one group
      }
    }
  }
  size_t most = 0, at_most = 0;
  for (const auto& [op, ranks] : by_op) most = std::max(most, ranks.size());
  for (const auto& [op, ranks] : by_op) at_most += ranks.size() == most ? 1 : 0;
  std::vector<std::string> sides;
  std::vector<int32_t> odd;
  for (const auto& [op, ranks] : by_op) {
    std::vector<int32_t> r(ranks.begin(), ranks.end());
    sides.push_back(
        fmt::format("{} on group rank{} {}", op, r.size() == 1 ? "" : "s", RankListText(r)));
    if (at_most != 1 || ranks.size() != most) odd.insert(odd.end(), r.begin(), r.end());
  }
  std::sort(odd.begin(), odd.end());
  Finding f = MakeFinding(FindingCode::kHangDesync);
  f.entity.job = true;
  f.message = fmt::format(
      "watchdog timeouts of one collective #{} run different collectives ({}): {}; the lines "
      "name ranks within a process group they do not name (torch before 2.2), so no global rank "
      "is named",
      *lines.front()->seq, fmt::join(sides, "; "),
      at_most == 1 ? fmt::format("group rank{} {} called a different op",
                                 odd.size() == 1 ? "" : "s", RankListText(odd))
                   : std::string("no side has a majority, so which took the wrong path is not "
                                 "shown"));
  f.confidence = kConfidenceUnplaced;
  AddLines(f, lines);
  f.next_steps.push_back(
      "compare the code paths of the ranks at this collective (a collective under a condition "
      "only some ranks take, or tensors of rank-dependent shape); rerun with "
      "TORCH_DISTRIBUTED_DEBUG=DETAIL, and with a torch that prints the global rank ([rankN]:) "
      "and the process group");
  return f;
}

}  // namespace laggard
