#include "agent/nvml.h"

#include <dlfcn.h>

#include <array>
#include <cstring>
#include <deque>
#include <map>

#include <fmt/format.h>

namespace laggard::agent {
namespace {

// The slice of NVML's C ABI the agent uses, declared here instead of
// including nvml.h (no CUDA at build time). Layouts follow nvml.h of
// drivers >= 450; each is used only through the function it belongs to.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct nvmlPciInfo_t {  // nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct nvmlEventData_t {  // nvmlEventSetWait_v2
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

constexpr int kClockSm = 1;                    // NVML_CLOCK_SM
constexpr int kClockMem = 2;                   // NVML_CLOCK_MEM
constexpr int kTemperatureGpu = 0;             // NVML_TEMPERATURE_GPU
constexpr int kPcieTxBytes = 0;                // NVML_PCIE_UTIL_TX_BYTES
constexpr int kPcieRxBytes = 1;                // NVML_PCIE_UTIL_RX_BYTES
constexpr int kMemoryErrorUncorrected = 1;     // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                // NVML_VOLATILE_ECC
constexpr unsigned long long kEventXid = 0x8;  // nvmlEventTypeXidCriticalError
constexpr unsigned kUuidBufferSize = 96;       // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kNameBufferSize = 96;       // NVML_DEVICE_NAME_V2_BUFFER_SIZE

struct Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*enforced_limit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*default_limit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*ecc_total)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
};

struct DlCloser {
  void operator()(void* h) const {
    if (h != nullptr) dlclose(h);
  }
};
using DlHandle = std::unique_ptr<void, DlCloser>;

// The first of `names` the library exports, cast to `fn`'s type; null when
// none is (the field is then absent: FUNCTION_NOT_FOUND).
template <typename Fn>
void Resolve(void* lib, Fn& fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* sym = dlsym(lib, n)) {
      fn = reinterpret_cast<Fn>(sym);
      return;
    }
  }
  fn = nullptr;
}

class NvmlBackend final : public GpuBackend {
 public:
  NvmlBackend(DlHandle lib, const Api& api) : lib_(std::move(lib)), api_(api) {}

  ~NvmlBackend() override {
    if (events_ != nullptr && api_.event_set_free != nullptr) api_.event_set_free(events_);
    if (api_.shutdown != nullptr) api_.shutdown();
    // lib_ is closed after NVML is shut down (member destruction).
  }

  // Opens every device; events for XIDs where the driver allows.
  void OpenDevices(unsigned count) {
    devices_.resize(count);
    for (unsigned i = 0; i < count; ++i) {
      Device& d = devices_[i];
      d.open_code = api_.handle_by_index(i, &d.handle);
    }
    if (api_.event_set_create == nullptr || api_.register_events == nullptr ||
        api_.event_set_wait == nullptr || api_.event_set_create(&events_) != kNvmlSuccess) {
      events_ = nullptr;
      return;
    }
    for (Device& d : devices_) {
      if (d.open_code != kNvmlSuccess) continue;
      d.xid_events = api_.register_events(d.handle, kEventXid, events_) == kNvmlSuccess;
    }
  }

  std::string_view kind() const override { return "nvml"; }
  unsigned DeviceCount() const override { return static_cast<unsigned>(devices_.size()); }

