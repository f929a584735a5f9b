// Provenance of a datum: which input file and line it came from. Every part
// of the run model carries one so that findings can point at the input.

#ifndef LAGGARD_MODEL_SOURCE_H_
#define LAGGARD_MODEL_SOURCE_H_

#include <cstdint>

namespace laggard {

// Where a datum came from: an index into Run::files and a 1-based line.
struct SourceRef {
  uint32_t file = 0;
  uint32_t line = 0;  // 0 when the datum has no line (binary formats)
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_SOURCE_H_
