// Step intake: how training processes tell the agent about their steps.
//
// Transports (any combination):
//   UDP       datagrams to 127.0.0.1:9401 (AgentOptions::udp; port 0 picks one)
//   Unix      datagrams to a SOCK_DGRAM socket at a path (created mode 0666);
//             the kernel tells the sender's pid in the agent's own PID
//             namespace (SO_PASSCRED), which replaces a line's pid= and
//             pidns=: a reporter in another container is tied to its rank
//             where the agent reads the /proc of its own namespace
//   log tail  lines appended to existing log files (read from their end at
//             start; truncation and rotation are followed)
//
// One report per line; a datagram may hold several lines. Two line forms:
//
//   the article's line, as printed by print(f"rank {r}, step {i}, time {dt:.4f}s"):
//       rank 3, step 120, time 0.8123s
//     ("=" or ":" after the keywords, any time unit: "812ms"; text before it
//     is allowed, so log lines with prefixes are read);
//
//   the key=value form, which carries more:
//       laggard-step rank=3 step=120 time_s=0.81 compute_s=0.62 host=node-1 gpu=3
//     required: rank, step, and the step time as time_s / time_ms / time_us /
//     time_ns; optional: ts (end of the step: epoch seconds or ISO 8601; the
//     receipt time otherwise), host, gpu (local index), pid (the reporting
//     process: the agent tells the job's processes from others on its
//     cores by it, host_procs.h) and pidns (the inode of the process's PID
//     namespace, /proc/self/ns/pid: a pid of another namespace than the
//     /proc the agent reads names another process there), and phase times
//     <phase>_s / _ms / _us / _ns for any phase name of [a-z0-9_] up to 32
//     characters (compute, data, comm, optimizer ...). Unknown keys without a
//     unit suffix are ignored (forward compatibility).
//
// A datagram line that is neither form, or a step line whose values cannot be
// read, is counted as bad under a reason (laggard_agent_step_lines_bad_total)
// and dropped; nothing stops the intake. In tailed logs, lines that are not
// step lines are ordinary log output and are skipped silently.
//
// Thread-safety: StepIntake runs one receiving thread; the sink is called
// from it (and from PollTails() in tests).

#ifndef LAGGARD_AGENT_STEP_INTAKE_H_
#define LAGGARD_AGENT_STEP_INTAKE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/time.h"

namespace laggard::agent {

struct StepReport {
  int64_t rank = 0;
  int64_t step = 0;
  DurationNs duration_ns = 0;
  std::optional<TimeNs> end_ns;  // from ts=, else the receipt time is used
  std::optional<std::string> host;
  std::optional<int32_t> gpu;
  std::optional<int64_t> pid;
  std::optional<uint64_t> pidns;
  std::vector<std::pair<std::string, DurationNs>> phases;  // in the order given
};

enum class LineKind { kStep, kNotStep, kBad };

// Why a line was refused; the names label laggard_agent_step_lines_bad_total.
enum class BadLine : uint8_t {
  kNotAStepLine,  // a datagram line in neither form
  kMissingField,  // no rank, step or step time
  kBadValue,      // a value that is not a number, negative, out of range
  kTooLong,       // a line over kMaxStepLine bytes
  kTooManyRanks,  // more ranks than the agent tracks (AgentOptions::max_ranks)
  kCount,
};
std::string_view BadLineName(BadLine b);

inline constexpr size_t kMaxStepLine = 4096;
inline constexpr size_t kMaxPhases = 16;

// Parses one line (no newline). On kBad, `bad` and `why` say what was wrong.
LineKind ParseStepLine(std::string_view line, StepReport& out, BadLine& bad, std::string& why);

enum class StepSource : uint8_t { kUdp, kUnix, kTail, kCount };
std::string_view StepSourceName(StepSource s);

class StepSink {
 public:
  virtual ~StepSink() = default;
  virtual void OnStep(const StepReport& report, StepSource source) = 0;
  virtual void OnBadLine(BadLine why, StepSource source, std::string_view detail) = 0;
  virtual void OnDatagram(StepSource source) = 0;
};

struct IntakeOptions {
  std::optional<std::string> udp;  // "127.0.0.1:9401"; port 0: any free port
  std::optional<std::string> unix_path;
  std::vector<std::string> tail_files;
};

class StepIntake {
 public:
  explicit StepIntake(StepSink& sink);
  ~StepIntake();
  StepIntake(const StepIntake&) = delete;
  StepIntake& operator=(const StepIntake&) = delete;

  // Binds the sockets and opens the tails; fails as a whole when an address
  // cannot be parsed or bound (port in use, path not writable).
  Status Open(const IntakeOptions& options);
  // Starts / stops the receiving thread. Stop() also removes the Unix socket.
  void Start();
  void Stop();

  // The bound UDP port (useful with port 0), or 0 without UDP.
  int udp_port() const { return udp_port_; }

  // Handles one datagram as if received (tests, fuzzing); `sender`: the
  // pid the kernel gave for it, in this process's PID namespace.
  void HandleDatagram(std::string_view data, StepSource source,
                      std::optional<int64_t> sender = std::nullopt);
  // Reads what was appended to the tailed files since the last call.
  void PollTails();

 private:
  struct Tail;
  void Loop();

  StepSink& sink_;
  int udp_fd_ = -1;
  int unix_fd_ = -1;
  int wake_[2] = {-1, -1};
  int udp_port_ = 0;
  std::string unix_path_;
  std::optional<uint64_t> own_pidns_;  // this process's PID namespace
  std::vector<std::unique_ptr<Tail>> tails_;
  std::thread thread_;
  std::atomic<bool> running_{false};
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_STEP_INTAKE_H_
