#include "ingest/readers.h"

#include "ingest/gpu_tests/gpu_test_readers.h"

#include "ingest/traces/flight_recorder/flight_recorder_reader.h"
#include "ingest/traces/kineto/kineto_reader.h"
#include "ingest/traces/megatron/megatron_timeline_reader.h"
#include "ingest/traces/nsys/nsys_reader.h"
#include "ingest/traces/torch_legacy/torch_legacy_reader.h"

namespace laggard {

namespace {

// The step-line matchers of a text-log reader; `step_pattern` compiles
// (MakeDefaultTextReaders() checked it).
std::vector<std::unique_ptr<LineMatcher>> StepMatchers(
    const std::optional<std::string>& step_pattern) {
  std::vector<std::unique_ptr<LineMatcher>> matchers;
  if (step_pattern) matchers.push_back(std::move(MakeRegexLineMatcher(*step_pattern).value()));
  matchers.push_back(MakeArticleLineMatcher());
  matchers.push_back(MakeKeyValueLineMatcher());
  matchers.push_back(MakeMegatronLineMatcher());
  return matchers;
}

}  // namespace

StatusOr<TextReaderSet> MakeDefaultTextReaders(const std::optional<std::string>& step_pattern) {
  std::vector<std::unique_ptr<LineMatcher>> matchers;
  if (step_pattern) {
    auto m = MakeRegexLineMatcher(*step_pattern);
    if (!m.ok()) return m.status();
    matchers.push_back(std::move(m.value()));
  }
  matchers.push_back(MakeArticleLineMatcher());
  matchers.push_back(MakeKeyValueLineMatcher());
  matchers.push_back(MakeMegatronLineMatcher());
  TextReaderSet set;
  set.owned.push_back(MakeJsonlStepReader());
  set.owned.push_back(MakeCsvStepReader());
  set.owned.push_back(MakeRankMapReader());
  set.owned.push_back(MakeNvidiaSmiQReader());
  set.owned.push_back(MakeNvidiaSmiTableReader());
  set.owned.push_back(MakeRocmSmiReader());
  set.owned.push_back(MakeAmdSmiMetricReader());
  set.owned.push_back(MakeNvidiaSmiDmonReader());
  set.owned.push_back(MakeNvidiaSmiQueryCsvReader());
  set.owned.push_back(MakeNvlinkStatusReader());
  set.owned.push_back(MakeIbstatReader());
  set.owned.push_back(MakeIbstatusReader());
  set.owned.push_back(MakeIbvDevinfoReader());
  set.owned.push_back(MakeEthtoolReader());
  set.owned.push_back(MakeSwitchMapReader());
  set.owned.push_back(MakePerfqueryReader());
  set.owned.push_back(MakeDcgmiDmonReader());
  set.owned.push_back(MakeDcgmiDiagReader());
  set.owned.push_back(MakeDcgmExporterReader());
  set.owned.push_back(MakeTextLogReader(std::move(matchers)));
  set.owned.push_back(MakeAgentLogReader());
  // The NCCL_DEBUG reader reads the step lines of the files it claims with a
  // text-log reader of its own (the pattern compiled above, so it compiles).
  std::vector<std::unique_ptr<LineMatcher>> nccl_log_matchers;
  if (step_pattern) {
    nccl_log_matchers.push_back(std::move(MakeRegexLineMatcher(*step_pattern).value()));
  }
  nccl_log_matchers.push_back(MakeArticleLineMatcher());
  nccl_log_matchers.push_back(MakeMegatronLineMatcher());
  set.owned.push_back(MakeNcclTestsReader());
  set.owned.push_back(MakeNcclDebugReader(MakeTextLogReader(std::move(nccl_log_matchers))));
  set.owned.push_back(MakeNvidiaSmiTopoReader());
  set.owned.push_back(MakeP2pBandwidthReader());
  set.owned.push_back(MakePairTableReader());
  // Logs whose head holds hang lines and no step line: read by a text-log
  // reader of its own, which takes step and hang lines alike.
  set.owned.push_back(MakeHangLogReader(MakeTextLogReader(StepMatchers(step_pattern))));
  // NCCL RAS reports: banner and table heads only RAS prints, above every
  // reader that could take the file as text.
  set.owned.push_back(MakeNcclRasReader());
  for (const auto& r : set.owned) set.readers.push_back(r.get());
  return set;
}

TraceReaderSet MakeDefaultTraceReaders() {
  TraceReaderSet set;
  set.owned.push_back(MakeKinetoTraceReader());
  // A bare array whose first event has "pid": "CPU functions": above the
  // Kineto reader's array level, below its "traceEvents" level.
  set.owned.push_back(MakeTorchLegacyTraceReader());
  // A bare array whose first event is a Megatron op (or its thread_name):
  // above the Kineto reader's array level too.
  set.owned.push_back(MakeMegatronTimelineReader());
  set.owned.push_back(MakeNsysTraceReader());
  // Flight Recorder dumps: a pickle or a JSON object with pg_status / an
  // entry's collective_seq_id, which the Kineto reader never claims.
  set.owned.push_back(MakeFlightRecorderReader());
  for (const auto& r : set.owned) set.readers.push_back(r.get());
  return set;
}

}  // namespace laggard
