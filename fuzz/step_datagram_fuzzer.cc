// Fuzzes what the agent accepts from the outside world without a file: step
// datagrams (agent/step_intake.h: ParseStepLine and StepIntake's datagram
// handling), the sysfs value parsers (agent/sysfs.h), /proc/stat
// (agent/host_cpu.h: ParseProcStat, CpuDelta) and /proc/<pid>/stat, status
// and cmdline (agent/host_procs.h).
//
// Invariants:
//   - every non-blank line of a datagram ends as exactly one accepted step
//     or one counted bad line;
//   - an accepted step has rank in [0, 4M], step >= 0, a positive duration,
//     at most kMaxPhases phases named [a-z0-9_]{1,32} with durations >= 0,
//     a host of [A-Za-z0-9._-] and a GPU index in [0, 1023];
//   - sysfs parsers return non-negative rates and speeds, PCIe generations
//     in 1..6, and never crash;
//   - /proc/stat: every line starting "cpuN" is one core or one counted
//     parse error; the input against itself, or against its first half
//     parsed, gives busy and steal shares in [0, 1] only;
//   - /proc/<pid>/stat: a line read has a positive pid that begins it, a
//     printable comm and a processor >= 0; a command line or a cpus list
//     is printable ASCII of bounded length.

#include "agent/host_cpu.h"
#include "agent/host_procs.h"
#include "agent/step_intake.h"
#include "agent/sysfs.h"
#include "base/text.h"
#include "fuzz_support.h"
#include "model/hardware.h"

namespace laggard::fuzz {
namespace {

void CheckReport(const agent::StepReport& r) {
  FUZZ_CHECK(r.rank >= 0 && r.rank <= kMaxRank, "rank {}", r.rank);
  FUZZ_CHECK(r.step >= 0, "step {}", r.step);
  FUZZ_CHECK(r.duration_ns > 0, "duration {}", r.duration_ns);
  FUZZ_CHECK(r.phases.size() <= agent::kMaxPhases, "{} phases", r.phases.size());
  for (const auto& [name, d] : r.phases) {
    FUZZ_CHECK(!name.empty() && name.size() <= 32, "phase name '{}'", name);
    for (char c : name)
      FUZZ_CHECK((c >= 'a' && c <= 'z') || IsDigit(c) || c == '_', "phase name '{}'", name);
    FUZZ_CHECK(d >= 0, "phase {} duration {}", name, d);
  }
  if (r.host) {
    FUZZ_CHECK(!r.host->empty() && r.host->size() <= 255, "host '{}'", *r.host);
    for (char c : *r.host) {
      FUZZ_CHECK(IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
                     c == '-' || c == '_',
                 "host '{}'", *r.host);
    }
  }
  if (r.gpu) FUZZ_CHECK(*r.gpu >= 0 && *r.gpu <= 1023, "gpu {}", *r.gpu);
  if (r.pid) FUZZ_CHECK(*r.pid > 0 && *r.pid <= kMaxPid, "pid {}", *r.pid);
  // The agent logs end - duration as the step's start: it must not overflow.
  if (r.end_ns) FUZZ_CHECK(*r.end_ns >= 0, "end {}", *r.end_ns);
}

class CountingSink final : public agent::StepSink {
 public:
  void OnStep(const agent::StepReport& r, agent::StepSource) override {
    CheckReport(r);
    ++steps;
  }
  void OnBadLine(agent::BadLine why, agent::StepSource, std::string_view) override {
    FUZZ_CHECK(why < agent::BadLine::kCount, "bad-line reason {}", static_cast<int>(why));
    ++bad;
  }
  void OnDatagram(agent::StepSource) override { ++datagrams; }
  uint64_t steps = 0, bad = 0, datagrams = 0;
};

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(step_datagram) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer exact(input);

