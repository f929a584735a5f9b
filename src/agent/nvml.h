// The GPU seam of the agent: what the agent asks of a GPU, behind one small
// interface (GpuBackend), with two implementations:
//
//   OpenNvml()        the real one: libnvidia-ml.so.1 loaded at run time with
//                     dlopen (no CUDA headers or libraries at build time; the
//                     few NVML types used are declared in nvml.cc to match
//                     NVML's C ABI), newest symbol first (nvmlInit_v2,
//                     nvmlDeviceGetHandleByIndex_v2,
//                     nvmlDeviceGetCurrentClocksEventReasons falling back to
//                     ...ClocksThrottleReasons);
//   FakeGpuBackend    scripted GPUs for tests and demos (fake_gpu.h).
//
// The interface speaks NVML's language: every query returns an nvmlReturn_t
// code (kNvmlSuccess, kNvmlErrorNotSupported, kNvmlErrorGpuIsLost, ...), so
// the fake can produce exactly the errors a real driver does, and the policy
// that turns codes into metrics (NOT_SUPPORTED = field absent, GPU_IS_LOST =
// laggard_gpu_lost 1, anything else = counted error) lives once, in
// GpuSampler (gpu_sampler.h), tested through the fake.
//
// Thread-safety: a backend is used by one thread at a time (the agent's
// sampling thread).

#ifndef LAGGARD_AGENT_NVML_H_
#define LAGGARD_AGENT_NVML_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard::agent {

// nvmlReturn_t values (nvml.h, stable across driver releases).
inline constexpr int kNvmlSuccess = 0;
inline constexpr int kNvmlErrorUninitialized = 1;
inline constexpr int kNvmlErrorInvalidArgument = 2;
inline constexpr int kNvmlErrorNotSupported = 3;
inline constexpr int kNvmlErrorNoPermission = 4;
inline constexpr int kNvmlErrorNotFound = 6;
inline constexpr int kNvmlErrorInsufficientSize = 7;
inline constexpr int kNvmlErrorDriverNotLoaded = 9;
inline constexpr int kNvmlErrorTimeout = 10;
inline constexpr int kNvmlErrorLibraryNotFound = 12;
inline constexpr int kNvmlErrorFunctionNotFound = 13;
inline constexpr int kNvmlErrorGpuIsLost = 15;
inline constexpr int kNvmlErrorResetRequired = 16;
inline constexpr int kNvmlErrorNoData = 21;
inline constexpr int kNvmlErrorUnknown = 999;

// "NOT_SUPPORTED", "GPU_IS_LOST", ... (the NVML_ERROR_ suffix), or
// "ERROR_<n>" for codes this table does not name.
std::string NvmlErrorName(int code);
// The inverse, for fake-GPU scripts; nullopt for unknown names.
std::optional<int> NvmlErrorFromName(std::string_view name);

// Whether `code` means "this GPU or driver does not offer the field": the
// field is then absent, not an error.
inline bool NvmlFieldAbsent(int code) {
  return code == kNvmlErrorNotSupported || code == kNvmlErrorFunctionNotFound ||
         code == kNvmlErrorNoPermission || code == kNvmlErrorNotFound;
}

// The numeric per-GPU values. Units are NVML's except power (watts, NVML
// gives milliwatts) and are in the names.
enum class GpuField : uint8_t {
  kTempC,
  kSmClockMhz,
  kSmClockMaxMhz,
  kMemClockMhz,
  kMemClockMaxMhz,
  kPowerW,
  kPowerLimitW,         // enforced limit (nvmlDeviceGetEnforcedPowerLimit)
  kPowerLimitDefaultW,  // nvmlDeviceGetPowerManagementDefaultLimit
  kUtilPct,             // nvmlUtilization_t.gpu
  kMemUtilPct,          // nvmlUtilization_t.memory
  kPcieGen,
  kPcieGenMax,
  kPcieWidth,
  kPcieWidthMax,
  kPcieTxKbS,  // KB/s over NVML's 20 ms window
  kPcieRxKbS,
  kClockEvents,  // clock_event:: bitmask (model/hardware.h)
  kEccUncorrectedVolatile,
  kCount,
};
inline constexpr size_t kGpuFieldCount = static_cast<size_t>(GpuField::kCount);

// Snake-case name used in logs and fake scripts: "temp_c", "sm_clock_mhz".
std::string_view GpuFieldName(GpuField f);
std::optional<GpuField> GpuFieldFromName(std::string_view name);
// Fields that do not change while the driver is loaded: read until they
// succeed or are reported absent, then cached.
bool GpuFieldIsStatic(GpuField f);

enum class GpuText : uint8_t { kUuid, kBusId, kName };

// NVML_NVLINK_MAX_LINKS of current drivers; links are probed 0..max-1 and
// the first INVALID_ARGUMENT / NOT_SUPPORTED ends the list.
inline constexpr unsigned kMaxNvLinks = 18;

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // "nvml" or "fake".
  virtual std::string_view kind() const = 0;
  // Number of GPUs; fixed for the backend's life.
  virtual unsigned DeviceCount() const = 0;
  // Each returns an nvmlReturn_t; outputs are valid only on kNvmlSuccess.
  virtual int Read(unsigned gpu, GpuField field, double& value) = 0;
  virtual int ReadText(unsigned gpu, GpuText what, std::string& value) = 0;
  virtual int NvLinkActive(unsigned gpu, unsigned link, bool& active) = 0;
  // XID codes that occurred on `gpu` since the previous call. NOT_SUPPORTED
  // when the driver offers no event API for this GPU.
  virtual int PollXids(unsigned gpu, std::vector<uint64_t>& xids) = 0;
};

// Loads NVML from `library` (a soname searched the usual way, or a path),
// initialises it and opens every GPU. Fails as a whole when the library is
// missing, lacks nvmlInit, or nvmlInit fails (driver not loaded): the caller
// runs without GPUs and says why. A GPU whose handle cannot be obtained is
// kept and reports that error on every query (e.g. GPU_IS_LOST).
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";
StatusOr<std::unique_ptr<GpuBackend>> OpenNvml(const std::string& library = kNvmlLibrary);

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_NVML_H_
