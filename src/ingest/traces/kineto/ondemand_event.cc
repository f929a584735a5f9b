// The event tokenizer's last resort: simdjson On-Demand reads any valid
// JSON event and takes the same members as the walker (event_tokenizer.cc).

#include "ingest/traces/kineto/event_tokenizer.h"

#include <simdjson.h>

namespace laggard::kineto {

namespace keys = kineto_keys;
namespace od = simdjson::ondemand;

static_assert(kPadBytes >= simdjson::SIMDJSON_PADDING, "the buffer must carry simdjson's padding");

struct EventTokenizer::OnDemand {
  enum class Extract { kOk, kMalformed };

  od::parser parser;

  Extract Event(EventTokenizer& t, od::object& obj, EventFields& e) {
    od::object_iterator it, end;
    if (obj.begin().get(it) || obj.end().get(end)) return Extract::kMalformed;
    for (; it != end; ++it) {
      od::field field;
      if ((*it).get(field)) return Extract::kMalformed;
      const char* k = field.key().raw();
      od::value& v = field.value();
      bool decisive = false;
      switch (k[0]) {
        case 'p':
          if (KeyIs(k, keys::event::kPh)) e.ph = TrimToken(v.raw_json_token()), decisive = true;
          else if (KeyIs(k, keys::event::kPid)) e.pid = TrimToken(v.raw_json_token());
          break;
        case 'c':
          if (KeyIs(k, keys::event::kCat)) {
            e.cat = TrimToken(v.raw_json_token());
            e.cat_kind = ClassifyCat(e.cat);
            decisive = true;
          }
          break;
        case 'n':
          if (KeyIs(k, keys::event::kName)) e.name = TrimToken(v.raw_json_token()), decisive = true;
          break;
        case 't':
          if (KeyIs(k, keys::event::kTs)) e.ts = TrimToken(v.raw_json_token());
          else if (KeyIs(k, keys::event::kTid)) e.tid = TrimToken(v.raw_json_token());
          break;
        case 'd':
          if (KeyIs(k, keys::event::kDur)) e.dur = TrimToken(v.raw_json_token());
          break;
        case 'a':
          if (KeyIs(k, keys::event::kArgs)) {
            od::object args;
            if (v.get_object().get(args)) break;  // not an object: no args
            if (Args(t, args, e) == Extract::kMalformed) return Extract::kMalformed;
            // Kineto writes args last: the rest need not be walked.
            if (!e.ph.empty() && !e.cat.empty() && !e.name.empty() && !e.ts.empty() &&
                !e.dur.empty()) {
              return Extract::kOk;
            }
          }
          break;
        default: break;
      }
      if (decisive) {
        auto decided = t.Decide(e.ph, e.cat_kind, e.name);
        if (decided && !*decided) {
          e.skip = true;
          return Extract::kOk;
        }
      }
    }
    return Extract::kOk;
  }

  Extract Args(EventTokenizer& t, od::object& args, EventFields& e) {
    std::string_view name = TrimToken(e.name);
    if (name.size() >= 2) name = name.substr(1, name.size() - 2);
    bool want_dims =
        t.collecting_cpu_ && IsCpuCommName(name) && name != keys::name::kRecordParamComms;
    bool want_shape = IsDeviceCat(e.cat_kind);
    od::object_iterator it, end;
    if (args.begin().get(it) || args.end().get(end)) return Extract::kMalformed;
    for (; it != end; ++it) {
      od::field field;
      if ((*it).get(field)) return Extract::kMalformed;
      const char* k = field.key().raw();
      od::value& v = field.value();
      std::string_view* out = nullptr;
      switch (k[0]) {
        case 'd':
          if (KeyIs(k, keys::args::kDevice)) out = &e.device;
          break;
        case 'c':
          if (KeyIs(k, keys::args::kCorrelation)) out = &e.correlation;
          break;
        case 'g':
          if (want_shape && KeyIs(k, keys::args::kGrid)) e.grid = Dims3(v);
          break;
        case 'b':
          if (want_shape && KeyIs(k, keys::args::kBlock)) e.block = Dims3(v);
          break;
        case 's':
          if (KeyIs(k, keys::args::kStream)) out = &e.stream;
          break;
        case 'C':
          if (KeyIs(k, keys::args::kCollectiveName)) out = &e.coll_name;
          break;
        case 'I':
          if (KeyIs(k, keys::args::kInMsgNelems)) {
            out = &e.nelems;
          } else if (want_dims && KeyIs(k, keys::args::kInputDims)) {
            e.dims_product = FirstDimsProduct(v);
          }
          break;
        case 'G':
          if (KeyIs(k, keys::args::kGroupSize)) out = &e.group_size;
          break;
        case 'P':
          if (KeyIs(k, keys::args::kProcessGroupName)) out = &e.pg_name;
          else if (KeyIs(k, keys::args::kProcessGroupId)) out = &e.pg_id;
          break;
        case 'S':
          if (KeyIs(k, keys::args::kSeq)) out = &e.seq;
          break;
        case 'E':
          if (KeyIs(k, keys::args::kExternalId)) out = &e.ext_id;
          break;
        case 'e':
          if (KeyIs(k, keys::args::kExternalIdLegacy)) out = &e.ext_id;
          break;
        default: break;
      }
      if (out != nullptr) *out = TrimToken(v.raw_json_token());
    }
    return Extract::kOk;
  }

  // "grid": [132, 1, 1] -> {132, 1, 1}; anything else (not 3 non-negative
  // integers) -> nullopt.
  static std::optional<std::array<int64_t, 3>> Dims3(od::value& v) {
    od::array a;
    if (v.get_array().get(a)) return std::nullopt;
    std::array<int64_t, 3> out{};
    size_t n = 0;
    for (auto d : a) {
      int64_t x = 0;
      if (n >= 3 || d.get_int64().get(x) || x < 0) return std::nullopt;
      out[n++] = x;
    }
    if (n != 3) return std::nullopt;
    return out;
  }

  // "Input Dims": [[8, 1024, 8816], [], ...] -> 8 * 1024 * 8816.
  static std::optional<int64_t> FirstDimsProduct(od::value& v) {
    od::array dims;
    if (v.get_array().get(dims)) return std::nullopt;
    for (auto first_result : dims) {
      od::array first;
      if (first_result.get_array().get(first)) return std::nullopt;
      int64_t product = 1;
      bool any = false;
      for (auto d : first) {
        int64_t x = 0;
        if (d.get_int64().get(x) || x < 0) return std::nullopt;
        if (__builtin_mul_overflow(product, x, &product)) return std::nullopt;
        any = true;
      }
      return any ? std::optional<int64_t>(product) : std::nullopt;
    }
    return std::nullopt;
  }
};

EventTokenizer::EventTokenizer(Mode mode, std::string_view step_marker, bool flat_events)
    : mode_(mode),
      collecting_cpu_(mode == Mode::kCpu),
      marker_(step_marker),
      marker_prefix_(MarkerPrefix(step_marker)),
      flat_events_(flat_events),
      ondemand_(std::make_unique<OnDemand>()) {}

EventTokenizer::~EventTokenizer() = default;

bool EventTokenizer::ExtractOnDemand(const char* p, size_t n, EventFields& e) {
  od::document doc;
  od::object obj;
  return !(ondemand_->parser.iterate(p, n, n + kPadBytes).get(doc) || doc.get_object().get(obj) ||
           ondemand_->Event(*this, obj, e) == OnDemand::Extract::kMalformed);
}

}  // namespace laggard::kineto
