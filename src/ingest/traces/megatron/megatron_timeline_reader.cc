#include "ingest/traces/megatron/megatron_timeline_reader.h"

#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "formats/megatron_timeline.h"
#include "ingest/common/input_file.h"
#include "ingest/common/sniff.h"
#include "ingest/traces/common/event_array.h"
#include "ingest/traces/common/json_scalars.h"
#include "ingest/traces/megatron/megatron_event.h"
#include "ingest/traces/megatron/timeline_assembler.h"

namespace laggard {
namespace {

using megatron::kEventPadBytes;
using megatron::MegatronEvent;
using megatron::MegatronEventParser;
using megatron::TimelineAssembler;
namespace mt = megatron_timeline;

// Brackets an event may nest (the exporter's nest two).
constexpr size_t kMaxDepth = 32;
constexpr std::string_view kBom = "\xEF\xBB\xBF";

using Scan = EventScan;

// The object at t[0] == '{': `end` past its matching '}' (kOk), or at the
// bracket that does not match, past kMaxDepth (kBad). Strings are skipped
// with their escapes.
Scan ScanObject(std::string_view t, size_t& end) {
  char closers[kMaxDepth];
  size_t depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '"') {
      for (++i; i < t.size() && t[i] != '"'; ++i) {
        if (t[i] == '\\') ++i;
      }
      if (i >= t.size()) return Scan::kMore;
    } else if (c == '{' || c == '[') {
      if (depth == kMaxDepth) {
        end = i;
        return Scan::kBad;
      }
      closers[depth++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
      if (depth == 0 || closers[depth - 1] != c) {
        end = i;
        return Scan::kBad;
      }
      if (--depth == 0) {
        end = i + 1;
        return Scan::kOk;
      }
    }
  }
  return Scan::kMore;
}

// The events of one file, from the array walk to the assembler.
class TimelineSink : public EventSink {
 public:
  explicit TimelineSink(TimelineAssembler& assembler) : assembler_(assembler) {}

  EventScan Event(std::string_view window, uint64_t start, size_t& end, std::string& why) override {
    Scan s = ScanObject(window, end);
    if (s == Scan::kBad) {
      why = "event with brackets that do not match";
    } else if (s == Scan::kOk) {
      if (parser_.Parse(window.data(), end, event_)) {
        assembler_.OnEvent(event_, start);
      } else {
        assembler_.BadEvent(start, "event that is not valid JSON");
      }
    }
    return s;
  }
  void BadEvent(uint64_t offset, const std::string& why) override {
    assembler_.BadEvent(offset, why);
  }

 private:
  TimelineAssembler& assembler_;
  MegatronEventParser parser_;
  MegatronEvent event_;
};

// Whether the first event of a head is a Megatron timeline's: an op of the
// vocabulary with args.step and args.mb_id or args.seq_id, or a
// thread_name placing its thread on a pipeline stage.
bool IsMegatronEvent(const MegatronEvent& e) {
  if (!e.ph || !e.name) return false;
  if (*e.ph == kineto_keys::phase::kComplete) {
    return TimelineOpFromName(*e.name).has_value() && !e.step.empty() &&
           (!e.mb_id.empty() || !e.seq_id.empty());
  }
  return *e.ph == kineto_keys::phase::kMetadata && *e.name == mt::kThreadName && e.args_name &&
         StartsWith(*e.args_name, mt::kPpRankPrefix);
}

class MegatronTimelineReader : public TraceReader {
 public:
  std::string_view name() const override { return "megatron-timeline"; }

  // A bare array whose first event is a Megatron op or thread_name:
  // kSniffCertain - 1, above the Kineto reader's kSniffCertain - 2 for any
  // array of events with ph and ts (it would find no kernel here). The
  // torch legacy reader's level too, on files it never claims (its pid is
  // "CPU functions", ours a DP rank).
  int Sniff(std::string_view head) const override {
    size_t i = StartsWith(head, kBom) ? kBom.size() : 0;
    while (i < head.size() && IsBlank(head[i])) ++i;
    if (i >= head.size() || head[i] != '[') return kSniffNo;
    for (++i; i < head.size() && IsBlank(head[i]);) ++i;
    if (i >= head.size() || head[i] != '{') return kSniffNo;
    std::string_view first = head.substr(i);
    size_t end = 0;
    if (ScanObject(first, end) != Scan::kOk) return kSniffNo;
    std::string padded(first.substr(0, end));
    padded.append(kEventPadBytes, ' ');
    MegatronEventParser parser;
    MegatronEvent e;
    if (!parser.Parse(padded.data(), end, e) || !IsMegatronEvent(e)) return kSniffNo;
    return kSniffCertain - 1;
  }

  uint64_t Read(const std::string& path, ReaderContext& ctx) const override {
    auto source = OpenByteSource(path, ctx.gzip_decode);
    if (!source.ok()) {
      ctx.diag().Add(DiagCode::kFileUnreadable, path, 0, source.status().message());
      return 0;
    }
    TimelineAssembler assembler(ctx);
    TimelineSink sink(assembler);
    EventArrayRead file = ReadEventArray(**source, ctx, sink, kEventPadBytes);
    uint64_t taken = 0;
    if (file.is_array) taken = assembler.Finish(file.events_total);
    CountStreamDamage(**source, path, ctx.diag());
    return taken;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeMegatronTimelineReader() {
  return std::make_unique<MegatronTimelineReader>();
}

}  // namespace laggard
