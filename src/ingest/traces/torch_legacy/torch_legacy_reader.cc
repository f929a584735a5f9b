#include "ingest/traces/torch_legacy/torch_legacy_reader.h"

#include <algorithm>
#include <array>
#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/input_file.h"
#include "ingest/common/sniff.h"
#include "ingest/traces/common/event_array.h"
#include "ingest/traces/common/json_scalars.h"
#include "ingest/traces/common/kernel_names.h"
#include "ingest/traces/common/step_marker.h"
#include "ingest/traces/common/trace_builder.h"

namespace laggard {
namespace {

// The exporter's fixed text (torch/autograd/profiler_util.py).
constexpr std::string_view kCpuFunctionsPid = "\"CPU functions\"";
constexpr std::string_view kFlowCategory = "\"cpu_to_cuda\"";
constexpr std::string_view kProfilerStep = "ProfilerStep#";
constexpr std::string_view kRecordParamComms = "record_param_comms";

// How far a scan of the window got: done, malformed, or out of bytes.
using Scan = EventScan;

size_t SkipBlanks(std::string_view t, size_t i) {
  while (i < t.size() && IsBlank(t[i])) ++i;
  return i;
}

// The JSON string at t[i] == '"': `end` is past its closing quote.
Scan ScanString(std::string_view t, size_t i, size_t& end) {
  for (size_t j = i + 1; j < t.size(); ++j) {
    if (t[j] == '\\') {
      ++j;
    } else if (t[j] == '"') {
      end = j + 1;
      return Scan::kOk;
    }
  }
  return Scan::kMore;
}

// The exporter's unescaped name at t[i] == '"': it ends at the first '"'
// (not after a '\') that blanks and then '}', or ',' and '"', follow.
// Example: "say "hi", there", "ph": ... is the name say "hi", there.
Scan ScanRawName(std::string_view t, size_t i, size_t& end) {
  for (size_t j = i + 1; j < t.size(); ++j) {
    if (t[j] == '\\') {
      ++j;
      continue;
    }
    if (t[j] != '"') continue;
    size_t k = SkipBlanks(t, j + 1);
    if (k >= t.size()) return Scan::kMore;
    if (t[k] == '}') {
      end = j + 1;
      return Scan::kOk;
    }
    if (t[k] != ',') continue;
    k = SkipBlanks(t, k + 1);
    if (k >= t.size()) return Scan::kMore;
    if (t[k] == '"') {
      end = j + 1;
      return Scan::kOk;
    }
  }
  return Scan::kMore;
}

// A value that is not a string, at t[i]: a number or literal ends before
// ',', '}', ']' or a blank; an object or array at its matching bracket.
Scan ScanValue(std::string_view t, size_t i, size_t& end) {
  if (t[i] != '{' && t[i] != '[') {
    size_t j = i;
    while (j < t.size() && t[j] != ',' && t[j] != '}' && t[j] != ']' && !IsBlank(t[j])) {
      if (t[j] == '{' || t[j] == '[' || t[j] == '"' || t[j] == ':') return Scan::kBad;
      ++j;
    }
    if (j >= t.size()) return Scan::kMore;
    if (j == i) return Scan::kBad;
    end = j;
    return Scan::kOk;
  }
  int depth = 0;
  for (size_t j = i; j < t.size(); ++j) {
    char c = t[j];
    if (c == '"') {
      size_t s_end = 0;
      if (ScanString(t, j, s_end) == Scan::kMore) return Scan::kMore;
      j = s_end - 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        end = j + 1;
        return Scan::kOk;
      }
    }
  }
  return Scan::kMore;
}

// One event's members as raw tokens (strings with their quotes, but the
// name without), pointing into the window; empty when absent.
struct RawEvent {
  std::string_view name;
  bool name_is_string = false;
  std::string_view ph, cat, ts, dur, tid;
};

void TakeMember(std::string_view key, std::string_view value, RawEvent& e) {
  if (key == "name") {
    e.name_is_string = value.size() >= 2 && value.front() == '"';
    e.name = e.name_is_string ? value.substr(1, value.size() - 2) : value;
  } else if (key == "ph") {
    e.ph = value;
  } else if (key == "cat") {
    e.cat = value;
  } else if (key == "ts") {
    e.ts = value;
  } else if (key == "dur") {
    e.dur = value;
  } else if (key == "tid") {
    e.tid = value;
  }
}

// The event object at t[0] == '{'. kOk: `end` past its '}'; kBad: `why`.
Scan ParseEvent(std::string_view t, RawEvent& e, size_t& end, std::string& why) {
  e = RawEvent();
  size_t i = SkipBlanks(t, 1);
  if (i >= t.size()) return Scan::kMore;
  if (t[i] == '}') {
    end = i + 1;
    return Scan::kOk;
  }
  for (;;) {
    if (t[i] != '"') {
      why = fmt::format("expected a member name, found '{}'", Printable(t.substr(i, 1)));
      return Scan::kBad;
    }
    size_t key_end = 0;
    if (ScanString(t, i, key_end) == Scan::kMore) return Scan::kMore;
    std::string_view key = t.substr(i + 1, key_end - i - 2);
    i = SkipBlanks(t, key_end);
    if (i >= t.size()) return Scan::kMore;
    if (t[i] != ':') {
      why = fmt::format("expected ':' after \"{}\"", Printable(key, 40));
      return Scan::kBad;
    }
    i = SkipBlanks(t, i + 1);
    if (i >= t.size()) return Scan::kMore;
    size_t value_end = 0;
    Scan s = t[i] != '"'     ? ScanValue(t, i, value_end)
             : key == "name" ? ScanRawName(t, i, value_end)
                             : ScanString(t, i, value_end);
    if (s == Scan::kBad) why = fmt::format("malformed value of \"{}\"", Printable(key, 40));
    if (s != Scan::kOk) return s;
    TakeMember(key, t.substr(i, value_end - i), e);
    i = SkipBlanks(t, value_end);
    if (i >= t.size()) return Scan::kMore;
    if (t[i] == '}') {
      end = i + 1;
      return Scan::kOk;
    }
    if (t[i] != ',') {
      why = fmt::format("expected ',' or '}}' after \"{}\"", Printable(key, 40));
      return Scan::kBad;
    }
    i = SkipBlanks(t, i + 1);
    if (i >= t.size()) return Scan::kMore;
  }
}

// `raw` with its JSON escapes decoded (into `out` when it has any); a '\'
// that starts no escape, or a lone surrogate, is kept as written.
std::string_view DecodeLenient(std::string_view raw, std::string& out) {
  if (raw.find('\\') == std::string_view::npos) return raw;
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    char c = raw[i + 1];
    static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
    if (size_t k = kFrom.find(c); k != std::string_view::npos) {
      out += kTo[k];
      ++i;
      continue;
    }
    std::optional<uint32_t> cp = c == 'u' ? Hex4(raw, i + 2) : std::nullopt;
    if (!cp || (*cp >= 0xDC00 && *cp <= 0xDFFF)) {
      out += raw[i];
      continue;
    }
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
      std::optional<uint32_t> lo = i + 7 < raw.size() && raw[i + 6] == '\\' && raw[i + 7] == 'u'
                                       ? Hex4(raw, i + 8)
                                       : std::nullopt;
      if (!lo || *lo < 0xDC00 || *lo > 0xDFFF) {
        out += raw[i];
        continue;
      }
      AppendUtf8(0x10000 + ((*cp - 0xD800) << 10) + (*lo - 0xDC00), out);
      i += 11;
      continue;
    }
    AppendUtf8(*cp, out);
    i += 5;
  }
  return out;
}

