#include "analysis/hangs/hang_detector.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/common/run_layout.h"
#include "analysis/hangs/hang_episodes.h"
#include "analysis/hangs/hang_groups.h"
#include "analysis/hangs/hang_jobs.h"
#include "analysis/hangs/hang_ras.h"
#include "analysis/hangs/hang_reports.h"
#include "analysis/hangs/hang_rules.h"
#include "analysis/hangs/hang_transport.h"
#include "base/text.h"

namespace laggard {
namespace {

using namespace hang_internal;  // NOLINT: the rules the hang detector's files share

HangAnalysis AnalyzeOneHang(const Run& run, const HangDetectorOptions& o);

std::optional<int32_t> WorldOf(const Run& run, const std::vector<HangEvent>& events) {
  int32_t world = RanksSeen(run);
  for (const RankTrace& t : run.traces) {
    if (t.world_size) world = std::max(world, *t.world_size);
  }
  for (const ProcessGroupInfo& g : run.hang.groups) {
    if (IsDefaultGroup(g.id, g.desc) && g.size) world = std::max(world, *g.size);
    for (int32_t r : g.ranks) world = std::max(world, r + 1);
  }
  for (const FlightRecorderDump& d : run.hang.dumps) {
    if (d.rank) world = std::max(world, *d.rank + 1);
  }
  for (const HangEvent& e : events) {
    if (e.rank) world = std::max(world, *e.rank + 1);
  }
  // A RAS report's largest communicator: every rank of the job is in the
  // world communicator. Where the Job summary gives the GPUs (or
  // processes), only a communicator of that size is the world one: a
  // damaged report prints rows that are not.
  for (const RasReport& r : run.hang.ras) {
    const std::optional<int32_t> total = r.gpus ? r.gpus : r.processes;
    for (const RasCommGroup& g : r.comm_groups) {
      if (!total || g.ranks_per_comm == *total) world = std::max(world, g.ranks_per_comm);
    }
  }
  if (world <= 0) return std::nullopt;
  return world;
}

// A collective whose root finishes before its receivers do: a rank one
// ahead of another in it is no evidence of different paths.
bool RootedOp(std::string_view key) {
  return key == "broadcast" || key == "reduce" || key == "gather" || key == "scatter" ||
         key == "send" || key == "recv";
}

// What a rank runs at N: its op, and its input size where the op's sizes
// must agree. Dumps: the entry of N. Lines: the watchdog's own SeqNum N.
std::optional<std::string> OpAt(const HangRankState& s, int64_t n) {
  if (s.op_waiting.empty()) return std::nullopt;
  const bool at_n = s.from_dump ? WaitsInCollective(s) && s.completed && *s.completed + 1 == n
                                : s.timed_out && *s.timed_out == n;
  if (!at_n) return std::nullopt;
  const std::string key = OpKey(s.op_waiting);
  if (!SizesMustAgree(key) || s.sizes_waiting.empty()) return s.op_waiting;
  return s.op_waiting + " " + s.sizes_waiting;
}

std::optional<Finding> DecideDesync(const HangGroupState& g, const HangDetectorOptions& o) {
  if (!g.stuck_seq) return std::nullopt;
  const int64_t n = *g.stuck_seq;
  // Different ops or sizes at N.
  std::map<std::string, std::vector<int32_t>> by_op;
  for (const HangRankState& s : g.ranks) {
    if (std::optional<std::string> op = OpAt(s, n)) by_op[*op].push_back(s.rank);
  }
  if (by_op.size() > 1) {
    // The odd ones out when one op has a strict majority; on a tie every
    // side, since which took the wrong path is not shown.
    size_t most = 0, at_most = 0;
    for (const auto& [op, ranks] : by_op) most = std::max(most, ranks.size());
    for (const auto& [op, ranks] : by_op) at_most += ranks.size() == most ? 1 : 0;
    const bool strict = at_most == 1;
    std::string majority;
    Finding f = MakeFinding(FindingCode::kHangDesync);
    for (const auto& [op, ranks] : by_op) {
      if (strict && ranks.size() == most) {
        majority = op;
        continue;
      }
      f.ranks.insert(f.ranks.end(), ranks.begin(), ranks.end());
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.entity.rank = f.ranks.front();
    std::vector<std::string> ops;
    for (const auto& [op, ranks] : by_op) {
      ops.push_back(fmt::format("{} on rank {}", op, RankList(ranks, o.max_ranks_listed)));
    }
    f.message = fmt::format(
        "{}: collective #{} is not the same on every rank ({}): {}", GroupName(g), n,
        fmt::join(ops, "; "),
        strict ? fmt::format("{} called a different op", Ranks(f.ranks, o.max_ranks_listed))
               : "no side has a majority, so which one took the wrong path "
                 "is not shown; every side is named");
    f.confidence = ConfidenceOf(g);
    for (const HangRankState& s : g.ranks) AddStateEvidence(f, s);
    f.next_steps.push_back(
        strict ? fmt::format("find where rank {} calls {} differently: a collective under a "
                             "condition only some ranks take, or tensors of rank-dependent shape; "
                             "TORCH_DISTRIBUTED_DEBUG=DETAIL catches the mismatch at its call",
                             f.ranks.front(), majority)
               : fmt::format("compare the code paths of ranks {} at this collective: a collective "
                             "under a condition only some ranks take, or tensors of rank-dependent "
                             "shape; TORCH_DISTRIBUTED_DEBUG=DETAIL catches the mismatch at its "
                             "call",
                             RankList(f.ranks, 4)));
    return f;
  }
  // Ranks past N (they completed it) while others wait in it.
  std::vector<int32_t> behind, ahead;
  int64_t furthest = n - 1;
  std::optional<int64_t> ahead_enqueued, behind_enqueued;  // the least of each side
  auto least = [](std::optional<int64_t>& lo, const std::optional<int64_t>& v) {
    if (v) lo = lo ? std::min(*lo, *v) : *v;
  };
  bool behind_unknown = false;
  for (const HangRankState& s : g.ranks) {
    if (!s.completed) continue;
    if (*s.completed >= n && !s.completed_inferred) {
      ahead.push_back(s.rank);
      furthest = std::max(furthest, *s.completed);
      least(ahead_enqueued, s.enqueued);
    } else if (WaitsInCollective(s) && *s.completed + 1 == n) {
      behind.push_back(s.rank);
      least(behind_enqueued, s.enqueued);
      behind_unknown = behind_unknown || !s.enqueued;
    }
  }
  if (ahead.empty() || behind.empty()) return std::nullopt;
  // The ranks behind issued as many collectives as those ahead: none
  // skipped one; N was issued everywhere and waits on the GPU or the
  // network (a stuck collective, not a desync).
  if (!behind_unknown && behind_enqueued && ahead_enqueued && *behind_enqueued >= *ahead_enqueued)
    return std::nullopt;
  // One apart in a rooted collective: its root finishes first.
  std::string waited;
  for (const HangRankState& s : g.ranks) {
    if (WaitsInCollective(s) && !s.op_waiting.empty()) waited = s.op_waiting;
  }
  if (furthest == n && RootedOp(OpKey(waited))) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kHangDesync);
  f.ranks = behind;
  f.entity.rank = behind.front();
  f.message = fmt::format(
      "{}: {} {} in collective #{} while {} completed it and went on (up to #{}): the "
      "ranks are at different collectives; {} behind by {}",
      GroupName(g), Ranks(behind, o.max_ranks_listed), behind.size() == 1 ? "waits" : "wait", n,
      Ranks(ahead, o.max_ranks_listed), furthest, Ranks(behind, o.max_ranks_listed),
      furthest - (n - 1));
  f.confidence = ConfidenceOf(g);
  for (const HangRankState& s : g.ranks) AddStateEvidence(f, s);
  f.next_steps.push_back(fmt::format(
      "the ranks' collective sequences differ: compare the code paths of ranks {} and {} (a "
      "collective some ranks skip, an uneven number of batches); rerun with "
      "TORCH_DISTRIBUTED_DEBUG=DETAIL",
      RankList(behind, 4), RankList(ahead, 4)));
  return f;
}

// PyTorch's own desync report names the ranks that did not join.
std::optional<Finding> DecideFromReports(const std::vector<HangEvent>& events,
                                         const HangDetectorOptions& o) {
  for (FindingCode code : {FindingCode::kHangDesync, FindingCode::kHangNotJoined}) {
    const HangEventKind kind = code == FindingCode::kHangDesync ? HangEventKind::kCollectiveMismatch
                                                                : HangEventKind::kDesyncReport;
    std::set<int32_t> named;
    std::vector<const HangEvent*> lines;
    for (const HangEvent& e : events) {
      if (e.kind != kind || e.ranks_named.empty()) continue;
      named.insert(e.ranks_named.begin(), e.ranks_named.end());
      lines.push_back(&e);
    }
    if (named.empty()) continue;
    Finding f = MakeFinding(code);
    f.ranks.assign(named.begin(), named.end());
    f.entity.rank = f.ranks.front();
    f.message = code == FindingCode::kHangDesync
                    ? fmt::format(
                          "torch.distributed's collective check (TORCH_DISTRIBUTED_DEBUG=DETAIL) "
                          "found {} running different collectives at one sequence number{} ({} "
                          "check{}; each names both sides of a pair, which side took the wrong "
                          "path is in the code)",
                          Ranks(f.ranks, o.max_ranks_listed),
                          lines.front()->seq ? fmt::format(", first #{}", *lines.front()->seq)
                                             : std::string(),
                          lines.size(), lines.size() == 1 ? "" : "s")
                    : fmt::format(
                          "PyTorch's desync report names {} as not joining the collective "
                          "the others wait in",
                          Ranks(f.ranks, o.max_ranks_listed));
    f.confidence = kConfidenceLines + o.confidence.checked_lines_bonus;
    const bool barrier = std::all_of(lines.begin(), lines.end(), [](const HangEvent* e) {
      return e->detail == "monitoredBarrier";
    });
    if (barrier && code == FindingCode::kHangNotJoined) {
      // Rank 0's own "failed to pass" names them; another rank's send that
      // timed out only implies its peer never entered (gloo's send waits
      // for the receiver).
      const bool own = std::any_of(lines.begin(), lines.end(), [](const HangEvent* e) {
        return e->text.find("failed to pass monitoredBarrier") != std::string::npos;
      });
      f.message =
          own ? fmt::format(
                    "gloo's monitored barrier: rank 0 waited for {}, which never "
                    "entered it",
                    Ranks(f.ranks, o.max_ranks_listed))
              : fmt::format(
                    "gloo's monitored barrier: a rank that reached it timed out "
                    "sending to {}: {} never entered it",
                    Ranks(f.ranks, o.max_ranks_listed), f.ranks.size() == 1 ? "it" : "they");
      if (!own) f.confidence = kConfidenceLines - o.confidence.barrier_implied_penalty;
    }
    for (size_t i = 0; i < lines.size() && i < 4; ++i) {
      f.evidence.push_back({lines[i]->text, lines[i]->src});
    }
    f.next_steps.push_back(
        code == FindingCode::kHangDesync
            ? fmt::format("find where rank {} calls a different collective than its peers (the "
                          "mismatch message gives both)",
                          f.ranks.front())
            : fmt::format("see where rank {} is: `py-spy dump --pid PID` on its host; check its "
                          "GPU (`dmesg | grep -i xid`) and host",
                          f.ranks.front()));
    return f;
  }
  return std::nullopt;
}

std::optional<Finding> DecideProcessMissing(const std::vector<HangEvent>& events,
                                            const HangDetectorOptions& o) {
  // The watchdog aborts its own process (SIGABRT, exit -6) after a
  // timeout: that exit is the hang's consequence, not its cause.
  std::map<int32_t, std::vector<const HangEvent*>> exited;
  for (const HangEvent& e : events) {
    if (e.kind != HangEventKind::kProcessExited || !e.rank) continue;
    if (e.exit_code && *e.exit_code == -6) continue;
    exited[*e.rank].push_back(&e);
  }
  // A rank whose output ends in an uncaught exception (and no exit code)
  // is named only when another rank waited: a hang line of a rank that did
  // not exit. Every rank raising is a failed job, not one that waited.
  const bool waited = std::any_of(events.begin(), events.end(), [&](const HangEvent& e) {
    return e.kind != HangEventKind::kProcessExited && (!e.rank || !exited.contains(*e.rank));
  });
  if (!waited) {
    std::erase_if(exited, [](const auto& r) {
      return std::none_of(r.second.begin(), r.second.end(),
                          [](const HangEvent* e) { return e->exit_code.has_value(); });
    });
  }
  if (exited.empty()) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kHangProcessMissing);
  const HangEvent* code = nullptr;    // the first exit code
  const HangEvent* raised = nullptr;  // the first uncaught exception
  for (const auto& [rank, list] : exited) {
    f.ranks.push_back(rank);
    for (const HangEvent* e : list) {
      f.evidence.push_back({e->text, e->src});
      if (e->exit_code && code == nullptr) code = e;
      if (!e->detail.empty() && raised == nullptr) raised = e;
    }
  }
  f.entity.rank = f.ranks.front();
  const HangEvent& first = *exited.begin()->second.front();
  if (!first.host.empty()) f.entity.host = first.host;
  std::string how;
  if (code != nullptr) how += fmt::format(" (exit code {})", *code->exit_code);
  if (raised != nullptr) {
    how += fmt::format(" on an uncaught exception ({})", Printable(raised->detail, 160));
  }
  f.message = fmt::format("the process of rank {} exited{}{} while its peers waited for it",
                          RankList(f.ranks, o.max_ranks_listed), how,
                          first.host.empty() ? "" : " on " + first.host);
  f.confidence = kConfidenceLines;
  if (raised != nullptr) {
    f.next_steps.push_back(fmt::format(
        "fix what rank {} raised (its traceback is the evidence); the ranks that lost their "
        "connection or timed out only waited for it",
        *raised->rank));
  } else {
    f.next_steps.push_back(fmt::format(
        "read rank {}'s stderr for the error before it exited; exit -9 is a kill (the OOM "
        "killer: `dmesg | grep -i oom`), a negative code -N is signal N",
        f.ranks.front()));
  }
  return f;
}

// What hang lines that place no rank in a group show: "2 watchdog
// timeouts, 3 process exits (exit codes -6, 1)", and the first line of
// each kind as evidence.
std::string UnplacedLines(const std::vector<HangEvent>& events, Finding& f) {
  static constexpr std::string_view kWords[] = {"watchdog timeout",
                                                "watchdog exception",
                                                "blocking-wait timeout",
                                                "desync report",
                                                "collective mismatch",
                                                "gloo error",
                                                "NCCL transport error",
                                                "remote error",
                                                "process exit",
                                                "watchdog abort line",
                                                "dump-signal line",
                                                "fr_trace missing-ranks report",
                                                "fr_trace mismatch report",
                                                "HCA event",
                                                "NET size mismatch",
                                                "CUDA error",
                                                "verbs call failure"};
  static_assert(std::size(kWords) == static_cast<size_t>(HangEventKind::kCount));
  std::array<size_t, std::size(kWords)> count{};
  std::array<const HangEvent*, std::size(kWords)> first{};
  std::set<int32_t> exits;
  for (const HangEvent& e : events) {
    size_t k = static_cast<size_t>(e.kind);
    if (count[k]++ == 0) first[k] = &e;
    if (e.exit_code) exits.insert(*e.exit_code);
  }
  std::vector<std::string> parts;
  for (size_t k = 0; k < count.size(); ++k) {
    if (count[k] == 0) continue;
    std::string p = fmt::format("{} {}{}", count[k], kWords[k], count[k] == 1 ? "" : "s");
    if (static_cast<HangEventKind>(k) == HangEventKind::kProcessExited && !exits.empty()) {
      p += fmt::format(" (exit code{} {})", exits.size() == 1 ? "" : "s", fmt::join(exits, ", "));
    }
    parts.push_back(std::move(p));
    if (f.evidence.size() < 6) {
      f.evidence.push_back(
          {fmt::format("first {}: {}", kWords[k], Printable(first[k]->text, 160)), first[k]->src});
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

Finding Inconclusive(const Run& run, const std::vector<HangEvent>& events,
                     const std::vector<HangGroupState>& groups, const HangDetectorOptions& o) {
  Finding f = MakeFinding(FindingCode::kHangInconclusive);
  f.entity.job = true;
  std::vector<std::string> parts;
  for (const HangGroupState& g : groups) {
    std::vector<int32_t> silent;
    for (int32_t m : g.members) {
      if (std::none_of(g.ranks.begin(), g.ranks.end(),
                       [&](const HangRankState& s) { return s.rank == m; })) {
        silent.push_back(m);
      }
    }
    std::vector<int32_t> reported;
    for (const HangRankState& s : g.ranks) reported.push_back(s.rank);
    std::string p =
        fmt::format("{}: {} reported", GroupName(g), Ranks(reported, o.max_ranks_listed));
    if (g.stuck_seq) p += fmt::format(", waiting in #{}", *g.stuck_seq);
    if (!silent.empty()) {
      p += fmt::format(
          "; {} said nothing (no dump, no hang line): not evidence that {} the ones "
          "missing",
          Ranks(silent, o.max_ranks_listed), silent.size() == 1 ? "it is" : "they are");
    }
    parts.push_back(p);
  }
  if (parts.empty()) {
    // No line names a global rank or the group its rank belongs to
    // (torch 1.x's "[Rank M]" is the rank in a group it does not name;
    // torchrun names local ranks): what the lines are, not who held it.
    const std::string lines = events.empty() ? std::string() : UnplacedLines(events, f);
    f.message = lines.empty()
                    ? std::string(
                          "the inputs show a hang but no rank's progress in a process "
                          "group")
                    : fmt::format(
                          "the inputs show a hang, but no line places a rank in a process "
                          "group (no global rank, no group named): {}",
                          lines);
  } else {
    f.message = fmt::format("the evidence does not tell which rank held the job: {}",
                            fmt::join(parts, "; "));
  }
  for (const HangLogInfo& log : run.hang.logs) {
    if (!log.truncated) continue;
    f.evidence.push_back(
        {fmt::format("log cut short ({}): the ranks it no longer shows may be there",
                     log.truncation),
         SourceRef{log.file, 0}});
  }
  for (const HangGroupState& g : groups) {
    for (size_t i = 0; i < g.ranks.size() && f.evidence.size() < 8; ++i) {
      AddStateEvidence(f, g.ranks[i]);
    }
  }
  f.confidence = o.confidence.inconclusive;
  f.next_steps.push_back(std::string(Describe(FindingCode::kHangInconclusive).next_step));
  return f;
}

// "16 dumps (ranks 0-15, world 16, run1/nccl_trace_rank_#)".
std::string DumpJobText(const DumpJob& j) {
  return fmt::format("{} dump{} ({} {}{}, {})", j.dumps.size(), j.dumps.size() == 1 ? "" : "s",
                     j.ranks.size() == 1 ? "rank" : "ranks", RankListText(j.ranks),
                     j.world ? fmt::format(", world {}", *j.world) : std::string(), j.place);
}

}  // namespace

HangAnalysis AnalyzeHang(const Run& all, const HangDetectorOptions& o) {
  // Dumps of several jobs: one job's, never their groups matched together.
  const std::vector<DumpJob> jobs = SplitDumpJobs(all);
  std::optional<Run> one;
  if (jobs.size() > 1) one = RunOfDumpJob(all, jobs.front());
  const Run& run = one ? *one : all;
  HangAnalysis a = AnalyzeOneHang(run, o);
  a.dump_jobs = std::max<size_t>(jobs.size(), 1);
  if (jobs.size() > 1 && !a.findings.empty()) {
    std::vector<std::string> others;
    for (size_t i = 1; i < jobs.size(); ++i) others.push_back(DumpJobText(jobs[i]));
    Finding& f = a.findings.front();
    f.evidence.insert(
        f.evidence.begin(),
        {fmt::format("the inputs hold Flight Recorder dumps of {} jobs (different world sizes, "
                     "or a rank dumped twice): this is the one of {}; left out: {} — each "
                     "analysed apart below",
                     jobs.size(), DumpJobText(jobs.front()), fmt::join(others, "; ")),
         std::nullopt});
    // Each other job alone: its deciding finding, said to be that job's.
    for (size_t i = 1; i < jobs.size(); ++i) {
      HangAnalysis other = AnalyzeOneHang(RunOfDumpJob(all, jobs[i]), o);
      if (other.findings.empty()) continue;
      Finding g = std::move(other.findings.front());
      const std::string job = fmt::format("another job ({}): ", DumpJobText(jobs[i]));
      g.message = job + g.message;
      for (std::string& step : g.next_steps) step = job + step;
      a.findings.push_back(std::move(g));
    }
  }
  return a;
}

namespace {

HangAnalysis AnalyzeOneHang(const Run& run, const HangDetectorOptions& o) {
  HangAnalysis a;
  // The latest stop's lines only: a log appended across restarts holds
  // several, with sequence numbers that start again.
  const HangEpisodeChoice episodes = LatestHangEpisode(run.hang.events);
  std::vector<HangEvent> latest;
  if (episodes.episodes() > 1) {
    latest.reserve(episodes.chosen.size());
    for (size_t i : episodes.chosen) latest.push_back(run.hang.events[i]);
  }
  const std::vector<HangEvent>& events = episodes.episodes() > 1 ? latest : run.hang.events;
  a.episodes = episodes.episodes();
  a.events_left_out = run.hang.events.size() - events.size();

  const bool other = !run.hang.dumps.empty() || !events.empty();
  a.hang = other || RasShowsProblem(run);
  std::optional<int32_t> world = WorldOf(run, events);
  std::optional<Finding> ras_behind = DecideRasBehind(run, world, other || a.hang, o);
  a.hang = a.hang || ras_behind.has_value();
  if (!a.hang) return a;
  a.world = world;
  HangGroups collected = CollectHangGroups(run, events, a.world);
  a.groups = std::move(collected.groups);
  a.dumps_without_config = collected.dumps_without_config;
  a.statuses_unplaced = collected.statuses_unplaced;

  // The decided finding first: per group desync, then a host that stopped
  // issuing or ranks that did not join; then PyTorch's own reports; a
  // process that died; a process RAS lost; ranks behind in RAS's operation
  // counts; transport errors; a collective stuck with everyone in it; else
  // inconclusive.
  std::optional<Finding> decided;
  for (const HangGroupState& g : a.groups) {
    if ((decided = DecideDesync(g, o))) break;
  }
  if (!decided) decided = DecideNotJoined(a.groups, o);
  if (!decided) decided = DecideFrTrace(events);
  if (!decided) decided = DecideFromReports(events, o);
  if (!decided) decided = DecideUnplacedMismatch(events);
  if (!decided) decided = DecideNetSizeMismatch(run, events);
  std::optional<Finding> exited = DecideProcessMissing(events, o);
  std::optional<Finding> transport = DecideTransport(run, events);
  std::optional<Finding> stuck = DecideStuck(a.groups, decided.has_value(), o);
  std::optional<Finding> ras_lost = DecideRasLost(run, a.world, o);
  if (!decided && exited) decided = std::exchange(exited, std::nullopt);
  if (!decided && ras_lost) decided = std::exchange(ras_lost, std::nullopt);
  if (!decided && ras_behind) decided = std::exchange(ras_behind, std::nullopt);
  if (!decided && transport) {
    // A stuck collective with transport errors beside it: the errors name
    // where.
    decided = std::exchange(transport, std::nullopt);
    if (stuck) {
      decided->evidence.insert(decided->evidence.begin(), {stuck->message, std::nullopt});
      stuck.reset();
    }
  }
  if (!decided && stuck) decided = std::exchange(stuck, std::nullopt);
  if (!decided) {
    decided = Inconclusive(run, events, a.groups, o);
    if (a.statuses_unplaced > 0) {
      decided->evidence.push_back(
          {fmt::format("{} Flight Recorder group status{} not compared with other ranks: no "
                       "entry left in the dump's ring buffer ties the group's id to pg_config",
                       a.statuses_unplaced, a.statuses_unplaced == 1 ? "" : "es"),
           std::nullopt});
    }
  }
  AddEpisodeEvidence(episodes, *decided);
  AddMatchingEvidence(*decided, a.dumps_without_config);
  a.findings.push_back(std::move(*decided));
  for (auto* extra : {&exited, &ras_lost, &ras_behind, &transport, &stuck}) {
    if (*extra) a.findings.push_back(std::move(**extra));
  }
  return a;
}

}  // namespace

}  // namespace laggard
