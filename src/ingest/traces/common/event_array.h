// The top level of a trace file that is a bare JSON array of events ('[',
// events separated by ',', ']'), read a chunk at a time: the walk the
// Megatron timeline and torch legacy readers share. Each event goes to the
// reader's EventSink; a bad event or stray bytes are counted where they
// are, and reading goes on at the next event. A file cut inside the array
// keeps every complete event before the cut.

#ifndef LAGGARD_INGEST_TRACES_COMMON_EVENT_ARRAY_H_
#define LAGGARD_INGEST_TRACES_COMMON_EVENT_ARRAY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ingest/common/input_file.h"
#include "ingest/common/text_reader.h"

namespace laggard {

// How far a scan of the bytes at hand got: done, malformed, or out of bytes.
enum class EventScan { kOk, kBad, kMore };

// An event over this size is bad wherever its end is, so that where the
// chunks fall changes nothing.
inline constexpr size_t kMaxTraceEventBytes = size_t{1} << 20;

class EventSink {
 public:
  virtual ~EventSink() = default;
  // The event at window[0] == '{', which starts at byte `start` of the
  // file. kOk with `end` past it once the sink has taken it (or counted it
  // bad itself: the walk goes on after it); kBad with `why` when it is
  // malformed (the walk resynchronises); kMore when the window ends inside
  // it. The window holds at most kMaxTraceEventBytes bytes.
  virtual EventScan Event(std::string_view window, uint64_t start, size_t& end,
                          std::string& why) = 0;
  // A bad event, or stray bytes where an event should start, at `offset`.
  virtual void BadEvent(uint64_t offset, const std::string& why) = 0;
};

struct EventArrayRead {
  bool is_array = false;      // false: not a JSON array (trace.unsupported counted)
  uint64_t events_total = 0;  // events taken or counted bad
  uint64_t events_lost = 0;   // 1 when the file ends inside an event
  bool truncated = false;     // the file ends before the closing ']'
};

// Walks the array in `source` (ctx.path names it in messages). At least
// `pad_bytes` readable bytes follow every window (blanks past the data's
// end): simdjson's padding, for sinks that parse in place.
EventArrayRead ReadEventArray(ByteSource& source, ReaderContext& ctx, EventSink& sink,
                              size_t pad_bytes = 0);

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_EVENT_ARRAY_H_