std::optional<int64_t> ParseIntToken(std::string_view tok) { return ParseInt<int64_t>(tok); }

std::string Clip(std::string_view s) { return Printable(s, 40); }

// Whether `name` is an autograd node: AddmmBackward0, ReluBackward1.
bool IsAutogradNode(std::string_view name) {
  while (!name.empty() && IsDigit(name.back())) name.remove_suffix(1);
  return EndsWith(name, "Backward");
}

// The events of one file -> one RankTrace, through the trace builder the
// other trace readers share.
class LegacyTraceParser {
 public:
  explicit LegacyTraceParser(ReaderContext& ctx)
      : ctx_(ctx), builder_(ctx.out->names()), marker_(ctx.step_marker) {}

  void OnEvent(const RawEvent& e, uint64_t offset);
  void BadEvent(uint64_t offset, const std::string& why) {
    ctx_.diag().AddAtOffset(DiagCode::kTraceBadEvent, ctx_.path, offset, why + "; skipped");
  }
  RankTrace Finish(uint64_t events_total, uint64_t events_lost, bool truncated);

 private:
  // What an event of a name becomes (see the header).
  enum class Kind : uint8_t {
    kStep,
    kMarked,
    kBackendComm,
    kParamComms,
    kC10dComm,
    kCommOp,
    kOp,
    kLabel
  };
  struct NameInfo {
    uint32_t id = 0;
    Kind kind = Kind::kLabel;
    std::optional<int64_t> step;  // of kStep and of a kMarked name that carries one
    uint32_t collective = 0;      // canonical kind of a communication range
  };
  // Events not taken, by kind: the count, the first one's offset and a few
  // names.
  enum Unused { kUnusedLabel, kUnusedRemote, kUnusedFlow, kUnusedPhase, kUnusedKinds };
  struct UnusedEvents {
    uint64_t count = 0;
    uint64_t first_offset = 0;
    std::vector<std::string> names;
  };

