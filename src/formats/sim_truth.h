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

// The 3D-parallel simulator's truth (`laggard simulate --layout`,
// simulator/pipeline/pipeline_writer.cc): layout, fault class, culprit coordinates and
// the what-if slowdown of its own scheduler. Same prefix, so ingest sets it
// aside like the cluster truth.
inline constexpr std::string_view kSimPipelineTruthSchema = "laggard.sim.truth/pipeline-1";
static_assert(kSimPipelineTruthSchema.substr(0, 18) == kSimTruthSchema.substr(0, 18));

}  // namespace laggard::formats

#endif  // LAGGARD_FORMATS_SIM_TRUTH_H_
