// A stopped job on the merged trace (docs/merged-trace.md, "Hangs"): the
// Flight Recorder entries of every rank that dumped as slices, the dated
// hang lines of rank logs as instants, and the hang detector's decided
// finding at its stuck collective. perfetto_trace.cc writes them on its
// tracks; this file only turns Run::hang and the detector's result into
// events on the aligned clock (trace_writer.h, BuildHangTimeline).

#include <algorithm>
#include <set>

#include "report/hang_view.h"
#include "report/trace_writer.h"

namespace laggard::report_trace {
namespace {

Json SizesJson(const std::vector<std::vector<int64_t>>& sizes) {
  Json out = Json::array();
  for (const std::vector<int64_t>& s : sizes) out.push_back(s);
  return out;
}

Json FramesJson(const std::vector<StackFrame>& frames) {
  Json out = Json::array();
  for (const StackFrame& f : frames) {
    out.push_back(f.file.empty() ? f.name : fmt::format("{} ({}:{})", f.name, f.file, f.line));
  }
  return out;
}

// "nccl:all_reduce #6", "nccl:send p2p #3".
std::string EntryName(const CollectiveRecord& e) {
  std::string name = e.op.empty() ? std::string("collective") : e.op;
  bool p2p = e.is_p2p.value_or(false);
  if (!p2p && e.collective_seq) {
    name += fmt::format(" #{}", *e.collective_seq);
  } else if (e.p2p_seq) {
    name += fmt::format(" p2p #{}", *e.p2p_seq);
  }
  return name;
}

std::optional<TimeNs> EntryStart(const CollectiveRecord& e) {
  return e.started_ns ? e.started_ns : e.created_ns;
}

bool Completed(const CollectiveRecord& e) {
  return e.state == CollectiveState::kCompleted || e.completed_ns.has_value();
}

// The dumps of each rank, in file order (a rank may have dumped twice).
std::map<int32_t, std::vector<const FlightRecorderDump*>> DumpsByRank(const Run& run) {
  std::map<int32_t, std::vector<const FlightRecorderDump*>> out;
  for (const FlightRecorderDump& d : run.hang.dumps) {
    if (d.rank) out[*d.rank].push_back(&d);
  }
  return out;
}

class HangTimelineBuilder {
 public:
  HangTimelineBuilder(const ReportInput& in,
                      const std::function<int64_t(std::optional<int32_t>)>& shift)
      : in_(in), run_(in.run), shift_(shift) {}

  HangTimeline Build(size_t max_entries, size_t max_instants) {
    FindLastKnown();
    WriteEntries(max_entries);
    WriteInstants(max_instants);
    PlaceDecided();
    out_.other["fr_dumps"] = run_.hang.dumps.size();
    out_.other["fr_dumps_without_rank"] = dumps_without_rank_;
    out_.other["fr_entries"] = entries_;
    out_.other["fr_entries_written"] = written_;
    out_.other["fr_entries_omitted"] = omitted_;
    out_.other["fr_entries_without_time"] = entries_untimed_;
    out_.other["fr_entries_limit"] = max_entries;
    out_.other["hang_lines"] = run_.hang.events.size();
    out_.other["hang_lines_written"] = out_.instants.size();
    out_.other["hang_lines_without_time"] = lines_untimed_;
    out_.other["hang_lines_omitted"] = lines_omitted_;
    out_.other["decided"] = decided_where_;
    return std::move(out_);
  }

 private:
  TimeNs Aligned(TimeNs t, std::optional<int32_t> rank) const { return t - shift_(rank); }

  // The last time any dump or dated hang line shows: where the entries
  // that never completed end (a dump carries no time of its own).
  void FindLastKnown() {
    auto see = [&](TimeNs t) { last_known_ = last_known_ ? std::max(*last_known_, t) : t; };
    for (const FlightRecorderDump& d : run_.hang.dumps) {
      for (const CollectiveRecord& e : d.entries) {
        for (const std::optional<TimeNs>& t : {e.created_ns, e.started_ns, e.completed_ns}) {
          if (t) see(Aligned(*t, d.rank));
        }
      }
    }
    for (const HangEvent& e : run_.hang.events) {
      if (e.time_ns) see(Aligned(*e.time_ns, e.rank));
    }
  }