  int Read(unsigned gpu, GpuField field, double& value) override {
    nvmlDevice_t h;
    if (int rc = Handle(gpu, h); rc != kNvmlSuccess) return rc;
    unsigned int u = 0;
    unsigned long long ull = 0;
    auto call_u = [&](auto fn, auto... args) -> int {
      if (fn == nullptr) return kNvmlErrorFunctionNotFound;
      int rc = fn(h, args..., &u);
      if (rc == kNvmlSuccess) value = static_cast<double>(u);
      return rc;
    };
    switch (field) {
      case GpuField::kTempC: return call_u(api_.temperature, kTemperatureGpu);
      case GpuField::kSmClockMhz: return call_u(api_.clock, kClockSm);
      case GpuField::kSmClockMaxMhz: return call_u(api_.max_clock, kClockSm);
      case GpuField::kMemClockMhz: return call_u(api_.clock, kClockMem);
      case GpuField::kMemClockMaxMhz: return call_u(api_.max_clock, kClockMem);
      case GpuField::kPowerW:
      case GpuField::kPowerLimitW:
      case GpuField::kPowerLimitDefaultW: {
        auto fn = field == GpuField::kPowerW        ? api_.power_usage
                  : field == GpuField::kPowerLimitW ? api_.enforced_limit
                                                    : api_.default_limit;
        int rc = call_u(fn);
        if (rc == kNvmlSuccess) value = u / 1000.0;  // milliwatts
        return rc;
      }
      case GpuField::kUtilPct:
      case GpuField::kMemUtilPct: {
        if (api_.utilization == nullptr) return kNvmlErrorFunctionNotFound;
        nvmlUtilization_t util{};
        int rc = api_.utilization(h, &util);
        if (rc == kNvmlSuccess) value = field == GpuField::kUtilPct ? util.gpu : util.memory;
        return rc;
      }
      case GpuField::kPcieGen: return call_u(api_.pcie_gen);
      case GpuField::kPcieGenMax: return call_u(api_.pcie_gen_max);
      case GpuField::kPcieWidth: return call_u(api_.pcie_width);
      case GpuField::kPcieWidthMax: return call_u(api_.pcie_width_max);
      case GpuField::kPcieTxKbS: return call_u(api_.pcie_throughput, kPcieTxBytes);
      case GpuField::kPcieRxKbS: return call_u(api_.pcie_throughput, kPcieRxBytes);
      case GpuField::kClockEvents: {
        if (api_.clock_reasons == nullptr) return kNvmlErrorFunctionNotFound;
        int rc = api_.clock_reasons(h, &ull);
        if (rc == kNvmlSuccess) value = static_cast<double>(ull);
        return rc;
      }
      case GpuField::kEccUncorrectedVolatile: {
        if (api_.ecc_total == nullptr) return kNvmlErrorFunctionNotFound;
        int rc = api_.ecc_total(h, kMemoryErrorUncorrected, kVolatileEcc, &ull);
        if (rc == kNvmlSuccess) value = static_cast<double>(ull);
        return rc;
      }
      case GpuField::kCount: break;
    }
    return kNvmlErrorInvalidArgument;
  }

  int ReadText(unsigned gpu, GpuText what, std::string& value) override {
    nvmlDevice_t h;
    if (int rc = Handle(gpu, h); rc != kNvmlSuccess) return rc;
    if (what == GpuText::kBusId) {
      if (api_.pci_info == nullptr) return kNvmlErrorFunctionNotFound;
      nvmlPciInfo_t pci{};
      int rc = api_.pci_info(h, &pci);
      if (rc == kNvmlSuccess) value.assign(pci.busId, strnlen(pci.busId, sizeof pci.busId));
      return rc;
    }
    auto fn = what == GpuText::kUuid ? api_.uuid : api_.name;
    if (fn == nullptr) return kNvmlErrorFunctionNotFound;
    std::array<char, std::max(kUuidBufferSize, kNameBufferSize)> buf{};
    int rc = fn(h, buf.data(), static_cast<unsigned>(buf.size()));
    if (rc == kNvmlSuccess) value.assign(buf.data(), strnlen(buf.data(), buf.size()));
    return rc;
  }

  int NvLinkActive(unsigned gpu, unsigned link, bool& active) override {
    nvmlDevice_t h;
    if (int rc = Handle(gpu, h); rc != kNvmlSuccess) return rc;
    if (api_.nvlink_state == nullptr) return kNvmlErrorFunctionNotFound;
    int state = 0;  // nvmlEnableState_t
    int rc = api_.nvlink_state(h, link, &state);
    if (rc == kNvmlSuccess) active = state != 0;
    return rc;
  }

  int PollXids(unsigned gpu, std::vector<uint64_t>& xids) override {
    xids.clear();
    if (gpu >= devices_.size()) return kNvmlErrorInvalidArgument;
    Device& d = devices_[gpu];
    if (d.open_code != kNvmlSuccess) return d.open_code;
    if (events_ == nullptr || !d.xid_events) return kNvmlErrorNotSupported;
    Drain();
    xids.assign(d.pending_xids.begin(), d.pending_xids.end());
    d.pending_xids.clear();
    return kNvmlSuccess;
  }

