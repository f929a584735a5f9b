// One event of a Megatron-style op timeline (megatron_timeline_reader.h),
// from its bytes to its members: simdjson On-Demand walks the object and
// keeps the members the reader takes, numbers as raw tokens (decoded by the
// assembler, timeline_assembler.h), strings decoded. The reader frames each
// event of the top-level array itself and hands its bytes here; the sniff
// parses the head's first event the same way.
//
//   {"name":"forward-compute","cat":"forward-compute","pid":0,"tid":10,
//    "ts":112860.1,"dur":63480.2,"ph":"X",
//    "args":{"step":23,"model_chunk":0,"mb_id":0,"seq_id":0}}
//   -> ph "X", name "forward-compute", pid "0", tid "10", ts "112860.1",
//      dur "63480.2", step "23", model_chunk "0", mb_id "0", seq_id "0"
//
// Thread-safety: one parser per file being read (it owns simdjson's
// buffers); the views it fills are valid until the next Parse().

#ifndef LAGGARD_INGEST_TRACES_MEGATRON_MEGATRON_EVENT_H_
#define LAGGARD_INGEST_TRACES_MEGATRON_MEGATRON_EVENT_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

namespace laggard::megatron {

// Bytes that must be readable past an event's last byte (simdjson's
// padding; the .cc checks it against SIMDJSON_PADDING).
inline constexpr size_t kEventPadBytes = 64;

struct MegatronEvent {
  // Strings, decoded; nullopt when absent or not a string.
  std::optional<std::string_view> ph, name;
  std::optional<std::string_view> args_name;  // args.name of a metadata event
  // Other members as raw tokens ("0", "112860.1", "null", "\"x\"", "{" for
  // an object); empty when absent.
  std::string_view pid, tid, ts, dur;
  std::string_view step, model_chunk, mb_id, seq_id;  // of args
  bool args_object = false;                           // args is an object
};

class MegatronEventParser {
 public:
  MegatronEventParser();
  ~MegatronEventParser();
  MegatronEventParser(const MegatronEventParser&) = delete;
  MegatronEventParser& operator=(const MegatronEventParser&) = delete;

  // Parses the object at p[0, n) ('{' ... '}'), with kEventPadBytes readable
  // past p + n. False when it is not valid JSON (e is then partly filled).
  bool Parse(const char* p, size_t n, MegatronEvent& e);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace laggard::megatron

#endif  // LAGGARD_INGEST_TRACES_MEGATRON_MEGATRON_EVENT_H_
