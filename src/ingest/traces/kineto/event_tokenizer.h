// The event tokenizer of the Kineto reader: the bytes of one event of
// traceEvents -> its fields, as raw tokens (EventFields), or "not needed".
// Third stage, after the byte scanner and the JSON tokens; the trace
// tokenizer (trace_tokenizer.h) hands it each event it frames and hands
// what it reads to the parser (kineto_parser.h).
//
// A prefilter decides; then the first reader that can take the event reads
// it (templates, the walker, On-Demand: the same fields whichever):
//   prefilter      reads the first members exactly (Kineto writes ph, cat,
//                  name first) and drops what is not needed without parsing
//                  the rest: in a GPU trace ~60% of the events (CPU ops,
//                  runtime calls other than launches, flows). Example:
//                    {"ph": "f", ...}                         dropped at ph
//                    {"ph": "X", "cat": "cuda_runtime",       dropped at the
//                     "name": "cudaStreamIsCapturing", ...}   name
//                    {"ph": "X", "cat": "cpu_op",             dropped at the
//                     "name": "aten::mm", ...}                name's first bytes
//                    {"ph": "X", "cat": "kernel", ...}        read
//   flat walker    one pass over the event's bytes for the subset of JSON
//                  json_tokens.h reads, each member's leading bytes compared
//                  with the key the same member had in the last event of its
//                  layout (KeySlot) before being tokenized. Once it has read
//                  a launch call or a device op in full, the bytes between
//                  that event's values are kept as a template (the last two
//                  layouts of each kind): the next event of the kind is read
//                  by comparing those bytes and finding only its values'
//                  ends. A template holds only values read alike whatever
//                  their content (numbers, strings without escapes, grid /
//                  block triples); any other byte sends the event back to
//                  the walker.
//   On-Demand      simdjson, for an event outside the walker's subset (a
//                  non-ASCII or control byte, a nested value, a malformed
//                  token); LAGGARD_KINETO_EVENTS=ondemand sends every event
//                  here, to compare (fuzz/compare_kineto_scans.cmake does).
// The walker gives up on anything On-Demand would read differently, so the
// fields never depend on the path.
//
// Thread-safety: one tokenizer per pass over one file. It keeps what it
// learned (key slots, templates) from event to event, and notes whether it
// saw CPU events and runtime calls (for the CPU-only decision).

#ifndef LAGGARD_INGEST_TRACES_KINETO_EVENT_TOKENIZER_H_
#define LAGGARD_INGEST_TRACES_KINETO_EVENT_TOKENIZER_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/kineto_keys.h"
#include "ingest/traces/kineto/byte_scanner.h"
#include "ingest/traces/kineto/json_tokens.h"
#include "ingest/traces/kineto/kineto_event.h"

namespace laggard::kineto {

// The members the reader takes, by key (the raw key, as KeyIs compares it).
enum class Field : uint8_t {
  kOther,
  // event
  kPh,
  kCat,
  kName,
  kPid,
  kTid,
  kTs,
  kDur,
  kArgs,
  // args
  kDevice,
  kCorrelation,
  kGrid,
  kBlock,
  kStream,
  kCollectiveName,
  kInMsgNelems,
  kInputDims,
  kGroupSize,
  kProcessGroupName,
  kProcessGroupId,
  kSeq,
  kExternalId,
};

// Compares a raw key (just past its opening quote, inside a padded buffer)
// with `k`.
inline bool KeyIs(const char* raw, std::string_view k) {
  return std::memcmp(raw, k.data(), k.size()) == 0 && raw[k.size()] == '"';
}

// The field of an event's member / of an args member; k is just past the
// key's opening quote.
Field TopField(const char* k);
Field ArgField(const char* k);

// A member's leading bytes as one event had them, from the key's opening
// quote to its value ("\"stream\": "), up to 32 bytes: the next event of
// the same layout is compared with them instead of being tokenized. Equal
// bytes from a member's start parse the same, so a match says exactly what
// reading them would.
struct KeySlot {
  char bytes[32] = {};
  uint32_t want = 0;  // the low `len` bits: the bytes that must match
  uint8_t len = 0;    // 0: nothing learned (never matches)
  Field field = Field::kOther;

  void Learn(const char* key_quote, const char* value, Field f) {
    size_t n = static_cast<size_t>(value - key_quote);
    if (n > sizeof bytes) {
      len = 0;
      want = 0;
      return;
    }
    std::memset(bytes, 0, sizeof bytes);
    std::memcpy(bytes, key_quote, n);
    len = static_cast<uint8_t>(n);
    want = WantBits(n);
    field = f;
  }

