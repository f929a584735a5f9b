#include "ingest/traces/common/event_array.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/traces/common/json_scalars.h"

namespace laggard {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The bytes of a file from the read position on, a chunk at a time, with
// `pad` blanks readable past the last: what is consumed is dropped before
// the next chunk is read.
class ChunkedInput {
 public:
  ChunkedInput(ByteSource& source, size_t pad) : source_(source), pad_(pad), buf_(pad, ' ') {}

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
    buf_.resize(end_ + kChunkBytes + pad_);
    size_t n = source_.Read(buf_.data() + end_, kChunkBytes);
    end_ += n;
    std::memset(buf_.data() + end_, ' ', pad_);
    buf_.resize(end_ + pad_);
    if (n == 0) eof_ = true;
    return n > 0;
  }

  // The next byte that is not JSON whitespace, consumed up to it; false at
  // the end.
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
  size_t pad_;
  std::string buf_;
  size_t pos_ = 0;
  size_t end_ = 0;  // of the data; pad_ blanks follow
  uint64_t base_ = 0;
  bool eof_ = false;
};

class EventArrayWalk {
 public:
  EventArrayWalk(ByteSource& source, ReaderContext& ctx, EventSink& sink, size_t pad)
      : in_(source, pad), ctx_(ctx), sink_(sink) {}

  EventArrayRead Read();

 private:
  // Reads the event at the read position ('{'); false at a cut.
  bool ReadEvent();
  // Skips to the next event or to the ']' after the bad event (or stray
  // bytes) at the read position: past a '}' followed by ',' and '{' (or
  // ']') for an event, to the next '{' or ']' for stray bytes between
  // events. False at the end of the data.
  bool Resync(bool in_event);
  void Cut(const std::string& where);

  ChunkedInput in_;
  ReaderContext& ctx_;
  EventSink& sink_;
  EventArrayRead read_;
};

void EventArrayWalk::Cut(const std::string& where) {
  read_.truncated = true;
  ctx_.diag().AddAtOffset(DiagCode::kTraceTruncated, ctx_.path, in_.offset(),
                          fmt::format("file ends at byte {} {}; {} complete events kept",
                                      in_.offset(), where, read_.events_total));
}

EventArrayRead EventArrayWalk::Read() {
  in_.More();
  if (StartsWith(in_.window(), kBom)) in_.Advance(kBom.size());
  char c = 0;
  if (!in_.PeekNonBlank(c) || c != '[') {
    ctx_.diag().AddAtOffset(DiagCode::kTraceUnsupported, ctx_.path, in_.offset(),
                            "not a JSON array of trace events");
    return read_;
  }
  read_.is_array = true;
  in_.Advance(1);
  for (;;) {
    if (!in_.PeekNonBlank(c)) {
      Cut("without the closing ']' the exporter always writes (the write was cut)");
      return read_;
    }
    if (c == ']') {
      in_.Advance(1);
      if (in_.PeekNonBlank(c)) {
        ctx_.diag().AddAtOffset(DiagCode::kTraceBadEvent, ctx_.path, in_.offset(),
                                "data after the closing ']'; ignored");
      }
      return read_;
    }
    if (c == ',') {
      in_.Advance(1);
      continue;
    }
    if (c != '{') {
      ++read_.events_total;
      sink_.BadEvent(in_.offset(),
                     fmt::format("'{}' where an event should start", Printable({&c, 1})));
      if (!Resync(/*in_event=*/false)) return read_;
      continue;
    }
    if (!ReadEvent()) return read_;
  }
}

bool EventArrayWalk::ReadEvent() {
  const uint64_t start = in_.offset();
  for (;;) {
    std::string_view w = in_.window();
    size_t end = 0;
    std::string why;
    EventScan s = sink_.Event(w.substr(0, kMaxTraceEventBytes), start, end, why);
    if (s == EventScan::kOk && (end == 0 || end > w.size())) {
      s = EventScan::kBad;
      why = "event the reader could not place";
    }
    if (s == EventScan::kOk) {
      ++read_.events_total;
      in_.Advance(end);
      return true;
    }
    if (s == EventScan::kMore && w.size() > kMaxTraceEventBytes) {
      s = EventScan::kBad;
      why = "event over 1 MiB";
    }
    if (s == EventScan::kBad) {
      ++read_.events_total;
      sink_.BadEvent(start, why);
      return Resync(/*in_event=*/true);
    }
    if (!in_.More()) {
      read_.events_lost = 1;
      in_.Advance(in_.window().size());
      Cut(fmt::format("inside the event that starts at byte {}", start));
      return false;
    }
  }
}

bool EventArrayWalk::Resync(bool in_event) {
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

}  // namespace

EventArrayRead ReadEventArray(ByteSource& source, ReaderContext& ctx, EventSink& sink,
                              size_t pad_bytes) {
  return EventArrayWalk(source, ctx, sink, pad_bytes).Read();
}

}  // namespace laggard
