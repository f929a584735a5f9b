// A Python traceback at the end of a process's output: the exception that
// took the process down. A rank that raised and exited leaves its peers
// waiting in the next collective; its stderr ends in
//
//   Traceback (most recent call last):
//     File "/work/main/bench/realjobs/ddp_job.py", line 189, in main
//       raise RuntimeError("injected fault: rank 2 dies at step 40")
//   RuntimeError: injected fault: rank 2 dies at step 40
//
// while the peers' end in a communication error ("RuntimeError:
// [./gloo/transport/tcp/pair.cc:598] Connection closed by peer").
//
// Only a traceback that is the last thing its process printed counts: a
// process that printed a traceback and went on (logging.exception, a
// retry) did not exit. After the exception line and its message (the lines
// up to a blank one, C++ frames "frame #3: ..." included) only blank
// lines, hang lines (ParseHangLine) and the launcher's lines (torchrun's,
// torch.distributed.elastic's, its failure table, glog's "[W ...]" at
// exit) may follow in the same process's output. A chained exception
// ("During handling of the above exception, another exception occurred:")
// is one traceback; its last exception is the one that ended the process.
//
// The lines of several processes are told apart by torch 2.x's "[rankN]: "
// prefix or Open MPI's output tag "[1,3]<stderr>:"; the lines without
// either are one process's output. A Markdown quote's "> " is taken off.
//
// Communication errors and the launcher's own exceptions are a
// consequence, not a cause: `communication` is set on an exception whose
// line is a hang line, names gloo / NCCL / a connection, a socket, a
// store, a timeout, the watchdog or a collective, or is torch's
// Dist*Error, torchrun's SignalException / ChildFailedError,
// KeyboardInterrupt or SystemExit; on one raised in torch.distributed's own
// code (its innermost frame's file is under torch/distributed/: an
// EOFError unpickling a broadcast that broke off); and on every exception
// of a chain that holds one.
//
// Not thread-safe; one per file.

#ifndef LAGGARD_INGEST_COMMON_PYTHON_TRACEBACK_H_
#define LAGGARD_INGEST_COMMON_PYTHON_TRACEBACK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace laggard {

struct UncaughtException {
  std::optional<int32_t> rank;  // from the lines' "[rankN]:" or MPI tag; nullopt: neither
  std::string line;             // the exception line as written
  std::string exception;        // "RuntimeError: injected fault ..." (prefixes off, trimmed)
  uint64_t line_number = 0;
  bool communication = false;
};

// True when `exception` ("Type: message") is a communication error or a
// launcher's exception (see above).
bool IsCommunicationException(std::string_view exception);

class PythonTracebacks {
 public:
  // Every line of the file, in order.
  void Offer(std::string_view line, uint64_t line_number);
  // True once the file held a traceback: a reader that takes lines itself
  // (step lines) hands them to WentOn() from then on.
  bool watching() const { return any_; }
  // A line of the file that a reader took as its own (a step line): the
  // process it belongs to went on.
  void WentOn(std::string_view line);
  // The exceptions that end their process's output, in line order.
  std::vector<UncaughtException> Finish();

 private:
  enum class State : uint8_t { kIdle, kFrames, kMessage, kAfter, kChained };
  struct Process {
    State state = State::kIdle;
    std::optional<UncaughtException> pending;  // read; its output may still go on
    std::optional<UncaughtException> before;   // pending when a new traceback began
    bool chain_communication = false;
    bool in_distributed = false;  // the innermost frame so far is torch.distributed's
    uint32_t lines = 0;           // frame or message lines of the current state
  };
  // The process `line` belongs to, and the line with its prefixes off.
  struct Routed {
    std::optional<int32_t> key;
    std::string_view body;
  };
  static Routed Route(std::string_view line);
  Process* Find(std::optional<int32_t> key);
  void Step(Process& p, std::optional<int32_t> key, std::string_view raw, std::string_view body,
            uint64_t line_number);
  void Cancel(Process& p);

  std::map<int32_t, Process> ranked_;
  Process unranked_;
  bool any_ = false;  // a traceback began in the file
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_PYTHON_TRACEBACK_H_