  NameInfo& Name(std::string_view name);
  void CountUnused(Unused kind, uint64_t offset, std::string_view name);
  void TakeComplete(const RawEvent& e, std::string_view name, uint64_t offset);
  void ReportUnused();

  ReaderContext& ctx_;
  TraceBuilder builder_;
  const std::string_view marker_;  // --step-marker, "" when not given
  std::unordered_map<std::string, NameInfo> names_;
  CpuCollectives collectives_;
  std::array<UnusedEvents, kUnusedKinds> unused_;
  std::string scratch_;
};

LegacyTraceParser::NameInfo& LegacyTraceParser::Name(std::string_view name) {
  if (auto it = names_.find(std::string(name)); it != names_.end()) return it->second;
  NameInfo info;
  info.id = builder_.names().Intern(name);
  std::optional<MarkedStep> marked;
  if (!marker_.empty()) marked = MatchStepMarker(marker_, name);
  std::optional<int64_t> step;
  if (StartsWith(name, kProfilerStep)) step = ParseInt<int64_t>(name.substr(kProfilerStep.size()));
  if (marked) {
    info.kind = Kind::kMarked;
    info.step = marked->number;
  } else if (step) {
    info.kind = Kind::kStep;
    info.step = step;
  } else if (IsBackendCommAnnotation(name)) {
    info.kind = Kind::kBackendComm;
  } else if (name == kRecordParamComms) {
    info.kind = Kind::kParamComms;
  } else if (StartsWith(name, "c10d::")) {
    info.kind = Kind::kC10dComm;
  } else if (IsCpuCommName(name)) {
    info.kind = Kind::kCommOp;
  } else if (name.find("::") != std::string_view::npos || IsAutogradNode(name)) {
    info.kind = Kind::kOp;
  }
  if (info.kind == Kind::kBackendComm || info.kind == Kind::kC10dComm) {
    info.collective = builder_.names().Intern(CanonicalCollective(name, /*known_only=*/false));
  } else if (info.kind == Kind::kParamComms) {
    info.collective = builder_.names().Intern("");
  }
  return names_.emplace(std::string(name), info).first->second;
}

void LegacyTraceParser::CountUnused(Unused kind, uint64_t offset, std::string_view name) {
  UnusedEvents& u = unused_[kind];
  if (u.count++ == 0) u.first_offset = offset;
  if (u.names.size() < 3 && !name.empty() &&
      std::find(u.names.begin(), u.names.end(), name) == u.names.end()) {
    u.names.emplace_back(Printable(name, 60));
  }
}

void LegacyTraceParser::OnEvent(const RawEvent& e, uint64_t offset) {
  if (e.ph.empty()) return BadEvent(offset, "event without \"ph\"");
  std::optional<std::string_view> name;
  if (e.name_is_string) name = DecodeLenient(e.name, scratch_);
  if (e.ph != "\"X\"") {
    if ((e.ph == "\"s\"" || e.ph == "\"f\"") && e.cat == kFlowCategory) {
      return CountUnused(kUnusedFlow, offset, {});
    }
    return CountUnused(kUnusedPhase, offset, e.ph);
  }
  if (!name) return BadEvent(offset, "event without a string \"name\"");
  TakeComplete(e, *name, offset);
}

