// Why a culprit is slow, in one word: the class the verdict gives each
// culprit (report JSON `cause_class`) and the class the simulator writes
// for each fault it injects (truth.json `cause_class`), so bench/accuracy
// compares the two by the same names. Serialized by CauseClassName():
// append, never rename.

#ifndef LAGGARD_FORMATS_CAUSE_CLASS_H_
#define LAGGARD_FORMATS_CAUSE_CLASS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace laggard {

enum class CauseClass : uint8_t {
  kUnknown,        // the evidence names the culprit, not why
  kComputeSlow,    // its kernels run slower (thermal, power cap, clocks)
  kCommunication,  // its transfers are slow (NIC, port, link, PCIe / NVLink)
  kHostStall,      // its GPU waits for its host (CPU contention, pauses)
  kExternal,       // interference from outside the job (a shared switch, periodic)
  kImbalance,      // it does more work per step (pipeline stage, partition, data)
  kCount,
};

// "unknown", "compute_slow", "communication", "host_stall", "external",
// "imbalance".
constexpr std::string_view CauseClassName(CauseClass c) {
  switch (c) {
    case CauseClass::kUnknown: return "unknown";
    case CauseClass::kComputeSlow: return "compute_slow";
    case CauseClass::kCommunication: return "communication";
    case CauseClass::kHostStall: return "host_stall";
    case CauseClass::kExternal: return "external";
    case CauseClass::kImbalance: return "imbalance";
    case CauseClass::kCount: break;
  }
  return "unknown";
}

// The class whose CauseClassName() is `name`; nullopt for any other word.
constexpr std::optional<CauseClass> ParseCauseClass(std::string_view name) {
  for (size_t i = 0; i < static_cast<size_t>(CauseClass::kCount); ++i) {
    auto c = static_cast<CauseClass>(i);
    if (CauseClassName(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace laggard

#endif  // LAGGARD_FORMATS_CAUSE_CLASS_H_
