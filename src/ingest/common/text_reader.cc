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
                      const StepCpuText& cpu) {
  if (!cpu.any()) return;
  if (!rank) rank = ctx.rank_from_path;
  if (!rank || *rank < 0 || *rank > kMaxRank || step < 0) return;
  static constexpr std::string_view kWhat[kStepCpuFields] = {"CPU time", "run-queue wait",
                                                             "CPU probe time"};
  std::optional<DurationNs> got[kStepCpuFields];
  for (int i = 0; i < kStepCpuFields; ++i) {
    const auto& text = cpu.text[i];
    if (!text || Trim(*text).empty()) continue;
    TimeUnit used = TimeUnit::kSeconds;
    std::optional<DurationNs> d = ParseDurationValue(*text, cpu.unit[i], used);
    if (d && (*d > 0 || (*d == 0 && i != kCpuProbeField))) {
      got[i] = d;
      continue;
    }
    ctx.diag().Add(
        DiagCode::kStepBadCpuTime, ctx.path, line,
        fmt::format("{} \"{}\" is not a time{}; the step is kept without it", kWhat[i],
                    Printable(*text, 40), i == kCpuProbeField ? " over zero" : " of zero or more"));
  }
  StepCpu c{step, got[kOnCpuField], got[kCpuWaitField], got[kCpuProbeField]};
  if (c.on_cpu_ns || c.runq_wait_ns || c.probe_ns)
    ctx.out->AddStepCpu(static_cast<int32_t>(*rank), c);
}

void CountStreamDamage(const ByteSource& source, const std::string& path, Diagnostics& diag) {
  if (const auto& damage = source.damage()) {
    diag.AddAtOffset(damage->kind == StreamDamage::kTruncated ? DiagCode::kGzipTruncated
                                                              : DiagCode::kGzipCorrupt,
                     path, damage->compressed_offset, damage->message);
  }
}

}  // namespace laggard
