// Free-text training logs: every line is offered to the line matchers. Lines
// that no matcher recognises are ordinary log output and are ignored; lines a
// matcher calls garbled are counted (step.garbled).
//
// A launcher prefix such as torchrun's "[rank3]:" or "[default3]:" gives the
// rank of lines whose own text has none (Megatron iteration lines), at the
// start of the line or behind a task label (NeMo-Run's "name/0 [default0]:").
//
// Lines no matcher takes are offered to the hang-line collector
// (common/hang_lines.h): watchdog timeouts, NCCL and gloo errors and
// torchrun's failure table in the same log reach RunBuilder::hang(), and
// count among the records taken. A step line never reaches it. So do
// Megatron's StragglerDetector and NVRx's straggler reports
// (megatron_straggler.h, nvrx_straggler.h), before them.

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/hang_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/step_logs/megatron_layout.h"
#include "ingest/step_logs/megatron_straggler.h"
#include "ingest/step_logs/nvrx_straggler.h"
#include "ingest/step_logs/step_log_readers.h"

namespace laggard {
namespace {

// "[rank3]:" / "[default3]:" / "[Rank 3]" at the start of a line.
std::optional<int64_t> PrefixRankAt(std::string_view line) {
  if (line.empty() || line[0] != '[') return std::nullopt;
  size_t p = 1;
  size_t word = p;
  while (p < line.size() &&
         ((line[p] >= 'a' && line[p] <= 'z') || (line[p] >= 'A' && line[p] <= 'Z')))
    ++p;
  std::string_view w = line.substr(word, p - word);
  if (!EqualsIgnoreCase(w, "rank") && w != "default") return std::nullopt;
  while (p < line.size() && line[p] == ' ') ++p;
  size_t digits = p;
  while (p < line.size() && IsDigit(line[p])) ++p;
  if (p == digits || p >= line.size() || line[p] != ']') return std::nullopt;
  return ParseInt<int64_t>(line.substr(digits, p - digits));
}

// The launcher's rank prefix at the start of a line, or behind a task label
// before it (NeMo-Run: "ining-demo/0 [default0]:Training epoch ..."): a
// "[defaultN]:" / "[rankN]:" within the line's first kPrefixReach bytes.
constexpr size_t kPrefixReach = 80;
std::optional<int64_t> LauncherPrefixRank(std::string_view line) {
  if (auto r = PrefixRankAt(line)) return r;
  std::string_view head = line.substr(0, kPrefixReach);
  for (size_t at = head.find('['); at != std::string_view::npos; at = head.find('[', at + 1)) {
    std::string_view rest = line.substr(at);
    if (!StartsWith(rest, "[default") && !StartsWith(rest, "[rank")) continue;
    size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      continue;
    if (auto r = PrefixRankAt(rest)) return r;
  }
  return std::nullopt;
}

// Whether `line` may open or be another tool's report line: a ':' after
// "Rnk" or "(TF)" (StragglerDetector), "performance" or "WARNING" (NVRx).
// One pass over the line's colons, so that the logs' other unmatched lines
// (watchdog and NCCL lines by the million) skip the scanners' searches.
bool MayBeToolReport(std::string_view line) {
  for (size_t c = line.find(':'); c != std::string_view::npos; c = line.find(':', c + 1)) {
    std::string_view before = line.substr(0, c);
    if (EndsWith(before, "Rnk") || EndsWith(before, "(TF)") || EndsWith(before, "performance") ||
        EndsWith(before, "WARNING"))
      return true;
  }
  return false;
}

void BadCompute(ReaderContext& ctx, uint64_t line) {
  ctx.diag().Add(DiagCode::kStepBadComputeTime, ctx.path, line,
                 "compute time is not a positive time; the step is kept without it");
}

class TextLogReader final : public TextReader {
 public:
  explicit TextLogReader(std::vector<std::unique_ptr<LineMatcher>> matchers)
      : matchers_(std::move(matchers)) {}

  std::string_view name() const override { return "text-log"; }

