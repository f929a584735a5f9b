#include "confirm/bisect.h"

#include <cmath>

#include <fmt/format.h>

namespace laggard::confirm {
namespace {

// A test's figure: its largest size's bus bandwidth when it ran well.
std::optional<double> FigureOf(const TestRun& r) {
  if (!r.ran || r.state != "ran" || r.busbw.empty()) return std::nullopt;
  return r.busbw.back().gbps;
}

std::string Hosts(const std::vector<std::string>& h) {
  if (h.size() <= 4) return fmt::format("{}", fmt::join(h, ", "));
  return fmt::format("{} .. {} ({} hosts)", h.front(), h.back(), h.size());
}

using Done = std::vector<std::pair<const PlannedTest*, std::optional<double>>>;

// Ends the bisection with its answer; `steps` say what each round decided.
BisectState Finish(BisectState st, std::vector<std::string>& steps, std::string verdict,
                   std::string locus, std::string why) {
  st.done = true;
  st.answer.verdict = std::move(verdict);
  st.answer.locus = std::move(locus);
  steps.push_back(std::move(why));
  st.answer.figures = fmt::format("bisection, {} run{}: {}", st.runs, st.runs == 1 ? "" : "s",
                                  fmt::join(steps, "; "));
  return st;
}

// Three suspects or fewer, each paired with a cleared host `partner`: the
// slow pair's host, or of three the third by elimination.
BisectState FinalRound(const ConfirmInput& in, const PlanOptions& o, size_t culprit,
                       const std::vector<std::string>& suspects, const std::string& partner,
                       const Done& done, size_t k, bool waiting, BisectState st,
                       std::vector<std::string>& steps) {
  size_t pairs = std::min<size_t>(suspects.size(), 2);  // the third by elimination
  if (k + pairs > done.size()) {
    st.answer.verdict = "not run";
    st.answer.figures =
        fmt::format("bisection waits for {} paired with {}",
                    fmt::join(suspects.begin(), suspects.begin() + pairs, ", "), partner);
    if (waiting) return st;
    for (size_t i = 0; i < pairs; ++i) {
      st.next.push_back(
          GroupTest(in, o, culprit, {suspects[i], partner}, PairRole::kHalf,
                    fmt::format("bisection: {} with {}, a cleared host", suspects[i], partner)));
    }
    st.runs += pairs;
    return st;
  }
  std::vector<double> f;
  for (size_t i = 0; i < pairs; ++i) {
    if (!done[k + i].second) {
      return Finish(st, steps, "inconclusive", "",
                    fmt::format("{} with {} gave no figure", suspects[i], partner));
    }
    f.push_back(*done[k + i].second);
  }
  std::vector<std::string> each;
  for (size_t i = 0; i < pairs; ++i) {
    each.push_back(fmt::format("{} {:.1f} GB/s", suspects[i], f[i]));
  }
  std::string figures = fmt::format("with {}: {}", partner, fmt::join(each, ", "));
  for (size_t i = 0; pairs == 2 && i < 2; ++i) {
    if (f[i] <= kPairSlow * f[1 - i]) {
      st.answer.host = suspects[i];
      return Finish(st, steps, "confirmed", "node", figures + fmt::format(": {}", suspects[i]));
    }
  }
  if (suspects.size() == 3 && f[0] >= kPairFast * f[1] && f[1] >= kPairFast * f[0]) {
    st.answer.host = suspects[2];
    return Finish(st, steps, "confirmed", "node",
                  figures + fmt::format(": both fast, so {}, the third of the slow half, by "
                                        "elimination",
                                        suspects[2]));
  }
  return Finish(st, steps, "inconclusive", "",
                figures +
                    ": neither is clearly the slow one (both slow: the half's slowness is "
                    "between them)");
}

}  // namespace

bool Bisects(const ReportCulprit& c) {
  return c.cause_class == "communication" && !c.host && !c.rank && c.ranks.empty() &&
         !c.switch_name;
}

size_t BisectBound(size_t hosts) {
  return hosts < 2 ? 0 : static_cast<size_t>(2 * std::log2(static_cast<double>(hosts)) + 1e-9);
}

BisectState BisectNext(const ConfirmInput& in, const ConfirmPlan& plan,
                       const std::vector<TestRun>& runs, size_t culprit, const PlanOptions& o) {
  BisectState st;
  st.answer.culprit = culprit;
  // The culprit's bisection tests so far, in order, with their figures.
  // A test planned but not run yet (printed, or no output in --results)
  // holds its round: the answer waits for it.
  Done done;
  bool waiting = false;
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    const PlannedTest& t = plan.tests[i];
    if (t.culprit != culprit || t.role != PairRole::kHalf) continue;
    bool ran = i < runs.size() && runs[i].ran;
    waiting |= !ran;
    if (ran) done.push_back({&t, FigureOf(runs[i])});
    st.runs += 1;
  }
  std::vector<std::string> suspects = in.hosts;
  std::vector<std::string> cleared;
  std::vector<std::string> steps;  // what each round decided
  size_t k = 0;
  while (suspects.size() > 3) {
    size_t half = suspects.size() / 2;
    std::vector<std::string> a(suspects.begin(), suspects.begin() + half);
    std::vector<std::string> b(suspects.begin() + half, suspects.end());
    if (k + 2 > done.size()) {
      if (waiting) {
        st.answer.verdict = "not run";
        st.answer.figures =
            fmt::format("bisection waits for the halves {} and {}", Hosts(a), Hosts(b));
        return st;
      }
      st.next = {GroupTest(in, o, culprit, a, PairRole::kHalf,
                           fmt::format("bisection: half {}", Hosts(a))),
                 GroupTest(in, o, culprit, b, PairRole::kHalf,
                           fmt::format("bisection: half {}", Hosts(b)))};
      st.runs += 2;
      st.answer.verdict = "not run";
      st.answer.figures =
          fmt::format("bisection waits for the halves {} and {}", Hosts(a), Hosts(b));
      return st;
    }
    std::optional<double> fa = done[k].second, fb = done[k + 1].second;
    k += 2;
    if (!fa || !fb) {
      return Finish(st, steps, "inconclusive", "",
                    fmt::format("a half's test gave no figure ({} / {})", Hosts(a), Hosts(b)));
    }
    std::string figures =
        fmt::format("{} {:.1f} GB/s, {} {:.1f} GB/s", Hosts(a), *fa, Hosts(b), *fb);
    if (*fa <= kPairSlow * *fb) {
      steps.push_back(figures + ": the first half is slow");
      cleared.insert(cleared.end(), b.begin(), b.end());
      suspects = a;
    } else if (*fb <= kPairSlow * *fa) {
      steps.push_back(figures + ": the second half is slow");
      cleared.insert(cleared.end(), a.begin(), a.end());
      suspects = b;
    } else {
      return Finish(st, steps, "refuted", "",
                    figures +
                        ": both halves alike, so no single slow node (the fabric as a whole, "
                        "or the job's own traffic)");
    }
  }
  // Three hosts or fewer: each with a cleared host (one never suspected
  // when no round ran).
  std::string partner;
  if (!cleared.empty()) {
    partner = cleared.front();
  } else {
    return Finish(st, steps, "inconclusive", "",
                  fmt::format("{} host{} to tell apart and none cleared to pair them with",
                              suspects.size(), suspects.size() == 1 ? "" : "s"));
  }
  return FinalRound(in, o, culprit, suspects, partner, done, k, waiting, st, steps);
}

}  // namespace laggard::confirm