  // Reads 32 bytes at q (the buffer is padded).
  bool Matches(const char* q) const { return len != 0 && SameBytes(q, bytes, len, want); }
};
inline constexpr size_t kMaxKeySlots = 32;  // members per object remembered
// One layout's members, by position (a fixed array: no bounds to track).
using KeySlots = std::array<KeySlot, kMaxKeySlots>;

// One value of an event template and the literal bytes after it.
struct TemplateHole {
  enum Kind : uint8_t { kNumber, kString, kDims3 };
  Kind kind = kNumber;
  // Where its token goes (EventFields::unread when the walker only skips it).
  std::string_view EventFields::*token = &EventFields::unread;
  std::optional<std::array<int64_t, 3>> EventFields::*dims = nullptr;  // kDims3
  uint16_t literal = 0;       // offset in EventTemplate::text
  uint16_t literal_len = 0;   // >= 1: a value always ends at a delimiter
  uint32_t literal_want = 0;  // WantBits(literal_len)
};

// Kineto writes every kernel (every launch call, ...) with the same keys in
// the same order, so once the walker has read one, the bytes between its
// values (keys, ": ", ", ", the args' braces) are known.
struct EventTemplate {
  static constexpr size_t kMaxHoles = 48;
  static constexpr size_t kMaxText = 2048;
  std::string text;                 // the literals back to back, then 32 bytes of slack
  uint16_t lead_len = 0;            // the literal before the first value, at text[0]
  uint32_t lead_want = 0;           // WantBits(lead_len)
  bool reads_name = false;          // a hole is the name (a string without escapes)
  std::vector<TemplateHole> holes;  // empty: nothing learned
};

// Kineto's own layout of an event's first members (json.dumps writes it
// too): the prefilter's fast path compares these bytes at once.
inline constexpr std::string_view kLayoutPh = "\"ph\": \"";        // then one letter and '"'
inline constexpr std::string_view kLayoutCat = ", \"cat\": \"";    // then the category
inline constexpr std::string_view kLayoutName = ", \"name\": \"";  // then the name
static_assert(kLayoutPh.substr(0, 4) == kineto_keys::event::kPhQuoted);
static_assert(kLayoutCat.substr(2, 5) == kineto_keys::event::kCatQuoted);
static_assert(kLayoutName.substr(2, 6) == kineto_keys::event::kNameQuoted);

class EventTokenizer {
 public:
  // `flat_events` false sends every event to On-Demand.
  EventTokenizer(Mode mode, std::string_view step_marker, bool flat_events);
  ~EventTokenizer();
  EventTokenizer(const EventTokenizer&) = delete;
  EventTokenizer& operator=(const EventTokenizer&) = delete;

  enum class Result {
    kSkipped,    // not needed
    kRead,       // handed to on_read
    kMalformed,  // not valid JSON
  };

  // Reads the event at [p, p + n) (p[0] == '{', the buffer padded by
  // kPadBytes) and calls on_read(const EventFields&) when it is needed.
  template <typename OnRead>
  [[gnu::always_inline]] Result Read(const char* p, size_t n, OnRead&& on_read) {
    if (!Wanted(p, n)) return Result::kSkipped;
    EventFields e;
    if (!flat_events_ || !ExtractFlat(p, p + n, e)) {
      if (!ExtractOnDemand(p, n, e)) return Result::kMalformed;
    }
    if (e.skip) return Result::kSkipped;
    on_read(e);
    return Result::kRead;
  }

  bool saw_cpu_events() const { return saw_cpu_events_; }  // ph X of cat cpu_op / user_annotation
  bool saw_runtime() const {
    return saw_runtime_;
  }  // ph X of cat cuda_runtime / cuda_driver / Runtime

 private:
  struct OnDemand;

  // The raw bytes every JSON string that decodes to a name the step marker
  // matches starts with: its opening quote and the marker up to the first
  // byte a writer may escape there (a quote or backslash; any byte may be
  // written as \uXXXX, which MarkerMayMatch allows for).
  static std::string MarkerPrefix(std::string_view marker) {
    return "\"" + std::string(marker.substr(0, marker.find_first_of("\"\\")));
  }

  // Whether the JSON string at p (its opening quote; the bytes run to the
  // event's end) may name the step marker: its bytes are the marker's until
  // the first escape. Names that pass are decoded and matched exactly.
  bool MarkerMayMatch(const char* p, const char* end) const {
    for (size_t i = 0; i < marker_prefix_.size(); ++i, ++p) {
      if (p >= end) return true;  // cut short: the full parse reports it
      if (i > 0 && *p == '\\') return true;
      if (*p != marker_prefix_[i]) return false;
    }
    return true;
  }

