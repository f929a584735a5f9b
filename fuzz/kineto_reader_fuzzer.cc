// Fuzzes the Kineto / Chrome-trace reader (kineto_reader.h) on arbitrary
// bytes written to a file, through the TraceReader interface as Ingest calls
// it (sniffing aside), with and without a rank implied by the path. Each
// input is read as it is, cut at a point chosen from its hash, (one input
// in four) gzipped as one or two members, and (one in sixteen) behind
// leading blanks that end the reader's first 512 KiB chunk inside it.
//
// Invariants, besides those of every trace (fuzz_support.h:
// CheckTraceInvariants):
//   - Sniff scores lie in [0, 100];
//   - gzip is transparent: the gzipped file gives the same trace (ops,
//     collectives, steps, rank, host, counts) and the same diagnostic counts;
//   - so are chunk boundaries: the shifted file gives the same trace (its
//     collective offsets shifted) and the same diagnostic counts;
//   - a cut never invents data: the steps of the prefix are steps of the
//     whole, and, unless the cut made the trace CPU-only (Kineto writes CPU
//     ops first, so a cut may drop every kernel), its ops are a sub-multiset
//     of the whole's ops and it has no more collectives.
//
// The bracket indexer (AVX-512, AVX2, SSE2 or scalar) and the event parser
// (flat walker or On-Demand) are chosen once per process from
// LAGGARD_KINETO_SCAN and LAGGARD_KINETO_EVENTS, so the paths cannot be
// compared within one process. With LAGGARD_FUZZ_KINETO_DIGESTS=FILE set,
// each input appends "<input hash> <result hash>" to FILE;
// compare_kineto_scans.cmake runs the same inputs under each indexer and
// parser and requires the same lines (ctest fuzz_kineto_scan_paths; see that
// file for the libFuzzer corpus).

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_support.h"
#include "ingest/ingest.h"
#include "ingest/traces/kineto/kineto_reader.h"

