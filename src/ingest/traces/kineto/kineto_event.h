// What the Kineto tokenizer hands the parser: one event's fields as raw
// JSON tokens (EventFields), the event categories that matter (Cat), the
// pass a file is read in (Mode), and the damage log both stages count bad
// events into (EventDiagnostics).
//
// Written by the event tokenizer (event_tokenizer.h), read by the parser
// (kineto_parser.h); the trace tokenizer and the reader (kineto_reader.cc)
// own the EventDiagnostics of a pass. Tokens point into the tokenizer's
// read buffer: an EventFields is valid only until the tokenizer reads on.
//
// Thread-safety: plain data and pure functions; an EventDiagnostics belongs
// to one pass over one file.

#ifndef LAGGARD_INGEST_TRACES_KINETO_KINETO_EVENT_H_
#define LAGGARD_INGEST_TRACES_KINETO_KINETO_EVENT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "ingest/traces/common/kernel_names.h"
#include "ingest/traces/kineto/json_tokens.h"
#include "model/diagnostics.h"

namespace laggard::kineto {

// One file is read in one of two passes. kDevice takes the device ops and
// the CPU-side facts they need (steps, record_param_comms); kCpu, run only
// when a kDevice pass found CPU events but no device op, takes the CPU ops.
// Most traces have GPUs, and their many CPU ops are then never decoded.
enum class Mode { kDevice, kCpu };

// The categories the reader tells apart (kineto_keys::category). kRuntime
// (CUDA / HIP runtime and driver calls) is taken only for launch calls, but
// it shows that the trace had a GPU: without device ops such a trace was
// cut (or lost its GPU buffers), it is not a CPU-only trace.
enum class Cat : uint8_t {
  kUnseen,
  kIgnored,
  kRuntime,
  kKernel,
  kMemcpy,
  kMemset,
  kCpuOp,
  kAnnotation
};

// The category of a "cat" token (quotes included; anything not a string is
// kIgnored).
inline Cat ClassifyCat(std::string_view tok) {
  namespace category = kineto_keys::category;
  tok = TrimToken(tok);
  if (!IsJsonString(tok)) return Cat::kIgnored;
  std::string_view c = tok.substr(1, tok.size() - 2);
  switch (c.size()) {
    case 6:
      if (c == category::kKernel || c == category::kKernelLegacy) return Cat::kKernel;
      if (c == category::kCpuOp || c == category::kMemcpyLegacy || c == category::kMemsetLegacy) {
        return c[0] == 'c' ? Cat::kCpuOp : c[4] == 'c' ? Cat::kMemcpy : Cat::kMemset;
      }
      break;
    case 7:
      if (c == category::kRuntimeLegacy) return Cat::kRuntime;
      break;
    case 8:
      if (c == category::kOperatorLegacy) return Cat::kCpuOp;
      break;
    case 10:
      if (c == category::kGpuMemcpy) return Cat::kMemcpy;
      if (c == category::kGpuMemset) return Cat::kMemset;
      break;
    case 11:
      if (c == category::kCudaDriver) return Cat::kRuntime;
      break;
    case 12:
      if (c == category::kCudaRuntime) return Cat::kRuntime;
      break;
    case 15:
      if (c == category::kUserAnnotation) return Cat::kAnnotation;
      break;
    default: break;
  }
  return Cat::kIgnored;
}

inline bool IsDeviceCat(Cat c) {
  return c == Cat::kKernel || c == Cat::kMemcpy || c == Cat::kMemset;
}

// Runtime / driver calls that put work on a GPU queue (cudaLaunchKernel,
// cudaLaunchKernelExC, cuLaunchKernel, cudaGraphLaunch, hipExtModuleLaunchKernel,
// cudaMemcpyAsync, hipMemcpyWithStream, cudaMemsetAsync, ...): the only
// runtime events read, for the host time each device op was launched.
inline bool IsLaunchCallName(std::string_view name) {
  // cudaLaunchKernel and the like (one per kernel) without a search.
  if (name.size() >= 10 && name.substr(4, 6) == "Launch") return true;
  return name.find("Launch") != std::string_view::npos ||
         name.find("Memcpy") != std::string_view::npos ||
         name.find("Memset") != std::string_view::npos;
}

// One event's fields, as raw tokens (trailing blanks trimmed) pointing into
// the read buffer; empty when the event has no such member.
struct EventFields {
  std::string_view ph, cat, name, ts, dur, pid, tid;
  std::string_view device, stream, coll_name, nelems, group_size, pg_name, pg_id, seq, ext_id;
  std::string_view correlation;
  std::optional<std::array<int64_t, 3>> grid, block;  // of a device op, when 3 integers >= 0
  std::optional<int64_t> dims_product;  // of "Input Dims"' first entry, for CPU comm ops
  Cat cat_kind = Cat::kUnseen;
  bool skip = false;        // ph, cat or name say the event is not needed
  bool name_plain = false;  // name is a string without escapes (seen by the walker)
  std::string_view unread;  // where a template puts the values the walker skips
};

// The diagnostics of one pass over one file. The tokenizer and the parser
// count bad events (trace.bad_event) into it in file order: the first
// Diagnostics::kMaxExamplesPerCode are examples with their offsets, the
// rest one count (AddBadEventSummary).
class EventDiagnostics {
 public:
  explicit EventDiagnostics(const std::string& path) : path_(path) {}

  Diagnostics& diag() { return diag_; }
  const std::string& path() const { return path_; }

  void BadEvent(uint64_t offset, std::string message) {
    if (++bad_events_ <= Diagnostics::kMaxExamplesPerCode) {
      diag_.AddAtOffset(DiagCode::kTraceBadEvent, path_, offset, std::move(message));
    }
  }

  // "N more bad events" past the examples; once, when the pass is done.
  void AddBadEventSummary() {
    if (bad_events_ > Diagnostics::kMaxExamplesPerCode) {
      uint64_t more = bad_events_ - Diagnostics::kMaxExamplesPerCode;
      diag_.Add(DiagCode::kTraceBadEvent, path_, 0, fmt::format("{} more bad events", more), more);
    }
  }

 private:
  const std::string& path_;
  Diagnostics diag_;
  uint64_t bad_events_ = 0;
};

}  // namespace laggard::kineto

#endif  // LAGGARD_INGEST_TRACES_KINETO_KINETO_EVENT_H_
