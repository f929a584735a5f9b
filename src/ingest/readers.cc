#include "ingest/readers.h"

#include "ingest/kineto_reader.h"
#include "ingest/nsys_reader.h"

namespace laggard {

StatusOr<StepReaderSet> MakeDefaultStepReaders(const std::optional<std::string>& step_pattern) {
  std::vector<std::unique_ptr<LineMatcher>> matchers;
  if (step_pattern) {
    auto m = MakeRegexLineMatcher(*step_pattern);
    if (!m.ok()) return m.status();
    matchers.push_back(std::move(m.value()));
  }
  matchers.push_back(MakeArticleLineMatcher());
  matchers.push_back(MakeMegatronLineMatcher());
  StepReaderSet set;
  set.owned.push_back(MakeJsonlStepReader());
  set.owned.push_back(MakeCsvStepReader());
  set.owned.push_back(MakeDcgmiDmonReader());
  set.owned.push_back(MakeDcgmiDiagReader());
  set.owned.push_back(MakeDcgmExporterReader());
  set.owned.push_back(MakeTextLogReader(std::move(matchers)));
  for (const auto& r : set.owned) set.readers.push_back(r.get());
  return set;
}

TraceReaderSet MakeDefaultTraceReaders() {
  TraceReaderSet set;
  set.owned.push_back(MakeKinetoTraceReader());
  set.owned.push_back(MakeNsysTraceReader());
  for (const auto& r : set.owned) set.readers.push_back(r.get());
  return set;
}

}  // namespace laggard
