// Running a command without a shell, its output captured and a time limit
// kept; an argv as a shell would need it typed; this machine's name. `history drain
// --apply` and `confirm --launcher local` run their commands with it.
// RunCommand() blocks the calling thread until the command ends or is killed.

#ifndef LAGGARD_BASE_PROCESS_H_
#define LAGGARD_BASE_PROCESS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace laggard {

// Whether `pid`'s chain of parents (`parent`: pid -> ppid, as far as
// known; at most 64 links) reaches one of `ancestors`: a descendant of
// theirs (a data loader's workers of a rank, a compile pool's).
bool DescendsFrom(int64_t pid, const std::map<int64_t, int64_t>& parent,
                  const std::set<int64_t>& ancestors);

// This machine's host name (gethostname); `fallback` when it cannot be read.
std::string LocalHostName(const std::string& fallback = "localhost");

// `argv` as a shell would need it typed: words with spaces or quotes quoted
// (KEY=VALUE keeps its key bare: Reason='laggard: ...').
std::string ShellText(const std::vector<std::string>& argv);

struct CommandResult {
  std::optional<int> exit_code;  // nullopt: could not start, or killed
  std::string output;            // stdout and stderr, cut to `output_limit`; why when not run
};

// Runs `argv` (PATH lookup, no shell, stdin from /dev/null, its own process
// group), its output captured until it ends, killed with its group after
// `timeout_s`. It ends when its own process exits: children it leaves
// behind are killed then, and do not hold the call past its end.
CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         size_t output_limit = 4096);

}  // namespace laggard

#endif  // LAGGARD_BASE_PROCESS_H_