// A complete event (ph "X") named `name`.
void LegacyTraceParser::TakeComplete(const RawEvent& e, std::string_view name, uint64_t offset) {
  std::optional<int64_t> ts = ParseMicrosToNs(e.ts);
  if (!ts) {
    return BadEvent(offset, e.ts.empty() ? std::string("event without \"ts\"")
                                         : fmt::format("\"ts\": {} is not a number", Clip(e.ts)));
  }
  std::optional<int64_t> dur = ParseMicrosToNs(e.dur);
  if (!dur) {
    return BadEvent(offset, e.dur.empty()
                                ? std::string("complete event (ph X) without \"dur\"")
                                : fmt::format("\"dur\": {} is not a number", Clip(e.dur)));
  }
  if (*dur < 0) return BadEvent(offset, fmt::format("negative \"dur\": {}", Clip(e.dur)));
  if (*ts < -kMaxAbsTimeUs * 1000 || *ts + *dur > kMaxAbsTimeUs * 1000) {
    return BadEvent(offset, fmt::format("event outside +-4e15 us: \"ts\": {}, \"dur\": {}",
                                        Clip(e.ts), Clip(e.dur)));
  }
  // A remote RPC worker's event: " node_id:1, thread_id:7 ".
  if (!e.tid.empty() && e.tid.front() == '"') return CountUnused(kUnusedRemote, offset, name);
  NameInfo& info = Name(name);
  switch (info.kind) {
    case Kind::kMarked: builder_.steps().AddMarked(MarkerRange{info.step, *ts, *ts + *dur}); return;
    case Kind::kStep: builder_.steps().AddBuiltin(*info.step, *ts, *ts + *dur); return;
    case Kind::kLabel: return CountUnused(kUnusedLabel, offset, name);
    default: break;
  }
  TraceOp op;
  op.start_ns = *ts;
  op.dur_ns = *dur;
  op.name = info.id;
  std::optional<int64_t> tid = ParseIntToken(e.tid);
  op.stream = tid && *tid >= INT32_MIN && *tid <= INT32_MAX ? static_cast<int32_t>(*tid) : -1;
  op.cls = info.kind == Kind::kOp ? OpClass::kOtherCompute : OpClass::kCommunication;
  op.device = -1;
  builder_.AddOp(op);
  std::optional<CpuCommLayer> layer;
  if (info.kind == Kind::kBackendComm) layer = CpuCommLayer::kBackend;
  if (info.kind == Kind::kParamComms) layer = CpuCommLayer::kParamComms;
  if (info.kind == Kind::kC10dComm) layer = CpuCommLayer::kC10d;
  if (!layer) return;
  collectives_.Add(*layer, *ts, *dur, info.id, offset).collective = info.collective;
}

void LegacyTraceParser::ReportUnused() {
  // What each kind is, as "<count> <one or many> <why>".
  struct What {
    std::string_view one, many, why;
  };
  static constexpr What kWhat[kUnusedKinds] = {
      {"range", "ranges",
       "not taken as ops (record_function labels: no '::' in the name, no autograd node)"},
      {"event", "events", "of remote RPC workers, not this rank's (a string \"tid\")"},
      {"CUDA launch arrow", "CUDA launch arrows",
       "(ph \"s\", cpu_to_cuda): this export writes no GPU kernel; a Kineto build of "
       "torch.profiler traces them"},
      {"event", "events", "of a phase other than \"X\" (complete)"},
  };
  for (size_t k = 0; k < kUnusedKinds; ++k) {
    const UnusedEvents& u = unused_[k];
    if (u.count == 0) continue;
    std::string names;
    for (const std::string& n : u.names) names += (names.empty() ? "" : ", ") + n;
    const What& w = kWhat[k];
    ctx_.diag().AddAtOffset(
        DiagCode::kTraceEventsUnused, ctx_.path, u.first_offset,
        fmt::format("{} {} {}{}", u.count, u.count == 1 ? w.one : w.many, w.why,
                    names.empty() ? "" : ": " + names + (u.names.size() < u.count ? ", ..." : "")),
        u.count);
  }
}

