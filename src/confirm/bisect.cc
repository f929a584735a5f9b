#include "confirm/bisect.h"

#include <algorithm>
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

// A cleared host to pair each of the last suspects with, and whether that
// pair leaves its switch's uplink out: a host under its own switch; else,
// when the suspects all sit under one switch, one cleared host for all of
// them (their pairs cross the same uplinks, so one slow pair among fast
// ones is still its host); else any cleared host, the uplink in the path.
// Switches not known: any cleared host, taken as clean.
struct Partner {
  std::string host;
  bool clean = false;
};

std::vector<Partner> PartnersOf(const ConfirmInput& in, const std::vector<std::string>& suspects,
                                const std::vector<std::string>& cleared) {
  auto sw0 = SwitchOf(in, suspects[0]);
  bool one_switch = std::all_of(suspects.begin(), suspects.end(),
                                [&](const std::string& s) { return SwitchOf(in, s) == sw0; });
  std::vector<Partner> out;
  for (const std::string& s : suspects) {
    auto sw = SwitchOf(in, s);
    Partner p{cleared.front(), !sw || one_switch};
    for (const std::string& h : cleared) {
      if (sw && SwitchOf(in, h) == sw) {
        p = {h, true};
        break;
      }
    }
    if (one_switch && !p.clean) p = {cleared.front(), true};
    out.push_back(p);
  }
  if (one_switch) {
    // One partner for all when any lacks one under the switch.
    bool all_inside = std::all_of(out.begin(), out.end(),
                                  [&](const Partner& p) { return SwitchOf(in, p.host) == sw0; });
    if (!all_inside) out.assign(suspects.size(), {cleared.front(), true});
  }
  return out;
}

// Three suspects or fewer, each paired with a cleared host (PartnersOf()):
// the one slow pair among fast ones is its host. Every suspect is
// measured; none is named by elimination.
BisectState FinalRound(const ConfirmInput& in, const PlanOptions& o, size_t culprit,
                       const std::vector<std::string>& suspects,
                       const std::vector<std::string>& cleared, const Done& done, size_t k,
                       bool waiting, BisectState st, std::vector<std::string>& steps) {
  std::vector<Partner> partners = PartnersOf(in, suspects, cleared);
  size_t pairs = suspects.size();
  if (k + pairs > done.size()) {
    st.answer.verdict = "not run";
    st.answer.figures =
        fmt::format("bisection waits for {} each paired with a cleared host", Hosts(suspects));
    if (waiting) return st;
    for (size_t i = 0; i < pairs; ++i) {
      st.next.push_back(GroupTest(
          in, o, culprit, {suspects[i], partners[i].host}, PairRole::kHalf,
          fmt::format("bisection: {} with {}, a cleared host", suspects[i], partners[i].host)));
    }
    st.runs += pairs;
    return st;
  }
  std::vector<double> f;
  for (size_t i = 0; i < pairs; ++i) {
    if (!done[k + i].second) {
      return Finish(st, steps, "inconclusive", "",
                    fmt::format("{} with {} gave no figure", suspects[i], partners[i].host));
    }
    f.push_back(*done[k + i].second);
  }
  double best = *std::max_element(f.begin(), f.end());
  std::vector<std::string> each;
  std::vector<size_t> slow;
  size_t fast = 0;
  for (size_t i = 0; i < pairs; ++i) {
    each.push_back(fmt::format("{} with {} {:.1f} GB/s", suspects[i], partners[i].host, f[i]));
    if (f[i] <= kPairSlow * best) slow.push_back(i);
    fast += f[i] >= kPairFast * best;
  }
  std::string figures = fmt::format("{}", fmt::join(each, ", "));
  if (slow.size() == 1 && fast == pairs - 1 && pairs >= 2) {
    size_t i = slow[0];
    st.answer.host = suspects[i];
    if (!partners[i].clean) {
      return Finish(st, steps, "inconclusive", "node_or_uplink",
                    figures + fmt::format(": {} or the uplink of its switch {} (no cleared host "
                                          "under it to pair it with)",
                                          suspects[i], SwitchOf(in, suspects[i]).value_or("?")));
    }
    return Finish(st, steps, "confirmed", "node", figures + fmt::format(": {}", suspects[i]));
  }
  if (slow.empty()) {
    // Each suspect is fast with a host of its own switch: the slow half was
    // slow only as a whole, across its switches.
    return Finish(st, steps, "refuted", SwitchOf(in, suspects[0]) ? "fabric" : "",
                  figures +
                      ": each fast with a cleared host, so no single slow node; the slow "
                      "half was slow only as a whole (the paths between its hosts)");
  }
  return Finish(st, steps, "inconclusive", "",
                figures + ": neither one clearly slow host among fast ones");
}

