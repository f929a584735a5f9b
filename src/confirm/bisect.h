// Bisection: the slow node among N hosts when the verdict names none (a job
// whose network is slow as a whole, `--suspect all`). Each round runs
// nccl-tests all_reduce_perf on the two halves of the hosts still suspected,
// split at the switch boundary nearest the middle (natural order, so a half
// keeps its switches) as long as that keeps the rounds to ⌈log2 N⌉; the half
// at <= kPairSlow of the other holds the slow node and is split again.
// Halves alike after a slow round: the paths between them (fabric), no
// node. Halves alike at the first round: one more run of all the hosts
// together; slow, the fabric between the halves, else nothing slow. Three
// hosts or fewer are each paired with a cleared host under their own
// switch, or all with one cleared host when they share a switch (else
// inconclusive, node_or_uplink): one slow pair among fast ones is its host;
// every one fast is the fabric. Nobody is named by elimination. At most
// 2·⌈log2 N⌉ runs.
//
// The rounds depend on each other: BisectNext() replays the rounds whose
// results are in and gives the next round's tests, so a plan grows a round
// at a time, whether the tests run here (a launcher) or their outputs are
// read back (--results, where a round without outputs is what to run next).
//
// Thread-safety: pure functions.

#ifndef LAGGARD_CONFIRM_BISECT_H_
#define LAGGARD_CONFIRM_BISECT_H_

#include <string>
#include <vector>

#include "confirm/plan.h"
#include "confirm/read_back.h"
#include "confirm/run.h"

namespace laggard::confirm {

// The culprits to bisect: communication with no host.
bool Bisects(const ReportCulprit& c);

// The most runs a bisection over `hosts` may take: 2·⌈log2 N⌉.
size_t BisectBound(size_t hosts);

struct BisectState {
  bool done = false;              // decided (found, cleared, or stopped): no more rounds
  std::vector<PlannedTest> next;  // the next round's tests (empty when done or waiting)
  Confirmation answer;            // verdict, locus ("node" when found), figures
  size_t runs = 0;                // tests planned so far, the next round's included
};

// Replays culprit `culprit`'s bisection tests in `plan` (role kHalf) with
// their `runs`, over `in.hosts`.
BisectState BisectNext(const ConfirmInput& in, const ConfirmPlan& plan,
                       const std::vector<TestRun>& runs, size_t culprit, const PlanOptions& o);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_BISECT_H_
