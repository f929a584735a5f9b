// The laggard command line: the only place that knows every reader and
// detector and wires them together. main() is a thin shell around
// RunLaggard() so tests can run the real CLI in-process, with the facts of
// the terminal (tty or not, NO_COLOR, TERM) handed in rather than read here.
//
// Called on the main thread; RunLaggard() is not reentrant (the watch
// command installs signal handlers).

#ifndef LAGGARD_CLI_APP_H_
#define LAGGARD_CLI_APP_H_

#include <chrono>
#include <ostream>

namespace laggard {

// Exit codes, for scripts, CI, cron and Slurm epilogs. When several apply,
// the first in this order wins: 2, 3, 1, 4.
inline constexpr int kExitOk = 0;             // diagnosis ran (with or without findings)
inline constexpr int kExitStrictFailure = 1;  // --strict and bad records were found
inline constexpr int kExitNoInput = 2;        // no usable input, or bad usage
inline constexpr int kExitOutputFailed = 3;   // an output (--json/--html/--trace) was not
                                              // written; the verdict was still printed
inline constexpr int kExitFailOn = 4;         // the verdict is one --fail-on names

// What the process knows about where its output goes.
struct Terminal {
  bool stdout_is_tty = false;
  bool stderr_is_tty = false;
  bool no_color = false;  // NO_COLOR set to a non-empty value (no-color.org)
  bool dumb = false;      // TERM=dumb: no escape sequences at all
  // The progress line shows once reading takes longer than this.
  std::chrono::milliseconds progress_after{1500};
};

// isatty() of stdout and stderr, NO_COLOR and TERM of the environment.
Terminal TerminalOfProcess();

int RunLaggard(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
               const Terminal& terminal = {});

}  // namespace laggard

#endif  // LAGGARD_CLI_APP_H_
