#include "ingest/step_logs/nvrx_straggler.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard {
namespace {

void Bad(ReaderContext& ctx, uint64_t line, std::string_view text, std::string_view why) {
  ctx.diag().Add(DiagCode::kToolReportBadField, ctx.path, line,
                 fmt::format("NVRx straggler report \"{}\": {}", Printable(text, 80), why));
}

// The digits at the start of `s`.
std::optional<int64_t> LeadingInt(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && IsDigit(s[n])) ++n;
  return n == 0 ? std::nullopt : ParseInt<int64_t>(s.substr(0, n));
}

// "Rank=3 Node=host Score=0.97" and nothing after but blanks.
bool IsEntry(std::string_view t) {
  std::vector<std::string_view> w = SplitBlanks(t);
  return w.size() == 3 && StartsWith(w[0], "Rank=") && w[0].size() > 5 &&
         StartsWith(w[1], "Node=") && StartsWith(w[2], "Score=");
}

// "Worst performing 5/512 ranks:" -> 512.
std::optional<int64_t> RanksOfHeader(std::string_view t) {
  size_t slash = t.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return LeadingInt(t.substr(slash + 1));
}

}  // namespace

NvrxReport& NvrxReportScanner::Current(uint64_t line_number, ReaderContext& ctx) {
  if (!open_) {
    reports_.emplace_back();
    reports_.back().src = ctx.Ref(line_number);
    open_ = true;
  }
  return reports_.back();
}

bool NvrxReportScanner::Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx) {
  size_t at = line.find("GPU relative performance:");
  if (at != std::string_view::npos) {
    if (open_ && reports_.back().relative_ranks > 0) open_ = false;
    if (open_ && reports_.back().individual_ranks > 0) open_ = false;
    Current(line_number, ctx);
    section_ = Section::kRelative;
    return true;
  }
  at = line.find("GPU individual performance:");
  if (at != std::string_view::npos) {
    if (open_ && reports_.back().individual_ranks > 0) open_ = false;
    Current(line_number, ctx);
    section_ = Section::kIndividual;
    return true;
  }
  at = line.find("STRAGGLER DETECTION WARNING:");
  if (at != std::string_view::npos) {
    bool relative = line.find("worse relative performance", at) != std::string_view::npos;
    // A warning opens its report: after score tables it is the next one's.
    if (open_ && (reports_.back().relative_ranks > 0 || reports_.back().individual_ranks > 0))
      open_ = false;
    Warning(line, at, relative, line_number, ctx);
    section_ = Section::kNone;
    return true;
  }
  if (section_ == Section::kNone) return false;
  // The entry ends the line: "Rank=<n> Node=<host> Score=<x>" (a "Rank="
  // in a prefix before it is not the entry's).
  for (at = line.find("Rank="); at != std::string_view::npos; at = line.find("Rank=", at + 5)) {
    if (IsEntry(line.substr(at))) {
      Entry(line, at, line_number, ctx);
      return true;
    }
  }
  if (line.find("performing ") != std::string_view::npos &&
      (line.find("Worst performing") != std::string_view::npos ||
       line.find("Best performing") != std::string_view::npos)) {
    if (auto n = RanksOfHeader(line.substr(line.find("performing")))) {
      if (*n > 0 && *n <= kMaxRank + 1) {
        NvrxReport& r = reports_.back();
        (section_ == Section::kRelative ? r.relative_ranks : r.individual_ranks) =
            static_cast<int32_t>(*n);
      }
    }
    return true;
  }
  // Other output ends the section (a blank line, the next log line).
  section_ = Section::kNone;
  return false;
}

void NvrxReportScanner::Entry(std::string_view line, size_t at, uint64_t line_number,
                              ReaderContext& ctx) {
  std::string_view t = line.substr(at);
  std::optional<int64_t> rank = LeadingInt(t.substr(5));
  size_t node = t.find("Node=");
  size_t score = t.find("Score=");
  if (!rank || *rank < 0 || *rank > kMaxRank) return Bad(ctx, line_number, t, "no rank number");
  std::string_view value = Trim(t.substr(score + 6));
  value = value.substr(0, std::min(value.find(' '), value.size()));
  double s = std::numeric_limits<double>::quiet_NaN();
  if (value != "nan") {
    std::optional<double> v = ParseDouble(value);
    if (!v || !std::isfinite(*v) || *v < 0) return Bad(ctx, line_number, t, "score is no number");
    s = *v;
  }
  NvrxReport& r = reports_.back();
  const bool relative = section_ == Section::kRelative;
  std::vector<RankScore>& list = relative ? r.relative : r.individual;
  std::string_view host;
  if (node != std::string_view::npos && node < score)
    host = Trim(t.substr(node + 5, score - node - 5));
  if (host == "<unk>") host = {};
  list.push_back(RankScore{static_cast<int32_t>(*rank), s, std::string(host)});
  int32_t& ranks = relative ? r.relative_ranks : r.individual_ranks;
  ranks = std::max(ranks, static_cast<int32_t>(list.size()));
}

void NvrxReportScanner::Warning(std::string_view line, size_t at, bool relative,
                                uint64_t line_number, ReaderContext& ctx) {
  size_t list = line.find("Affected ranks:", at);
  if (list == std::string_view::npos) return Bad(ctx, line_number, line.substr(at), "no ranks");
  std::string_view t = line.substr(list + 15);
  // The set or list ends at its closing bracket: text after it is not ranks.
  if (size_t close = t.find_first_of("]}"); close != std::string_view::npos)
    t = t.substr(0, close + 1);
  std::vector<int32_t> ranks;
  // {StragglerId(rank=3, node='a'), ...} or [3, 11].
  const bool ids = t.find("rank=") != std::string_view::npos;
  size_t p = 0;
  while (p < t.size()) {
    if (ids) {
      size_t k = t.find("rank=", p);
      if (k == std::string_view::npos) break;
      p = k + 5;
    } else {
      while (p < t.size() && !IsDigit(t[p])) ++p;
      if (p >= t.size()) break;
    }
    std::optional<int64_t> r = LeadingInt(t.substr(p));
    if (r && *r >= 0 && *r <= kMaxRank) ranks.push_back(static_cast<int32_t>(*r));
    while (p < t.size() && IsDigit(t[p])) ++p;
  }
  if (ranks.empty()) return Bad(ctx, line_number, line.substr(at), "no rank number read");
  NvrxReport& r = Current(line_number, ctx);
  std::vector<int32_t>& out = relative ? r.flagged_relative : r.flagged_individual;
  out.insert(out.end(), ranks.begin(), ranks.end());
}

uint64_t NvrxReportScanner::Finish(ReaderContext& ctx) {
  uint64_t n = 0;
  for (NvrxReport& r : reports_) {
    if (r.relative.empty() && r.individual.empty() && r.flagged_relative.empty() &&
        r.flagged_individual.empty()) {
      continue;
    }
    ctx.out->AddNvrxReport(std::move(r));
    ++n;
  }
  reports_.clear();
  open_ = false;
  return n;
}

}  // namespace laggard
