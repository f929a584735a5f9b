#include "ingest/traces/kineto/trace_tokenizer.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "formats/kineto_keys.h"
#include "ingest/common/text_reader.h"
#include "model/run.h"

namespace laggard::kineto {
namespace {

namespace keys = kineto_keys;
namespace od = simdjson::ondemand;

constexpr size_t kSliceBlocks = 1024;          // 64-byte blocks indexed at a time
constexpr size_t kMaxCaptureBytes = 64 << 20;  // top-level members kept (distributedInfo)
constexpr size_t kMaxGapBytes = 1 << 20;       // garbage between events checked at once
constexpr int64_t kMaxBaseNs = 4'000'000'000'000'000'000;  // keeps base + ts + dur in int64 ns

}  // namespace

bool FlatEventsEnabled() {
  static const bool enabled = [] {
    const char* forced = std::getenv("LAGGARD_KINETO_EVENTS");
    return forced == nullptr || std::string_view(forced) != "ondemand";
  }();
  return enabled;
}

TraceTokenizer::TraceTokenizer(std::unique_ptr<ByteSource> source, Mode mode,
                               std::string_view step_marker, EventDiagnostics& diag)
    : src_(std::move(source)), diag_(diag), events_(mode, step_marker, FlatEventsEnabled()) {}

TraceTokenizer::~TraceTokenizer() = default;

void TraceTokenizer::Run(EventSink& sink) {
  sink_ = &sink;
  buf_.Reserve(kChunkBytes + kPadBytes, 0);
  brackets_.reset(new uint32_t[kSliceBlocks * 64]);
  Refill(0);
  if (len_ >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
  if (!SkipWs()) {
    diag_.diag().Add(DiagCode::kTraceUnsupported, diag_.path(), 0, "no JSON in the file");
    ReportDamage();
    return;
  }
  char c = *Ptr(pos_);
  if (c == '[') {
    ++pos_;
    array_format_ = true;
    saw_events_ = true;
    ParseEvents();
  } else if (c == '{') {
    ++pos_;
    ParseRootObject();
  } else {
    diag_.diag().AddAtOffset(DiagCode::kTraceUnsupported, diag_.path(), pos_,
                             "not a Chrome trace: the file is not a JSON object or array");
    ReportDamage();
    return;
  }
  ReportDamage();
  if (!saw_events_ && !truncated_) {
    diag_.diag().Add(DiagCode::kTraceUnsupported, diag_.path(), 0,
                     "JSON object without a traceEvents array");
    return;
  }
  has_trace_ = true;
}

// Drops the bytes before `keep_from` and appends up to a chunk. Returns
// false at the end of data.
inline bool TraceTokenizer::Refill(uint64_t keep_from) {
  if (eof_) return false;
  size_t drop = static_cast<size_t>(keep_from - buf_off_);
  if (drop > 0) {
    std::memmove(buf_.data(), buf_.data() + drop, len_ - drop);
    len_ -= drop;
    buf_off_ = keep_from;
  }
  buf_.Reserve(len_ + kChunkBytes + kPadBytes, len_);
  const size_t old_len = len_;
  size_t got = 0;
  while (got < kChunkBytes) {
    size_t n = src_->Read(buf_.data() + len_, kChunkBytes - got);
    if (n == 0) {
      eof_ = true;
      break;
    }
    len_ += n;
    got += n;
  }
  StopAtNulStretch(old_len, old_len);
  std::memset(buf_.data() + len_, ' ', kPadBytes);
  return len_ > old_len;
}

// Ends the data at the first run of kNulStretchBytes NUL bytes in
// [from, len_), counting the run the last read ended with. Bytes before
// `old_len` were handed out already and stay (a run that began there ends
// the data at old_len; the note gives where the run began).
inline void TraceTokenizer::StopAtNulStretch(size_t from, size_t old_len) {
  const char* p = buf_.data();
  size_t i = from;
  while (i < len_) {
    if (nul_run_ == 0) {
      const void* z = std::memchr(p + i, 0, len_ - i);
      if (z == nullptr) return;
      i = static_cast<size_t>(static_cast<const char*>(z) - p);
      nul_start_ = buf_off_ + i;
    }
    while (i < len_ && p[i] == 0) {
      ++i;
      if (++nul_run_ < kNulStretchBytes) continue;
      nul_stop_ = nul_start_;
      len_ = std::max(old_len, static_cast<size_t>(std::max(nul_start_, buf_off_) - buf_off_));
      eof_ = true;
      return;
    }
    if (i < len_) nul_run_ = 0;
  }
}

std::string TraceTokenizer::EndWords() const {
  if (!nul_stop_) return fmt::format("file ends at byte {}", End());
  return fmt::format(
      "only NUL bytes from byte {} (a preallocated or sparse file not written further), "
      "reading stopped there",
      *nul_stop_);
}

// Calls on_bracket(offset) for each bracket outside strings in
// [scan, End()): whole blocks, and the tail too when at_eof. Returns false
// when on_bracket stopped it; `scan` ends after the last block indexed.
template <typename F>
inline bool TraceTokenizer::ScanBrackets(uint64_t& scan, ScanState& st, bool at_eof,
                                         F&& on_bracket) {
  const BracketIndexer index = ActiveIndexer().fn;
  for (;;) {
    size_t avail = static_cast<size_t>(End() - scan);
    size_t nblocks = std::min(avail / 64, kSliceBlocks);
    uint64_t base = scan;
    uint32_t* last = nullptr;
    if (nblocks > 0) {
      last = index(Ptr(scan), nblocks, st, brackets_.get());
      scan += 64 * nblocks;
    } else if (at_eof && avail > 0) {
      char tail[64];
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, Ptr(scan), avail);
      last = index(tail, 1, st, brackets_.get());
      scan = End();
    } else {
      return true;
    }
    for (const uint32_t* q = brackets_.get(); q < last; ++q) {
      if (!on_bracket(base + *q)) return false;
    }
  }
}

// -- Top level (scalar: a few small members around traceEvents).

bool TraceTokenizer::SkipWs() {
  for (;;) {
    while (pos_ < End() && IsBlank(*Ptr(pos_))) ++pos_;
    if (pos_ < End()) return true;
    if (!Refill(pos_)) return false;
  }
}

void TraceTokenizer::Capture(std::string*& cap, const char* p, size_t n) {
  if (cap == nullptr) return;
  if (cap->size() + n > kMaxCaptureBytes) {
    cap->clear();
    cap = nullptr;
    return;
  }
  cap->append(p, n);
}

// Skips the JSON value at pos_, appending its text to *cap (when given and
// under kMaxCaptureBytes). False at the end of data.
inline bool TraceTokenizer::SkipValue(std::string* cap) {
  char c = *Ptr(pos_);
  if (c == '"') return SkipString(cap);
  if (c == '{' || c == '[') return SkipNested(cap);
  for (;;) {  // number, literal or garbage: up to a delimiter
    uint64_t p = pos_;
    while (p < End()) {
      char ch = *Ptr(p);
      if (ch == ',' || ch == '}' || ch == ']' || IsSpace(ch)) {
        Capture(cap, Ptr(pos_), p - pos_);
        pos_ = p;
        return true;
      }
      ++p;
    }
    Capture(cap, Ptr(pos_), p - pos_);
    pos_ = p;
    if (!Refill(pos_)) return false;
  }
}

inline bool TraceTokenizer::SkipString(std::string* cap) {
  uint64_t p = pos_ + 1;
  bool escaped = false;
  for (;;) {
    while (p < End()) {
      char ch = *Ptr(p++);
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        Capture(cap, Ptr(pos_), p - pos_);
        pos_ = p;
        return true;
      }
    }
    Capture(cap, Ptr(pos_), p - pos_);
    pos_ = p;
    if (!Refill(pos_)) return false;
  }
}