  int Sniff(std::string_view head) const override {
    if (head.empty() || LooksBinary(head)) return kSniffNo;
    ParsedStep parsed;
    std::string why;
    int score = kSniffAnyText;
    ForEachHeadLine(head, {.keep_cr = true}, [&](std::string_view line) {
      for (const auto& m : matchers_) {
        if (m->Match(line, parsed, why) == MatchResult::kMatched) {
          score = kSniffLikely;
          return false;
        }
      }
      return true;
    });
    return score;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    uint64_t taken = 0;
    uint32_t units_seen = 0;
    std::string_view line;
    // Each matcher starts from a copy of `empty`: g++ 12 builds `ParsedStep()`
    // byte by byte and reads it back in wide loads, a store-forwarding stall
    // that cost a third of the benchmark's ingest time.
    const ParsedStep empty;
    ParsedStep parsed;
    std::string why;
    MegatronLayoutScanner layout;
    StragglerReportScanner straggler_reports;
    NvrxReportScanner nvrx_reports;
    HangLineCollector hangs;
    const bool read_hangs = !ctx.hang_lines_read;
    while (lines.Next(line)) {
      MatchResult result = MatchResult::kNoMatch;
      for (const auto& m : matchers_) {
        parsed = empty;
        MatchResult r = m->Match(line, parsed, why);
        if (r == MatchResult::kMatched) {
          result = r;
          break;
        }
        if (r == MatchResult::kGarbled) result = r;
      }
      if (result == MatchResult::kNoMatch) {
        // A report line is the process's output like a step line: it tells
        // a traceback before it did not end the process.
        if ((nvrx_reports.reading() || MayBeToolReport(line)) &&
            (straggler_reports.Offer(line, lines.line_number(), ctx) ||
             nvrx_reports.Offer(line, lines.line_number(), ctx))) {
          if (hangs.watching()) hangs.LineTaken(line);
          continue;
        }
        layout.Offer(line, static_cast<uint32_t>(lines.line_number()));
        if (read_hangs) hangs.Offer(line, lines.line_number(), ctx);
        continue;
      }
      if (hangs.watching()) [[unlikely]]
        hangs.LineTaken(line);
      uint64_t n = lines.line_number();
      if (result == MatchResult::kGarbled) {
        ctx.diag().Add(DiagCode::kStepGarbled, ctx.path, n,
                       fmt::format("{}: \"{}\"", why, Printable(line, 100)));
        continue;
      }
      if (parsed.unit) units_seen |= 1u << static_cast<unsigned>(*parsed.unit);
      // Common case first, reading each optional as flag then value. Copying
      // an optional whole (a 16-byte load) after the matcher wrote it as 8 +
      // 1 bytes cannot be forwarded from the store buffer: the load waits
      // until every older store has reached the cache, including the
      // previous record's store into its rank's series, often a cache miss.
      // That wait was ~15% of ingest time (perf, 10 M article lines).
      if (parsed.rank.has_value() && parsed.duration.has_value() && !parsed.host.has_value() &&
          !parsed.gpu.has_value() && !parsed.cpu.any()) {
        const int64_t rank = *parsed.rank;
        const DurationNs duration = *parsed.duration;
        if (rank >= 0 && rank <= kMaxRank && parsed.step >= 0 && duration > 0) {
          std::optional<TimeNs> start;
          if (parsed.start.has_value()) start = *parsed.start;
          ctx.out->AddStep(static_cast<int32_t>(rank), parsed.step, duration, start, ctx.Ref(n),
                           parsed.compute);
          if (parsed.compute_bad) [[unlikely]]
            BadCompute(ctx, n);
          ++taken;
          continue;
        }
      }
      if (!parsed.rank) parsed.rank = LauncherPrefixRank(line);
      if (AddParsedStep(ctx, n, parsed.rank, parsed.step, parsed.duration, parsed.start,
                        parsed.compute)) {
        ++taken;
        if (parsed.compute_bad) BadCompute(ctx, n);
        AddStepCpuFields(ctx, n, parsed.rank, parsed.step, parsed.cpu);
        if (parsed.rank && *parsed.rank >= 0 && *parsed.rank <= kMaxRank) {
          int32_t r = static_cast<int32_t>(*parsed.rank);
          if (parsed.host) ctx.out->SetHost(r, *parsed.host, ctx.path, n);
          if (parsed.gpu && *parsed.gpu >= 0 && *parsed.gpu < 1024)
            ctx.out->SetLocalGpu(r, static_cast<int32_t>(*parsed.gpu), ctx.path, n);
        }
      }
    }
    std::string problem;
    if (auto stated = layout.Result(&problem)) {
      stated->src = ctx.Ref(stated->src.line);
      ctx.out->AddLayout(*stated);
    } else if (!problem.empty()) {
      ctx.diag().Add(DiagCode::kLayoutContradicts, ctx.path, layout.line(),
                     "Megatron's layout line: " + problem + "; not used");
    }
    taken += hangs.Finish(lines.line_number(), ctx);
    taken += straggler_reports.Finish(ctx);
    taken += nvrx_reports.Finish(ctx);
    if (__builtin_popcount(units_seen) > 1) {
      ctx.diag().Add(DiagCode::kMixedUnits, ctx.path, 0,
                     "step times are written in more than one unit; each was converted");
    }
    return taken;
  }

 private:
  std::vector<std::unique_ptr<LineMatcher>> matchers_;
};

}  // namespace

std::unique_ptr<TextReader> MakeTextLogReader(std::vector<std::unique_ptr<LineMatcher>> matchers) {
  return std::make_unique<TextLogReader>(std::move(matchers));
}

}  // namespace laggard
