// The trace tokenizer of the Kineto reader: a trace file's bytes -> what
// its top-level members say (TraceHeader) and its events, each read by the
// event tokenizer (event_tokenizer.h) and handed to an EventSink (the
// parser, kineto_parser.h). With the event tokenizer, the reader's third
// stage; the reader (kineto_reader.cc) runs one per pass over a file.
//
// Both layouts load: the JSON Object Format ({"traceEvents": [...],
// "distributedInfo": ..., "baseTimeNanoseconds": ...}, members in any order;
// distributedInfo, baseTimeNanoseconds, host_name / hostname and
// deviceProperties are kept, the rest skipped) and the JSON Array Format (a
// bare [...] of events, whose closing ']' the format allows to be missing).
//
// Streaming: memory does not grow with the file (it holds the largest event
// plus a 512 KiB chunk). The byte scanner's bracket indexer finds where
// each event of traceEvents starts and ends; an event cut by a chunk
// boundary waits for the next chunk. Events over 8 MiB are skipped as
// trace.bad_event, and so is anything between events but blanks and
// commas. A file cut short keeps every complete event before the cut and
// counts one trace.truncated at the cut's byte offset; so does a stretch of
// kNulStretchBytes NUL bytes, where reading stops; malformed JSON at
// the top level is one trace.bad_event and the rest of the file is ignored;
// gzip damage is gzip.truncated / .corrupt.
//
// Thread-safety: one tokenizer per pass over one file.

#ifndef LAGGARD_INGEST_TRACES_KINETO_TRACE_TOKENIZER_H_
#define LAGGARD_INGEST_TRACES_KINETO_TRACE_TOKENIZER_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/common/input_file.h"
#include "ingest/traces/kineto/byte_scanner.h"
#include "ingest/traces/kineto/event_tokenizer.h"
#include "ingest/traces/kineto/kineto_event.h"
#include "model/process_group.h"

namespace laggard::kineto {

inline constexpr size_t kChunkBytes = 512 << 10;   // read at a time (stays in L2 while used)
inline constexpr size_t kMaxEventBytes = 8 << 20;  // larger events are skipped
// A run of this many NUL bytes ends the data: JSON holds no NUL, and a
// preallocated or sparse file that was not written further is NUL to its
// end (read through to its end, a 2 GB one takes 16 s to refuse).
inline constexpr size_t kNulStretchBytes = 4096;

// Who takes the events the tokenizer reads.
class EventSink {
 public:
  virtual ~EventSink() = default;
  // An event this pass needs, `offset` the byte its '{' is at.
  virtual void OnEvent(const EventFields& e, uint64_t offset) = 0;
};

// What the top-level members say about the trace.
struct TraceHeader {
  int64_t base_ns = 0;                   // baseTimeNanoseconds, added to every time (0 when absent)
  std::optional<int32_t> rank;           // distributedInfo.rank
  std::optional<int32_t> world_size;     // distributedInfo.world_size
  std::optional<std::string> dist_host;  // distributedInfo.hostname / host_name / host
  std::optional<std::string> top_host;   // top-level host_name / hostname
  std::vector<ProcessGroupInfo> groups;  // distributedInfo.pg_config (the groups this rank is in)
  bool gpu_job = false;  // deviceProperties lists a GPU, or the backend is NCCL-like
};

// Events go to the flat walker first unless LAGGARD_KINETO_EVENTS=ondemand
// (every event through simdjson On-Demand: to compare the two paths).
bool FlatEventsEnabled();

class TraceTokenizer {
 public:
  // Diagnostics go to `diag`; the tokenizer owns `source`.
  TraceTokenizer(std::unique_ptr<ByteSource> source, Mode mode, std::string_view step_marker,
                 EventDiagnostics& diag);
  ~TraceTokenizer();

  // Reads the file to its end (or to damage), handing each event needed in
  // this mode to `sink`.
  void Run(EventSink& sink);

