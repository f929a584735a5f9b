#include "ingest/traces/kineto/kineto_reader.h"

#include <simdjson.h>

#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "ingest/common/input_file.h"
#include "ingest/common/sniff.h"
#include "ingest/traces/kineto/byte_scanner.h"
#include "ingest/traces/kineto/kineto_event.h"
#include "ingest/traces/kineto/kineto_parser.h"
#include "ingest/traces/kineto/trace_tokenizer.h"

namespace laggard {
namespace {

namespace keys = kineto_keys;
using kineto::EventDiagnostics;
using kineto::KinetoParser;
using kineto::Mode;
using kineto::TraceTokenizer;

// One pass over one file: the tokenizer reads it, the parser builds its
// trace.
class KinetoPass {
 public:
  KinetoPass(std::unique_ptr<ByteSource> source, ReaderContext& ctx, Mode mode)
      : ctx_(ctx),
        mode_(mode),
        diag_(ctx.path),
        tokenizer_(std::move(source), mode, ctx.step_marker, diag_),
        parser_(mode, ctx, diag_) {}

  void Run() { tokenizer_.Run(parser_); }

  // A trace with CPU events but no device op and no runtime call is
  // CPU-only, read to its end or cut short, whatever its header says: the
  // corpus holds complete CPU-only traces whose header lists GPUs (GPU
  // tracing off), and a cut must not lose their CPU ops. A GPU trace cut
  // before its first GPU event (Kineto writes CPU ops first; runtime calls
  // and kernels start at 35-45% of the corpus traces) reads the same way,
  // and its trace.truncated note says so (CutNoteForCpuPass()).
  bool NeedsCpuPass() const {
    return mode_ == Mode::kDevice && tokenizer_.has_trace() && !parser_.has_ops() &&
           tokenizer_.saw_cpu_events() && !tokenizer_.saw_runtime();
  }

  // What the CPU pass adds to its trace.truncated note: a cut trace whose
  // header lists GPUs may have lost them at the cut.
  std::string CutNoteForCpuPass() const {
    if (!tokenizer_.truncated() || !tokenizer_.header().gpu_job) return std::string();
    return "; no GPU event before the cut though the header lists GPUs: read as CPU-only";
  }

  void SetCutNote(std::string note) { tokenizer_.set_cut_note(std::move(note)); }

  // Adds the trace (if the file is one) and the diagnostics to ctx.out.
  // Returns the number of ops and steps taken.
  uint64_t Commit() {
    uint64_t taken = 0;
    if (tokenizer_.has_trace()) {
      RankTrace t = parser_.Finish(tokenizer_.header(), tokenizer_.events_total(),
                                   tokenizer_.events_lost(), tokenizer_.truncated());
      taken = t.ops.size() + t.steps.size();
      ctx_.out->AddTrace(std::move(t));
    }
    ctx_.diag().MergeFrom(diag_.diag());
    return taken;
  }

 private:
  ReaderContext& ctx_;
  const Mode mode_;
  EventDiagnostics diag_;
  TraceTokenizer tokenizer_;
  KinetoParser parser_;
};

// "key" followed by blanks and ':' somewhere in `head`.
bool HasKey(std::string_view head, std::string_view quoted_key) {
  for (size_t at = head.find(quoted_key); at != std::string_view::npos;
       at = head.find(quoted_key, at + 1)) {
    size_t i = at + quoted_key.size();
    while (i < head.size() && IsSpace(head[i])) ++i;
    if (i < head.size() && head[i] == ':') return true;
  }
  return false;
}

class KinetoTraceReader : public TraceReader {
 public:
  std::string_view name() const override { return "kineto"; }

  // Every score that claims the file is above kSniffSure, where the other
  // JSON readers sit (a JSONL step log, dcgmi diag JSON): a head with
  // Kineto's keys is a trace's, whatever else it could parse as.
  int Sniff(std::string_view head) const override {
    size_t i = 0;
    if (StartsWith(head, "\xEF\xBB\xBF")) i = 3;
    while (i < head.size() && IsSpace(head[i])) ++i;
    if (i >= head.size()) return kSniffNo;
    if (head[i] == '{') {
      if (HasKey(head, keys::top::kTraceEventsQuoted)) return kSniffCertain;
      // Kineto's header keys, traceEvents not in the first kSniffBytes (a
      // long deviceProperties): a trace, its events not seen yet.
      if (HasKey(head, keys::top::kSchemaVersionQuoted) ||
          HasKey(head, keys::top::kDevicePropertiesQuoted) ||
          HasKey(head, keys::top::kDistributedInfoQuoted)) {
        return kSniffCertain - 3;
      }
      return kSniffNo;
    }
    if (head[i] == '[') {
      size_t j = i + 1;
      while (j < head.size() && IsSpace(head[j])) ++j;
      if (j >= head.size() || head[j] != '{') return kSniffNo;
      // The first event: up to its first closing brace (args may nest; the
      // keys we look for come before or after, so look a little further).
      std::string_view first = head.substr(j, 4096);
      // The Array Format: events with ph and ts.
      if (HasKey(first, keys::event::kPhQuoted) && HasKey(first, keys::event::kTsQuoted)) {
        return kSniffCertain - 2;
      }
      return kSniffNo;
    }
    return kSniffNo;
  }

  uint64_t Read(const std::string& path, ReaderContext& ctx) const override {
    std::unique_ptr<KinetoPass> pass = ReadPass(path, ctx, Mode::kDevice);
    if (pass == nullptr) return 0;
    if (pass->NeedsCpuPass()) {
      if (std::unique_ptr<KinetoPass> cpu =
              ReadPass(path, ctx, Mode::kCpu, pass->CutNoteForCpuPass())) {
        return cpu->Commit();
      }
    }
    return pass->Commit();
  }

 private:
  static std::unique_ptr<KinetoPass> ReadPass(const std::string& path, ReaderContext& ctx,
                                              Mode mode, std::string cut_note = "") {
    auto source = OpenByteSource(path, ctx.gzip_decode);
    if (!source.ok()) {
      ctx.diag().Add(DiagCode::kFileUnreadable, path, 0, source.status().message());
      return nullptr;
    }
    auto pass = std::make_unique<KinetoPass>(std::move(source.value()), ctx, mode);
    pass->SetCutNote(std::move(cut_note));
    pass->Run();
    return pass;
  }
};

}  // namespace

std::unique_ptr<TraceReader> MakeKinetoTraceReader() {
  return std::make_unique<KinetoTraceReader>();
}

std::string KinetoJsonImplementation() {
  return fmt::format(
      "event boundaries: {}, events: {}, simdjson stage 1: {}, simdjson on-demand: {}",
      kineto::ActiveIndexer().name,
      kineto::FlatEventsEnabled() ? "flat walker, else on-demand" : "on-demand",
      simdjson::get_active_implementation()->name(), simdjson::builtin_implementation()->name());
}

}  // namespace laggard
