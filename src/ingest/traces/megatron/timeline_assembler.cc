#include "ingest/traces/megatron/timeline_assembler.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "formats/megatron_timeline.h"
#include "ingest/traces/common/json_scalars.h"

namespace laggard::megatron {
namespace {

namespace mt = megatron_timeline;
namespace phase = kineto_keys::phase;

constexpr int32_t kCategories = static_cast<int32_t>(mt::kCategories.size());
// Op types named one by one in timeline.op_unknown notes; the events of
// further names are summed in one note.
constexpr size_t kMaxUnknownNames = 32;

std::string Clip(std::string_view s) { return Printable(s, 40); }

// An integer token in [lo, hi]; nullopt otherwise (a string, a fraction).
std::optional<int64_t> IntIn(std::string_view tok, int64_t lo, int64_t hi) {
  std::optional<int64_t> v = ParseInt<int64_t>(tok);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return v;
}

// Why a required member is unusable: absent, or not what it should be.
std::string Why(std::string_view key, std::string_view tok, std::string_view should) {
  if (tok.empty()) return fmt::format("event without \"{}\"", key);
  return fmt::format("\"{}\": {} is not {}", key, Clip(tok), should);
}

// An optional index of args (mb_id, model_chunk, seq_id): -1 when absent,
// null or -1 (the exporter's "does not apply"); nullopt when malformed.
std::optional<int32_t> OptionalIndex(std::string_view tok) {
  if (tok.empty() || tok == "null") return -1;
  std::optional<int64_t> v = IntIn(tok, -1, INT32_MAX);
  if (!v) return std::nullopt;
  return static_cast<int32_t>(*v);
}

// The number at the start of `s` in [0, kMaxRank], consumed.
std::optional<int32_t> TakeIndex(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && n < 8 && IsDigit(s[n])) ++n;
  std::optional<int64_t> v = n > 0 ? IntIn(s.substr(0, n), 0, kMaxRank) : std::nullopt;
  if (!v) return std::nullopt;
  s.remove_prefix(n);
  return static_cast<int32_t>(*v);
}

bool TakePrefix(std::string_view& s, std::string_view prefix) {
  if (!StartsWith(s, prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

}  // namespace

std::optional<ThreadPlace> ParseThreadName(std::string_view text) {
  ThreadPlace p;
  if (!TakePrefix(text, mt::kPpRankPrefix)) return std::nullopt;
  std::optional<int32_t> pp = TakeIndex(text);
  if (!pp || !TakePrefix(text, ", ") || !TakePrefix(text, mt::kTpRankPrefix)) return std::nullopt;
  std::optional<int32_t> tp = TakeIndex(text);
  if (!tp || !TakePrefix(text, ", ")) return std::nullopt;
  p.pp = *pp;
  p.tp = *tp;
  p.category = text;
  return p;
}

std::optional<int32_t> ParseProcessName(std::string_view text) {
  if (!TakePrefix(text, mt::kDpRankPrefix)) return std::nullopt;
  std::optional<int32_t> dp = TakeIndex(text);
  if (!dp || text != "]") return std::nullopt;
  return dp;
}

void TimelineAssembler::BadEvent(uint64_t offset, const std::string& why) {
  ctx_.diag().AddAtOffset(DiagCode::kTraceBadEvent, ctx_.path, offset, why + "; skipped");
}

void TimelineAssembler::OnEvent(const MegatronEvent& e, uint64_t offset) {
  if (!e.ph) return BadEvent(offset, "event without a string \"ph\"");
  if (*e.ph == phase::kComplete) return OnComplete(e, offset);
  if (*e.ph == phase::kMetadata) return OnMetadata(e, offset);
  CountUnused(unused_phases_, offset, *e.ph);
}

uint32_t TimelineAssembler::ThreadOf(int32_t pid, int32_t tid) {
  uint64_t key = (uint64_t{static_cast<uint32_t>(pid)} << 32) | static_cast<uint32_t>(tid);
  auto [it, fresh] = thread_index_.emplace(key, static_cast<uint32_t>(threads_.size()));
  if (fresh) threads_.push_back(Thread{pid, tid, std::nullopt});
  return it->second;
}

// A complete event: an op of the vocabulary, else an unknown op type.
void TimelineAssembler::OnComplete(const MegatronEvent& e, uint64_t offset) {
  if (!e.name) return BadEvent(offset, "complete event (ph X) without a string \"name\"");
  std::optional<TimelineOpKind> kind = TimelineOpFromName(*e.name);
  if (!kind) return CountUnknownOp(*e.name, offset);
  std::optional<int64_t> pid = IntIn(e.pid, 0, kMaxRank);
  if (!pid) return BadEvent(offset, Why("pid", e.pid, "a DP rank (an integer >= 0)"));
  std::optional<int64_t> tid = IntIn(e.tid, 0, int64_t{kMaxRank} * kCategories + kCategories - 1);
  if (!tid) return BadEvent(offset, Why("tid", e.tid, "a thread id (an integer >= 0)"));
  std::optional<int64_t> ts = ParseMicrosToNs(e.ts);
  if (!ts) return BadEvent(offset, Why("ts", e.ts, "a number"));
  std::optional<int64_t> dur = ParseMicrosToNs(e.dur);
  if (!dur) return BadEvent(offset, Why("dur", e.dur, "a number"));
  if (*dur < 0) return BadEvent(offset, fmt::format("negative \"dur\": {}", Clip(e.dur)));
  if (*ts + *dur > kMaxAbsTimeUs * 1000) {
    return BadEvent(offset, fmt::format("event outside +-4e15 us: \"ts\": {}, \"dur\": {}",
                                        Clip(e.ts), Clip(e.dur)));
  }
  if (!e.args_object) return BadEvent(offset, "op event without an \"args\" object");
  std::optional<int64_t> step = IntIn(e.step, 0, INT64_MAX);
  if (!step) return BadEvent(offset, Why("step", e.step, "a step number (an integer >= 0)"));
  std::optional<int32_t> mb = OptionalIndex(e.mb_id);
  if (!mb) return BadEvent(offset, Why(mt::kMicrobatch, e.mb_id, "an integer >= -1 or null"));
  std::optional<int32_t> chunk = OptionalIndex(e.model_chunk);
  if (!chunk) return BadEvent(offset, Why(mt::kModelChunk, e.model_chunk, "an integer >= -1"));
  std::optional<int32_t> seq = OptionalIndex(e.seq_id);
  if (!seq) return BadEvent(offset, Why(mt::kSeqId, e.seq_id, "an integer >= -1 or null"));
  TimelineOp op;
  op.start_ns = *ts;
  op.dur_ns = *dur;
  op.step = *step;
  op.src = ctx_.Ref(0);
  op.worker =
      static_cast<int32_t>(ThreadOf(static_cast<int32_t>(*pid), static_cast<int32_t>(*tid)));
  op.microbatch = *mb;
  op.chunk = *chunk;
  op.seq = *seq;
  op.kind = *kind;
  max_chunk_ = std::max(max_chunk_, *chunk);
  ops_.push_back(op);
}

void TimelineAssembler::OnMetadata(const MegatronEvent& e, uint64_t offset) {
  if (!e.name) return BadEvent(offset, "metadata event (ph M) without a string \"name\"");
  if (*e.name == mt::kThreadName) return OnThreadName(e, offset);
  if (*e.name == mt::kThreadSortIndex) {
    ++metadata_taken_;  // display order only
    return;
  }
  if (*e.name != mt::kProcessName) return CountUnused(unused_metadata_, offset, *e.name);
  std::optional<int64_t> pid = IntIn(e.pid, 0, kMaxRank);
  if (!pid) return BadEvent(offset, Why("pid", e.pid, "a DP rank (an integer >= 0)"));
  std::optional<int32_t> dp = e.args_name ? ParseProcessName(*e.args_name) : std::nullopt;
  if (dp && *dp != *pid) {
    return BadEvent(offset, fmt::format("process_name \"{}\" of pid {}: the pid is the DP rank",
                                        Clip(*e.args_name), *pid));
  }
  ++metadata_taken_;  // a label: the pid is the DP rank
}

void TimelineAssembler::OnThreadName(const MegatronEvent& e, uint64_t offset) {
  std::optional<int64_t> pid = IntIn(e.pid, 0, kMaxRank);
  if (!pid) return BadEvent(offset, Why("pid", e.pid, "a DP rank (an integer >= 0)"));
  std::optional<int64_t> tid = IntIn(e.tid, 0, int64_t{kMaxRank} * kCategories + kCategories - 1);
  if (!tid) return BadEvent(offset, Why("tid", e.tid, "a thread id (an integer >= 0)"));
  if (!e.args_name) return BadEvent(offset, "thread_name without a string args.name");
  std::optional<ThreadPlace> place = ParseThreadName(*e.args_name);
  if (!place) {
    return BadEvent(offset,
                    fmt::format("thread_name \"{}\" is not \"PP rank S, TP rank T, <category>\"",
                                Clip(*e.args_name)));
  }
  Thread& t = threads_[ThreadOf(static_cast<int32_t>(*pid), static_cast<int32_t>(*tid))];
  if (t.place && (t.place->pp != place->pp || t.place->tp != place->tp)) {
    return BadEvent(offset, fmt::format("thread (pid {}, tid {}) named again as \"{}\", first as "
                                        "PP rank {}, TP rank {}: the first kept",
                                        *pid, *tid, Clip(*e.args_name), t.place->pp, t.place->tp));
  }
  place->category = {};  // points into the event's bytes
  t.place = place;
  ++metadata_taken_;
}

void TimelineAssembler::CountUnknownOp(std::string_view name, uint64_t offset) {
  auto it = unknown_index_.find(std::string(name));
  UnknownOp* u = nullptr;
  if (it != unknown_index_.end()) {
    u = &unknown_ops_[it->second];
  } else if (unknown_ops_.size() < kMaxUnknownNames) {
    unknown_index_.emplace(std::string(name), unknown_ops_.size());
    unknown_ops_.push_back(UnknownOp{std::string(name), 0, offset});
    u = &unknown_ops_.back();
  } else {
    u = &other_unknown_;
  }
  if (u->count++ == 0) u->first_offset = offset;
}

void TimelineAssembler::CountUnused(Unused& u, uint64_t offset, std::string_view name) {
  if (u.count++ == 0) u.first_offset = offset;
  if (u.names.size() < 3 && std::find(u.names.begin(), u.names.end(), name) == u.names.end()) {
    u.names.emplace_back(Printable(name, 60));
  }
}

namespace {

// What Finish() learns of each worker while placing threads.
struct WorkerDraft {
  TimelineWorker worker;
  int32_t pid = 0;
  std::set<int32_t> ranks;  // tid / 5 of its threads
};

// Megatron's rank order (pp, dp, tp), then the unplaced workers by rank.
bool WorkerBefore(const WorkerDraft& a, const WorkerDraft& b) {
  const TimelineWorker &x = a.worker, &y = b.worker;
  if (x.coord_known != y.coord_known) return x.coord_known;
  if (x.coord_known) {
    return std::tie(x.coord.pp, x.coord.dp, x.coord.tp) <
           std::tie(y.coord.pp, y.coord.dp, y.coord.tp);
  }
  return std::make_pair(*a.ranks.begin(), a.pid) < std::make_pair(*b.ranks.begin(), b.pid);
}

std::string RanksText(const std::set<int32_t>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

}  // namespace

std::vector<TimelineWorker> TimelineAssembler::MakeWorkers(std::vector<int32_t>& worker_of_thread) {
  // The place the named threads of each rank group (pid, tid / 5) agree on.
  std::map<std::pair<int32_t, int32_t>, std::set<std::pair<int32_t, int32_t>>> group_places;
  for (const Thread& t : threads_) {
    if (t.place) group_places[{t.pid, t.tid / kCategories}].insert({t.place->pp, t.place->tp});
  }
  std::vector<WorkerDraft> drafts;
  std::map<std::tuple<bool, int32_t, int32_t, int32_t>, size_t> index;  // (placed, dp, pp|rank, tp)
  worker_of_thread.assign(threads_.size(), 0);
  for (size_t i = 0; i < threads_.size(); ++i) {
    const Thread& t = threads_[i];
    const int32_t rank = t.tid / kCategories;
    std::optional<std::pair<int32_t, int32_t>> place;
    if (t.place) {
      place = std::make_pair(t.place->pp, t.place->tp);
    } else if (auto g = group_places.find({t.pid, rank});
               g != group_places.end() && g->second.size() == 1) {
      place = *g->second.begin();
    }
    auto key = place ? std::make_tuple(true, t.pid, place->first, place->second)
                     : std::make_tuple(false, t.pid, rank, 0);
    auto [it, fresh] = index.emplace(key, drafts.size());
    if (fresh) {
      WorkerDraft d;
      d.pid = t.pid;
      d.worker.coord_known = place.has_value();
      if (place) d.worker.coord = ParallelCoord{t.pid, place->first, place->second};
      drafts.push_back(std::move(d));
    }
    drafts[it->second].ranks.insert(rank);
    worker_of_thread[i] = static_cast<int32_t>(it->second);
  }
  for (const auto& [group, places] : group_places) {
    if (places.size() < 2) continue;
    std::vector<std::string> named;
    for (const auto& [pp, tp] : places)
      named.push_back(fmt::format("PP rank {} TP rank {}", pp, tp));
    ctx_.diag().Add(DiagCode::kTimelineLayoutUnknown, ctx_.path, 0,
                    fmt::format("the threads of rank {} (tid / 5) of DP rank {} are named {}: its "
                                "threads without a name are left unplaced",
                                group.second, group.first, fmt::join(named, " and ")));
  }
  // Sort, and map the threads' draft indices onto the sorted order.
  std::vector<size_t> order(drafts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return WorkerBefore(drafts[a], drafts[b]); });
  std::vector<int32_t> new_index(drafts.size());
  std::vector<TimelineWorker> workers;
  for (size_t i = 0; i < order.size(); ++i) {
    WorkerDraft& d = drafts[order[i]];
    new_index[order[i]] = static_cast<int32_t>(i);
    if (d.ranks.size() == 1) {
      d.worker.rank = *d.ranks.begin();
    } else {
      ctx_.diag().Add(
          DiagCode::kTimelineLayoutUnknown, ctx_.path, 0,
          fmt::format("worker DP {} PP {} TP {} has threads of ranks {} (tid / 5): its "
                      "rank is left unknown",
                      d.worker.coord.dp, d.worker.coord.pp, d.worker.coord.tp, RanksText(d.ranks)));
    }
    workers.push_back(d.worker);
  }
  for (int32_t& w : worker_of_thread) w = new_index[static_cast<size_t>(w)];
  return workers;
}

// seq_id, where the file gives none: the op's index among the worker's
// ops of its kind in its step, by start (file order between equal starts).
void TimelineAssembler::NumberUnnumberedOps() {
  std::vector<uint32_t> unnumbered;
  for (uint32_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].seq < 0) unnumbered.push_back(i);
  }
  if (unnumbered.empty()) return;
  auto key = [&](uint32_t i) {
    const TimelineOp& o = ops_[i];
    return std::make_tuple(o.worker, static_cast<int>(o.kind), o.step, o.start_ns, i);
  };
  std::sort(unnumbered.begin(), unnumbered.end(),
            [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  int32_t seq = 0;
  for (size_t k = 0; k < unnumbered.size(); ++k) {
    const TimelineOp& o = ops_[unnumbered[k]];
    if (k > 0) {
      const TimelineOp& p = ops_[unnumbered[k - 1]];
      seq = (p.worker == o.worker && p.kind == o.kind && p.step == o.step) ? seq + 1 : 0;
    }
    ops_[unnumbered[k]].seq = seq;
  }
}

std::optional<ParallelLayout> TimelineAssembler::LayoutOf(
    const std::vector<TimelineWorker>& workers) {
  size_t unplaced = 0;
  for (const TimelineWorker& w : workers) unplaced += w.coord_known ? 0 : 1;
  if (unplaced > 0) {
    ctx_.diag().Add(DiagCode::kTimelineLayoutUnknown, ctx_.path, 0,
                    fmt::format("{} of {} workers have no thread_name metadata (\"PP rank S, TP "
                                "rank T, ...\"; the exporter writes it after the last op: a file "
                                "cut before it?): their place in the layout is unknown, their "
                                "rank is tid / 5",
                                unplaced, workers.size()));
    return std::nullopt;
  }
  std::set<int32_t> pids;
  ParallelLayout layout;
  for (const TimelineWorker& w : workers) {
    pids.insert(w.coord.dp);
    layout.pp = std::max(layout.pp, w.coord.pp + 1);
    layout.tp = std::max(layout.tp, w.coord.tp + 1);
  }
  if (pids.empty() || *pids.rbegin() != static_cast<int32_t>(pids.size()) - 1) {
    ctx_.diag().Add(DiagCode::kTimelineLayoutUnknown, ctx_.path, 0,
                    fmt::format("the DP ranks (pid) are {}, not 0..n-1: the layout is unknown",
                                RanksText(pids)));
    return std::nullopt;
  }
  layout.dp = static_cast<int32_t>(pids.size());
  layout.vpp = std::max(1, max_chunk_ + 1);
  if (static_cast<int64_t>(workers.size()) != layout.world()) {
    ctx_.diag().Add(DiagCode::kTimelineLayoutUnknown, ctx_.path, 0,
                    fmt::format("{} workers, of the {} of dp {} x pp {} x tp {}: the file holds "
                                "part of the job (an export of some ranks?)",
                                workers.size(), layout.world(), layout.dp, layout.pp, layout.tp));
  }
  return layout;
}

void TimelineAssembler::ReportNotTaken() {
  auto unknown = [&](const UnknownOp& u, std::string what) {
    ctx_.diag().AddAtOffset(
        DiagCode::kTimelineOpUnknown, ctx_.path, u.first_offset,
        fmt::format("{} {} {}, not an op type of the Megatron timeline vocabulary "
                    "(forward-compute, backward-compute, forward-send, ..., optimizer, gc): not "
                    "taken",
                    u.count, u.count == 1 ? "event" : "events", what),
        u.count);
  };
  for (const UnknownOp& u : unknown_ops_) unknown(u, fmt::format("\"{}\"", Printable(u.name, 60)));
  if (other_unknown_.count > 0) {
    unknown(other_unknown_,
            fmt::format("of other op types (past the first {} names)", kMaxUnknownNames));
  }
  auto unused = [&](const Unused& u, std::string_view what) {
    if (u.count == 0) return;
    std::string names = fmt::format("{}", fmt::join(u.names, ", "));
    if (u.names.size() < u.count) names += ", ...";
    ctx_.diag().AddAtOffset(
        DiagCode::kTraceEventsUnused, ctx_.path, u.first_offset,
        fmt::format("{} {} {}: {}", u.count, u.count == 1 ? "event" : "events", what, names),
        u.count);
  };
  unused(unused_phases_, "of a phase other than \"X\" (an op) and \"M\" (metadata)");
  unused(unused_metadata_, "of metadata other than thread_name, thread_sort_index, process_name");
}

uint64_t TimelineAssembler::Finish(uint64_t events_total) {
  ReportNotTaken();
  if (ops_.empty()) {
    ctx_.diag().Add(DiagCode::kTraceNoEvents, ctx_.path, 0,
                    fmt::format("{} events, none of them an op of the Megatron timeline "
                                "vocabulary: no timeline",
                                events_total));
    return 0;
  }
  std::vector<int32_t> worker_of_thread;
  OpTimeline timeline;
  timeline.file = ctx_.file_index;
  timeline.workers = MakeWorkers(worker_of_thread);
  for (TimelineOp& op : ops_) op.worker = worker_of_thread[static_cast<size_t>(op.worker)];
  NumberUnnumberedOps();
  timeline.layout = LayoutOf(timeline.workers);
  uint64_t taken = ops_.size() + metadata_taken_;
  timeline.ops = std::move(ops_);
  ops_.clear();
  ctx_.out->AddOpTimeline(std::move(timeline));
  return taken;
}

}  // namespace laggard::megatron