inline bool TraceTokenizer::SkipNested(std::string* cap) {
  ScanState st;
  int64_t depth = 0;
  uint64_t scan = pos_;
  std::optional<uint64_t> end;
  auto on_bracket = [&](uint64_t at) {
    if (IsOpen(at)) {
      ++depth;
    } else if (--depth <= 0) {
      end = at + 1;
      return false;
    }
    return true;
  };
  for (;;) {
    bool at_eof = eof_;
    ScanBrackets(scan, st, at_eof, on_bracket);
    if (end) {
      Capture(cap, Ptr(pos_), *end - pos_);
      pos_ = *end;
      return true;
    }
    Capture(cap, Ptr(pos_), scan - pos_);
    pos_ = scan;
    if (at_eof) return false;
    Refill(pos_);
  }
}

inline void TraceTokenizer::ParseRootObject() {
  std::string key_text, scratch;
  for (bool first = true;; first = false) {
    if (!SkipWs()) return Cut("in the top-level object");
    char c = *Ptr(pos_);
    if (c == '}') {
      ++pos_;
      root_closed_ = true;
      return;
    }
    if (!first) {
      if (c != ',') return Malformed("expected ',' or '}' between top-level members");
      ++pos_;
      if (!SkipWs()) return Cut("in the top-level object");
      c = *Ptr(pos_);
    }
    if (c != '"') return Malformed("expected a member name");
    key_text.clear();
    if (!SkipString(&key_text)) return Cut("in a top-level member name");
    auto key = DecodeString(key_text, scratch);
    if (!key) return Malformed("bad member name");
    std::string k(*key);
    if (!SkipWs()) return Cut("in the top-level object");
    if (*Ptr(pos_) != ':') return Malformed("expected ':' after a member name");
    ++pos_;
    if (!SkipWs()) return Cut("in the top-level object");
    if (k == keys::top::kTraceEvents && *Ptr(pos_) == '[') {
      ++pos_;
      saw_events_ = true;
      if (!ParseEvents()) return;  // the cut is counted
      continue;
    }
    bool wanted = k == keys::top::kDistributedInfo || k == keys::top::kBaseTimeNanoseconds ||
                  k == keys::top::kHostName || k == keys::top::kHostname ||
                  k == keys::top::kDeviceProperties;
    std::string value;
    if (!SkipValue(wanted ? &value : nullptr)) return Cut("in top-level member \"" + k + "\"");
    if (wanted && !value.empty()) TakeMember(k, value);
  }
}

