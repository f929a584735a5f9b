// Helpers shared by the JSON report's sections: numbers rounded to 6
// significant digits (reports compare byte for byte across machines) and
// unknown values as null. Internal to the report stage.

#ifndef LAGGARD_REPORT_JSON_UTIL_H_
#define LAGGARD_REPORT_JSON_UTIL_H_

#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/hardware_detector.h"
#include "analysis/network_detector.h"
#include "model/run.h"

namespace laggard {

using Json = nlohmann::ordered_json;

inline Json Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return std::strtod(fmt::format("{:.6g}", v).c_str(), nullptr);
}
template <typename T>
Json Opt(const std::optional<T>& v) {
  if (!v) return nullptr;
  if constexpr (std::is_floating_point_v<T>) return Num(*v);
  else return *v;
}

// The `hardware` and `network` sections (json_evidence.cc).
Json HardwareJson(const Run& run, const HardwareAnalysis& hardware);
Json NetworkJson(const Run& run, const NetworkAnalysis& network);

}  // namespace laggard

#endif  // LAGGARD_REPORT_JSON_UTIL_H_
