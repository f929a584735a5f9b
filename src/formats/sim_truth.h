// The simulator's answer key: `laggard simulate` writes truth.json (the
// faults it injected and their measured effects; docs/simulator.md) into
// every run directory. Its schema name lets ingest tell it apart from an
// input it cannot read: diagnose never reads the answer to what it is asked.
//
// The simulator's truth writer writes kSimTruthSchema; ingest looks for it
// in the head of a file no reader took.

#ifndef LAGGARD_FORMATS_SIM_TRUTH_H_
#define LAGGARD_FORMATS_SIM_TRUTH_H_

#include <string_view>

namespace laggard::formats {

// Versioned: "laggard.sim.truth/1"; ingest matches kSimTruthSchemaPrefix so
// later versions are recognised too.
inline constexpr std::string_view kSimTruthSchema = "laggard.sim.truth/1";
inline constexpr std::string_view kSimTruthSchemaPrefix = "\"laggard.sim.truth/";
static_assert(kSimTruthSchemaPrefix.substr(1) == kSimTruthSchema.substr(0, 18));

}  // namespace laggard::formats

#endif  // LAGGARD_FORMATS_SIM_TRUTH_H_
