// A stand-in for libnvidia-ml.so.1, loaded by the agent tests through the
// real dlopen path (agent/nvml.cc: OpenNvml). It exports only what it needs
// to prove the loader's rules:
//   - newest symbol first: the unversioned nvmlInit and
//     nvmlDeviceGetHandleByIndex fail, their _v2 forms work;
//   - fallback: only nvmlDeviceGetCurrentClocksThrottleReasons is exported
//     (the pre-r535 name), not ...ClocksEventReasons;
//   - absent functions (nvmlDeviceGetTotalEccErrors, nvmlDeviceGetPcieThroughput,
//     the default power limit) make their fields absent;
//   - GPU 1 answers GPU_IS_LOST to every query after its handle;
//   - one XID 79 event is queued for GPU 0.
// Values match NVML's units: milliwatts, MHz, degrees C.

#include <cstring>

extern "C" {

struct nvmlDevice_st {
  int index;
};
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st {
  int pending;
};
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

static nvmlDevice_st g_devices[2] = {{0}, {1}};
static nvmlEventSet_st g_events = {0};
static bool g_initialised = false;

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kUninitialised = 1,
              kTimeout = 10, kGpuIsLost = 15, kUnknown = 999;

static int Check(nvmlDevice_t d) {
  if (!g_initialised) return kUninitialised;
  if (d == nullptr) return kInvalidArgument;
  return d->index == 1 ? kGpuIsLost : kSuccess;
}

int nvmlInit() { return kUnknown; }  // the loader must prefer nvmlInit_v2
int nvmlInit_v2() {
  g_initialised = true;
  g_events.pending = 0;
  return kSuccess;
}
int nvmlShutdown() {
  g_initialised = false;
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex(unsigned int, nvmlDevice_t*) { return kUnknown; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i > 1) return kInvalidArgument;
  *d = &g_devices[i];
  return kSuccess;
}
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int* t) {
  if (int rc = Check(d)) return rc;
  if (sensor != 0) return kInvalidArgument;
  *t = 83;
  return kSuccess;
}
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (int rc = Check(d)) return rc;
  *mhz = type == 1 ? 1410 : (type == 2 ? 2619 : 0);
  return type == 1 || type == 2 ? kSuccess : kInvalidArgument;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (int rc = Check(d)) return rc;
  *mhz = type == 1 ? 1980 : 2619;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  if (int rc = Check(d)) return rc;
  *mw = 412345;
  return kSuccess;
}
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int* mw) {
  if (int rc = Check(d)) return rc;
  *mw = 500000;
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  if (int rc = Check(d)) return rc;
  u->gpu = 97;
  u->memory = 41;
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int* g) {
  if (int rc = Check(d)) return rc;
  *g = 3;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int* g) {
  if (int rc = Check(d)) return rc;
  *g = 5;
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int* w) {
  if (int rc = Check(d)) return rc;
  *w = 8;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int* w) {
  if (int rc = Check(d)) return rc;
  *w = 16;
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* r) {
  if (int rc = Check(d)) return rc;
  *r = 0x40;  // hw_thermal_slowdown
  return kSuccess;
}
int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int* active) {
  if (int rc = Check(d)) return rc;
  if (link >= 2) return kInvalidArgument;
  *active = link == 0 ? 1 : 0;
  return kSuccess;
}
int nvmlDeviceGetUUID(nvmlDevice_t d, char* buf, unsigned int len) {
  if (int rc = Check(d)) return rc;
  const char* uuid = "GPU-12345678-abcd-ef01-2345-6789abcdef01";
  if (len <= std::strlen(uuid)) return 7;
  std::strcpy(buf, uuid);
  return kSuccess;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* buf, unsigned int len) {
  if (int rc = Check(d)) return rc;
  std::strncpy(buf, "NVIDIA A100-SXM4-80GB", len);
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  if (int rc = Check(d)) return rc;
  std::memset(pci, 0, sizeof *pci);
  std::strcpy(pci->busIdLegacy, "0000:07:00.0");
  std::strcpy(pci->busId, "00000000:07:00.0");
  pci->bus = 7;
  return kSuccess;
}
int nvmlEventSetCreate(nvmlEventSet_t* set) {
  g_events.pending = 1;
  *set = &g_events;
  return kSuccess;
}
int nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t) {
  if (int rc = Check(d)) return rc;
  return (types & 0x8) != 0 ? kSuccess : kNotSupported;
}
int nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int) {
  if (set->pending == 0) return kTimeout;
  --set->pending;
  std::memset(data, 0, sizeof *data);
  data->device = &g_devices[0];
  data->eventType = 0x8;
  data->eventData = 79;
  return kSuccess;
}
int nvmlEventSetFree(nvmlEventSet_t) { return kSuccess; }

}  // extern "C"
