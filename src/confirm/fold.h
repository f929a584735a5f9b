// `laggard diagnose RUN_DIR CONFIRM_DIR`: a confirmation (the folder
// `laggard confirm --out` wrote, holding confirmation.json) folded into the
// verdict. Each confirmation is matched to the verdict's culprit of the same
// identity: the same host and cause class, the same GPU (absent only
// matching absent), and NIC, switch and rank equal where both name one (a
// NIC's answer never moves its host's GPU culprit, nor a host's a shared
// switch's):
//   confirmed     confidence c -> c + (1 - c) / 2 (0.6 -> 0.8), evidence
//                 "confirm: confirmed (node) — figures";
//   refuted       confidence halved, the same evidence line: the culprit
//                 stays listed, weaker, with the measurement against it;
//   otherwise     (inconclusive, not run, not judged) the evidence line only.
// A bisection that confirmed a host under a communication_bound verdict
// (whose culprit is the job as a whole) makes that host the culprit in the
// job's place: communication, found by bisection, confidence 0.7. The summary's confidence word
// follows. A confirmation of another job (OfAnotherJob) is not folded.
//
// Thread-safety: pure functions but ReadConfirmation(), which reads a file.

#ifndef LAGGARD_CONFIRM_FOLD_H_
#define LAGGARD_CONFIRM_FOLD_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/job_span.h"
#include "verdict/verdict.h"

namespace laggard::confirm {

// One culprit's confirmation as confirm wrote it.
struct ConfirmationEntry {
  std::string name;                 // the culprit's, as confirm named it
  std::optional<std::string> host;  // the report culprit's
  std::optional<int32_t> rank, gpu;
  std::optional<std::string> nic, switch_name, cause_class;
  std::string verdict;  // confirmed | refuted | inconclusive | not run | not judged
  std::string locus;
  std::string figures;
  std::optional<std::string> confirmed_host;  // the host it names (bisection)
  // The job its report was about (its first and last wall-clock times),
  // and when the tests ran; unset when unknown.
  WallSpan job;
  std::optional<TimeNs> confirmed_at;
};

// Why `e` is not about the job of `run` ("" when it may be): the span of
// the report's job and the run's are apart (by more than a minute), or the
// tests ran before the run's job began.
std::string OfAnotherJob(const ConfirmationEntry& e, const WallSpan& run);

// Whether `path` is a confirmation: that file itself, or a folder holding
// only what confirm writes (confirmation.json and test-N.txt outputs); a
// run folder that also holds a confirmation.json is a run.
bool IsConfirmation(const std::string& path);

// Its entries; an error names the file when it is not laggard.confirm/1.
StatusOr<std::vector<ConfirmationEntry>> ReadConfirmation(const std::string& path);
// The same from the file's text (nested deeper than kMaxNesting: refused).
StatusOr<std::vector<ConfirmationEntry>> ParseConfirmation(std::string_view text,
                                                           const std::string& where);

// Folds `entries` into `v`; returns how many matched a culprit (or made one).
size_t FoldConfirmation(const std::vector<ConfirmationEntry>& entries, Verdict& v);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_FOLD_H_