namespace {

// distributedInfo.pg_config: [{"pg_name": "0", "pg_desc": "default_pg",
// "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}, ...] (torch
// >= 2.1; "ranks" is [] in newer torch for a group of every rank). Entries
// that are not objects, and members of the wrong type, are skipped: the
// groups are context, not events, and a bad one costs only the layout.
void TakeProcessGroups(od::array& groups, TraceHeader& header) {
  for (auto entry : groups) {
    od::object obj;
    if (entry.get_object().get(obj)) return;
    ProcessGroupInfo g;
    bool listed = false;
    for (auto field_result : obj) {
      od::field field;
      if (std::move(field_result).get(field)) return;
      std::string_view key;
      if (field.unescaped_key().get(key)) return;
      std::string_view s;
      if (key == keys::distributed::kPgName) {
        if (!field.value().get_string().get(s)) g.id = std::string(s);
      } else if (key == keys::distributed::kPgDesc) {
        if (!field.value().get_string().get(s)) g.desc = std::string(s);
      } else if (key == keys::distributed::kPgSize) {
        int64_t n = 0;
        if (!field.value().get_int64().get(n) && n > 0 && n <= int64_t{kMaxRank} + 1)
          g.size = static_cast<int32_t>(n);
      } else if (key == keys::distributed::kRanks) {
        od::array ranks;
        if (field.value().get_array().get(ranks)) continue;
        listed = true;
        for (auto r : ranks) {
          int64_t v = 0;
          if (r.get_int64().get(v) || v < 0 || v > kMaxRank) {
            g.ranks.clear();
            listed = false;
            break;
          }
          g.ranks.push_back(static_cast<int32_t>(v));
        }
      }
    }
    if (g.id.empty()) continue;
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
    g.whole_world = listed && g.ranks.empty();  // "ranks": [] (checked against the world size
                                                // once the whole header is read)
    header.groups.push_back(std::move(g));
  }
}

}  // namespace

inline void TraceTokenizer::TakeMember(const std::string& k, const std::string& text) {
  std::string scratch;
  if (k == keys::top::kDeviceProperties) {
    if (text.find('{') != std::string::npos) header_.gpu_job = true;  // one object per GPU
  } else if (k == keys::top::kBaseTimeNanoseconds) {
    auto v = ParseIntToken(text);
    if (v && *v >= 0 && *v <= kMaxBaseNs) header_.base_ns = *v;
  } else if (k == keys::top::kHostName || k == keys::top::kHostname) {
    auto s = DecodeString(text, scratch);
    if (s && !s->empty()) header_.top_host = std::string(*s);
  } else if (k == keys::top::kDistributedInfo) {
    simdjson::padded_string padded(text);
    od::parser parser;
    od::document doc;
    od::object obj;
    if (parser.iterate(padded).get(doc) || doc.get_object().get(obj)) return;
    for (auto field_result : obj) {
      od::field field;
      if (std::move(field_result).get(field)) return;
      std::string_view key;
      if (field.unescaped_key().get(key)) return;
      if (key == keys::distributed::kPgConfig) {
        od::array groups;
        if (!field.value().get_array().get(groups)) TakeProcessGroups(groups, header_);
        continue;
      }
      std::string_view tok = field.value().raw_json_token();
      if (key == keys::distributed::kRank) {
        auto r = ParseIntToken(tok);
        if (r && *r >= 0 && *r <= kMaxRank) header_.rank = static_cast<int32_t>(*r);
      } else if (key == keys::distributed::kWorldSize) {
        auto w = ParseIntToken(tok);
        if (w && *w > 0 && *w <= int64_t{kMaxRank} + 1)
          header_.world_size = static_cast<int32_t>(*w);
      } else if (key == keys::distributed::kBackend) {
        auto b = DecodeString(tok, scratch);
        if (b && (b->find("nccl") != std::string_view::npos ||
                  b->find("rccl") != std::string_view::npos ||
                  b->find("xccl") != std::string_view::npos)) {
          header_.gpu_job = true;
        }
      } else if (key == keys::distributed::kHostname || key == keys::distributed::kHostName ||
                 key == keys::distributed::kHost) {
        auto s = DecodeString(tok, scratch);
        if (s && !s->empty()) header_.dist_host = std::string(*s);
      }
    }
  }
}

