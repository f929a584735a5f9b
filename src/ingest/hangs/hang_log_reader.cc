#include "ingest/common/hang_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/hangs/hang_readers.h"

namespace laggard {
namespace {

class HangLogReader final : public TextReader {
 public:
  explicit HangLogReader(std::unique_ptr<TextReader> step_lines)
      : step_lines_(std::move(step_lines)) {}

  std::string_view name() const override { return "hang-log"; }

  // kSniffPart - 2 when a line of the head is a hang line: above the
  // text-log reader's kSniffAnyText for a log without step lines in its
  // head, below its kSniffLikely for one with them, and below the NCCL_DEBUG
  // reader's kSniffPart, since that reader reads hang lines too and keeps
  // the NCCL facts besides.
  int Sniff(std::string_view head) const override {
    if (head.empty() || LooksBinary(head)) return kSniffNo;
    bool hang = false;
    ForEachHeadLine(head, [&](std::string_view line) {
      hang = MaybeHangLine(line) && ParseHangLine(line).has_value();
      return !hang;
    });
    return hang ? kSniffPart - 2 : kSniffNo;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    if (step_lines_ != nullptr) return step_lines_->Read(lines, ctx);
    HangLineCollector hangs;
    std::string_view line;
    while (lines.Next(line)) hangs.Offer(line, lines.line_number(), ctx);
    return hangs.Finish(lines.line_number(), ctx);
  }

 private:
  std::unique_ptr<TextReader> step_lines_;
};

}  // namespace

std::unique_ptr<TextReader> MakeHangLogReader(std::unique_ptr<TextReader> step_lines) {
  return std::make_unique<HangLogReader>(std::move(step_lines));
}

}  // namespace laggard
