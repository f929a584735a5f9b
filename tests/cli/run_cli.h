// Runs `laggard ARGS...` in-process (RunLaggard, cli/app.h) and keeps its
// exit code and both streams: the CLI tests' one way to call the program.

#ifndef LAGGARD_TESTS_CLI_RUN_CLI_H_
#define LAGGARD_TESTS_CLI_RUN_CLI_H_

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"

namespace laggard::testing_util {

struct CliResult {
  int rc;
  std::string out, err;
};

inline CliResult RunCli(std::vector<std::string> args, const Terminal& terminal = {},
                        const std::string& argv0 = "laggard") {
  args.insert(args.begin(), argv0);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = RunLaggard(static_cast<int>(argv.size()), argv.data(), out, err, terminal);
  return {rc, out.str(), err.str()};
}

}  // namespace laggard::testing_util

#endif  // LAGGARD_TESTS_CLI_RUN_CLI_H_