 private:
  struct Device {
    nvmlDevice_t handle = nullptr;
    int open_code = kNvmlErrorUninitialized;
    bool xid_events = false;
    std::deque<uint64_t> pending_xids;
  };

  int Handle(unsigned gpu, nvmlDevice_t& h) const {
    if (gpu >= devices_.size()) return kNvmlErrorInvalidArgument;
    h = devices_[gpu].handle;
    return devices_[gpu].open_code;
  }

  // Moves every event waiting in the set (timeout 0: no blocking) to its
  // device's queue. Bounded so a storm cannot hold the sampler.
  void Drain() {
    for (int i = 0; i < 256; ++i) {
      nvmlEventData_t ev{};
      if (api_.event_set_wait(events_, &ev, 0) != kNvmlSuccess) return;
      if ((ev.eventType & kEventXid) == 0) continue;
      for (Device& d : devices_) {
        if (d.handle == ev.device && d.pending_xids.size() < 1024)
          d.pending_xids.push_back(ev.eventData);
      }
    }
  }

  DlHandle lib_;
  Api api_;
  std::vector<Device> devices_;
  nvmlEventSet_t events_ = nullptr;
};

struct ErrorName {
  int code;
  std::string_view name;
};
constexpr ErrorName kErrorNames[] = {
    {kNvmlSuccess, "SUCCESS"},
    {kNvmlErrorUninitialized, "UNINITIALIZED"},
    {kNvmlErrorInvalidArgument, "INVALID_ARGUMENT"},
    {kNvmlErrorNotSupported, "NOT_SUPPORTED"},
    {kNvmlErrorNoPermission, "NO_PERMISSION"},
    {5, "ALREADY_INITIALIZED"},
    {kNvmlErrorNotFound, "NOT_FOUND"},
    {kNvmlErrorInsufficientSize, "INSUFFICIENT_SIZE"},
    {8, "INSUFFICIENT_POWER"},
    {kNvmlErrorDriverNotLoaded, "DRIVER_NOT_LOADED"},
    {kNvmlErrorTimeout, "TIMEOUT"},
    {11, "IRQ_ISSUE"},
    {kNvmlErrorLibraryNotFound, "LIBRARY_NOT_FOUND"},
    {kNvmlErrorFunctionNotFound, "FUNCTION_NOT_FOUND"},
    {14, "CORRUPTED_INFOROM"},
    {kNvmlErrorGpuIsLost, "GPU_IS_LOST"},
    {kNvmlErrorResetRequired, "RESET_REQUIRED"},
    {17, "OPERATING_SYSTEM"},
    {18, "LIB_RM_VERSION_MISMATCH"},
    {19, "IN_USE"},
    {20, "MEMORY"},
    {kNvmlErrorNoData, "NO_DATA"},
    {kNvmlErrorUnknown, "UNKNOWN"},
};

constexpr std::string_view kFieldNames[kGpuFieldCount] = {
    "temp_c",
    "sm_clock_mhz",
    "sm_clock_max_mhz",
    "mem_clock_mhz",
    "mem_clock_max_mhz",
    "power_w",
    "power_limit_w",
    "power_limit_default_w",
    "util_pct",
    "mem_util_pct",
    "pcie_gen",
    "pcie_gen_max",
    "pcie_width",
    "pcie_width_max",
    "pcie_tx_kb_s",
    "pcie_rx_kb_s",
    "clock_events",
    "ecc_uncorrected_volatile",
};

}  // namespace

std::string NvmlErrorName(int code) {
  for (const ErrorName& e : kErrorNames) {
    if (e.code == code) return std::string(e.name);
  }
  return fmt::format("ERROR_{}", code);
}

std::optional<int> NvmlErrorFromName(std::string_view name) {
  for (const ErrorName& e : kErrorNames) {
    if (e.name == name) return e.code;
  }
  return std::nullopt;
}

