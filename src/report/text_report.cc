// The terminal report: verdict first, then findings with their evidence,
// then next steps, then data quality. Colour (ANSI) only when asked, which
// the CLI does only on a tty.

#include <fmt/format.h>

#include "report/report.h"

namespace laggard {
namespace {

struct Style {
  bool on;
  std::string operator()(std::string_view text, std::string_view code) const {
    if (!on) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
  }
};

std::string_view SeverityColour(Severity s) {
  switch (s) {
    case Severity::kCritical: return "1;31";
    case Severity::kWarning: return "33";
    case Severity::kInfo: return "36";
  }
  return "0";
}

std::string Where(const Run& run, const SourceRef& src) {
  if (src.file >= run.files.size()) return "";
  if (src.line == 0) return run.files[src.file].path;
  return fmt::format("{}:{}", run.files[src.file].path, src.line);
}

}  // namespace

void RenderText(const ReportInput& in, const TextOptions& options, std::ostream& out) {
  Style style{options.color};
  const Verdict& v = in.verdict;
  std::string_view verdict_colour = v.status == VerdictStatus::kStraggler     ? "1;31"
                                    : v.status == VerdictStatus::kNoStraggler ? "1;32"
                                                                              : "1;33";
  out << style(v.summary, verdict_colour) << "\n";
  if (options.quiet) return;

  bool chain = false;
  for (const Culprit& c : v.culprits) chain |= !c.evidence.empty();
  if (chain) {
    out << "\n" << style("evidence", "1") << "\n";
    for (const Culprit& c : v.culprits) {
      std::string who = c.entity.rank ? fmt::format("rank {}", *c.entity.rank)
                                      : c.entity.host.value_or("job");
      if (c.entity.rank && c.entity.host) {
        who += fmt::format(" ({}{})", *c.entity.host,
                           c.entity.gpu ? fmt::format(" GPU {}", *c.entity.gpu) : "");
      } else if (c.entity.nic) {
        who += fmt::format(" ({})", *c.entity.nic);
      }
      out << fmt::format("  {}: {}{}{}, confidence {:.2f}\n", who, c.cause_class,
                         c.cause ? " / " : "", c.cause.value_or(""), c.confidence);
      for (const std::string& e : c.evidence) out << "      - " << e << "\n";
    }
  }

  const JobStepStats& job = in.steps.job;
  out << "\n";
  if (job.median_step_s) {
    out << fmt::format("job: {} ranks, {} steps analysed, median step {:.4g} s", job.ranks,
                       job.steps, *job.median_step_s);
    if (job.sync_spread) out << fmt::format(", per-step spread across ranks (p90-p10) {:.2f}%", 100 * *job.sync_spread);
    out << "\n";
  }

  if (!in.traces.ranks.empty()) {
    out << fmt::format("traces: {} ranks, {} collective instances matched", in.traces.ranks.size(),
                       in.traces.instances);
    if (in.traces.median_transfer_ns) {
      out << fmt::format(", median transfer {:.3g} ms", static_cast<double>(*in.traces.median_transfer_ns) / 1e6);
    }
    out << "\n";
  }

  std::vector<const Finding*> findings = in.AllFindings();
  if (!findings.empty()) {
    out << "\n" << style("findings", "1") << "\n";
    size_t shown = 0;
    for (const Finding* fp : findings) {
      const Finding& f = *fp;
      if (shown++ >= options.max_findings) {
        out << fmt::format("  ... and {} more (see --json)\n", findings.size() - options.max_findings);
        break;
      }
      out << fmt::format("  [{}] {} ({}, confidence {:.2f})\n",
                         style(SeverityName(f.severity), SeverityColour(f.severity)), f.message,
                         Describe(f.code).name, f.confidence);
      for (const Evidence& e : f.evidence) {
        out << "      - " << e.text;
        if (e.source) {
          std::string w = Where(in.run, *e.source);
          if (!w.empty()) out << "  [" << w << "]";
        }
        out << "\n";
      }
    }
  }

  if (!v.next_steps.empty()) {
    out << "\n" << style("next steps", "1") << "\n";
    int i = 1;
    for (const std::string& s : v.next_steps) out << fmt::format("  {}. {}\n", i++, s);
  }

  const Run& run = in.run;
  const Diagnostics& d = run.diagnostics;
  size_t read = 0, skipped = 0;
  for (const InputFileInfo& f : run.files) (f.format.empty() ? skipped : read) += 1;
  out << "\n" << style("data quality", "1") << "\n";
  out << fmt::format("  {} file{} read, {} skipped, {} step records\n", read, read == 1 ? "" : "s",
                     skipped, run.total_steps());
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::kCount); ++i) {
    auto code = static_cast<DiagCode>(i);
    if (d.count(code) == 0) continue;
    const DiagInfo& info = Describe(code);
    out << fmt::format("  {:<26} {:>8}  {}\n", info.name, d.count(code), info.description);
    for (const DiagExample& e : d.examples(code)) {
      std::string where = e.file;
      if (e.line > 0) where += fmt::format(":{}", e.line);
      else if (e.offset > 0) where += fmt::format(" @{}", e.offset);
      out << "      " << (where.empty() ? "" : where + ": ") << e.message << "\n";
    }
  }
}

}  // namespace laggard
