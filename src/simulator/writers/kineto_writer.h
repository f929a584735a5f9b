// The Kineto JSON writer of the trace simulator (kineto_traces.cc): the
// output file (Sink, plain or gzip), the members of a JSON object as Kineto
// writes them (Members, its keys from the catalogue formats/kineto_keys.h,
// which the Kineto reader reads by), and one rank's event writer
// (TraceWriter). Only kineto_traces.cc and kineto_truth.cc include it.
//
// Thread-safety: one Sink and one TraceWriter per rank's file; the writer
// threads of WriteKinetoTraces() each have their own.

#ifndef LAGGARD_SIMULATOR_WRITERS_KINETO_WRITER_H_
#define LAGGARD_SIMULATOR_WRITERS_KINETO_WRITER_H_

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/status.h"
#include "formats/kineto_keys.h"

namespace laggard::sim::kineto_json {

namespace keys = laggard::kineto_keys;

inline constexpr size_t kFlushBytes = 1 << 20;  // a TraceWriter's buffer, then written

// The members of one JSON object as Kineto writes them: "key": value, ", " between them. Keys come
// from the catalogue (formats/kineto_keys.h); the simulator's strings need no escapes.
class Members {
 public:
  explicit Members(fmt::memory_buffer& out) : out_(out) {}
  Members& Key(std::string_view key) {  // the caller writes the value
    Put(first_ ? "\"" : ", \"").Put(key).Put("\": ");
    first_ = false;
    return *this;
  }
  Members& Str(std::string_view key, std::string_view value) {
    return Key(key).Put("\"").Put(value).Put("\"");
  }
  Members& Json(std::string_view key, std::string_view json) { return Key(key).Put(json); }
  template <typename T>
  Members& Num(std::string_view key, const T& value, std::string_view format = "{}") {
    fmt::format_to(fmt::appender(Key(key).out_), fmt::runtime(format), value);
    return *this;
  }
  Members& More(std::string_view members) {  // members written elsewhere ("\"a\": 1, \"b\": 2")
    if (members.empty()) return *this;
    Put(first_ ? "" : ", ").Put(members);
    first_ = false;
    return *this;
  }

 private:
  Members& Put(std::string_view text) {
    out_.append(text.data(), text.data() + text.size());
    return *this;
  }
  fmt::memory_buffer& out_;
  bool first_ = true;
};

// The members `write` writes, as text.
template <typename F>
std::string MembersText(F&& write) {
  fmt::memory_buffer buf;
  Members m(buf);
  write(m);
  return fmt::to_string(buf);
}

// Output file: plain or gzip, closed on destruction.
class Sink {
 public:
  Sink() = default;
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  ~Sink() { (void)Close(); }

  Status Open(const std::string& path, bool gzip) {
    path_ = path;
    if (gzip) {
      gz_ = gzopen(path.c_str(), "wb1");
      if (!gz_) return Status::Error(fmt::format("{}: cannot write", path));
    } else {
      file_ = std::fopen(path.c_str(), "wb");
      if (!file_) return Status::Error(fmt::format("{}: cannot write", path));
    }
    return Status::Ok();
  }

  bool Write(std::string_view data) {
    if (data.empty()) return true;
    if (gz_)
      return gzwrite(gz_, data.data(), static_cast<unsigned>(data.size())) ==
             static_cast<int>(data.size());
    return file_ && std::fwrite(data.data(), 1, data.size(), file_) == data.size();
  }

  Status Close() {
    bool ok = true;
    if (gz_) ok = gzclose(gz_) == Z_OK;
    if (file_) ok = std::fclose(file_) == 0;
    gz_ = nullptr;
    file_ = nullptr;
    return ok ? Status::Ok() : Status::Error(fmt::format("{}: write failed", path_));
  }

 private:
  std::string path_;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
};

// What one rank's trace says about itself.
struct RankInfo {
  int rank = 0;
  int node = 0;
  int gpu = 0;
  int pid = 0;
  int main_tid = 0;
  int autograd_tid = 0;
  int64_t clock_offset_ns = 0;
  int64_t base_ns = 0;  // baseTimeNanoseconds of this process (true clock of its host)
};

// Formats Kineto events of one rank into a buffer that is flushed to `sink`
// (or only counted, without a sink). Takes true times; writes them on the
// host's clock relative to the rank's base time.
class TraceWriter {
 public:
  TraceWriter(const RankInfo& ri, Sink* sink) : ri_(ri), sink_(sink) {}

  int64_t NewExternalId() { return ++external_id_; }
  int64_t NewCorrelation() { return ++correlation_; }
  uint64_t bytes() const { return flushed_ + buf_.size(); }
  bool failed() const { return failed_; }

