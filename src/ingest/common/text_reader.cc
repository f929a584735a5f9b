#include "ingest/common/text_reader.h"

#include <fmt/format.h>

namespace laggard {

bool AddParsedStepSlow(ReaderContext& ctx, uint64_t line, std::optional<int64_t> rank, int64_t step,
                       std::optional<DurationNs> duration, std::optional<TimeNs> start) {
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
    ctx.out->AddStep(static_cast<int32_t>(*rank), step, *duration, start, ctx.Ref(line));
  } else {
    ctx.out->AddUnattributedStep(ctx.file_index, step, *duration, start, ctx.Ref(line));
  }
  return true;
}

}  // namespace laggard