std::string_view GpuFieldName(GpuField f) {
  size_t i = static_cast<size_t>(f);
  return i < kGpuFieldCount ? kFieldNames[i] : std::string_view("?");
}

std::optional<GpuField> GpuFieldFromName(std::string_view name) {
  for (size_t i = 0; i < kGpuFieldCount; ++i) {
    if (kFieldNames[i] == name) return static_cast<GpuField>(i);
  }
  return std::nullopt;
}

bool GpuFieldIsStatic(GpuField f) {
  return f == GpuField::kSmClockMaxMhz || f == GpuField::kMemClockMaxMhz ||
         f == GpuField::kPowerLimitDefaultW || f == GpuField::kPcieGenMax ||
         f == GpuField::kPcieWidthMax;
}

StatusOr<std::unique_ptr<GpuBackend>> OpenNvml(const std::string& library) {
  DlHandle lib(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib) {
    const char* why = dlerror();
    return Status::Error(fmt::format("cannot load {} ({}); is the NVIDIA driver installed?",
                                     library, why != nullptr ? why : "unknown error"));
  }
  void* h = lib.get();
  Api api;
  Resolve(h, api.init, {"nvmlInit_v2", "nvmlInit"});
  Resolve(h, api.shutdown, {"nvmlShutdown"});
  Resolve(h, api.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  Resolve(h, api.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  Resolve(h, api.temperature, {"nvmlDeviceGetTemperature"});
  Resolve(h, api.clock, {"nvmlDeviceGetClockInfo"});
  Resolve(h, api.max_clock, {"nvmlDeviceGetMaxClockInfo"});
  Resolve(h, api.power_usage, {"nvmlDeviceGetPowerUsage"});
  Resolve(h, api.enforced_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  Resolve(h, api.default_limit, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  Resolve(h, api.utilization, {"nvmlDeviceGetUtilizationRates"});
  Resolve(h, api.pcie_gen, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  Resolve(h, api.pcie_gen_max, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  Resolve(h, api.pcie_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  Resolve(h, api.pcie_width_max, {"nvmlDeviceGetMaxPcieLinkWidth"});
  Resolve(h, api.pcie_throughput, {"nvmlDeviceGetPcieThroughput"});
  Resolve(h, api.clock_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  Resolve(h, api.ecc_total, {"nvmlDeviceGetTotalEccErrors"});
  Resolve(h, api.nvlink_state, {"nvmlDeviceGetNvLinkState"});
  Resolve(h, api.uuid, {"nvmlDeviceGetUUID"});
  Resolve(h, api.name, {"nvmlDeviceGetName"});
  Resolve(h, api.pci_info, {"nvmlDeviceGetPciInfo_v3"});
  Resolve(h, api.event_set_create, {"nvmlEventSetCreate"});
  Resolve(h, api.register_events, {"nvmlDeviceRegisterEvents"});
  Resolve(h, api.event_set_wait, {"nvmlEventSetWait_v2"});
  Resolve(h, api.event_set_free, {"nvmlEventSetFree"});
  if (api.init == nullptr || api.device_count == nullptr || api.handle_by_index == nullptr) {
    return Status::Error(
        fmt::format("{} lacks nvmlInit / nvmlDeviceGetCount / "
                    "nvmlDeviceGetHandleByIndex; not an NVML library",
                    library));
  }
  if (int rc = api.init(); rc != kNvmlSuccess) {
    return Status::Error(fmt::format("nvmlInit failed: {} (is the NVIDIA kernel driver loaded?)",
                                     NvmlErrorName(rc)));
  }
  unsigned count = 0;
  if (int rc = api.device_count(&count); rc != kNvmlSuccess) {
    if (api.shutdown != nullptr) api.shutdown();
    return Status::Error(fmt::format("nvmlDeviceGetCount failed: {}", NvmlErrorName(rc)));
  }
  auto backend = std::make_unique<NvmlBackend>(std::move(lib), api);
  backend->OpenDevices(count);
  return std::unique_ptr<GpuBackend>(std::move(backend));
}

}  // namespace laggard::agent
