// `laggard formats`: the input formats laggard recognises, one line each:
// the reader's name (as `laggard inspect` and the JSON report name it) and
// what it reads, in the order readers are tried. The names come from the
// reader registry (ingest/readers.h); the words from a table here, which
// must describe every reader (tests/cli/cli_test.cc checks it).
//
// Called from RunLaggard() on the main thread.

#ifndef LAGGARD_CLI_FORMATS_H_
#define LAGGARD_CLI_FORMATS_H_

#include <optional>
#include <ostream>
#include <string_view>

namespace laggard {

// What the reader called `name` reads, in a few words; nullopt for a name
// the table lacks.
std::optional<std::string_view> FormatDescription(std::string_view reader_name);

// Prints the list; returns kExitOk.
int PrintFormats(std::ostream& out);

}  // namespace laggard

#endif  // LAGGARD_CLI_FORMATS_H_
