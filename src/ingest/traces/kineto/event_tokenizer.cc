#include "ingest/traces/kineto/event_tokenizer.h"

#include <utility>

namespace laggard::kineto {

namespace keys = kineto_keys;

// k is just past the key's opening quote.
Field TopField(const char* k) {
  switch (k[0]) {
    case 'p':
      if (KeyIs(k, keys::event::kPh)) return Field::kPh;
      if (KeyIs(k, keys::event::kPid)) return Field::kPid;
      break;
    case 'c':
      if (KeyIs(k, keys::event::kCat)) return Field::kCat;
      break;
    case 'n':
      if (KeyIs(k, keys::event::kName)) return Field::kName;
      break;
    case 't':
      if (KeyIs(k, keys::event::kTs)) return Field::kTs;
      if (KeyIs(k, keys::event::kTid)) return Field::kTid;
      break;
    case 'd':
      if (KeyIs(k, keys::event::kDur)) return Field::kDur;
      break;
    case 'a':
      if (KeyIs(k, keys::event::kArgs)) return Field::kArgs;
      break;
    default: break;
  }
  return Field::kOther;
}

Field ArgField(const char* k) {
  switch (k[0]) {
    case 'd':
      if (KeyIs(k, keys::args::kDevice)) return Field::kDevice;
      break;
    case 'c':
      if (KeyIs(k, keys::args::kCorrelation)) return Field::kCorrelation;
      break;
    case 'g':
      if (KeyIs(k, keys::args::kGrid)) return Field::kGrid;
      break;
    case 'b':
      if (KeyIs(k, keys::args::kBlock)) return Field::kBlock;
      break;
    case 's':
      if (KeyIs(k, keys::args::kStream)) return Field::kStream;
      break;
    case 'C':
      if (KeyIs(k, keys::args::kCollectiveName)) return Field::kCollectiveName;
      break;
    case 'I':
      if (KeyIs(k, keys::args::kInMsgNelems)) return Field::kInMsgNelems;
      if (KeyIs(k, keys::args::kInputDims)) return Field::kInputDims;
      break;
    case 'G':
      if (KeyIs(k, keys::args::kGroupSize)) return Field::kGroupSize;
      break;
    case 'P':
      if (KeyIs(k, keys::args::kProcessGroupName)) return Field::kProcessGroupName;
      if (KeyIs(k, keys::args::kProcessGroupId)) return Field::kProcessGroupId;
      break;
    case 'S':
      if (KeyIs(k, keys::args::kSeq)) return Field::kSeq;
      break;
    case 'E':
      if (KeyIs(k, keys::args::kExternalId)) return Field::kExternalId;
      break;
    case 'e':
      if (KeyIs(k, keys::args::kExternalIdLegacy)) return Field::kExternalId;
      break;
    default: break;
  }
  return Field::kOther;
}

namespace {

// Where the walker puts the token of a member (nullptr: it only skips it).
std::string_view EventFields::*TokenMember(Field f) {
  switch (f) {
    case Field::kPh: return &EventFields::ph;
    case Field::kCat: return &EventFields::cat;
    case Field::kName: return &EventFields::name;
    case Field::kPid: return &EventFields::pid;
    case Field::kTid: return &EventFields::tid;
    case Field::kTs: return &EventFields::ts;
    case Field::kDur: return &EventFields::dur;
    case Field::kDevice: return &EventFields::device;
    case Field::kCorrelation: return &EventFields::correlation;
    case Field::kStream: return &EventFields::stream;
    case Field::kCollectiveName: return &EventFields::coll_name;
    case Field::kInMsgNelems: return &EventFields::nelems;
    case Field::kGroupSize: return &EventFields::group_size;
    case Field::kProcessGroupName: return &EventFields::pg_name;
    case Field::kProcessGroupId: return &EventFields::pg_id;
    case Field::kSeq: return &EventFields::seq;
    case Field::kExternalId: return &EventFields::ext_id;
    default: return nullptr;
  }
}

}  // namespace

// Wanted() for an event not in Kineto's layout; q is at its first member.
bool EventTokenizer::WantedOtherLayout(const char* q, const char* const end) {
  std::string_view ph, name;
  Cat cat = Cat::kUnseen;
  auto blanks = [&] {
    while (q < end && IsBlank(*q)) ++q;
  };
  // The end of the string starting at q (a quote); nullptr if unclosed.
  auto string_end = [&](bool& escapes) -> const char* {
    const char* c = FindQuoteOrBackslash(q + 1, end);
    escapes = c != nullptr && *c == '\\';
    if (!escapes) return c == nullptr ? nullptr : c + 1;
    for (; c < end; ++c) {  // rare: walk the escapes
      if (*c == '\\') ++c;
      else if (*c == '"') return c + 1;
    }
    return nullptr;
  };
  for (int member = 0; member < 8; ++member) {
    blanks();
    if (q >= end || *q != '"') return true;
    bool escapes = false;
    const char* key_end = string_end(escapes);
    if (key_end == nullptr || escapes) return true;
    std::string_view key(q + 1, static_cast<size_t>(key_end - q - 2));
    q = key_end;
    blanks();
    if (q >= end || *q != ':') return true;
    ++q;
    blanks();
    if (q >= end) return true;
    bool decisive =
        key == keys::event::kPh || key == keys::event::kCat || key == keys::event::kName;
    const char* value_begin = q;
    if (*q == '"') {
      if (key == keys::event::kName && cat != Cat::kUnseen && !ph.empty() &&
          mode_ == Mode::kDevice && !IsDeviceCat(cat) && cat != Cat::kRuntime) {
        // Only ProfilerStep#N and record_param_comms matter here: their
        // first bytes decide, whatever the rest of the name.
        size_t left = static_cast<size_t>(end - q);
        auto starts = [&](std::string_view lit) {
          return left >= lit.size() && std::memcmp(q, lit.data(), lit.size()) == 0;
        };
        saw_cpu_events_ = true;
        if (!marker_.empty() && MarkerMayMatch(q, end)) return true;
        return starts(keys::name::kProfilerStepQuotedPrefix) ||
               starts(keys::name::kRecordParamCommsQuoted) || starts("\"\\");
      }
      const char* value_end = string_end(escapes);
      if (value_end == nullptr || (escapes && decisive)) return true;
      q = value_end;
    } else if (*q == '{' || *q == '[') {
      return true;
    } else {
      while (q < end && *q != ',' && *q != '}' && !IsBlank(*q)) ++q;
    }
    if (decisive) {
      std::string_view value(value_begin, static_cast<size_t>(q - value_begin));
      if (key == keys::event::kPh) ph = value;
      else if (key == keys::event::kCat) cat = ClassifyCat(value);
      else name = value;
      if (auto decided = Decide(ph, cat, name)) return *decided;
    }
    blanks();
    if (q >= end || *q != ',') return true;
    ++q;
  }
  return true;
}

// What ExtractOnDemand reads, without simdjson, for an event in the flat subset (see
// FlatValueEnd): the same fields and the same decisions, member by member.
// False when the event is outside the subset; `e` and the flags Decide
// sets are then as they were, for On-Demand to start over.
bool EventTokenizer::ExtractFlat(const char* p, const char* end, EventFields& e) {
  // A span the indexer closed with ']' is no object: On-Demand rejects it
  // whole, before reading a member.
  if (end[-1] != '}') return false;
  std::array<EventTemplate, 2>* templates = nullptr;
  if (resume_.after != nullptr) {
    templates = &templates_[TemplateKind(resume_.cat_kind)];
    for (size_t i = 0; i < templates->size(); ++i) {
      EventTemplate& t = (*templates)[i];
      if (t.holes.empty()) break;
      if (MatchTemplate(t, end, e)) {
        if (i > 0) std::swap((*templates)[0], t);  // the kind seen last first
        return true;
      }
      e = EventFields();
    }
    read_values_.clear();
    recording_ = true;
  }
  const bool saw_cpu = saw_cpu_events_, saw_runtime = saw_runtime_;
  const bool read = ExtractFlatMembers(p, end, e);
  if (recording_) {
    recording_ = false;
    if (read && !e.skip) LearnTemplate(end, *templates);
  }
  if (read) return true;
  saw_cpu_events_ = saw_cpu;
  saw_runtime_ = saw_runtime;
  e = EventFields();
  return false;
}

// Templates by the kind of event the prefilter resumes from.
inline size_t EventTokenizer::TemplateKind(Cat c) {
  switch (c) {
    case Cat::kKernel: return 1;
    case Cat::kMemcpy: return 2;
    case Cat::kMemset: return 3;
    default: return 0;  // launch calls
  }
}

// The event whose leading members the prefilter read (resume_), read
// with template t: true and `e` set as ExtractFlatMembers would set it,
// or false (and `e` half set) when a byte differs.
[[gnu::always_inline]] inline bool EventTokenizer::MatchTemplate(const EventTemplate& t,
                                                                 const char* end, EventFields& e) {
  e.ph = resume_.ph;
  e.cat = resume_.cat;
  e.cat_kind = resume_.cat_kind;
  e.name = resume_.name;
  e.name_plain = !resume_.name.empty();
  const char* q = resume_.after;
  const char* const lit = t.text.data();
  if (end - q < t.lead_len || !SameBytes(q, lit, t.lead_len, t.lead_want)) return false;
  q += t.lead_len;
  for (const TemplateHole& h : t.holes) {
    const char* const v = q;
    if (h.kind == TemplateHole::kNumber) [[likely]] {
      // Past the end, q fails the literal's length check below.
      unsigned other = NotNumberMask16(q);
      q = other != 0 ? q + __builtin_ctz(other) : NumberCharsEnd(q + 16, end);
      if (q == v) return false;
    } else if (h.kind == TemplateHole::kString) {
      if (*q != '"') return false;
      q = FindStringStop(q + 1, end);
      if (q == nullptr || *q != '"') return false;
      ++q;
    } else {
      std::array<int64_t, 3> d{};
      q = FlatDims3(q, end, d);
      if (q == nullptr) return false;
      e.*h.dims = d;
    }
    e.*h.token = std::string_view(v, static_cast<size_t>(q - v));
    const char* const after = lit + h.literal;
    if (end - q < h.literal_len ||
        !(h.literal_len <= 16 ? SameBytes16(q, after, h.literal_want)
                              : SameBytes(q, after, h.literal_len, h.literal_want))) {
      return false;
    }
    q += h.literal_len;
  }
  if (t.reads_name) e.name_plain = true;
  return q == end;
}

// Learns the event the walker just read from resume_ (its values in
// read_values_) as the first of `templates`, when every value is one a
// template reads alike whatever its content.
[[gnu::always_inline]] inline void EventTokenizer::LearnTemplate(
    const char* end, std::array<EventTemplate, 2>& templates) {
  if (read_values_.empty() || read_values_.size() > EventTemplate::kMaxHoles) return;
  EventTemplate t;
  t.holes.reserve(read_values_.size());
  const char* from = resume_.after;
  auto literal = [&](const char* to) -> std::optional<uint16_t> {
    if (to < from || t.text.size() + static_cast<size_t>(to - from) > EventTemplate::kMaxText) {
      return std::nullopt;
    }
    auto len = static_cast<uint16_t>(to - from);
    t.text.append(from, len);
    return len;
  };
  auto lead = literal(read_values_.front().begin);
  if (!lead) return;
  t.lead_len = *lead;
  t.lead_want = WantBits(*lead);
  for (size_t i = 0; i < read_values_.size(); ++i) {
    const ReadValue& r = read_values_[i];
    // Values whose reading depends on what they say: ph and cat (Decide),
    // a launch call's name (Decide), Input Dims (read per name).
    if (r.field == Field::kPh || r.field == Field::kCat || r.field == Field::kInputDims ||
        (r.field == Field::kName && resume_.cat_kind == Cat::kRuntime)) {
      return;
    }
    TemplateHole h;
    if (r.dims3) {
      h.kind = TemplateHole::kDims3;
      h.dims = r.field == Field::kGrid ? &EventFields::grid : &EventFields::block;
    } else if (*r.begin == '"') {
      if (FindStringStop(r.begin + 1, r.end) != r.end - 1) return;  // escapes
      h.kind = TemplateHole::kString;
    } else {
      if (r.begin == r.end || NumberCharsEnd(r.begin, r.end) != r.end) return;
      h.kind = TemplateHole::kNumber;
    }
    if (!r.dims3) {
      if (auto token = TokenMember(r.field)) h.token = token;
    }
    if (r.field == Field::kName) t.reads_name = true;
    from = r.end;
    h.literal = static_cast<uint16_t>(t.text.size());
    auto len = literal(i + 1 < read_values_.size() ? read_values_[i + 1].begin : end);
    if (!len || *len == 0) return;
    h.literal_len = *len;
    h.literal_want = WantBits(*len);
    t.holes.push_back(h);
  }
  t.text.append(32, '\0');  // SameBytes reads 32 bytes at a literal
  templates[1] = std::move(templates[0]);
  templates[0] = std::move(t);
}

// The member key at q (its opening quote), the i-th of its object: first
// compared with the key the i-th member had in the last event of this
// layout (Kineto writes every event of a kind with the same keys in the
// same order), else read and remembered. Sets `field` and returns the
// start of the value, or nullptr.
[[gnu::always_inline]] inline const char* EventTokenizer::FlatKey(const char* q, const char* end,
                                                                  KeySlots& slots, size_t i,
                                                                  bool args, Field& field) {
  if (i < kMaxKeySlots) {
    const KeySlot& slot = slots[i];
    if (q + slot.len < end && slot.Matches(q) && !IsBlank(q[slot.len])) {
      field = slot.field;
      return q + slot.len;
    }
  }
  return ReadKey(q, end, slots, i, args, field);
}

// FlatKey's slow path: a key not seen at this position before.
const char* EventTokenizer::ReadKey(const char* q, const char* end, KeySlots& slots, size_t i,
                                    bool args, Field& field) {
  const char* k = nullptr;
  const char* v = FlatMemberValue(q, end, k);
  if (v == nullptr) return nullptr;
  field = args ? ArgField(k) : TopField(k);
  if (i < kMaxKeySlots) slots[i].Learn(q, v, field);
  return v;
}

[[gnu::always_inline]] inline bool EventTokenizer::ExtractFlatMembers(const char* p,
                                                                      const char* end,
                                                                      EventFields& e) {
  const char* q = nullptr;
  size_t first = 0;
  if (resume_.after != nullptr) {  // ph, cat (and name) read by the prefilter
    e.ph = resume_.ph;
    e.cat = resume_.cat;
    e.cat_kind = resume_.cat_kind;
    e.name = resume_.name;
    e.name_plain = !resume_.name.empty();  // read up to its first '"', no escape before
    first = resume_.members;
    bool closed = false;
    q = FlatNextMember(resume_.after, end, closed);
    if (q == nullptr) return false;
    if (closed) return q == end;
  } else {
    q = SkipBlanks(p + 1, end);
  }
  for (size_t i = first;; ++i) {
    Field field = Field::kOther;
    q = FlatKey(q, end, top_slots_, i, /*args=*/false, field);
    if (q == nullptr) return false;
    std::string_view* out = nullptr;
    switch (field) {
      case Field::kPh: out = &e.ph; break;
      case Field::kPid: out = &e.pid; break;
      case Field::kCat: out = &e.cat; break;
      case Field::kName: out = &e.name; break;
      case Field::kTs: out = &e.ts; break;
      case Field::kTid: out = &e.tid; break;
      case Field::kDur: out = &e.dur; break;
      default: break;
    }
    if (field == Field::kArgs) {
      if (*q != '{') return false;  // On-Demand reads such an event as one without args
      q = ExtractFlatArgs(q, end, e);
      if (q == nullptr) return false;
      // Kineto writes args last: the rest need not be walked (as On-Demand).
      if (!e.ph.empty() && !e.cat.empty() && !e.name.empty() && !e.ts.empty() && !e.dur.empty()) {
        return FlatRestClean(q, end);
      }
    } else if (out != nullptr) {
      const char* v = q;
      const char* plain_end = nullptr;  // a name's closing quote, when it has no escape
      if (field == Field::kName && *q == '"') {
        const char* stop = FindStringStop(q + 1, end);
        if (stop != nullptr && *stop == '"') plain_end = stop;
      }
      q = plain_end != nullptr ? plain_end + 1 : FlatScalarEnd(q, end);  // the same end
      if (field == Field::kName) e.name_plain = plain_end != nullptr;
      if (q == nullptr) return false;
      *out = std::string_view(v, static_cast<size_t>(q - v));
      if (recording_) read_values_.push_back({v, q, field, false});
      if (field == Field::kCat) e.cat_kind = ClassifyCat(e.cat);
      if (field == Field::kPh || field == Field::kCat || field == Field::kName) {
        auto decided = Decide(e.ph, e.cat_kind, e.name);
        if (decided && !*decided) {
          e.skip = true;
          return FlatRestClean(q, end);
        }
      }
    } else {
      const char* v = q;
      q = FlatValueEnd(q, end);
      if (q == nullptr) return false;
      if (recording_) read_values_.push_back({v, q, field, false});
    }
    bool closed = false;
    q = FlatNextMember(q, end, closed);
    if (q == nullptr) return false;
    if (closed) return q == end;
  }
}

// The args over the flat subset: q is at the args' '{'. Returns the
// byte after its '}', or nullptr.
[[gnu::always_inline]] inline const char* EventTokenizer::ExtractFlatArgs(const char* q,
                                                                          const char* end,
                                                                          EventFields& e) {
  std::string_view name = TrimToken(e.name);
  if (name.size() >= 2) name = name.substr(1, name.size() - 2);
  const bool want_dims =
      collecting_cpu_ && IsCpuCommName(name) && name != keys::name::kRecordParamComms;
  const bool want_shape = IsDeviceCat(e.cat_kind);
  KeySlots& slots = args_slots_[e.cat_kind == Cat::kRuntime  ? 0
                                : e.cat_kind == Cat::kKernel ? 1
                                                             : 2];
  q = SkipBlanks(q + 1, end);
  if (q < end && *q == '}') return q + 1;
  for (size_t i = 0;; ++i) {
    Field field = Field::kOther;
    q = FlatKey(q, end, slots, i, /*args=*/true, field);
    if (q == nullptr) return nullptr;
    std::string_view* out = nullptr;
    std::optional<std::array<int64_t, 3>>* dims = nullptr;
    switch (field) {
      case Field::kDevice: out = &e.device; break;
      case Field::kCorrelation: out = &e.correlation; break;
      case Field::kGrid:
        if (want_shape) dims = &e.grid;
        break;
      case Field::kBlock:
        if (want_shape) dims = &e.block;
        break;
      case Field::kStream: out = &e.stream; break;
      case Field::kCollectiveName: out = &e.coll_name; break;
      case Field::kInMsgNelems: out = &e.nelems; break;
      case Field::kInputDims:
        if (want_dims) return nullptr;  // nested arrays: FirstDimsProduct reads them
        break;
      case Field::kGroupSize: out = &e.group_size; break;
      case Field::kProcessGroupName: out = &e.pg_name; break;
      case Field::kProcessGroupId: out = &e.pg_id; break;
      case Field::kSeq: out = &e.seq; break;
      case Field::kExternalId: out = &e.ext_id; break;
      default: break;
    }
    const char* const v = q;
    if (dims != nullptr) {
      std::array<int64_t, 3> d{};
      q = FlatDims3(q, end, d);
      if (q == nullptr) return nullptr;
      *dims = d;
    } else if (out != nullptr) {
      q = FlatScalarEnd(q, end);
      if (q == nullptr) return nullptr;
      *out = std::string_view(v, static_cast<size_t>(q - v));
    } else {
      q = FlatValueEnd(q, end);
      if (q == nullptr) return nullptr;
    }
    if (recording_) read_values_.push_back({v, q, field, dims != nullptr});
    bool closed = false;
    q = FlatNextMember(q, end, closed);
    if (q == nullptr || closed) return q;
  }
}

}  // namespace laggard::kineto