// Splits `suspects` (natural order) in two: at the switch boundary nearest
// the middle, when the larger part still halves the rounds left (so the
// bound holds) and neither part is a single host (the last round pairs two
// or three suspects, one against the other), else at the middle.
size_t SplitAt(const ConfirmInput& in, const std::vector<std::string>& suspects) {
  size_t n = suspects.size(), mid = n / 2;
  size_t cap = size_t{1} << (static_cast<int>(std::ceil(std::log2(static_cast<double>(n)))) - 1);
  size_t best = mid;
  size_t best_d = n;
  for (size_t i = 1; i < n; ++i) {
    auto a = SwitchOf(in, suspects[i - 1]), b = SwitchOf(in, suspects[i]);
    if (!a || !b || a == b || std::max(i, n - i) > cap || std::min(i, n - i) < 2) continue;
    size_t d = i > mid ? i - mid : mid - i;
    if (d < best_d) best_d = d, best = i;
  }
  return best;
}

}  // namespace

bool Bisects(const ReportCulprit& c) {
  return c.cause_class == "communication" && !c.host && !c.rank && c.ranks.empty() &&
         !c.switch_name;
}

size_t BisectBound(size_t hosts) {
  return hosts < 2 ? 0 : 2 * static_cast<size_t>(std::ceil(std::log2(static_cast<double>(hosts))));
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
  bool narrowed = false;  // a round found a slow half
  while (suspects.size() > 3) {
    size_t half = SplitAt(in, suspects);
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
      narrowed = true;
      steps.push_back(figures + ": the first half is slow");
      cleared.insert(cleared.end(), b.begin(), b.end());
      suspects = a;
    } else if (*fb <= kPairSlow * *fa) {
      narrowed = true;
      steps.push_back(figures + ": the second half is slow");
      cleared.insert(cleared.end(), a.begin(), a.end());
      suspects = b;
    } else if (narrowed) {
      // Slow as a whole, fast in each half: the paths between the halves.
      return Finish(st, steps, "refuted", "fabric",
                    figures + fmt::format(": both halves alike, though together they were slow, "
                                          "so the paths between them (the uplinks of {}), not "
                                          "one node",
                                          Hosts(suspects)));
    } else {
      // Alike at the first round: all the hosts together, once, tell a
      // fabric slow only between the halves from nothing slow.
      std::vector<std::string> all = suspects;
      if (k + 1 > done.size()) {
        st.answer.verdict = "not run";
        st.answer.figures = fmt::format("bisection waits for all {} hosts together", all.size());
        if (waiting) return st;
        st.next = {GroupTest(
            in, o, culprit, all, PairRole::kHalf,
            fmt::format("bisection: the halves alike; all {} hosts together", all.size()))};
        st.runs += 1;
        return st;
      }
      std::optional<double> fw = done[k].second;
      ++k;
      if (!fw) {
        return Finish(st, steps, "inconclusive", "",
                      figures + ": both halves alike, and the test of all hosts gave no figure");
      }
      if (*fw <= kPairSlow * std::min(*fa, *fb)) {
        return Finish(st, steps, "refuted", "fabric",
                      figures + fmt::format(": both halves alike, all {} hosts together {:.1f} "
                                            "GB/s: slow only between the halves, so the paths "
                                            "between them (their switches' uplinks), not one node",
                                            all.size(), *fw));
      }
      return Finish(st, steps, "refuted", "",
                    figures + fmt::format(": both halves alike and all {} hosts together {:.1f} "
                                          "GB/s, so no slow node and no slow path between them",
                                          all.size(), *fw));
    }
  }
  // Three hosts or fewer: each with a cleared host.
  if (cleared.empty()) {
    return Finish(st, steps, "inconclusive", "",
                  fmt::format("{} host{} to tell apart and none cleared to pair them with",
                              suspects.size(), suspects.size() == 1 ? "" : "s"));
  }
  return FinalRound(in, o, culprit, suspects, cleared, done, k, waiting, st, steps);
}

}  // namespace laggard::confirm
