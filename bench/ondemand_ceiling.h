// simdjson On-Demand over a piece of traceEvents, one copy per ISA variant
// (ondemand_ceiling.cc): bench_baseline (the build's flags), and with the
// ISA variants built (LAGGARD_BENCH_ISA_VARIANTS) bench_haswell and
// bench_icelake, to be called only when the CPU runs them (the checks
// cmake/isa_variants.cmake lists).
#ifndef LAGGARD_BENCH_ONDEMAND_CEILING_H_
#define LAGGARD_BENCH_ONDEMAND_CEILING_H_

#include <cstddef>
#include <cstdint>

namespace laggard {

#define LAGGARD_BENCH_VARIANT_API(ns)                                                       \
  namespace ns {                                                                            \
  /* Parses doc[0, len) (a JSON array of events, padded): counts the events (count_only) */ \
  /* or visits every member of each. False when it is not valid JSON. */                    \
  bool OnDemandPiece(const char* doc, size_t len, bool count_only, uint64_t& events,        \
                     uint64_t& sum);                                                        \
  /* The kernel On-Demand runs in this copy ("fallback", "haswell", "icelake"). */          \
  const char* OnDemandKernel();                                                             \
  }

LAGGARD_BENCH_VARIANT_API(bench_baseline)
#if defined(LAGGARD_BENCH_ISA_VARIANTS)
LAGGARD_BENCH_VARIANT_API(bench_haswell)
LAGGARD_BENCH_VARIANT_API(bench_icelake)
#endif

}  // namespace laggard

#endif  // LAGGARD_BENCH_ONDEMAND_CEILING_H_