  // Whether a CPU-side event (cat cpu_op / user_annotation) named `name`
  // (the JSON token, quotes included) is needed.
  bool WantCpuEvent(Cat cat, std::string_view name_tok) const {
    std::string_view n = TrimToken(name_tok);
    if (!marker_.empty() && !n.empty() && MarkerMayMatch(n.data(), n.data() + n.size()))
      return true;
    if (n.size() >= 2) n = n.substr(1, n.size() - 2);
    if (StartsWith(n, kineto_keys::name::kProfilerStep) ||
        n == kineto_keys::name::kRecordParamComms) {
      return true;
    }
    if (!collecting_cpu_) return false;
    return cat == Cat::kCpuOp || IsCpuCommName(n);
  }

  // What ph, cat and name (as far as seen) say: the event is needed (true),
  // not needed (false) or not known yet (nullopt). Also notes CPU and
  // runtime events for the CPU-only decision.
  std::optional<bool> Decide(std::string_view ph, Cat cat, std::string_view name) {
    if (!ph.empty() && ph != kineto_keys::phase::kCompleteQuoted) return false;
    if (cat == Cat::kRuntime) {
      saw_runtime_ = true;
      if (mode_ != Mode::kDevice) return false;
      if (ph.empty() || name.empty()) return std::nullopt;
      return IsLaunchCallName(name);
    }
    if (cat == Cat::kIgnored) return false;
    if (ph.empty() || cat == Cat::kUnseen) return std::nullopt;
    if (IsDeviceCat(cat)) return mode_ == Mode::kDevice;
    saw_cpu_events_ = true;
    if (name.empty()) return std::nullopt;
    return WantCpuEvent(cat, name);
  }

  // The prefilter's fast path, for the exact layout Kineto and json.dumps
  // write: "ph": "?", "cat": "...", "name": "..." (q is at the first key).
  // nullopt when the event is laid out otherwise.
  //
  // A device op or launch call it finds wanted is left in resume_ for the
  // walker to go on from. The strings it read (cat, a launch call's name) end
  // at their first '"' with no escape, control or non-ASCII byte before it,
  // so they are the tokens the walker would have read, and the decisions the
  // walker would take on them are the ones taken here.
  [[gnu::always_inline]] std::optional<bool> WantedKinetoLayout(const char* q, const char* end) {
    if (!At(q, end, kLayoutPh) || end - q < 9 || q[8] != '"' || q[7] == '\\') return std::nullopt;
    if (q[7] != 'X') return false;  // a flow, instant or metadata event
    const char* const ph = q + 6;
    q += 9;
    if (!At(q, end, kLayoutCat)) return std::nullopt;
    q += 9;  // the opening quote of the category
    const char* close = FindStringStop(q + 1, end);
    if (close == nullptr || *close != '"') return std::nullopt;
    const std::string_view cat_tok(q, static_cast<size_t>(close + 1 - q));
    Cat cat = ClassifyCat(cat_tok);
    if (cat == Cat::kRuntime) saw_runtime_ = true;
    if (cat == Cat::kIgnored || (cat == Cat::kRuntime && mode_ != Mode::kDevice)) return false;
    if (IsDeviceCat(cat)) {
      if (mode_ != Mode::kDevice) return false;
      resume_.Set(close + 1, 2, std::string_view(ph, 3), cat_tok, {}, cat);
      return true;
    }
    if (cat != Cat::kRuntime) saw_cpu_events_ = true;
    if (mode_ != Mode::kDevice) return true;
    q = close + 1;
    if (!At(q, end, kLayoutName)) return std::nullopt;
    q += 10;                     // the opening quote of the name
    if (cat == Cat::kRuntime) {  // a launch call, by its (unescaped) name
      const char* name_end = FindStringStop(q + 1, end);
      if (name_end == nullptr || *name_end != '"') return std::nullopt;
      if (!IsLaunchCallName(std::string_view(q + 1, static_cast<size_t>(name_end - q - 1)))) {
        return false;
      }
      resume_.Set(name_end + 1, 3, std::string_view(ph, 3), cat_tok,
                  std::string_view(q, static_cast<size_t>(name_end + 1 - q)), cat);
      return true;
    }
    if (!marker_.empty() && MarkerMayMatch(q, end)) return true;
    // The name's first byte picks the one literal to compare.
    switch (q + 1 < end ? q[1] : '\0') {
      case 'P': return At(q, end, kineto_keys::name::kProfilerStepQuotedPrefix);
      case 'r': return At(q, end, kineto_keys::name::kRecordParamCommsQuoted);
      case '\\': return true;
      default: return false;
    }
  }