void TraceTokenizer::Cut(const std::string& where) {
  truncated_ = true;
  diag_.diag().AddAtOffset(
      DiagCode::kTraceTruncated, diag_.path(), nul_stop_.value_or(End()),
      fmt::format("{} {}; {} complete events kept{}", EndWords(), where, events_total_, cut_note_));
}

void TraceTokenizer::Malformed(const std::string& what) {
  diag_.diag().AddAtOffset(DiagCode::kTraceBadEvent, diag_.path(), pos_,
                           what + " (top-level JSON); the rest of the file is ignored");
}

void TraceTokenizer::ReportDamage() { CountStreamDamage(*src_, diag_.path(), diag_.diag()); }

// -- traceEvents: pos_ is just after '['. Returns true at the closing ']'
// (pos_ after it), false at the end of data (a cut is counted).

bool TraceTokenizer::ParseEvents() {
  ScanState st;
  int64_t depth = 0;
  uint64_t scan = pos_;
  uint64_t gap_from = pos_;  // end of the previous event
  bool in_event = false;
  uint64_t event_start = 0;
  bool oversized = false;
  bool array_closed = false;

  auto on_bracket = [&](uint64_t at) {
    if (IsOpen(at)) {
      if (depth++ == 0) {
        CheckGap(gap_from, at);
        in_event = true;
        event_start = at;
        oversized = false;
      }
      return true;
    }
    if (depth == 0) {
      CheckGap(gap_from, at);
      array_closed = true;
      pos_ = at + 1;
      return false;
    }
    if (--depth == 0) {
      TakeSpan(event_start, at + 1, oversized);
      in_event = false;
      gap_from = at + 1;
    }
    return true;
  };

  for (;;) {
    bool at_eof = eof_;
    ScanBrackets(scan, st, at_eof, on_bracket);
    if (array_closed) return true;
    if (at_eof) {
      if (in_event) {
        truncated_ = true;
        events_lost_ = 1;
        diag_.diag().AddAtOffset(
            DiagCode::kTraceTruncated, diag_.path(), nul_stop_.value_or(End()),
            fmt::format("{} inside the event that starts at byte "
                        "{}; {} complete events kept, the rest of the trace is "
                        "missing{}",
                        EndWords(), event_start, events_total_, cut_note_));
      } else if (!array_format_) {
        // The Array Format may end without its ']'; the Object Format may not.
        truncated_ = true;
        diag_.diag().AddAtOffset(
            DiagCode::kTraceTruncated, diag_.path(), nul_stop_.value_or(End()),
            fmt::format("{} between events of traceEvents; {} "
                        "complete events kept, the rest of the trace is missing{}",
                        EndWords(), events_total_, cut_note_));
      }
      pos_ = End();
      return false;
    }
    if (in_event && !oversized && scan - event_start > kMaxEventBytes) oversized = true;
    if (!in_event && scan - gap_from > kMaxGapBytes) {
      CheckGap(gap_from, scan);
      gap_from = scan;
    }
    uint64_t keep = scan;
    if (in_event && !oversized) keep = std::min(keep, event_start);
    if (!in_event) keep = std::min(keep, gap_from);
    Refill(keep);
  }
}

// Bytes between events must be blanks and a comma.
[[gnu::always_inline]] inline void TraceTokenizer::CheckGap(uint64_t from, uint64_t to) {
  if (from < buf_off_ || to <= from) return;
  const char* p = Ptr(from);
  if (to - from == 4 && std::memcmp(p, ",\n  ", 4) == 0) return;  // Kineto's, at once
  for (uint64_t i = 0; i < to - from; ++i) {
    char c = p[i];
    if (c != ',' && !IsBlank(c)) {
      ++events_total_;
      diag_.BadEvent(from + i, "unexpected data between events (not an object)");
      return;
    }
  }
}

// One complete top-level element of traceEvents: [start, end).
void TraceTokenizer::TakeSpan(uint64_t start, uint64_t end, bool oversized) {
  ++events_total_;
  if (oversized) {
    return diag_.BadEvent(start, fmt::format("event over {} MiB skipped", kMaxEventBytes >> 20));
  }
  const char* p = Ptr(start);
  if (*p != '{') return diag_.BadEvent(start, "event is an array, not an object");
  size_t n = static_cast<size_t>(end - start);
  auto take = [&](const EventFields& e) { sink_->OnEvent(e, start); };
  if (events_.Read(p, n, take) == EventTokenizer::Result::kMalformed) {
    diag_.BadEvent(start, "event is not valid JSON");
  }
}

}  // namespace laggard::kineto