  TraceSlice EntrySlice(const CollectiveRecord& e, TimeNs start, bool last) const {
    TraceSlice s;
    s.start = start;
    s.name = EntryName(e);
    s.cat = "flight_recorder";
    if (Completed(e)) {
      TimeNs end = e.completed_ns  ? Aligned(*e.completed_ns, rank_)
                   : e.duration_ms ? start + static_cast<DurationNs>(*e.duration_ms * 1e6)
                                   : start;
      s.dur = std::max<DurationNs>(0, end - start);
    } else {
      s.dur = std::max<DurationNs>(0, last_known_.value_or(start) - start);
      s.name += " (never completed)";
    }
    Json args = Json::object();
    args["pg"] = e.pg_id;
    if (!e.pg_desc.empty()) args["pg_desc"] = e.pg_desc;
    args["seq"] = report_json::Opt(e.collective_seq);
    if (e.p2p_seq && e.is_p2p.value_or(false)) args["p2p_seq"] = *e.p2p_seq;
    args["record_id"] = e.record_id;
    args["state"] = CollectiveStateName(e.state);
    args["input_sizes"] = SizesJson(e.input_sizes);
    args["output_sizes"] = SizesJson(e.output_sizes);
    if (!e.input_dtypes.empty()) args["input_dtypes"] = e.input_dtypes;
    if (e.duration_ms) args["duration_ms"] = report_json::Num(*e.duration_ms);
    if (e.timeout_ms) args["timeout_ms"] = report_json::Num(*e.timeout_ms);
    if (last && !e.frames.empty()) args["frames"] = FramesJson(e.frames);
    s.args = args.dump(-1, ' ', false, Json::error_handler_t::replace);
    return s;
  }

  // Per rank its entries, the last `cap` of its ring buffers (the end is
  // where a hang shows), at least kMinHangEntriesPerRank.
  void WriteEntries(size_t max_entries) {
    std::map<int32_t, std::vector<const FlightRecorderDump*>> by_rank = DumpsByRank(run_);
    for (const FlightRecorderDump& d : run_.hang.dumps) {
      entries_ += d.entries.size();
      if (!d.rank) ++dumps_without_rank_;
    }
    size_t cap =
        std::max(kMinHangEntriesPerRank, max_entries / std::max<size_t>(1, by_rank.size()));
    for (auto& [rank, dumps] : by_rank) {
      rank_ = rank;
      std::vector<std::pair<const CollectiveRecord*, bool>> all;  // entry, last of its rank
      for (const FlightRecorderDump* d : dumps) {
        for (const CollectiveRecord& e : d->entries) all.emplace_back(&e, false);
      }
      if (!all.empty()) all.back().second = true;
      size_t skip = all.size() > cap ? all.size() - cap : 0;
      omitted_ += skip;
      std::vector<TraceSlice>& slices = out_.entries[rank];
      for (size_t i = skip; i < all.size(); ++i) {
        std::optional<TimeNs> start = EntryStart(*all[i].first);
        if (!start) {
          ++entries_untimed_;
          continue;
        }
        slices.push_back(EntrySlice(*all[i].first, Aligned(*start, rank), all[i].second));
        ++written_;
      }
      if (slices.empty()) out_.entries.erase(rank);
    }
  }

  // Dated hang lines as instants; the yearless glog time is not a time.
  void WriteInstants(size_t max_instants) {
    for (const HangEvent& e : run_.hang.events) {
      if (!e.time_ns) {
        ++lines_untimed_;
        continue;
      }
      if (out_.instants.size() >= max_instants) {
        ++lines_omitted_;
        continue;
      }
      Json args = Json::object();
      args["text"] = e.text;
      if (!e.pg_id.empty()) args["pg"] = e.pg_id;
      if (e.seq) args["seq"] = *e.seq;
      if (!e.op.empty()) args["op"] = e.op;
      if (e.timeout_ms) args["timeout_ms"] = report_json::Num(*e.timeout_ms);
      if (e.ran_for_ms) args["ran_for_ms"] = report_json::Num(*e.ran_for_ms);
      if (e.error_code) args["error_code"] = *e.error_code;
      if (!e.host.empty()) args["host"] = e.host;
      if (!e.peer.empty()) args["peer"] = e.peer;
      Json src = report_json::SourceJson(run_, e.src);
      args["file"] = src["file"];
      args["line"] = src["line"];
      out_.instants.push_back(HangInstant{Aligned(*e.time_ns, e.rank), e.rank,
                                          std::string(HangEventKindName(e.kind)), std::move(args)});
    }
  }

