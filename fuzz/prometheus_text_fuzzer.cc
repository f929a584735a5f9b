// Fuzzes the Prometheus exposition line parser (ingest/common/prometheus_text.h)
// on every line of arbitrary bytes.
//
// Invariants:
//   - ParseLine never reads past the line (the line sits in an exact-size
//     buffer, so AddressSanitizer sees any overrun) and either succeeds or
//     gives a reason;
//   - a parsed sample has a metric name and unique label names, and reads
//     back unchanged after FormatSample (same name, labels, values, value
//     bit for bit or both NaN, timestamp);
//   - HELP and TYPE lines keep their metric name non-empty.

#include <cmath>
#include <cstring>

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/common/prometheus_text.h"

namespace laggard::fuzz {
namespace {

void CheckLine(std::string_view text) {
  ExactBuffer exact(text);
  prom::Line l;
  std::string error;
  if (!prom::ParseLine(exact.view(), l, error)) {
    FUZZ_CHECK(!error.empty(), "rejected without a reason: \"{}\"", Printable(text));
    return;
  }
  if (l.kind == prom::LineKind::kHelp || l.kind == prom::LineKind::kType) {
    FUZZ_CHECK(!l.metric.empty(), "HELP/TYPE without a name: \"{}\"", Printable(text));
    return;
  }
  if (l.kind != prom::LineKind::kSample) return;
  FUZZ_CHECK(!l.metric.empty(), "sample without a name: \"{}\"", Printable(text));
  for (size_t i = 0; i < l.labels.size(); ++i) {
    FUZZ_CHECK(!l.labels[i].name.empty(), "empty label name: \"{}\"", Printable(text));
    for (size_t j = 0; j < i; ++j) {
      FUZZ_CHECK(l.labels[i].name != l.labels[j].name, "duplicate label kept: \"{}\"",
                 Printable(text));
    }
  }
  std::string again = prom::FormatSample(l.metric, l.labels, l.value, l.timestamp_ms);
  prom::Line r;
  bool ok = prom::ParseLine(again, r, error);
  FUZZ_CHECK(ok, "formatted sample does not parse ({}): \"{}\" from \"{}\"", error,
             Printable(again), Printable(text));
  FUZZ_CHECK(r.kind == prom::LineKind::kSample && r.metric == l.metric, "name changed: \"{}\"",
             Printable(again));
  FUZZ_CHECK(r.labels.size() == l.labels.size(), "label count changed: \"{}\"", Printable(again));
  for (size_t i = 0; i < l.labels.size(); ++i) {
    FUZZ_CHECK(r.labels[i].name == l.labels[i].name && r.labels[i].value == l.labels[i].value,
               "label {} changed: \"{}\"", i, Printable(again));
  }
  bool same_value = std::isnan(l.value) ? std::isnan(r.value)
                                        : std::memcmp(&l.value, &r.value, sizeof(double)) == 0;
  FUZZ_CHECK(same_value, "value {} read back as {}: \"{}\"", l.value, r.value, Printable(again));
  FUZZ_CHECK(r.timestamp_ms == l.timestamp_ms, "timestamp changed: \"{}\"", Printable(again));
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(prometheus_text) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  while (pos <= input.size()) {
    size_t nl = input.find('\n', pos);
    if (nl == std::string_view::npos) nl = input.size();
    CheckLine(input.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return 0;
}