  // One datagram: every line accounted for.
  CountingSink sink;
  {
    agent::StepIntake intake(sink);
    intake.HandleDatagram(exact.view(), agent::StepSource::kUdp);
  }
  uint64_t content = 0;
  for (std::string_view line : Split(input, '\n')) content += !Trim(line).empty();
  FUZZ_CHECK(sink.datagrams == 1, "{} datagrams counted", sink.datagrams);
  FUZZ_CHECK(sink.steps + sink.bad == content, "{} lines, {} steps + {} bad", content, sink.steps,
             sink.bad);

  // The input as /proc/stat.
  agent::ProcStat stat = agent::ParseProcStat(exact.view());
  uint64_t cpu_lines = 0;
  for (std::string_view line : Split(input, '\n')) {
    std::vector<std::string_view> words = SplitBlanks(line);
    cpu_lines += !words.empty() && words[0].size() > 3 && words[0].starts_with("cpu");
  }
  FUZZ_CHECK(stat.cpus.size() + stat.parse_errors >= cpu_lines, "{} cpu lines, {} + {} read",
             cpu_lines, stat.cpus.size(), stat.parse_errors);
  FUZZ_CHECK(stat.cpus.size() <= cpu_lines, "{} cores from {} cpu lines", stat.cpus.size(),
             cpu_lines);
  agent::ProcStat half = agent::ParseProcStat(input.substr(0, input.size() / 2));
  for (const agent::ProcStat* before : {&stat, &half}) {
    for (const agent::CoreSample& c : agent::CpuDelta(*before, stat).cores) {
      if (c.busy_ratio)
        FUZZ_CHECK(*c.busy_ratio >= 0 && *c.busy_ratio <= 1, "busy {}", *c.busy_ratio);
      if (c.steal_ratio)
        FUZZ_CHECK(*c.steal_ratio >= 0 && *c.steal_ratio <= 1, "steal {}", *c.steal_ratio);
    }
  }

  // Each line alone, and the sysfs value parsers on it.
  for (std::string_view line : Split(exact.view(), '\n')) {
    agent::StepReport r;
    agent::BadLine bad = agent::BadLine::kCount;
    std::string why;
    agent::LineKind kind = agent::ParseStepLine(line, r, bad, why);
    if (kind == agent::LineKind::kStep) CheckReport(r);
    if (kind == agent::LineKind::kBad)
      FUZZ_CHECK(bad < agent::BadLine::kCount && !why.empty(), "bad without reason");
    double gbps = -1;
    std::optional<int32_t> width;
    if (agent::ParseIbRate(line, gbps, width)) FUZZ_CHECK(gbps >= 0, "rate {}", gbps);
    if (auto s = agent::ParsePcieSpeed(line)) {
      FUZZ_CHECK(*s > 0, "speed {}", *s);
      if (auto g = agent::PcieGenFromSpeed(*s)) FUZZ_CHECK(*g >= 1 && *g <= 6, "gen {}", *g);
    }
    int32_t code = 0;
    std::string name;
    if (agent::ParseCodedState(line, code, name)) (void)agent::IbStateName(name);
    if (std::optional<agent::PidStat> p = agent::ParsePidStat(line)) {
      FUZZ_CHECK(p->pid > 0 && IsDigit(line.front()), "pid {}", p->pid);
      FUZZ_CHECK(Printable(p->comm, 200) == p->comm, "comm '{}'", Printable(p->comm, 80));
      if (p->processor) FUZZ_CHECK(*p->processor >= 0, "processor {}", *p->processor);
    }
  }
  const std::string cmdline = agent::CmdlineText(input, 200);
  FUZZ_CHECK(cmdline.size() <= 203 && Printable(cmdline, 203) == cmdline, "cmdline '{}'",
             Printable(cmdline, 80));
  if (std::optional<std::string> cpus = agent::CpusAllowedList(input))
    FUZZ_CHECK(!cpus->empty() && cpus->size() <= 1024, "cpus list of {} bytes", cpus->size());
  return 0;
}
