// The parallel layout a Megatron-LM / Megatron-DeepSpeed / NeMo launch log
// states. Rank 0 prints it twice at start-up:
//
//   using world size: 64, data-parallel-size: 1, tensor-model-parallel size: 4,
//   pipeline-model-parallel size: 16 using world size: 8, data-parallel size: 2, context-parallel
//   size: 1, hierarchical
//     context-parallel sizes: None, tensor-model-parallel size: 1, pipeline-model-parallel size: 4
//
// (the wording moved between versions: "data-parallel-size" / "data-parallel
// size", commas dropped), and in its argument dump, one per line:
//
//   pipeline_model_parallel_size .................... 16
//   virtual_pipeline_model_parallel_size ............ None
//
// The TextLogReader offers every line no step matcher took; the scanner
// keeps what it saw and, at the end of the file, gives one statement: the
// "using world size" line when there is one (with the dump's virtual
// pipeline size), else the dump when it names pp and tp. A log without
// either states nothing. One scanner per file; not thread-safe.

#ifndef LAGGARD_INGEST_STEP_LOGS_MEGATRON_LAYOUT_H_
#define LAGGARD_INGEST_STEP_LOGS_MEGATRON_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/parallel_layout.h"

namespace laggard {

class MegatronLayoutScanner {
 public:
  // A line of the log, `line_number` 1-based. Cheap for lines that say
  // nothing about the layout (one memchr-class search).
  void Offer(std::string_view line, uint32_t line_number);

  // What the file stated, with the line that said it (src.file unset: the
  // caller fills it); nullopt when nothing, or when the sizes contradict
  // (`problem` then says how).
  std::optional<LayoutStatement> Result(std::string* problem) const;
  // The line Result() reads (0 when none).
  uint32_t line() const { return saw_line_ ? line_.line : dump_.line; }

 private:
  struct Sizes {
    std::optional<int64_t> world, dp, tp, pp, cp, vpp;
    uint32_t line = 0;
  };
  Sizes line_;  // the "using world size" line
  Sizes dump_;  // the argument dump
  bool saw_line_ = false;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_STEP_LOGS_MEGATRON_LAYOUT_H_
