#include "ingest/common/text_reader.h"

#include <fmt/format.h>

#include "base/text.h"

#include "ingest/common/field_names.h"

namespace laggard {

bool AddParsedStepSlow(ReaderContext& ctx, uint64_t line, std::optional<int64_t> rank, int64_t step,
                       std::optional<DurationNs> duration, std::optional<TimeNs> start,
                       DurationNs compute) {
  if ((rank && (*rank < 0 || *rank > kMaxRank)) || step < 0) {
    ctx.diag().Add(DiagCode::kStepBadRankOrStep, ctx.path, line,
                   fmt::format("rank {} step {} out of range", rank ? *rank : -1, step));
    return false;
  }
  if (!duration || *duration <= 0) {
    ctx.diag().Add(
        DiagCode::kStepNonPositiveDuration, ctx.path, line,
        duration ? fmt::format("duration {} ns", *duration) : std::string("duration out of range"));
    return false;
  }
  if (rank) {
    ctx.out->AddStep(static_cast<int32_t>(*rank), step, *duration, start, ctx.Ref(line), compute);
  } else {
    ctx.out->AddUnattributedStep(ctx.file_index, step, *duration, start, ctx.Ref(line), compute);
  }
  return true;
}

DurationNs ParseComputeField(ReaderContext& ctx, uint64_t line,
                             std::optional<std::string_view> text, std::optional<TimeUnit> unit) {
  if (!text) return 0;
  TimeUnit used = TimeUnit::kSeconds;
  std::optional<DurationNs> d = ParseDurationValue(*text, unit, used);
  if (d && *d > 0) return *d;
  ctx.diag().Add(DiagCode::kStepBadComputeTime, ctx.path, line,
                 fmt::format("compute time \"{}\" is not a positive time; the step is kept "
                             "without it",
                             Printable(*text, 40)));
  return 0;
}

void AddStepCpuFields(ReaderContext& ctx, uint64_t line, std::optional<int64_t> rank, int64_t step,
                      std::optional<std::string_view> cpu, std::optional<TimeUnit> cpu_unit,
                      std::optional<std::string_view> wait, std::optional<TimeUnit> wait_unit) {
  if (!cpu && !wait) return;
  if (!rank) rank = ctx.rank_from_path;
  if (!rank || *rank < 0 || *rank > kMaxRank || step < 0) return;
  auto read = [&](std::optional<std::string_view> text, std::optional<TimeUnit> unit,
                  std::string_view what) -> std::optional<DurationNs> {
    if (!text || Trim(*text).empty()) return std::nullopt;
    TimeUnit used = TimeUnit::kSeconds;
    std::optional<DurationNs> d = ParseDurationValue(*text, unit, used);
    if (d && *d >= 0) return d;
    ctx.diag().Add(DiagCode::kStepBadCpuTime, ctx.path, line,
                   fmt::format("{} \"{}\" is not a time of zero or more; the step is kept "
                               "without it",
                               what, Printable(*text, 40)));
    return std::nullopt;
  };
  StepCpu c{step, read(cpu, cpu_unit, "CPU time"), read(wait, wait_unit, "run-queue wait")};
  if (c.on_cpu_ns || c.runq_wait_ns) ctx.out->AddStepCpu(static_cast<int32_t>(*rank), c);
}

}  // namespace laggard
