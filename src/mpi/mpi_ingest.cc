#include "mpi/mpi_ingest.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "mpi/share_wire.h"
#include "mpi/shares.h"

#if LAGGARD_HAVE_MPI
#include "mpi/mpi_library.h"
#endif

namespace laggard {

#if !LAGGARD_HAVE_MPI

bool MpiBuilt() { return false; }

StatusOr<std::optional<Run>> IngestOverMpi(const IngestPlan&, const std::vector<const TextReader*>&,
                                           const std::vector<const TraceReader*>&,
                                           const IngestOptions&, const MpiIngestOptions&,
                                           MpiIngestReport*) {
  return Status::Error(
      "--mpi: this laggard was built without MPI. Install Open MPI (apt-get install "
      "openmpi-bin libopenmpi-dev; scripts/dev.sh does) and build again: the LAGGARD_MPI "
      "CMake option turns on when CMake finds it");
}

#else

bool MpiBuilt() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTagHeader = 1;  // u64: the share message's length
constexpr int kTagChunk = 2;   // the message, in chunks of kChunkBytes
constexpr size_t kChunkBytes = size_t{1} << 30;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

[[noreturn]] void Abort(const MpiLibrary& m, const std::string& message) {
  std::fprintf(stderr, "laggard: --mpi: %s; aborting the job\n", message.c_str());
  std::fflush(stderr);
  m.abort(m.comm_world, 2);
  std::abort();  // MPI_Abort does not return
}

// Completes `request`, polling, or aborts the job after `deadline`.
void WaitOrAbort(const MpiLibrary& m, MPI_Request& request, Clock::time_point deadline,
                 const std::string& waiting_for) {
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    int done = 0;
    m.test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (Clock::now() > deadline) Abort(m, "timed out waiting for " + waiting_for);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
}

void SendShare(const MpiLibrary& m, const std::string& message, Clock::time_point deadline) {
  uint64_t length = message.size();
  MPI_Request request;
  m.isend(&length, 1, m.uint64, 0, kTagHeader, m.comm_world, &request);
  WaitOrAbort(m, request, deadline, "process 0 to take this process's share");
  for (size_t at = 0; at < message.size(); at += kChunkBytes) {
    int n = static_cast<int>(std::min(kChunkBytes, message.size() - at));
    m.isend(message.data() + at, n, m.byte, 0, kTagChunk, m.comm_world, &request);
    WaitOrAbort(m, request, deadline, "process 0 to take this process's share");
  }
}

// Process 0: takes the other processes' shares in the order they arrive.
Status GatherShares(const MpiLibrary& m, int processes, double timeout_s,
                    std::vector<std::optional<IngestFileResult>>& slots, MpiIngestReport& report) {
  std::vector<bool> got(processes, false);
  got[0] = true;
  auto missing = [&] {
    std::string who;
    for (int p = 0; p < processes; ++p) {
      if (!got[p]) who += fmt::format("{}{}", who.empty() ? "" : ", ", p);
    }
    return "the shares of processes " + who;
  };
  auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Clock::time_point deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(50);
  std::string message;
  for (int left = processes - 1; left > 0;) {
    int ready = 0;
    MPI_Status status;
    m.iprobe(MPI_ANY_SOURCE, kTagHeader, m.comm_world, &ready, &status);
    if (!ready) {
      if (Clock::now() > deadline)
        Abort(m, fmt::format("process 0 waited {:g} s for {}", timeout_s, missing()));
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10'000));
      continue;
    }
    pause = std::chrono::microseconds(50);
    const int source = status.MPI_SOURCE;
    uint64_t length = 0;
    m.recv(&length, 1, m.uint64, source, kTagHeader, m.comm_world, MPI_STATUS_IGNORE);
    message.resize(length);
    MPI_Request request;
    for (size_t at = 0; at < length; at += kChunkBytes) {
      int n = static_cast<int>(std::min<uint64_t>(kChunkBytes, length - at));
      m.irecv(message.data() + at, n, m.byte, source, kTagChunk, m.comm_world, &request);
      WaitOrAbort(m, request, Clock::now() + timeout,
                  fmt::format("the rest of process {}'s share", source));
    }
    report.message_bytes[source] = length;
    report.bytes_gathered += length;
    Status decoded = DecodeShare(message, slots);
    if (!decoded.ok()) {
      return Status::Error(fmt::format("--mpi: process {}'s {}", source, decoded.message()));
    }
    got[source] = true;
    --left;
    deadline = Clock::now() + timeout;
  }
  return Status::Ok();
}

// MPI_Init_thread / MPI_Finalize around the distributed ingest.
class MpiSession {
 public:
  explicit MpiSession(const MpiLibrary& m) : m_(m) {
    int initialised = 0;
    m_.initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      m_.init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_ = true;
    }
    m_.comm_rank(m_.comm_world, &rank_);
    m_.comm_size(m_.comm_world, &size_);
  }
  ~MpiSession() {
    if (owns_) m_.finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  const MpiLibrary& m_;
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

StatusOr<std::optional<Run>> IngestOverMpi(const IngestPlan& plan,
                                           const std::vector<const TextReader*>& readers,
                                           const std::vector<const TraceReader*>& trace_readers,
                                           const IngestOptions& options,
                                           const MpiIngestOptions& mpi, MpiIngestReport* report) {
  MpiIngestReport local;
  MpiIngestReport& r = report != nullptr ? *report : local;
  StatusOr<const MpiLibrary*> opened = OpenMpiLibrary();
  if (!opened.ok()) return opened.status();
  const MpiLibrary& m = **opened;
  MpiSession session(m);
  r = MpiIngestReport();
  r.processes = session.size();
  r.process = session.rank();

  const std::vector<std::string>& files = plan.files();
  const std::vector<uint64_t>& bytes = plan.bytes();
  std::vector<std::optional<int32_t>> rank(files.size());
  for (size_t i = 0; i < files.size(); ++i) rank[i] = plan.RankOfPath(i);
  std::vector<std::vector<uint32_t>> shares = AssignShares(bytes, rank, r.processes);
  r.share_files.resize(r.processes);
  r.share_bytes.resize(r.processes);
  r.message_bytes.assign(r.processes, 0);
  for (int p = 0; p < r.processes; ++p) {
    r.share_files[p] = shares[p].size();
    for (uint32_t f : shares[p]) r.share_bytes[p] += bytes[f];
  }

  const std::vector<uint32_t>& mine = shares[r.process];
  Clock::time_point start = Clock::now();
  std::vector<IngestFileResult> read = ReadIngestFiles(plan, readers, trace_readers, options, mine);
  Clock::time_point read_end = Clock::now();
  r.read_s = Seconds(start, read_end);

  if (r.process != 0) {
    std::string message = EncodeShare(mine, read);
    r.message_bytes[r.process] = message.size();
    auto allowance = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(mpi.timeout_s + 2 * r.read_s));
    SendShare(m, message, Clock::now() + allowance);
    return std::optional<Run>();
  }
  std::vector<std::optional<IngestFileResult>> slots(files.size());
  for (size_t i = 0; i < mine.size(); ++i) slots[mine[i]] = std::move(read[i]);
  read.clear();
  Status gathered = GatherShares(m, r.processes, mpi.timeout_s, slots, r);
  r.gather_s = Seconds(read_end, Clock::now());
  if (!gathered.ok()) return gathered;
  std::vector<IngestFileResult> results(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    if (!slots[i]) {
      return Status::Error(fmt::format("--mpi: no process sent the result of {}", files[i]));
    }
    results[i] = std::move(*slots[i]);
  }
  return std::optional<Run>(MergeIngest(plan, std::move(results)));
}

#endif  // LAGGARD_HAVE_MPI

}  // namespace laggard