RankTrace LegacyTraceParser::Finish(uint64_t events_total, uint64_t events_lost, bool truncated) {
  collectives_.AddLowestTo(builder_);
  const bool marked = builder_.steps().marked();
  RankTrace t = builder_.Finish(/*shift_ns=*/0, RepeatedSteps::kSpan);
  t.file = ctx_.file_index;
  t.producer = "torch-legacy";
  t.cpu_only = true;
  t.origin = TraceOrigin::kFileStart;
  t.rank = ctx_.rank_from_path;
  t.events_total = events_total;
  t.events_lost = events_lost;
  t.truncated = truncated;
  std::sort(t.steps.begin(), t.steps.end(),
            [](const TraceStep& a, const TraceStep& b) { return a.step < b.step; });
  builder_.AttributeLaunchGaps(t);
  if (!marker_.empty() && !marked) {
    ctx_.diag().Add(DiagCode::kTraceNoStepMarker, ctx_.path, 0,
                    fmt::format("no range named '{}' (--step-marker); {} ProfilerStep#N steps used",
                                marker_, t.steps.size()));
  }
  ReportUnused();
  if (!t.rank) {
    ctx_.diag().Add(DiagCode::kTraceNoRank, ctx_.path, 0,
                    "no rank in the file name (this export names none; tensorboard_trace_handler's "
                    "default name is host_pid: use worker_name=f\"rank{rank}\", --rank-from or "
                    "--file-ranks)");
  }
  if (t.ops.empty() && t.steps.empty()) {
    ctx_.diag().Add(DiagCode::kTraceNoEvents, ctx_.path, 0,
                    fmt::format("{} events, none of them an operator or a step", events_total));
  }
  return t;
}

// The events of one file, from the array walk to the parser.
class LegacySink : public EventSink {
 public:
  explicit LegacySink(LegacyTraceParser& parser) : parser_(parser) {}

  EventScan Event(std::string_view window, uint64_t start, size_t& end, std::string& why) override {
    RawEvent e;
    Scan s = ParseEvent(window, e, end, why);
    if (s == Scan::kOk) parser_.OnEvent(e, start);
    return s;
  }
  void BadEvent(uint64_t offset, const std::string& why) override { parser_.BadEvent(offset, why); }

 private:
  LegacyTraceParser& parser_;
};

// "key" followed by blanks, ':' and blanks, at `at` in `s`: the position
// of the value, or npos.
size_t ValueOfKey(std::string_view s, std::string_view quoted_key) {
  for (size_t at = s.find(quoted_key); at != std::string_view::npos;
       at = s.find(quoted_key, at + 1)) {
    size_t i = SkipBlanks(s, at + quoted_key.size());
    if (i >= s.size() || s[i] != ':') continue;
    return SkipBlanks(s, i + 1);
  }
  return std::string_view::npos;
}

class TorchLegacyTraceReader : public TraceReader {
 public:
  std::string_view name() const override { return "torch-legacy"; }

  // The first event of a bare array has "pid": "CPU functions", ph and ts:
  // kSniffCertain - 1, above the Kineto reader's kSniffCertain - 2 for any
  // array of events with ph and ts (which would read nothing here: no
  // "cat"), below its kSniffCertain for a "traceEvents" object (Kineto never
  // writes this pid).
  int Sniff(std::string_view head) const override {
    size_t i = StartsWith(head, "\xEF\xBB\xBF") ? 3 : 0;
    i = SkipBlanks(head, i);
    if (i >= head.size() || head[i] != '[') return kSniffNo;
    i = SkipBlanks(head, i + 1);
    if (i >= head.size() || head[i] != '{') return kSniffNo;
    std::string_view first = head.substr(i, 2048);
    if (size_t end = first.find("}}"); end != std::string_view::npos) first = first.substr(0, end);
    size_t pid = ValueOfKey(first, "\"pid\"");
    if (pid == std::string_view::npos ||
        first.substr(pid, kCpuFunctionsPid.size()) != kCpuFunctionsPid) {
      return kSniffNo;
    }
    if (ValueOfKey(first, "\"ph\"") == std::string_view::npos ||
        ValueOfKey(first, "\"ts\"") == std::string_view::npos) {
      return kSniffNo;
    }
    return kSniffCertain - 1;
  }

  uint64_t Read(const std::string& path, ReaderContext& ctx) const override {
    auto source = OpenByteSource(path, ctx.gzip_decode);
    if (!source.ok()) {
      ctx.diag().Add(DiagCode::kFileUnreadable, path, 0, source.status().message());
      return 0;
    }
    LegacyTraceParser parser(ctx);
    LegacySink sink(parser);
    EventArrayRead file = ReadEventArray(**source, ctx, sink);
    uint64_t taken = 0;
    if (file.is_array) {
      RankTrace t = parser.Finish(file.events_total, file.events_lost, file.truncated);
      taken = t.ops.size() + t.steps.size();
      ctx.out->AddTrace(std::move(t));
    }
    CountStreamDamage(**source, path, ctx.diag());
    return taken;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeTorchLegacyTraceReader() {
  return std::make_unique<TorchLegacyTraceReader>();
}

}  // namespace laggard