  // When the decided finding's collective N of group g was first started
  // (else created) on any rank, else the first dated line about it.
  std::optional<TimeNs> StuckTime(const HangGroupState& g) const {
    std::optional<TimeNs> at;
    auto see = [&](TimeNs t) { at = at ? std::min(*at, t) : t; };
    const int64_t n = *g.stuck_seq;
    // Ids are each process's own (model/hang.h): an entry or line is the
    // group's when its id is the one its rank gave the group.
    for (const FlightRecorderDump& d : run_.hang.dumps) {
      const std::string* id = report_hang::IdOnRank(g, d.rank);
      if (id == nullptr) continue;
      for (const CollectiveRecord& e : d.entries) {
        if (e.pg_id != *id || e.is_p2p.value_or(false) || e.collective_seq != n) continue;
        if (std::optional<TimeNs> t = EntryStart(e)) see(Aligned(*t, d.rank));
      }
    }
    if (at) return at;
    for (const HangEvent& e : run_.hang.events) {
      if (!e.time_ns || e.seq != n) continue;
      if (g.pg_id != "?") {
        const std::string* id = report_hang::IdOnRank(g, e.rank);
        if (id == nullptr || e.pg_id != *id) continue;
      }
      see(Aligned(*e.time_ns, e.rank));
    }
    return at;
  }

  void PlaceDecided() {
    const Finding* f = report_hang::DecidedFinding(in_.analyses.hang);
    if (f == nullptr) return;
    const HangGroupState* g = report_hang::DecidedGroup(in_.analyses.hang, *f);
    std::optional<TimeNs> at;
    if (g != nullptr) {
      at = StuckTime(*g);
      if (at) {
        decided_where_ = fmt::format("collective #{} of process group {}: its first start",
                                     *g->stuck_seq, g->pg_id);
      }
    }
    if (!at && f->onset_time) {
      at = Aligned(*f->onset_time, f->entity.rank);
      decided_where_ = "its onset time";
    }
    if (!at) return;
    Json args = {{"severity", SeverityName(f->severity)},
                 {"message", f->message},
                 {"confidence", report_json::Num(f->confidence)}};
    if (g != nullptr) {
      args["pg"] = g->pg_id;
      args["stuck_seq"] = *g->stuck_seq;
    }
    if (!f->ranks.empty()) args["ranks"] = f->ranks;
    out_.decided =
        HangInstant{*at, f->entity.rank, std::string(Describe(f->code).name), std::move(args)};
  }

  const ReportInput& in_;
  const Run& run_;
  const std::function<int64_t(std::optional<int32_t>)>& shift_;
  HangTimeline out_;
  std::optional<TimeNs> last_known_;
  std::optional<int32_t> rank_;  // the rank whose entries are being written
  size_t entries_ = 0, written_ = 0, omitted_ = 0, entries_untimed_ = 0;
  size_t dumps_without_rank_ = 0, lines_untimed_ = 0, lines_omitted_ = 0;
  Json decided_where_ = nullptr;
};

}  // namespace

HangTimeline BuildHangTimeline(const ReportInput& in,
                               const std::function<int64_t(std::optional<int32_t>)>& shift,
                               size_t max_entries, size_t max_instants) {
  return HangTimelineBuilder(in, shift).Build(max_entries, max_instants);
}

std::vector<int32_t> HangRanks(const Run& run) {
  std::set<int32_t> ranks;
  for (const FlightRecorderDump& d : run.hang.dumps) {
    if (d.rank) ranks.insert(*d.rank);
  }
  for (const HangEvent& e : run.hang.events) {
    if (e.rank) ranks.insert(*e.rank);
  }
  return {ranks.begin(), ranks.end()};
}

}  // namespace laggard::report_trace
