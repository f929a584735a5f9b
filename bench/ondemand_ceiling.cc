// Row (a) of trace_ingest_bench: simdjson On-Demand over one piece of
// traceEvents, compiled once per ISA variant (cmake/isa_variants.cmake)
// because On-Demand's front end (iteration, string unescaping, number
// parsing) runs only the kernel its translation unit is compiled for
// (simdjson's "builtin"): fallback in a baseline build, haswell / icelake in
// the variants. Its stage 1 (the structural index) is the library's
// runtime-dispatched kernel in every copy (ondemand::parser::allocate takes
// get_active_implementation()).
#include "ondemand_ceiling.h"

#include <simdjson.h>

#include <string_view>
#include <utility>

#ifndef LAGGARD_BENCH_NS
#define LAGGARD_BENCH_NS bench_baseline
#endif

namespace laggard {
namespace LAGGARD_BENCH_NS {
namespace {

namespace od = simdjson::ondemand;

// Visits every member of an On-Demand value: keys, strings unescaped,
// numbers and literals as raw tokens. Adds sizes to `sum` so nothing is
// optimized away.
simdjson::error_code VisitOnDemand(od::value v, uint64_t& sum) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::object: {
      od::object obj;
      if (auto e = v.get_object().get(obj)) return e;
      for (auto field_result : obj) {
        od::field field;
        if (auto e = std::move(field_result).get(field)) return e;
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return e;
        sum += key.size();
        if (auto e = VisitOnDemand(field.value(), sum)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array arr;
      if (auto e = v.get_array().get(arr)) return e;
      for (auto element : arr) {
        od::value el;
        if (auto e = element.get(el)) return e;
        if (auto e = VisitOnDemand(el, sum)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      std::string_view str;
      if (auto e = v.get_string().get(str)) return e;
      sum += str.size();
      return simdjson::SUCCESS;
    }
    default: sum += v.raw_json_token().size(); return simdjson::SUCCESS;
  }
}

}  // namespace

bool OnDemandPiece(const char* doc, size_t len, bool count_only, uint64_t& events, uint64_t& sum) {
  static od::parser parser;  // one bench child, one thread
  od::document d;
  od::array arr;
  if (parser.iterate(doc, len, len + simdjson::SIMDJSON_PADDING).get(d) || d.get_array().get(arr)) {
    return false;
  }
  if (count_only) {
    size_t count = 0;
    if (arr.count_elements().get(count)) return false;
    events += count;
    sum += count;
    return true;
  }
  for (auto element : arr) {
    od::value v;
    ++events;
    if (element.get(v) || VisitOnDemand(v, sum) != simdjson::SUCCESS) return false;
  }
  return true;
}

// simdjson::builtin_implementation() lives in the library (Debian's: built
// for baseline x86-64), so it would say "fallback" here too: the macro is
// what this translation unit compiled.
#define LAGGARD_BENCH_STR2(x) #x
#define LAGGARD_BENCH_STR(x) LAGGARD_BENCH_STR2(x)
const char* OnDemandKernel() { return LAGGARD_BENCH_STR(SIMDJSON_BUILTIN_IMPLEMENTATION); }

}  // namespace LAGGARD_BENCH_NS
}  // namespace laggard
