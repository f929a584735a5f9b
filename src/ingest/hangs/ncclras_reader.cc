// NCCL RAS status reports: what `ncclras` (or `echo status | nc localhost
// 28028`, `verbose status`) prints, NCCL 2.24 and later, read into
// HangData::ras (model/hang.h). The wording is NCCL's src/ras/client_support.cc
// (rasClientRunInit, rasClientRunComms); tests/data/hangs/ncclras/README.md
// says which samples are NCCL's own and which versions print what.
//
//   NCCL version 2.30.7 compiled with CUDA 12.8          banner (2.26+)
//   CUDA runtime version 12080, driver version 13000
//   Job summary
//   ===========
//     Nodes  Processes         GPUs  Processes     GPUs  totals, when every node
//   (total)   per node  per process    (total)  (total)  runs as many processes
//         2          4            1          8        8  of as many GPUs; else
//                                                        distributions, then a
//                                                        3-column (total) row
//   Communicators... (0.002s)
//   =============
//   Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
//       #  in group  per comm  per node  per comm  in group
//       0         1         2       3-4         8         7   RUNNING  INCOMPLETE
//   Errors
//   ======
//   INCOMPLETE                                           job level: processes
//     Missing communicator data from 1 job process       that did not answer
//     Process 3748990 on node node1 managing GPU 3
//   DEAD                                                 ... nor for 60 s
//     1 job process is considered dead (unreachable via the RAS network)
//   #0-0 (1bdb83b038775869) INCOMPLETE                   per communicator
//     Missing communicator data from 1 rank
//     Rank 7 -- GPU 3 managed by process 3748990 on node node1
//                                    (2.24, 2.25: "The missing rank: 7")
//   #0-0 (...) ERROR
//     Asynchronous error on 1 rank
//     Rank 3 reported Remote process error -- GPU 3 managed by process ...
//   Warnings
//   ========
//   TIMEOUT
//     Encountered 2 communication timeouts while gathering communicator data
//   #0-0 (78db921d1c117b4a) MISMATCH
//     Communicator ranks have different AllReduce operation counts
//     7 ranks have launched up to operation 64           (2.24, 2.25: "different
//     Rank 7 has launched up to operation 60 -- GPU ...   collective operation counts")
//
// Ranks are ranks within the communicator. A "Rank N -- GPU ..." line without
// a verb of its own says what the count line above it says ("6 ranks have
// launched up to operation 6649" then their six lines). RAS names ranks only
// for outliers (few ranks sharing a value); the others are counted.
//
// Several reports in one file (a `watch` loop, repeated queries appended)
// are several RasReports: a banner or "Job summary" after a report's
// sections starts the next. Lines before the first report are not the
// report's (a shell prompt); a line inside one that reads as no RAS line is
// hang.ras_bad_line unless it is a hang line (ingest/common/hang_lines.h:
// a watchdog line pasted under the report), which the hang-line collector
// reads; a report that stops before "Warnings" is hang.ras_truncated.

#include <fmt/format.h>

#include <algorithm>

#include "base/text.h"
#include "ingest/common/hang_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/hangs/hang_readers.h"

