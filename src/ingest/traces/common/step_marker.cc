#include "ingest/traces/common/step_marker.h"

#include <algorithm>
#include <map>

#include "base/text.h"

namespace laggard {
namespace {

constexpr size_t kMaxMarkerBytes = 200;
constexpr size_t kMaxStepDigits = 18;  // fits int64_t

bool IsSeparator(char c) {
  return c == ' ' || c == '_' || c == '#' || c == ':' || c == '=' || c == '-';
}

}  // namespace

std::optional<MarkedStep> MatchStepMarker(std::string_view marker, std::string_view name) {
  if (marker.empty() || name.size() < marker.size() || name.substr(0, marker.size()) != marker) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(marker.size());
  if (rest.empty()) return MarkedStep{};
  size_t sep = 0;
  while (sep < rest.size() && IsSeparator(rest[sep])) ++sep;
  std::string_view digits = rest.substr(sep);
  if (digits.empty() || digits.size() > kMaxStepDigits) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::optional<int64_t> n = ParseInt<int64_t>(digits);
  if (!n) return std::nullopt;
  return MarkedStep{n};
}

std::vector<TraceStep> StepsOfMarkers(std::vector<MarkerRange> ranges) {
  std::vector<TraceStep> steps;
  bool numbered = std::all_of(ranges.begin(), ranges.end(),
                              [](const MarkerRange& r) { return r.number.has_value(); });
  if (numbered) {
    std::map<int64_t, size_t> index;
    for (const MarkerRange& r : ranges) {
      auto [it, inserted] = index.emplace(*r.number, steps.size());
      if (inserted) {
        steps.push_back(TraceStep{*r.number, r.start_ns, r.end_ns});
      } else {
        TraceStep& s = steps[it->second];
        s.start_ns = std::min(s.start_ns, r.start_ns);
        s.end_ns = std::max(s.end_ns, r.end_ns);
      }
    }
  } else {
    std::stable_sort(ranges.begin(), ranges.end(), [](const MarkerRange& a, const MarkerRange& b) {
      return a.start_ns < b.start_ns;
    });
    for (const MarkerRange& r : ranges) {
      steps.push_back(TraceStep{static_cast<int64_t>(steps.size()), r.start_ns, r.end_ns});
    }
  }
  return steps;
}

std::string CheckStepMarker(std::string_view marker) {
  if (marker.empty()) return "the step marker is empty";
  if (marker.size() > kMaxMarkerBytes) return "the step marker is over 200 bytes";
  for (char c : marker) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "the step marker holds a control character";
    }
  }
  return "";
}

}  // namespace laggard
