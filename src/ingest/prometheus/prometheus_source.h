// Prometheus as an input: builds a Run for a time window from the series the
// laggard agent (docs/agent.md) and dcgm-exporter export, through the
// Prometheus HTTP API (/api/v1/query_range). `laggard watch` calls it once per
// evaluation; the detectors then run on the Run exactly as offline.
//
//   steps      laggard_step_duration_seconds + laggard_step_last per
//              (host, rank): every new step number seen in the window is one
//              StepRecord (duration = the gauge, start = sample time -
//              duration); labels host and gpu place the rank on its GPU
//   GPUs       laggard_gpu_* per (host, gpu), else dcgm-exporter's
//              DCGM_FI_DEV_* per (Hostname, gpu): one GpuSample per query step
//
// The resolution is the query step (default 1 s): steps shorter than it are
// sampled, not all recorded — enough for the detectors' medians, documented
// in docs/watch.md.
//
// Thread-safety: LoadFromPrometheus() is re-entrant; it blocks on HTTP.

#ifndef LAGGARD_INGEST_PROMETHEUS_PROMETHEUS_SOURCE_H_
#define LAGGARD_INGEST_PROMETHEUS_PROMETHEUS_SOURCE_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/run.h"

namespace laggard {

struct PrometheusQuery {
  std::string url = "http://127.0.0.1:9090";  // scheme://host:port of the server
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  DurationNs step_ns = 1'000'000'000;
  std::string selector;  // extra label matchers, e.g. job="train" (without braces)
  int timeout_s = 10;
};

// One series of a range-query result.
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<TimeNs, double>> points;
};

// Parses a /api/v1/query_range (matrix) or /api/v1/query (vector) response.
StatusOr<std::vector<PromSeries>> ParsePrometheusResponse(std::string_view body);

// Queries `expr` over the window.
StatusOr<std::vector<PromSeries>> QueryRange(const PrometheusQuery& q, const std::string& expr);

// Fails only when Prometheus cannot be reached or answers with an error; an
// empty window gives an empty Run. Run::files holds one pseudo-file per
// query ("prometheus:laggard_gpu_temp_celsius") so provenance stays readable.
StatusOr<Run> LoadFromPrometheus(const PrometheusQuery& q);

// The same mapping from already-fetched series, by metric name (tests).
Run RunFromSeries(const std::map<std::string, std::vector<PromSeries>>& by_metric);

}  // namespace laggard

#endif  // LAGGARD_INGEST_PROMETHEUS_PROMETHEUS_SOURCE_H_