namespace laggard {
namespace {

constexpr int32_t kMaxCount = 1 << 24;  // ranks, processes, GPUs: more is damage

std::optional<int32_t> Count32(std::string_view s) {
  auto n = ParseInt<int64_t>(Trim(s));
  if (!n || *n < 0 || *n > kMaxCount) return std::nullopt;
  return static_cast<int32_t>(*n);
}

std::optional<int64_t> Count64(std::string_view s) {
  auto n = ParseInt<int64_t>(Trim(s));
  if (!n || *n < 0) return std::nullopt;
  return n;
}

// Takes `prefix` off the front of `s`; false when `s` does not start with it.
bool Eat(std::string_view& s, std::string_view prefix) {
  if (!StartsWith(s, prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// The leading number of `s` ("26 ranks have ..."), taken off with the blank
// after it.
std::optional<int64_t> EatNumber(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && IsDigit(s[n]) && n < 18) ++n;
  if (n == 0 || (n < s.size() && s[n] != ' ')) return std::nullopt;
  auto v = ParseInt<int64_t>(s.substr(0, n));
  s.remove_prefix(std::min(s.size(), n + 1));
  return v;
}

bool IsRuler(std::string_view t) {
  return t.size() >= 3 && std::all_of(t.begin(), t.end(), [](char c) { return c == '='; });
}

bool IsStatusWord(std::string_view w) {
  for (std::string_view s : {"RUNNING", "INIT", "FINALIZE", "ABORT", "NOCOMM", "UNKNOWN"}) {
    if (w == s) return true;
  }
  return false;
}

bool IsErrorsWord(std::string_view w) {
  if (w == "OK") return true;
  for (std::string_view part : Split(w, ',')) {
    if (part != "MISMATCH" && part != "ERROR" && part != "INCOMPLETE") return false;
  }
  return !w.empty();
}

// The summary table's column heads, RAS's alone.
bool IsGroupHeader(std::string_view t) {
  auto w = SplitBlanks(t);
  return w.size() == 8 && w[0] == "Group" && w[1] == "Comms" && w[6] == "Status" &&
         w[7] == "Errors";
}

// "GPU 3 managed by process 3748990 on node node1" (after "Rank N -- ").
struct ProcessRef {
  std::optional<int32_t> gpu;
  std::optional<int64_t> pid;
  std::string node;
};

std::optional<ProcessRef> ParseManagedBy(std::string_view s) {
  ProcessRef r;
  if (s == "[process information not found]") return r;
  if (!Eat(s, "GPU ")) return std::nullopt;
  size_t sp = s.find(' ');
  r.gpu = Count32(s.substr(0, sp));
  if (!r.gpu) return std::nullopt;
  size_t by = s.find("managed by process ");
  if (by == std::string_view::npos) return std::nullopt;
  s.remove_prefix(by + 19);
  size_t on = s.find(" on node ");
  if (on == std::string_view::npos) return std::nullopt;
  r.pid = Count64(s.substr(0, on));
  r.node = std::string(Trim(s.substr(on + 9)));
  if (!r.pid || r.node.empty()) return std::nullopt;
  return r;
}

// "3487984 on node 172.16.64.213 managing GPU 5" / "GPUs 0,1 (NVML 2,3)"
// (after "Process ").
std::optional<RasProcess> ParseProcessLine(std::string_view s) {
  RasProcess p;
  size_t on = s.find(" on node ");
  if (on == std::string_view::npos) return std::nullopt;
  auto pid = Count64(s.substr(0, on));
  if (!pid) return std::nullopt;
  p.pid = *pid;
  s.remove_prefix(on + 9);
  size_t managing = s.find(" managing GPU");
  if (managing == std::string_view::npos) return std::nullopt;
  p.node = std::string(s.substr(0, managing));
  s.remove_prefix(managing + 13);
  Eat(s, "s");
  s = Trim(s);
  s = s.substr(0, s.find(" (NVML"));
  for (std::string_view g : Split(s, ',')) {
    auto gpu = Count32(g);
    if (!gpu) return std::nullopt;
    p.gpus.push_back(*gpu);
  }
  if (p.node.empty() || p.gpus.empty()) return std::nullopt;
  return p;
}

enum class Section : uint8_t { kNone, kJob, kComms, kErrors, kWarnings };

// What the "Rank N -- GPU ..." lines under a count line are about.
struct RankContext {
  RasRankIssue issue = RasRankIssue::kMissing;
  std::string op;
  std::optional<int64_t> ops_launched;
  std::string status;
  std::string error;
};

class RasFile {
 public:
  explicit RasFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    std::string_view text;
    while (lines.Next(text)) {
      std::string_view t = Trim(text);
      if (t.empty()) continue;
      line_ = lines.line_number();
      Line(text, t);
    }
    Close();
    taken_ += hangs_.Finish(lines.line_number(), ctx_);
    if (taken_ == 0) {
      ctx_.diag().Add(DiagCode::kFileUnrecognised, ctx_.path, 0,
                      "NCCL RAS report with no job summary, communicator table or error line "
                      "that could be read: nothing of it used");
    }
    return taken_;
  }

 private:
  // `text` as read, `t` trimmed. A line RAS does not read is offered to the
  // hang-line collector (a watchdog line pasted with the report) before it
  // is counted bad.
  void Line(std::string_view text, std::string_view t) {
    if (StartsWith(t, "NCCL version ") && t.find(" compiled with CUDA") != std::string_view::npos) {
      Start();
      report_->nccl_version = std::string(t.substr(13, t.find(' ', 13) - 13));
      ++taken_;
      return;
    }
    if (t == "Job summary") {
      if (!report_ || section_ != Section::kNone) Start();
      section_ = Section::kJob;
      return;
    }
    // The communicators' table, with its "Communicators..." line or, in an
    // excerpt, without: a second one after a report's table is the next
    // report's.
    const bool table_head = IsGroupHeader(t) && section_ != Section::kComms;
    if (StartsWith(t, "Communicators...") || table_head) {
      if (report_ && (section_ == Section::kErrors || section_ == Section::kWarnings)) Start();
      return Enter(Section::kComms);
    }
    if (t == "Errors") return Enter(Section::kErrors);
    if (t == "Warnings") {
      Enter(Section::kWarnings);
      report_->complete = true;
      return;
    }
    if (!report_) {  // before the first report: not RAS's
      hangs_.Offer(text, line_, ctx_);
      return;
    }
    if (IsRuler(t) || StartsWith(t, "CUDA runtime version ")) return;
    bool ok = false;
    switch (section_) {
      case Section::kNone: ok = false; break;
      case Section::kJob: ok = JobLine(t); break;
      case Section::kComms: ok = CommsLine(t); break;
      case Section::kErrors:
      case Section::kWarnings: ok = DetailLine(t); break;
    }
    if (!ok && !hangs_.Offer(text, line_, ctx_)) Bad(t);
  }

  void Start() {
    Close();
    ctx_.out->hang().ras.emplace_back();
    report_ = &ctx_.out->hang().ras.back();
    report_->file = ctx_.file_index;
    report_->src = ctx_.Ref(line_);
    section_ = Section::kNone;
    comm_ = nullptr;
    job_totals_next_ = false;
  }

  void Enter(Section s) {
    if (!report_) Start();
    section_ = s;
    comm_ = nullptr;
    process_dead_ = false;
    rank_ = RankContext{};
  }

  void Close() {
    if (report_ && !report_->complete) {
      ctx_.diag().Add(DiagCode::kHangRasTruncated, ctx_.path, line_,
                      "RAS report ends before its Warnings section");
    }
    report_ = nullptr;
  }

  void Bad(std::string_view t) {
    ctx_.diag().Add(DiagCode::kHangRasBadLine, ctx_.path, line_,
                    fmt::format("not a line of a RAS report: '{}'", Printable(t)));
  }

  // Column heads set which numbers the row under them holds: a head ending
  // in "(total)" columns gives the totals, the others distributions.
  bool JobLine(std::string_view t) {
    auto w = SplitBlanks(t);
    if (w.empty()) return false;
    if (w[0] == "Nodes" || w[0] == "Processes") return true;  // first head line
    if (w[0] == "(total)" || w[0] == "per" || StartsWith(t, "per ")) {
      job_totals_next_ = w[0] == "(total)" && w.back() == "(total)";
      return true;
    }
    if (StartsWith(t, "The outlier node") || StartsWith(t, "Node ")) return true;
    std::vector<int32_t> n;
    for (std::string_view x : w) {
      auto v = Count32(x);
      if (!v) return false;
      n.push_back(*v);
    }
    if (!job_totals_next_) return n.size() == 2 || n.size() == 3 || n.size() == 5;
    if (n.size() == 5) {
      report_->nodes = n[0];
      report_->processes = n[3];
      report_->gpus = n[4];
    } else if (n.size() == 3) {
      report_->nodes = n[0];
      report_->processes = n[1];
      report_->gpus = n[2];
    } else {
      return false;
    }
    job_totals_next_ = false;
    ++taken_;
    return true;
  }

  bool CommsLine(std::string_view t) {
    if (IsGroupHeader(t) || StartsWith(t, "# ")) return true;
    if (StartsWith(t, "#")) {  // an excerpt without its Errors / Warnings heads
      section_ = Section::kErrors;
      return CommHeading(t);
    }
    if (t == "No communicator data collected!") {
      report_->no_comms = true;
      ++taken_;
      return true;
    }
    auto w = SplitBlanks(t);
    if (w.size() != 8 || !IsStatusWord(w[6]) || !IsErrorsWord(w[7])) return false;
    RasCommGroup g;
    auto index = Count32(w[0]), comms = Count32(w[1]), nodes = Count32(w[2]);
    auto per_comm = Count32(w[4]), in_group = Count32(w[5]);
    if (!index || !comms || !nodes || !per_comm || !in_group) return false;
    g.index = *index;
    g.comms = *comms;
    g.nodes = *nodes;
    g.ranks_per_node = std::string(w[3]);
    g.ranks_per_comm = *per_comm;
    g.ranks_in_group = *in_group;
    g.status = std::string(w[6]);
    g.errors = std::string(w[7]);
    g.src = ctx_.Ref(line_);
    report_->comm_groups.push_back(std::move(g));
    ++taken_;
    return true;
  }

  // "#0-0 (27a079b828ff1a75) MISMATCH"
  bool CommHeading(std::string_view t) {
    auto w = SplitBlanks(t);
    if (w.size() != 3 || w[1].size() < 3 || w[1].front() != '(' || w[1].back() != ')') {
      return false;
    }
    std::string_view id = w[0].substr(1);
    size_t dash = id.find('-');
    auto group = Count32(id.substr(0, dash));
    if (dash == std::string_view::npos || !group || !Count32(id.substr(dash + 1))) return false;
    if (!IsErrorsWord(w[2]) || w[2] == "OK") return false;
    std::string hash(w[1].substr(1, w[1].size() - 2));
    auto it = std::find_if(report_->comms.begin(), report_->comms.end(),
                           [&](const RasCommunicator& c) { return c.id == w[0]; });
    if (it == report_->comms.end()) {
      RasCommunicator c;
      c.id = std::string(w[0]);
      c.hash = hash;
      c.group = *group;
      c.src = ctx_.Ref(line_);
      report_->comms.push_back(std::move(c));
      it = report_->comms.end() - 1;
      ++taken_;
    }
    it->problems.emplace_back(w[2]);
    comm_ = &*it;
    rank_ = RankContext{};
    if (w[2] == "INCOMPLETE") rank_.issue = RasRankIssue::kMissing;
    return true;
  }

  bool DetailLine(std::string_view t) {
    if (t == "INCOMPLETE" || t == "DEAD") {
      comm_ = nullptr;
      process_dead_ = t == "DEAD";
      return true;
    }
    if (t == "TIMEOUT") {
      comm_ = nullptr;
      return true;
    }
    if (StartsWith(t, "#")) return CommHeading(t);
    std::string_view s = t;
    if (Eat(s, "Encountered ")) {
      auto n = EatNumber(s);
      if (!n || !StartsWith(s, "communication timeout")) return false;
      report_->timeouts = static_cast<int32_t>(std::min<int64_t>(*n, kMaxCount));
      ++taken_;
      return true;
    }
    if (Eat(s, "Process ")) {
      auto p = ParseProcessLine(s);
      if (!p) return false;
      p->dead = process_dead_;
      p->src = ctx_.Ref(line_);
      report_->processes_lost.push_back(std::move(*p));
      ++taken_;
      return true;
    }
    if (StartsWith(t, "[could not find information on ")) return true;
    if (Eat(s, "Missing communicator data from ")) {
      auto n = EatNumber(s);
      if (!n) return false;
      if (StartsWith(s, "job process")) {
        report_->processes_missing = static_cast<int32_t>(std::min<int64_t>(*n, kMaxCount));
      } else if (StartsWith(s, "rank") && comm_) {
        comm_->ranks_missing = static_cast<int32_t>(std::min<int64_t>(*n, kMaxCount));
        rank_ = RankContext{};
      } else {
        return false;
      }
      ++taken_;
      return true;
    }
    if (comm_ == nullptr) return DeadCountLine(t);
    return CommDetailLine(t);
  }

  // "1 job process is considered dead (unreachable via the RAS network)"
  bool DeadCountLine(std::string_view t) {
    std::string_view s = t;
    auto n = EatNumber(s);
    if (!n || !StartsWith(s, "job process") ||
        s.find("considered dead") == std::string_view::npos) {
      return false;
    }
    report_->processes_dead = static_cast<int32_t>(std::min<int64_t>(*n, kMaxCount));
    ++taken_;
    return true;
  }

  // A line under "#g-c (hash) ...": a count, a rank, or the kind of the
  // lines that follow.
  bool CommDetailLine(std::string_view t) {
    std::string_view s = t;
    if (Eat(s, "Communicator ranks have different ")) {
      if (s == "status") {
        rank_ = RankContext{RasRankIssue::kStatus, "", std::nullopt, "", ""};
        return true;
      }
      if (!EndsWith(s, " operation counts")) return false;
      rank_ = RankContext{RasRankIssue::kOpCount, std::string(s.substr(0, s.size() - 17)),
                          std::nullopt, "", ""};
      return true;
    }
    if (StartsWith(t, "Initialization error") || StartsWith(t, "Asynchronous error")) {
      rank_ = RankContext{RasRankIssue::kError, "", std::nullopt, "", ""};
      return true;
    }
    if (Eat(s, "The missing rank")) return RankListLine(s, RasRankIssue::kMissing, "");
    if (Eat(s, "The unknown ranks: ")) return RankListLine(s, RasRankIssue::kNoComm, "UNKNOWN");
    if (Eat(s, "Rank ")) return RankLine(s);
    std::optional<int64_t> n = EatNumber(s);
    if (!n || !Eat(s, "ranks ")) return false;
    if (Eat(s, "have launched up to operation ")) {
      auto ops = Count64(s);
      if (!ops) return false;
      return AddOpCount(*ops, *n);
    }
    if (s == "have not launched any operations") return AddOpCount(0, *n);
    if (Eat(s, "have status ")) {
      if (!IsStatusWord(s)) return false;
      rank_.issue = s == "NOCOMM" || s == "UNKNOWN" ? RasRankIssue::kNoComm : RasRankIssue::kStatus;
      rank_.status = std::string(s);
      return true;
    }
    if (Eat(s, "reported ")) {
      rank_.issue = RasRankIssue::kError;
      rank_.error = std::string(s);
      return true;
    }
    return false;
  }

  bool AddOpCount(int64_t ops, int64_t ranks) {
    comm_->op_counts.push_back(RasOpCount{rank_.op.empty() ? "collective" : rank_.op, ops,
                                          static_cast<int32_t>(std::min<int64_t>(ranks, kMaxCount)),
                                          ctx_.Ref(line_)});
    rank_.issue = RasRankIssue::kOpCount;
    rank_.ops_launched = ops;
    ++taken_;
    return true;
  }

  // ": 21" / "s: 3,5,7" (2.24, 2.25), after "The missing rank".
  bool RankListLine(std::string_view s, RasRankIssue issue, std::string_view status) {
    Eat(s, "s");
    if (!Eat(s, ": ") && issue == RasRankIssue::kMissing) return false;
    size_t before = comm_->ranks.size();
    for (std::string_view r : Split(s, ',')) {
      if (Trim(r).empty()) continue;
      auto rank = Count32(r);
      if (!rank) {
        comm_->ranks.resize(before);
        return false;
      }
      RasRank x;
      x.comm_rank = *rank;
      x.issue = issue;
      x.status = std::string(status);
      x.src = ctx_.Ref(line_);
      comm_->ranks.push_back(std::move(x));
      ++taken_;
    }
    return comm_->ranks.size() > before;
  }

  // After "Rank ": "7 -- GPU 3 managed by ...", "7 has launched up to
  // operation 60 -- GPU ...", "7 has status FINALIZE -- ...", "3 reported
  // Remote process error -- ...", "5 has status UNKNOWN" (2.24).
  bool RankLine(std::string_view s) {
    auto rank = EatNumber(s);
    if (!rank || *rank > kMaxCount) return false;
    RasRank r;
    r.comm_rank = static_cast<int32_t>(*rank);
    r.issue = rank_.issue;
    r.op = rank_.op;
    r.ops_launched = rank_.ops_launched;
    r.status = rank_.status;
    r.error = rank_.error;
    size_t dashes = s.find("-- ");
    std::string_view verb = Trim(s.substr(0, dashes));
    std::string_view rest = dashes == std::string_view::npos ? "" : s.substr(dashes + 3);
    if (Eat(verb, "has launched up to operation ")) {
      r.issue = RasRankIssue::kOpCount;
      r.ops_launched = Count64(verb);
      if (!r.ops_launched) return false;
    } else if (verb == "has not launched any operations") {
      r.issue = RasRankIssue::kOpCount;
      r.ops_launched = 0;
    } else if (Eat(verb, "has status ")) {
      if (!IsStatusWord(verb)) return false;
      r.issue =
          verb == "NOCOMM" || verb == "UNKNOWN" ? RasRankIssue::kNoComm : RasRankIssue::kStatus;
      r.status = std::string(verb);
    } else if (Eat(verb, "reported ")) {
      r.issue = RasRankIssue::kError;
      r.error = std::string(verb);
    } else if (!verb.empty()) {
      return false;
    }
    if (r.issue == RasRankIssue::kOpCount && !r.ops_launched) return false;  // no count above
    if (r.issue == RasRankIssue::kOpCount && r.op.empty()) r.op = "collective";
    if (dashes == std::string_view::npos) {
      if (r.issue != RasRankIssue::kNoComm && r.issue != RasRankIssue::kStatus) return false;
    } else {
      auto p = ParseManagedBy(Trim(rest));
      if (!p) return false;
      r.gpu = p->gpu;
      r.pid = p->pid;
      r.node = std::move(p->node);
    }
    r.src = ctx_.Ref(line_);
    comm_->ranks.push_back(std::move(r));
    ++taken_;
    return true;
  }

  ReaderContext& ctx_;
  HangLineCollector hangs_;
  RasReport* report_ = nullptr;  // the report being read, in ctx_.out->hang().ras
  RasCommunicator* comm_ = nullptr;
  Section section_ = Section::kNone;
  RankContext rank_;
  bool process_dead_ = false;
  bool job_totals_next_ = false;
  uint64_t line_ = 0;
  uint64_t taken_ = 0;
};

// kSniffCertain for two markers only RAS prints (its banner, "Job summary"
// over its ruler, "Communicators..." over its ruler, the summary table's
// column heads); kSniffSure for one of them. No other reader claims these
// lines: the hang-log and NCCL_DEBUG readers look for other words, and the
// text-log reader only takes any text.
int SniffRas(std::string_view head) {
  if (head.empty() || LooksBinary(head)) return kSniffNo;
  int markers = 0;
  std::string_view previous;
  ForEachHeadLine(head, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (IsRuler(t) && (previous == "Job summary" || StartsWith(previous, "Communicators..."))) {
      ++markers;
    } else if (IsGroupHeader(t)) {
      ++markers;
    } else if (StartsWith(t, "NCCL version ") &&
               t.find(" compiled with CUDA ") != std::string_view::npos) {
      ++markers;
    }
    if (!t.empty()) previous = t;
    return markers < 2;
  });
  if (markers >= 2) return kSniffCertain;
  return markers == 1 ? kSniffSure : kSniffNo;
}

}  // namespace

std::unique_ptr<TextReader> MakeNcclRasReader() {
  return MakeFileReader<RasFile>("ncclras", SniffRas);
}

}  // namespace laggard
