#include "ingest/traces/megatron/megatron_timeline_reader.h"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "formats/megatron_timeline.h"
#include "ingest/common/input_file.h"
#include "ingest/common/sniff.h"
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

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kMaxEventBytes = 1 << 20;
// Brackets an event may nest (the exporter's nest two).
constexpr size_t kMaxDepth = 32;
constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The bytes of a file from the read position on, a chunk at a time, with
// kEventPadBytes readable past the last (simdjson's padding): what is
// consumed is dropped before the next chunk is read.
class PaddedInput {
 public:
  explicit PaddedInput(ByteSource& source) : source_(source) {}

  std::string_view window() const { return {buf_.data() + pos_, end_ - pos_}; }
  uint64_t offset() const { return base_ + pos_; }  // of the read position, in the file
  void Advance(size_t n) { pos_ += n; }

  // Appends the next chunk to the window; false at the end of the data.
  bool More() {
    if (eof_) return false;
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      base_ += pos_;
      pos_ = 0;
    }
    buf_.resize(end_ + kChunkBytes + kEventPadBytes);
    size_t n = source_.Read(buf_.data() + end_, kChunkBytes);
    end_ += n;
    std::memset(buf_.data() + end_, ' ', kEventPadBytes);
    buf_.resize(end_ + kEventPadBytes);
    if (n == 0) eof_ = true;
    return n > 0;
  }

  // The next byte that is not blank, consumed up to it; false at the end.
  bool PeekNonBlank(char& c) {
    for (;;) {
      std::string_view w = window();
      size_t i = 0;
      while (i < w.size() && IsBlank(w[i])) ++i;
      Advance(i);
      if (i < w.size()) {
        c = w[i];
        return true;
      }
      if (!More()) return false;
    }
  }

 private:
  ByteSource& source_;
  std::string buf_ = std::string(kEventPadBytes, ' ');
  size_t pos_ = 0;
  size_t end_ = 0;  // of the data; kEventPadBytes follow
  uint64_t base_ = 0;
  bool eof_ = false;
};

// How far a scan of the window got: done, malformed, or out of bytes.
enum class Scan { kOk, kBad, kMore };

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

// The top level of one file: '[', events separated by ',', ']'.
class TimelineFile {
 public:
  TimelineFile(ByteSource& source, TimelineAssembler& assembler, ReaderContext& ctx)
      : in_(source), assembler_(assembler), ctx_(ctx) {}

  // False when the file is not a JSON array (trace.unsupported counted).
  bool Read();
  uint64_t events_total() const { return events_total_; }

 private:
  // Reads the event at the read position ('{'); false at a cut.
  bool ReadEvent();
  // Skips to the next event or to the ']' after the bad event (or stray
  // bytes) at the read position: past a '}' followed by ',' and '{' (or
  // ']') for an event, to the next '{' or ']' for stray bytes between
  // events. False at the end of the data.
  bool Resync(bool in_event);
  void Cut(const std::string& where);

  PaddedInput in_;
  TimelineAssembler& assembler_;
  ReaderContext& ctx_;
  MegatronEventParser parser_;
  MegatronEvent event_;
  uint64_t events_total_ = 0;
};

void TimelineFile::Cut(const std::string& where) {
  ctx_.diag().AddAtOffset(DiagCode::kTraceTruncated, ctx_.path, in_.offset(),
                          fmt::format("file ends at byte {} {}; {} complete events kept",
                                      in_.offset(), where, events_total_));
}

bool TimelineFile::Read() {
  in_.More();
  if (StartsWith(in_.window(), kBom)) in_.Advance(kBom.size());
  char c = 0;
  if (!in_.PeekNonBlank(c) || c != '[') {
    ctx_.diag().AddAtOffset(DiagCode::kTraceUnsupported, ctx_.path, in_.offset(),
                            "not a JSON array of trace events");
    return false;
  }
  in_.Advance(1);
  for (;;) {
    if (!in_.PeekNonBlank(c)) {
      Cut("without the closing ']' the exporter always writes (the write was cut)");
      return true;
    }
    if (c == ']') {
      in_.Advance(1);
      if (in_.PeekNonBlank(c)) {
        ctx_.diag().AddAtOffset(DiagCode::kTraceBadEvent, ctx_.path, in_.offset(),
                                "data after the closing ']'; ignored");
      }
      return true;
    }
    if (c == ',') {
      in_.Advance(1);
      continue;
    }
    if (c != '{') {
      ++events_total_;
      assembler_.BadEvent(in_.offset(),
                          fmt::format("'{}' where an event should start", Printable({&c, 1})));
      if (!Resync(/*in_event=*/false)) return true;
      continue;
    }
    if (!ReadEvent()) return true;
  }
}

bool TimelineFile::ReadEvent() {
  const uint64_t start = in_.offset();
  for (;;) {
    std::string_view w = in_.window();
    size_t end = 0;
    Scan s = ScanObject(w, end);
    // Over 1 MiB is bad whether or not its end is in the window yet, so
    // that chunk boundaries change nothing.
    if (s == Scan::kOk && end <= kMaxEventBytes) {
      ++events_total_;
      if (parser_.Parse(w.data(), end, event_)) {
        assembler_.OnEvent(event_, start);
      } else {
        assembler_.BadEvent(start, "event that is not valid JSON");
      }
      in_.Advance(end);
      return true;
    }
    std::string why = "brackets that do not match";
    if (s != Scan::kBad && w.size() > kMaxEventBytes) {
      s = Scan::kBad;
      why = "event over 1 MiB";
    }
    if (s == Scan::kBad) {
      ++events_total_;
      assembler_.BadEvent(start, "event with " + why);
      return Resync(/*in_event=*/true);
    }
    if (!in_.More()) {
      in_.Advance(in_.window().size());
      Cut(fmt::format("inside the event that starts at byte {}", start));
      return false;
    }
  }
}

bool TimelineFile::Resync(bool in_event) {
  in_.Advance(1);
  int state = 0;  // in an event: 0 looking for '}', 1 after '}', 2 after "},"
  for (;;) {
    std::string_view w = in_.window();
    for (size_t i = 0; i < w.size(); ++i) {
      char c = w[i];
      bool found = false;
      if (!in_event) {
        found = c == '{' || c == ']';
      } else if (IsBlank(c) && state > 0) {
        continue;
      } else if (c == '}') {
        state = 1;
      } else if (state == 1 && c == ',') {
        state = 2;
      } else {
        found = (state == 1 && c == ']') || (state == 2 && c == '{');
        state = 0;
      }
      if (found) {
        in_.Advance(i);
        return true;
      }
    }
    in_.Advance(w.size());
    if (!in_.More()) {
      Cut("while looking for the event after a bad one");
      return false;
    }
  }
}

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
    TimelineFile file(**source, assembler, ctx);
    uint64_t taken = 0;
    if (file.Read()) taken = assembler.Finish(file.events_total());
    if (const auto& damage = (*source)->damage()) {
      ctx.diag().AddAtOffset(damage->kind == StreamDamage::kTruncated ? DiagCode::kGzipTruncated
                                                                      : DiagCode::kGzipCorrupt,
                             path, damage->compressed_offset, damage->message);
    }
    return taken;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeMegatronTimelineReader() {
  return std::make_unique<MegatronTimelineReader>();
}

}  // namespace laggard