  // The file holds a trace (a JSON array, or an object with traceEvents,
  // or one cut before its traceEvents). Else Run() counted
  // trace.unsupported.
  bool has_trace() const { return has_trace_; }
  const TraceHeader& header() const { return header_; }
  bool truncated() const { return truncated_; }
  uint64_t events_total() const { return events_total_; }
  uint64_t events_lost() const { return events_lost_; }
  bool saw_cpu_events() const { return events_.saw_cpu_events(); }
  bool saw_runtime() const { return events_.saw_runtime(); }
  // Appended to the trace.truncated note of a cut (before Run()).
  void set_cut_note(std::string note) { cut_note_ = std::move(note); }

 private:
  // Growable bytes without the zero fill of std::vector::resize.
  class RawBuffer {
   public:
    char* data() { return data_.get(); }
    // Makes room for `size` bytes, keeping the first `keep`.
    void Reserve(size_t size, size_t keep) {
      if (size <= capacity_) return;
      std::unique_ptr<char[]> bigger(new char[size]);
      if (keep > 0) std::memcpy(bigger.get(), data_.get(), keep);
      data_ = std::move(bigger);
      capacity_ = size;
    }

   private:
    std::unique_ptr<char[]> data_;
    size_t capacity_ = 0;
  };

  // Buffer: bytes [buf_off_, buf_off_ + len_) of the decompressed stream,
  // followed by kPadBytes blanks. (The helpers declared inline are parts of
  // their one caller, in trace_tokenizer.cc.)
  char* Ptr(uint64_t abs) { return buf_.data() + (abs - buf_off_); }
  uint64_t End() const { return buf_off_ + len_; }
  inline bool Refill(uint64_t keep_from);
  inline void StopAtNulStretch(size_t from, size_t old_len);
  std::string EndWords() const;  // "file ends at byte N", or where the NUL bytes start
  template <typename F>
  inline bool ScanBrackets(uint64_t& scan, ScanState& st, bool at_eof, F&& on_bracket);
  bool IsOpen(uint64_t at) { return (*Ptr(at) | 0x20) == '{'; }

  // Top level (scalar: a few small members around traceEvents).
  bool SkipWs();
  static void Capture(std::string*& cap, const char* p, size_t n);
  inline bool SkipValue(std::string* cap);
  inline bool SkipString(std::string* cap);
  inline bool SkipNested(std::string* cap);
  inline void ParseRootObject();
  inline void TakeMember(const std::string& k, const std::string& text);
  void Cut(const std::string& where);
  void Malformed(const std::string& what);
  void ReportDamage();

  // traceEvents.
  bool ParseEvents();
  [[gnu::always_inline]] inline void CheckGap(uint64_t from, uint64_t to);  // once per event
  void TakeSpan(uint64_t start, uint64_t end, bool oversized);

  std::unique_ptr<ByteSource> src_;
  EventDiagnostics& diag_;
  EventSink* sink_ = nullptr;
  EventTokenizer events_;

  RawBuffer buf_;
  uint64_t buf_off_ = 0;
  size_t len_ = 0;
  bool eof_ = false;
  uint64_t nul_run_ = 0;              // NUL bytes at the end of what was read
  uint64_t nul_start_ = 0;            // where that run starts
  std::optional<uint64_t> nul_stop_;  // where a NUL stretch ended the data
  uint64_t pos_ = 0;
  std::unique_ptr<uint32_t[]> brackets_;

  bool has_trace_ = false;
  bool array_format_ = false;
  bool saw_events_ = false;
  bool root_closed_ = false;
  bool truncated_ = false;
  uint64_t events_total_ = 0;
  uint64_t events_lost_ = 0;
  TraceHeader header_;
  std::string cut_note_;
};

}  // namespace laggard::kineto

#endif  // LAGGARD_INGEST_TRACES_KINETO_TRACE_TOKENIZER_H_