namespace laggard::fuzz {
namespace {

// The reader's read size (trace_tokenizer.h: kChunkBytes).
constexpr size_t kReaderChunkBytes = 512 << 10;

// Everything the reader produced, as text: compared between plain, gzip and
// shifted reads, and hashed into the scan-path digest. Diagnostics enter as
// counts only (their examples name the file and offsets); collective
// offsets are taken less `offset_shift`.
std::string Summary(const TraceOutcome& o, uint64_t offset_shift = 0) {
  const Run& run = o.run;
  std::string s = fmt::format("taken {}\n", o.taken);
  for (const RankTrace& t : run.traces) {
    s += fmt::format(
        "rank {} world {} host {} device {} cpu_only {} truncated {} events {} lost {}\n",
        t.rank.value_or(-1), t.world_size.value_or(-1), t.host.value_or("-"), t.device.value_or(-1),
        t.cpu_only, t.truncated, t.events_total, t.events_lost);
    for (const TraceOp& op : t.ops) {
      s += fmt::format("op {} {} {} {} {} {}\n", op.start_ns, op.dur_ns, run.names.Get(op.name),
                       op.stream, static_cast<int>(op.cls), op.device);
    }
    for (const CollectiveCall& c : t.collectives) {
      s += fmt::format("coll {} {} {} {} {} {} {} {} {}\n", c.start_ns, c.dur_ns,
                       run.names.Get(c.kernel), run.names.Get(c.collective),
                       c.group ? run.names.Get(*c.group) : "-", c.seq.value_or(-1),
                       c.nelems.value_or(-1), c.group_size.value_or(-1), c.offset - offset_shift);
    }
    for (const TraceStep& st : t.steps) {
      s += fmt::format("step {} {} {}\n", st.step, st.start_ns, st.end_ns);
    }
  }
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    if (uint64_t n = run.diagnostics.count(static_cast<DiagCode>(c))) {
      s += fmt::format("diag {} {}\n", Describe(static_cast<DiagCode>(c)).name, n);
    }
  }
  return s;
}

TraceOutcome ReadAndCheck(const TraceReader& reader, const std::string& name,
                          std::string_view content, std::optional<int32_t> rank_from_path,
                          std::string_view step_marker = "") {
  std::string path = ScratchDir() + "/kineto/" + name;
  WriteFileOrDie(path, content);
  TraceOutcome o = ReadTraceFile(reader, path, rank_from_path, step_marker);
  CheckTraceInvariants(o);
  return o;
}

void AppendDigest(std::string_view input, const std::string& summary) {
  static const char* digest_path = std::getenv("LAGGARD_FUZZ_KINETO_DIGESTS");
  if (digest_path == nullptr) return;
  FILE* f = std::fopen(digest_path, "a");
  if (f == nullptr) {
    std::perror(digest_path);
    std::abort();
  }
  std::fprintf(f, "%016llx %016llx\n", static_cast<unsigned long long>(Hash(input)),
               static_cast<unsigned long long>(Hash(summary)));
  std::fclose(f);
}

void CheckPrefix(const TraceOutcome& whole, const TraceOutcome& cut, size_t at, size_t size) {
  std::vector<int64_t> whole_steps;
  for (const RankTrace& t : whole.run.traces) {
    for (const TraceStep& s : t.steps) whole_steps.push_back(s.step);
  }
  for (const RankTrace& t : cut.run.traces) {
    for (const TraceStep& s : t.steps) {
      FUZZ_CHECK(std::binary_search(whole_steps.begin(), whole_steps.end(), s.step),
                 "cut at byte {} of {} invented step {}", at, size, s.step);
    }
  }
  const RankTrace* c = cut.trace();
  if (c == nullptr || c->cpu_only) return;  // a CPU-only prefix of a GPU trace is by design
  const RankTrace* w = whole.trace();
  FUZZ_CHECK(w != nullptr || c->ops.empty(),
             "cut at byte {} of {} gives {} ops, the whole no trace", at, size, c->ops.size());
  if (w == nullptr) return;
  if (w->cpu_only) {
    FUZZ_CHECK(c->ops.empty(), "cut at byte {} of {} gives {} device ops, the whole is CPU-only",
               at, size, c->ops.size());
    return;
  }
  FUZZ_CHECK(c->ops.size() <= w->ops.size() && c->collectives.size() <= w->collectives.size(),
             "cut at byte {} of {} gives {} ops / {} collectives, the whole {} / {}", at, size,
             c->ops.size(), c->collectives.size(), w->ops.size(), w->collectives.size());
  FUZZ_CHECK(IsSubMultiset(SortedOpKeys(cut.run), SortedOpKeys(whole.run)),
             "cut at byte {} of {} gives ops the whole does not have", at, size);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(kineto_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  static const std::unique_ptr<TraceReader> reader = MakeKinetoTraceReader();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t h = Hash(input);

  ExactBuffer head(input.substr(0, kSniffBytes));
  int score = reader->Sniff(head.view());
  FUZZ_CHECK(score >= 0 && score <= 100, "sniff score {}", score);

  std::optional<int32_t> rank_from_path;
  if (h & 1) rank_from_path = 5;
  TraceOutcome plain = ReadAndCheck(*reader, "plain.json", input, rank_from_path);
  std::string summary = Summary(plain);
  // Half the inputs are read again with a --step-marker, whose prefilter
  // checks the digests compare across scan paths too: one the seeds' step
  // names match, a loop's own, one with a quote (a shorter raw prefix) and
  // a one-letter one that many names start with.
  static constexpr std::string_view kMarkers[] = {"ProfilerStep", "train_step", "a\"b", "s"};
  std::string marked_summary;
  if ((h >> 24) % 8 < 4) {
    TraceOutcome marked =
        ReadAndCheck(*reader, "marked.json", input, rank_from_path, kMarkers[(h >> 24) % 8]);
    marked_summary = Summary(marked);
  }
  AppendDigest(input, summary + marked_summary);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return 0;  // itself (damaged) gzip

  if (size > 0) {
    size_t at = static_cast<size_t>((h >> 8) % size);
    TraceOutcome cut = ReadAndCheck(*reader, "cut.json", input.substr(0, at), rank_from_path);
    CheckPrefix(plain, cut, at, size);
  }

  // Inputs are far smaller than a chunk: shift one in sixteen by leading
  // blanks so that the first chunk ends at a chosen byte of the input.
  if ((h >> 36) % 16 == 0 && size < kReaderChunkBytes && input.substr(0, 3) != "\xEF\xBB\xBF") {
    size_t boundary = size == 0 ? 0 : static_cast<size_t>((h >> 52) % size);
    size_t pad = kReaderChunkBytes - boundary;
    std::string shifted(pad, ' ');
    shifted.append(input);
    TraceOutcome o = ReadAndCheck(*reader, "shifted.json", shifted, rank_from_path);
    std::string shifted_summary = Summary(o, pad);
    FUZZ_CHECK(shifted_summary == summary,
               "with the first chunk ending at input byte {}, differs:\n{}\nplain:\n{}", boundary,
               shifted_summary, summary);
  }

  if ((h >> 40) % 4 == 0) {
    size_t split = static_cast<size_t>((h >> 44) % (size + 1));
    TraceOutcome zipped =
        ReadAndCheck(*reader, "trace.json.gz", Gzip(input, split), rank_from_path);
    std::string zipped_summary = Summary(zipped);
    FUZZ_CHECK(zipped_summary == summary, "gzip (members split at {}) differs:\n{}\nplain:\n{}",
               split, zipped_summary, summary);
  }
  return 0;
}
