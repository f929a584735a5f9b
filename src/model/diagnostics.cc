#include "model/diagnostics.h"

namespace laggard {
namespace {

constexpr DiagInfo kCatalogue[] = {
    {"file.unreadable", DiagKind::kSkippedFile, "file could not be opened or read"},
    {"file.empty", DiagKind::kSkippedFile, "file is empty"},
    {"file.binary", DiagKind::kSkippedFile, "file holds binary data, not text"},
    {"file.unrecognised", DiagKind::kSkippedFile,
     "no reader recognised the file's content; it was skipped"},
    {"gzip.corrupt", DiagKind::kBadRecord,
     "gzip data is corrupt; everything before the damage was used"},
    {"gzip.truncated", DiagKind::kBadRecord,
     "gzip stream ends early; everything before the cut was used"},
    {"line.too_long", DiagKind::kBadRecord, "line longer than the 1 MiB limit; skipped"},
    {"step.garbled", DiagKind::kBadRecord,
     "line looks like a step record but could not be parsed; skipped"},
    {"step.nonpositive_duration", DiagKind::kBadRecord,
     "step duration is zero or negative; record not used"},
    {"step.duplicate", DiagKind::kBadRecord,
     "the same rank reported the same step again; the first record was kept"},
    {"step.bad_rank_or_step", DiagKind::kBadRecord,
     "rank or step number is negative or out of range; record not used"},
    {"csv.bad_row", DiagKind::kBadRecord, "CSV row with missing or unparsable fields; skipped"},
    {"csv.no_header", DiagKind::kSkippedFile,
     "CSV file without a recognisable header (step CSV: rank, step and a duration column; "
     "nvidia-smi --query-gpu: its field names)"},
    {"jsonl.bad_line", DiagKind::kBadRecord,
     "JSON Lines record that is not valid JSON or lacks rank/step/duration; skipped"},
    {"step.mixed_units", DiagKind::kNote,
     "one file uses several time units; each value was converted by its own unit"},
    {"rank.unknown", DiagKind::kNote,
     "records without a rank (none in the line, none in the file name); kept as a job-level "
     "series that is not compared with peers"},
    {"rank.missing", DiagKind::kNote, "rank numbers have gaps: these ranks sent no step records"},
    {"rank.step_count_mismatch", DiagKind::kNote,
     "ranks reported different numbers of steps; comparisons use the steps each rank has"},
    {"rank.conflicting_info", DiagKind::kNote,
     "the same rank was given different hosts or GPUs; the first one was kept"},
    {"rank.too_few_steps", DiagKind::kNote,
     "rank has too few steps after warm-up to be compared with its peers"},
    {"trace.truncated", DiagKind::kBadRecord,
     "trace ends early (a job killed while writing it?); every complete event before the cut "
     "was used"},
    {"trace.bad_event", DiagKind::kBadRecord,
     "trace event with missing or wrong-type fields (e.g. \"ts\": \"abc\", negative dur); "
     "skipped"},
    {"trace.no_rank", DiagKind::kNote,
     "trace without a rank (no distributedInfo.rank, none in the file name); not matched with "
     "other ranks"},
    {"trace.duplicate_rank", DiagKind::kNote,
     "several traces claim the same rank; the first is used for cross-rank matching"},
    {"trace.mixed_jobs", DiagKind::kNote,
     "traces disagree on the world size: they may come from different jobs"},
    {"trace.unsupported", DiagKind::kSkippedFile,
     "a trace or database this version cannot read (e.g. SQLite that is not an nsys export)"},
    {"trace.no_events", DiagKind::kNote, "trace holds no kernel, memcpy or CPU op events"},
    {"hardware.bad_record", DiagKind::kBadRecord,
     "line of a GPU metrics output (nvidia-smi, DCGM) that could not be parsed; skipped"},
    {"hardware.unknown_field", DiagKind::kNote,
     "column or field that laggard does not use; its values were ignored"},
    {"hardware.approximate_time", DiagKind::kNote,
     "GPU samples without timestamps; times are row index x interval from the file's start"},
    {"hardware.no_host", DiagKind::kNote,
     "GPU data whose host is unknown (not in the content, directory or file name); matched to "
     "ranks only when the run has a single host"},
    {"hardware.conflicting_facts", DiagKind::kNote,
     "inputs disagree on a static fact of the same GPU; the first value was kept"},
    {"network.bad_record", DiagKind::kBadRecord,
     "line of a network output (ibstat, ethtool, nccl-tests, NCCL log, topo) that could not be "
     "parsed; skipped"},
    {"network.no_host", DiagKind::kNote,
     "network data whose host is unknown (not in the content, directory or file name)"},
    {"hardware.no_gpu_id", DiagKind::kNote,
     "GPU metrics rows that name no GPU (no index, uuid or bus id); all were taken as GPU 0"},
    {"trace.no_step_marker", DiagKind::kNote,
     "trace without a range named as --step-marker says; its ProfilerStep#N / NVTX step ranges "
     "were used instead, if any"},
    {"rank.file_ranks_unmatched", DiagKind::kNote,
     "line of the --file-ranks file that names no input file; the rank it gives was not used"},
    {"step.repeated_by_another_file", DiagKind::kNote,
     "two files give the same steps of a rank (e.g. the log lines and a step CSV of the same "
     "loop); one copy of each step was kept, from the file read first"},
    {"trace.events_unused", DiagKind::kNote,
     "trace events the reader does not take (ranges that are no operator, such as "
     "record_function labels; events of remote RPC workers; CUDA launch arrows without their "
     "kernels), counted by kind"},
    {"trace.clock_aligned", DiagKind::kNote,
     "trace timed from its own profiler start, moved onto a reference rank's clock by the "
     "median offset of matched collective ends"},
    {"trace.clock_unaligned", DiagKind::kNote,
     "trace timed from its own profiler start that could not be aligned with the other ranks "
     "(no rank, or too few collectives matched); its times are not comparable with theirs"},
    {"file.duplicate", DiagKind::kNote,
     "the same file (device and inode) reached twice, by two given paths, a folder and its "
     "subfolder, or a hard link: read once, under its first path"},
    {"step.bad_compute_time", DiagKind::kBadRecord,
     "a step's compute-only time is not a positive time; the step was kept without it"},
    {"step.bad_cpu_time", DiagKind::kBadRecord,
     "a step's CPU time or run-queue wait is not a time of zero or more; the step was kept "
     "without it"},
    {"timeline.op_unknown", DiagKind::kNote,
     "op timeline events of an op type outside the Megatron vocabulary (tp-comm ops, data-load, "
     "forward-backward, ...); not taken, counted per name"},
    {"timeline.layout_unknown", DiagKind::kNote,
     "op timeline whose workers' places (dp, pp, tp) or layout the file does not give (no "
     "thread_name metadata, threads named alike, DP ranks not 0..n-1) or gives in part"},
    {"layout.contradicts", DiagKind::kNote,
     "a stated parallel layout that contradicts itself (sizes that do not multiply to the world "
     "size) or another file's or the ranks seen; it is not used"},
    {"hang.dump_truncated", DiagKind::kBadRecord,
     "Flight Recorder dump ends early (the process died while writing it?); every complete "
     "entry and group status before the cut was used"},
    {"hang.dump_corrupt", DiagKind::kBadRecord,
     "Flight Recorder dump whose pickle or JSON is damaged at the offset given; what was "
     "complete before the damage was used"},
    {"hang.dump_refused", DiagKind::kBadRecord,
     "pickle that holds an opcode Flight Recorder dumps never write (GLOBAL, REDUCE, BUILD, ... "
     "that name or call code), or that is not a dump's dict; refused unread, nothing of it run"},
    {"hang.dump_bad_entry", DiagKind::kBadRecord,
     "Flight Recorder entry or group record with a missing or wrong-type field (record_id, "
     "profiling_name, state, a seq that is no integer); skipped"},
    {"hang.dump_no_rank", DiagKind::kNote,
     "Flight Recorder dump whose rank is unknown (no number at the end of its file name, "
     "nccl_trace_rank_<N>, and none from --rank-from / --file-ranks)"},
    {"hang.dump_version_unknown", DiagKind::kNote,
     "Flight Recorder dump of a version this reader was not checked against (2.3 - 2.10) or "
     "without one; read by the keys it shares with those"},
    {"hang.ras_bad_line", DiagKind::kBadRecord,
     "line of an NCCL RAS status report (ncclras) that does not read as the line RAS prints "
     "there (a table row with missing columns, a rank line without its rank); skipped"},
    {"hang.ras_truncated", DiagKind::kNote,
     "NCCL RAS status report that ends before its Warnings section (the query was cut or "
     "timed out): what it printed before was used, what it would have printed after is "
     "unknown"},
    {"hang.dump_no_pg_config", DiagKind::kNote,
     "Flight Recorder dump without pg_config (older versions, or a JSON dump cut before it): its "
     "groups are known only by the "
     "ids its own process gave them, which other processes may give to other groups; they were "
     "matched across ranks by id"},
    {"tool.report_bad_field", DiagKind::kBadRecord,
     "field of another tool's straggler report (Megatron's StragglerDetector line or its "
     "Bottom/Top rank list, an NVRx score entry or warning) that does not read as value, unit "
     "and rank; the report's other fields were kept"},
    {"p2p.bad_row", DiagKind::kBadRecord,
     "row of a p2pBandwidthLatencyTest matrix whose cell count differs from its header's, or "
     "whose cells are not numbers of zero or more (a header whose columns are not 0, 1, 2, ... "
     "too); skipped"},
    {"pairs.bad_row", DiagKind::kBadRecord,
     "row of a node-pair bandwidth table that is not two hosts and a bandwidth above zero (a "
     "truncated paste, a host paired with itself, an unknown unit), or a bandwidth without a "
     "unit where the table's rows print different units; skipped"},
    {"pairs.too_few", DiagKind::kNote,
     "node-pair table (or one test of it) with fewer than 3 hosts in 3 pairs: its pairs are kept, "
     "but they cannot tell a bad node from the fabric"},
    {"pairs.mixed_units", DiagKind::kNote,
     "node-pair table whose rows print different bandwidth units (GB/s, Gb/s, MB/s): each row "
     "was converted to GB/s"},
    {"job.other", DiagKind::kSkippedFile,
     "file of another job than the one diagnosed (the files hold several: different world "
     "sizes, times days apart, runs of other ranks one after another, or folders that "
     "disagree on a rank's steps): listed, not read into the diagnosis; --job N chooses"},
    {"job.unplaced", DiagKind::kSkippedFile,
     "file the evidence cannot place in one of the several jobs found (it fits several, or "
     "none): left out rather than guessed"},
    {"rank.host_from_agent", DiagKind::kNote,
     "rank whose step records name no host: its host is the one whose laggard agent saw its "
     "process (the pid its step reports sent) while the job ran, or, where the steps carry no "
     "times, the only one that saw the rank, as one process"},
};
static_assert(std::size(kCatalogue) == static_cast<size_t>(DiagCode::kCount),
              "every DiagCode needs a catalogue entry");

}  // namespace

const DiagInfo& Describe(DiagCode code) { return kCatalogue[static_cast<size_t>(code)]; }

void Diagnostics::Add(DiagCode code, std::string_view file, uint64_t line, std::string message,
                      uint64_t count) {
  size_t i = static_cast<size_t>(code);
  counts_[i] += count;
  if (examples_[i].size() < kMaxExamplesPerCode) {
    examples_[i].push_back(DiagExample{std::string(file), line, 0, std::move(message)});
  }
}

void Diagnostics::AddAtOffset(DiagCode code, std::string_view file, uint64_t offset,
                              std::string message, uint64_t count) {
  size_t i = static_cast<size_t>(code);
  counts_[i] += count;
  if (examples_[i].size() < kMaxExamplesPerCode) {
    examples_[i].push_back(DiagExample{std::string(file), 0, offset, std::move(message)});
  }
}

uint64_t Diagnostics::TotalOfKind(DiagKind kind) const {
  uint64_t total = 0;
  for (size_t i = 0; i < kCodes; ++i) {
    if (kCatalogue[i].kind == kind) total += counts_[i];
  }
  return total;
}

void Diagnostics::MergeFrom(const Diagnostics& other) {
  for (size_t i = 0; i < kCodes; ++i) {
    counts_[i] += other.counts_[i];
    for (const DiagExample& e : other.examples_[i]) {
      if (examples_[i].size() >= kMaxExamplesPerCode) break;
      examples_[i].push_back(e);
    }
  }
}

}  // namespace laggard
