// The laggard command line: the only place that knows every reader and
// detector and wires them together. main() is a thin shell around
// RunLaggard() so tests can run the real CLI in-process.

#ifndef LAGGARD_CLI_APP_H_
#define LAGGARD_CLI_APP_H_

#include <ostream>

namespace laggard {

// Exit codes.
inline constexpr int kExitOk = 0;              // diagnosis ran (with or without findings)
inline constexpr int kExitStrictFailure = 1;   // --strict and bad records were found
inline constexpr int kExitNoInput = 2;         // no usable input, or bad usage

// `stdout_is_tty` decides colour and progress output.
int RunLaggard(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
               bool stdout_is_tty = false, bool stderr_is_tty = false);

}  // namespace laggard

#endif  // LAGGARD_CLI_APP_H_