  // Prefilter: walks the leading plain members of the event at p (p[0] is
  // '{') with an exact JSON tokenizer and returns false only when ph, cat or
  // name show the event is not needed; anything unusual (escapes in them, a
  // nested value before them) leaves the decision to the full parse.
  // Example: for
  //   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, ...}
  // in kDevice mode it reads ph (X: maybe), cat (cpu_op: depends on the
  // name), then only the name's first bytes (not ProfilerStep#, not
  // record_param_comms: skip).
  [[gnu::always_inline]] bool Wanted(const char* p, size_t n) {
    const char* const end = p + n;
    const char* q = p + 1;
    while (q < end && IsBlank(*q)) ++q;
    resume_.after = nullptr;
    if (std::optional<bool> fast = WantedKinetoLayout(q, end)) return *fast;
    return WantedOtherLayout(q, end);
  }

  // Wanted() for an event not in Kineto's layout; q is at its first member.
  [[gnu::noinline]] bool WantedOtherLayout(const char* q, const char* const end);

  // The walker (event_tokenizer.cc). ExtractFlat: the event in the flat
  // subset, read with a template or member by member; false when the event
  // is outside the subset (`e` and the flags Decide sets are then as they
  // were, for On-Demand to start over).
  bool ExtractFlat(const char* p, const char* end, EventFields& e);
  // (Always inlined: each has one caller, in event_tokenizer.cc, and is
  // part of it.)
  static inline size_t TemplateKind(Cat c);
  [[gnu::always_inline]] inline bool MatchTemplate(const EventTemplate& t, const char* end,
                                                   EventFields& e);
  [[gnu::always_inline]] inline void LearnTemplate(const char* end,
                                                   std::array<EventTemplate, 2>& templates);
  [[gnu::always_inline]] inline bool ExtractFlatMembers(const char* p, const char* end,
                                                        EventFields& e);
  [[gnu::always_inline]] inline const char* ExtractFlatArgs(const char* q, const char* end,
                                                            EventFields& e);
  [[gnu::always_inline]] inline const char* FlatKey(const char* q, const char* end, KeySlots& slots,
                                                    size_t i, bool args, Field& field);
  [[gnu::noinline]] const char* ReadKey(const char* q, const char* end, KeySlots& slots, size_t i,
                                        bool args, Field& field);

  // simdjson On-Demand (ondemand_event.cc): the same fields, any valid JSON.
  // False when the event is not valid JSON.
  bool ExtractOnDemand(const char* p, size_t n, EventFields& e);

  const Mode mode_;
  const bool collecting_cpu_;
  // --step-marker (ingest/traces/common/step_marker.h): its name and the
  // bytes a JSON string naming it starts with.
  const std::string_view marker_;
  const std::string marker_prefix_;
  const bool flat_events_;
  bool saw_cpu_events_ = false;
  bool saw_runtime_ = false;

  // The prefilter's place in the event it last found wanted (Wanted()), when
  // it read the leading members exactly as the walker does: the byte after
  // the last one, how many, and their tokens. after == nullptr: none.
  struct Resume {
    const char* after = nullptr;
    size_t members = 0;
    std::string_view ph, cat, name;
    Cat cat_kind = Cat::kUnseen;

    // Member by member: assigning a whole Resume compiled to a 65-byte
    // rep movsb through a temporary, once per launch call.
    void Set(const char* a, size_t m, std::string_view p, std::string_view c, std::string_view n,
             Cat k) {
      after = a;
      members = m;
      ph = p;
      cat = c;
      name = n;
      cat_kind = k;
    }
  };
  Resume resume_;
  KeySlots top_slots_;      // the last flat event's keys, in order
  KeySlots args_slots_[3];  // its args' keys: launch calls, kernels, other events
  // The last two layouts of each kind of event the prefilter resumes from
  // (TemplateKind), the one matched last first.
  std::array<std::array<EventTemplate, 2>, 4> templates_;
  // A value the walker read, as the template learner sees it.
  struct ReadValue {
    const char* begin;
    const char* end;
    Field field;
    bool dims3;  // a grid / block triple stored as such
  };
  bool recording_ = false;  // the walker notes its values in read_values_
  std::vector<ReadValue> read_values_;
  std::unique_ptr<OnDemand> ondemand_;
};

}  // namespace laggard::kineto

#endif  // LAGGARD_INGEST_TRACES_KINETO_EVENT_TOKENIZER_H_