  void Raw(std::string_view s) { buf_.append(s.data(), s.data() + s.size()); }
  // "  {" and the members of an event; Raw("},\n") closes it.
  Members Open() {
    Raw("  {");
    return Members(buf_);
  }
  void TimeAndDuration(Members& m, int64_t true_ns, int64_t dur_ns) {
    m.Key(keys::event::kTs);
    Time(true_ns);
    m.Key(keys::event::kDur);
    Duration(dur_ns);
  }
  // A complete event (ph X) up to its "dur".
  Members Complete(std::string_view cat, std::string_view name, int pid, int tid, int64_t ts,
                   int64_t dur) {
    Members m = Open();
    m.Str(keys::event::kPh, keys::phase::kComplete)
        .Str(keys::event::kCat, cat)
        .Str(keys::event::kName, name);
    m.Num(keys::event::kPid, pid).Num(keys::event::kTid, tid);
    TimeAndDuration(m, ts, dur);
    return m;
  }
  // The members of the event's "args" (m's last member); "}}" closes both.
  Members Args(Members& m) {
    m.Key(keys::event::kArgs);
    Raw("{");
    return Members(buf_);
  }
  // A flow event (ph s / f) of launch correlation `corr`.
  Members Flow(std::string_view ph, int64_t corr, int pid, int tid, int64_t ts) {
    Members f = Open();
    f.Str(keys::event::kPh, ph)
        .Num(keys::event::kId, corr)
        .Num(keys::event::kPid, pid)
        .Num(keys::event::kTid, tid);
    f.Key(keys::event::kTs);
    Time(ts);
    return f.Str(keys::event::kCat, keys::category::kFlow)
        .Str(keys::event::kName, keys::category::kFlow);
  }

  // "ts": host-clock us relative to the base time, three decimals (Kineto's fmtTs).
  void Time(int64_t true_ns) {
    int64_t ns = std::max<int64_t>(0, true_ns + ri_.clock_offset_ns - ri_.base_ns);
    fmt::format_to(fmt::appender(buf_), "{}.{:03}", ns / 1000, ns % 1000);
  }
  void Duration(int64_t ns) {
    ns = std::max<int64_t>(0, ns);
    fmt::format_to(fmt::appender(buf_), "{}.{:03}", ns / 1000, ns % 1000);
  }

  // cpu_op or user_annotation on a host thread; `more_args`: members after the common ones.
  void HostEvent(std::string_view cat, std::string_view name, int tid, int64_t ts, int64_t dur,
                 int64_t ext, std::string_view more_args = {}) {
    Members event = Complete(cat, name, ri_.pid, tid, ts, dur);
    Members a = Args(event);
    a.Num(keys::args::kExternalId, ext)
        .Num(keys::args::kRecordFunctionId, ext)
        .Num(keys::args::kEvIdx, ev_idx_++);
    a.More(more_args);
    Raw("}},\n");
    MaybeFlush();
  }

  // cuda_runtime call; with a flow start when it launches GPU work.
  void Runtime(std::string_view name, int tid, int64_t ts, int64_t dur, int64_t ext, int cbid,
               int64_t corr, bool flow) {
    Members event = Complete(keys::category::kCudaRuntime, name, ri_.pid, tid, ts, dur);
    Args(event)
        .Num(keys::args::kExternalId, ext)
        .Num(keys::args::kCbid, cbid)
        .Num(keys::args::kCorrelation, corr);
    Raw("}},\n");
    if (flow) {
      Flow(keys::phase::kFlowStart, corr, ri_.pid, tid, ts);
      Raw("},\n");
    }
    MaybeFlush();
  }

  // GPU kernel or memcpy on `stream`, with the flow end of its launch.
  void Device(std::string_view cat, std::string_view name, int stream, int64_t ts, int64_t dur,
              int64_t ext, int64_t corr, std::string_view args) {
    namespace arg = keys::args;
    Members event = Complete(cat, name, ri_.gpu, stream, ts, dur);
    Members a = Args(event);
    a.Num(arg::kExternalId, ext)
        .Num(arg::kQueued, 0)
        .Num(arg::kDevice, ri_.gpu)
        .Num(arg::kContext, 1);
    a.Num(arg::kStream, stream).Num(arg::kCorrelation, corr).More(args);
    Raw("}},\n");
    Flow(keys::phase::kFlowEnd, corr, ri_.gpu, stream, ts)
        .Str(keys::event::kBindingPoint, keys::event::kBindingPointEnclosing);
    Raw("},\n");
    MaybeFlush();
  }

  void Flush() {
    if (sink_ && !failed_ && !sink_->Write(std::string_view(buf_.data(), buf_.size())))
      failed_ = true;
    flushed_ += buf_.size();
    buf_.clear();
  }

 private:
  void MaybeFlush() {
    if (buf_.size() >= kFlushBytes) Flush();
  }

  const RankInfo& ri_;
  Sink* sink_;
  fmt::memory_buffer buf_;
  uint64_t flushed_ = 0;
  bool failed_ = false;
  int64_t external_id_ = 0;
  int64_t correlation_ = 0;
  int64_t ev_idx_ = 0;
};

}  // namespace laggard::sim::kineto_json

#endif  // LAGGARD_SIMULATOR_WRITERS_KINETO_WRITER_H_
