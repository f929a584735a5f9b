#include "cli/ingest_flags.h"

#include <CLI/CLI.hpp>

#include "ingest/readers.h"

namespace laggard {

void AddIngestFlags(CLI::App* cmd, IngestFlags& flags) {
  cmd->add_option("--rank-from", flags.ingest.rank_from,
                  "regex on a file's path whose group 'rank' (or group 1) is the file's rank");
  cmd->add_option("--file-ranks", flags.ingest.file_ranks,
                  "file of 'PATH RANK' lines giving the rank of input files whose content names "
                  "none (PATH: the file, its name or the end of its path; before --rank-from)");
  cmd->add_option("--host-from", flags.ingest.host_from,
                  "regex on a file's path whose group 'host' (or group 1) is the host of the GPU, "
                  "network or trace data in it (default: the directory, e.g. run/node-01/...)");
  cmd->add_option("--step-pattern", flags.step_pattern,
                  "regex for step lines with named groups step, time (or time_ms, ...), "
                  "optionally rank, unit, start, host, gpu");
  cmd->add_option("--step-marker", flags.ingest.step_marker,
                  "name of the trace ranges that mark a step, instead of ProfilerStep#N / NVTX "
                  "'step N': NAME, 'NAME 12', 'NAME#12' (record_function or an NVTX range)");
  cmd->add_option("--comm-kernel", flags.ingest.comm_kernels,
                  "a device kernel that communicates though its name does not say NCCL/RCCL (a "
                  "custom all-reduce): part of its name, any case; repeat for more")
      ->allow_extra_args(false)
      ->take_all();
  cmd->add_option("--threads", flags.ingest.threads, "ingest threads (default: one per core)")
      ->check(CLI::NonNegativeNumber);
}

namespace {

IngestOptions OptionsOf(const IngestFlags& flags,
                        std::function<void(size_t, size_t, uint64_t)> progress) {
  IngestOptions ingest = flags.ingest;
  ingest.progress = std::move(progress);
  return ingest;
}

}  // namespace

StatusOr<Run> IngestWithFlags(const std::vector<std::string>& paths, const IngestFlags& flags,
                              std::function<void(size_t, size_t, uint64_t)> progress,
                              std::vector<FileFacts>* file_facts) {
  auto readers = MakeDefaultTextReaders(flags.step_pattern);
  if (!readers.ok()) return readers.status();
  TraceReaderSet trace_readers = MakeDefaultTraceReaders();
  return Ingest(paths, readers->readers, OptionsOf(flags, std::move(progress)),
                trace_readers.readers, file_facts);
}

StatusOr<std::optional<Run>> IngestWithFlagsOverMpi(
    const std::vector<std::string>& paths, const IngestFlags& flags, double timeout_s,
    std::function<void(size_t, size_t, uint64_t)> progress, MpiIngestReport* report) {
  auto readers = MakeDefaultTextReaders(flags.step_pattern);
  if (!readers.ok()) return readers.status();
  TraceReaderSet trace_readers = MakeDefaultTraceReaders();
  IngestOptions options = OptionsOf(flags, std::move(progress));
  auto plan = PlanIngest(paths, options);
  if (!plan.ok()) return plan.status();
  MpiIngestOptions mpi;
  mpi.timeout_s = timeout_s;
  return IngestOverMpi(*plan, readers->readers, trace_readers.readers, options, mpi, report);
}

}  // namespace laggard
