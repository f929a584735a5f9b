// The interface every line-based reader implements, and what it is handed:
// step-time readers (CSV, JSONL, text logs) and the GPU-metrics and network
// readers (nvidia-smi, DCGM, ibstat, ethtool, nccl-tests, NCCL logs, topo),
// which add to ctx.out->AddGpu() / network() instead of steps.
//
// A reader knows one format and nothing about diagnosis. Ingest (ingest.h)
// asks each registered reader to Sniff() the head of a file and gives the
// file to the most confident one. Readers are stateless and shared by all
// ingest threads: all per-file state lives in Read()'s locals.

#ifndef LAGGARD_INGEST_COMMON_TEXT_READER_H_
#define LAGGARD_INGEST_COMMON_TEXT_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/text.h"
#include "ingest/common/field_names.h"
#include "ingest/common/input_file.h"
#include "model/run.h"

namespace laggard {

struct ReaderContext {
  uint32_t file_index = 0;
  std::string path;
  // Rank implied by the file's path (rank-3.log, worker3/, --rank-from), used
  // when a record carries no rank of its own.
  std::optional<int32_t> rank_from_path;
  // Host implied by the file's path (run/node-01/dmon.txt, --host-from), for
  // hardware, network and trace data that do not name their host.
  std::optional<std::string> host_from_path;
  // IngestOptions::step_marker for trace readers ("" when not given).
  std::string_view step_marker;
  // IngestOptions::comm_kernels, lowercased (empty when not given).
  std::span<const std::string> comm_kernels;
  RunBuilder* out = nullptr;
  // How a reader that opens the file itself decodes gzip: Decode::kAhead
  // when Ingest has a core to spare for a decoder thread.
  Decode gzip_decode = Decode::kInline;
  // Set by a reader that has read the file's hang lines (hangs/
  // ingest/common/hang_lines.h) itself before it hands the file to another reader
  // (the NCCL_DEBUG reader to its text-log reader), so that they are read once.
  bool hang_lines_read = false;

  Diagnostics& diag() { return out->diagnostics(); }
  SourceRef Ref(uint64_t line) const {
    return SourceRef{file_index, line > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(line)};
  }
};

// The damage `source` met (a cut or corrupt gzip stream), if any, counted
// at its compressed offset in `path`.
void CountStreamDamage(const ByteSource& source, const std::string& path, Diagnostics& diag);

class TextReader {
 public:
  virtual ~TextReader() = default;
  virtual std::string_view name() const = 0;
  // How sure the reader is that a file starting with `head` is its format:
  // one of the levels of sniff.h, kSniffNo (not mine) to kSniffCertain.
  // `head` holds the first bytes (decompressed).
  virtual int Sniff(std::string_view head) const = 0;
  // Reads every line, adding records to ctx.out and counting bad ones in
  // ctx.diag(). Returns the number of records taken (steps, GPU samples and
  // facts, ports, table rows ...); 0 leaves the file marked unused.
  virtual uint64_t Read(LineReader& lines, ReaderContext& ctx) const = 0;
};

// The reader of a format whose reading is all in one per-file object:
// Sniff() is a pure function of the head, and Read() is
// `File(ctx).Read(lines)`, File holding the file's state. Most formats are
// one: make them with MakeFileReader<File>(name, sniff).
template <typename File>
class FileReader final : public TextReader {
 public:
  using SniffFn = int (*)(std::string_view head);
  FileReader(std::string_view name, SniffFn sniff) : name_(name), sniff_(sniff) {}

  std::string_view name() const override { return name_; }
  int Sniff(std::string_view head) const override { return sniff_(head); }
  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    return File(ctx).Read(lines);
  }

 private:
  std::string_view name_;  // a literal
  SniffFn sniff_;
};

template <typename File>
std::unique_ptr<TextReader> MakeFileReader(std::string_view name,
                                           typename FileReader<File>::SniffFn sniff) {
  return std::make_unique<FileReader<File>>(name, sniff);
}

// One line of a file as a reader's line loop hands it out
// (ForEachNonBlankLine(), network/net_streams.h).
struct TextLine {
  std::string_view text;     // as read, without its "\n" or "\r\n" (and host prefix)
  std::string_view trimmed;  // `text` without surrounding blanks
  uint64_t number = 0;       // line number in the file
};

// Calls fn(const TextLine&) for each line of `lines` that is not blank; when
// fn returns a bool, until it returns false.
template <typename Fn>
void ForEachNonBlankLine(LineReader& lines, Fn&& fn) {
  std::string_view text;
  while (lines.Next(text)) {
    std::string_view trimmed = Trim(text);
    if (trimmed.empty()) continue;
    TextLine line{text, trimmed, lines.line_number()};
    if constexpr (std::is_same_v<std::invoke_result_t<Fn&, const TextLine&>, bool>) {
      if (!fn(line)) return;
    } else {
      fn(line);
    }
  }
}

// Checks a parsed record and adds it, counting what cannot be used:
// negative step -> step.bad_rank_or_step, duration <= 0 ->
// step.nonpositive_duration. Without a rank (neither in the record nor in
// the path) the record goes to the file's unattributed series. Returns true
// when the record was taken.
// The common case is inline (it runs once per record); anything to count
// goes to AddParsedStepSlow().
// `compute` is the step's compute-only time, 0 when the record has none.
bool AddParsedStepSlow(ReaderContext& ctx, uint64_t line, std::optional<int64_t> rank, int64_t step,
                       std::optional<DurationNs> duration, std::optional<TimeNs> start,
                       DurationNs compute);
inline bool AddParsedStep(ReaderContext& ctx, uint64_t line, std::optional<int64_t> rank,
                          int64_t step, std::optional<DurationNs> duration,
                          std::optional<TimeNs> start, DurationNs compute = 0) {
  if (!rank && ctx.rank_from_path) rank = *ctx.rank_from_path;
  if (rank && *rank >= 0 && *rank <= kMaxRank && step >= 0 && duration && *duration > 0) {
    ctx.out->AddStep(static_cast<int32_t>(*rank), step, *duration, start, ctx.Ref(line), compute);
    return true;
  }
  return AddParsedStepSlow(ctx, line, rank, step, duration, start, compute);
}

// Reads a compute-only time field of a step record (`text` as written,
// `unit` from the field's name). Returns 0 when absent; a value that is not
// a positive time is counted as step.bad_compute_time (the step is kept
// without it) and gives 0.
DurationNs ParseComputeField(ReaderContext& ctx, uint64_t line,
                             std::optional<std::string_view> text, std::optional<TimeUnit> unit);

// Reads a step record's CPU fields and adds them to the step of `rank`
// (nullopt: the path's rank; no rank: nothing is added). A value that is not
// a time of zero or more (a probe: more than zero) is counted as
// step.bad_cpu_time; the other fields are still taken.
void AddStepCpuFields(ReaderContext& ctx, uint64_t line, std::optional<int64_t> rank, int64_t step,
                      const StepCpuText& cpu);

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_TEXT_READER_H_
