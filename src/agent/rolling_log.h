// A bounded, rotated JSON Lines log: <dir>/<stem>.jsonl is written until it
// would pass max_bytes, then renamed to <stem>.1.jsonl (older ones shift to
// .2, .3 ...; the one past `files` - 1 is deleted) and a new file starts. The
// disk used is therefore at most files x max_bytes (plus one line).
//
// Each new file first gets the lines of the `header` callback (the agent
// writes each GPU's static facts there), so every file can be read alone
// after older ones were rotated away.
//
// Write errors (disk full, directory removed) are counted and the line is
// dropped; the next write tries to reopen. Nothing stops the agent.
//
// Thread-safety: not synchronised; the agent serialises calls.

#ifndef LAGGARD_AGENT_ROLLING_LOG_H_
#define LAGGARD_AGENT_ROLLING_LOG_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard::agent {

class RollingLog {
 public:
  using Header = std::function<std::vector<std::string>()>;

  RollingLog(std::string dir, std::string stem, uint64_t max_bytes, int files,
             Header header = nullptr);
  ~RollingLog();
  RollingLog(const RollingLog&) = delete;
  RollingLog& operator=(const RollingLog&) = delete;

  // Creates the directory if needed and opens <stem>.jsonl for appending
  // (continuing a file left by an earlier run).
  Status Open();
  // Appends one line (without its newline).
  void Append(std::string_view line);
  void Flush();

  std::string path(int generation = 0) const;  // 0: the current file
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t write_errors() const { return write_errors_; }
  uint64_t rotations() const { return rotations_; }

 private:
  bool OpenCurrent();
  void Rotate();
  void Write(std::string_view line);

  std::string dir_, stem_;
  uint64_t max_bytes_;
  int files_;
  Header header_;
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t write_errors_ = 0;
  uint64_t rotations_ = 0;
};

// JSON string literal for `s` (quotes included), escaping what JSON needs.
std::string JsonString(std::string_view s);

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_ROLLING_LOG_H_
