#include "ingest/traces/megatron/megatron_event.h"

#include <simdjson.h>

#include "formats/kineto_keys.h"
#include "formats/megatron_timeline.h"
#include "ingest/traces/common/json_scalars.h"

namespace laggard::megatron {
namespace {

namespace od = simdjson::ondemand;
namespace keys = kineto_keys::event;  // the Chrome trace format's event members
namespace mt = megatron_timeline;

static_assert(kEventPadBytes >= simdjson::SIMDJSON_PADDING, "events must carry simdjson's padding");

// The value as a decoded string, or nullopt when it is not one.
std::optional<std::string_view> StringOf(od::value& v) {
  std::string_view s;
  if (v.get_string().get(s)) return std::nullopt;
  return s;
}

// The value's raw token, trimmed ("{" / "[" for an object / array).
std::string_view TokenOf(od::value& v) {
  std::string_view t = v.raw_json_token();
  return TrimToken(t);
}

// args: the op's step, chunk, microbatch and sequence number, and the name
// a metadata event gives. False when the object is malformed.
bool ReadArgs(od::object& args, MegatronEvent& e) {
  od::object_iterator it, end;
  if (args.begin().get(it) || args.end().get(end)) return false;
  for (; it != end; ++it) {
    od::field field;
    std::string_view key;
    if ((*it).get(field) || field.unescaped_key().get(key)) return false;
    od::value& v = field.value();
    if (key == mt::kStep) e.step = TokenOf(v);
    else if (key == mt::kModelChunk) e.model_chunk = TokenOf(v);
    else if (key == mt::kMicrobatch) e.mb_id = TokenOf(v);
    else if (key == mt::kSeqId) e.seq_id = TokenOf(v);
    else if (key == keys::kName) e.args_name = StringOf(v);
  }
  return true;
}

}  // namespace

struct MegatronEventParser::Impl {
  od::parser parser;
};

MegatronEventParser::MegatronEventParser() : impl_(std::make_unique<Impl>()) {}
MegatronEventParser::~MegatronEventParser() = default;

bool MegatronEventParser::Parse(const char* p, size_t n, MegatronEvent& e) {
  e = MegatronEvent();
  od::document doc;
  od::object obj;
  if (impl_->parser.iterate(p, n, n + kEventPadBytes).get(doc) || doc.get_object().get(obj)) {
    return false;
  }
  od::object_iterator it, end;
  if (obj.begin().get(it) || obj.end().get(end)) return false;
  for (; it != end; ++it) {
    od::field field;
    std::string_view key;
    if ((*it).get(field) || field.unescaped_key().get(key)) return false;
    od::value& v = field.value();
    if (key == keys::kPh) {
      e.ph = StringOf(v);
    } else if (key == keys::kName) {
      e.name = StringOf(v);
    } else if (key == keys::kPid) {
      e.pid = TokenOf(v);
    } else if (key == keys::kTid) {
      e.tid = TokenOf(v);
    } else if (key == keys::kTs) {
      e.ts = TokenOf(v);
    } else if (key == keys::kDur) {
      e.dur = TokenOf(v);
    } else if (key == keys::kArgs) {
      od::object args;
      if (v.get_object().get(args)) continue;  // not an object: no args
      e.args_object = true;
      if (!ReadArgs(args, e)) return false;
    }
  }
  return true;
}

}  // namespace laggard::megatron
