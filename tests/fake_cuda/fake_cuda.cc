// A stand-in for the CUDA runtime and cuBLAS (libcudart.so.12 and
// libcublas.so.12 at once), loaded by `laggard gemm --gpus` through the real
// dlopen path (confirm/gpu_gemm.cc) in tests. It computes nothing: each GPU
// has a speed, a GEMM advances that GPU's clock by the time it would take,
// and an event is reached (cudaEventQuery) when the wall clock has caught
// up, so the figures come out of real timing as on a GPU. It checks each call
// as the real libraries would (a buffer too small for the matrix, a wrong
// type or operand, a call on no device: an error), so a mistake in the
// caller fails the test.
//
// Set by environment variables, read when cudaGetDeviceCount is called:
//   FAKE_CUDA_TFLOPS  "400,400,280,400": one GPU per entry, its TFLOP/s
//                     (none: cudaErrorNoDevice)
//   FAKE_CUDA_BUS     "0000:3B:00.0,0000:18:00.0,...": each CUDA device's PCI
//                     bus id (default 0000:18:00.0, 0000:28:00.0, ...)
//   FAKE_CUDA_FAIL    "malloc@2": cudaMalloc on GPU 2 fails (out of memory)
//   FAKE_CUDA_HANG    "1": GPU 1's events are never reached (a hung GPU)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Gpu {
  double tflops = 0;
  std::string bus;
  double virtual_ms = 0;  // the GPU's clock: what it has been given to do
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
};

struct Buffer {
  int device = 0;
  size_t bytes = 0;
};

struct Event {
  int device = -1;
  double at_ms = -1;
};

struct Handle {
  int device = 0;
};

std::mutex mu;
std::vector<Gpu> gpus;
std::string fail;
std::map<const void*, Buffer> buffers;
thread_local int current = 0;

std::vector<std::string> Split(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr || *s == '\0') return out;
  std::string text(s);
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    out.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void Configure() {
  std::lock_guard<std::mutex> lock(mu);
  gpus.clear();
  buffers.clear();
  std::vector<std::string> speeds = Split(std::getenv("FAKE_CUDA_TFLOPS"));
  std::vector<std::string> bus = Split(std::getenv("FAKE_CUDA_BUS"));
  for (size_t i = 0; i < speeds.size(); ++i) {
    Gpu g;
    g.tflops = std::atof(speeds[i].c_str());
    char id[32];
    std::snprintf(id, sizeof(id), "0000:%02X:00.0", static_cast<unsigned>(0x18 + 0x10 * i));
    g.bus = i < bus.size() ? bus[i] : id;
    gpus.push_back(g);
  }
  const char* f = std::getenv("FAKE_CUDA_FAIL");
  fail = f != nullptr ? f : "";
}

bool Fails(const char* call, int device) {
  return fail == std::string(call) + "@" + std::to_string(device);
}

// An idle GPU's clock is the wall clock: work given later starts then.
void CatchUp(Gpu& g) {
  double now_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g.origin)
          .count();
  if (g.virtual_ms < now_ms) g.virtual_ms = now_ms;
}

// A device buffer holding at least `bytes` on the current GPU.
bool Holds(const void* p, size_t bytes) {
  auto it = buffers.find(p);
  return it != buffers.end() && it->second.device == current && it->second.bytes >= bytes;
}

// When the GPU reaches the event on the wall clock.
std::chrono::steady_clock::time_point Due(const Event* ev) {
  std::lock_guard<std::mutex> lock(mu);
  const Gpu& g = gpus[static_cast<size_t>(ev->device)];
  return g.origin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double, std::milli>(ev->at_ms));
}

}  // namespace

extern "C" {

// cudaError_t values: cudaSuccess 0, cudaErrorInvalidValue 1,
// cudaErrorMemoryAllocation 2, cudaErrorInvalidDevice 101, cudaErrorNoDevice 100,
// cudaErrorInvalidResourceHandle 400, cudaErrorNotReady 600.
int cudaGetDeviceCount(int* count) {
  Configure();
  *count = static_cast<int>(gpus.size());
  return gpus.empty() ? 100 : 0;
}

int cudaSetDevice(int device) {
  std::lock_guard<std::mutex> lock(mu);
  if (device < 0 || device >= static_cast<int>(gpus.size())) return 101;
  current = device;
  return 0;
}

int cudaDeviceGetPCIBusId(char* out, int len, int device) {
  std::lock_guard<std::mutex> lock(mu);
  if (device < 0 || device >= static_cast<int>(gpus.size())) return 101;
  std::snprintf(out, static_cast<size_t>(len), "%s", gpus[static_cast<size_t>(device)].bus.c_str());
  return 0;
}

int cudaMalloc(void** p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (Fails("malloc", current)) return 2;
  // An address that is never dereferenced: the size is only bookkeeping.
  *p = std::malloc(1);
  buffers[*p] = {current, bytes};
  return 0;
}

int cudaFree(void* p) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = buffers.find(p);
  if (it == buffers.end()) return 1;
  buffers.erase(it);
  std::free(p);
  return 0;
}

int cudaMemcpy(void* dst, const void* src, size_t bytes, int kind) {
  std::lock_guard<std::mutex> lock(mu);
  if (kind != 1 || src == nullptr || !Holds(dst, bytes)) return 1;
  return 0;
}

int cudaEventCreate(void** e) {
  *e = new Event();
  return 0;
}

int cudaEventDestroy(void* e) {
  delete static_cast<Event*>(e);
  return 0;
}

int cudaEventRecord(void* e, void* stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (e == nullptr || stream != nullptr) return 400;
  auto* ev = static_cast<Event*>(e);
  ev->device = current;
  CatchUp(gpus[static_cast<size_t>(current)]);
  ev->at_ms = gpus[static_cast<size_t>(current)].virtual_ms;
  return 0;
}

// cudaErrorNotReady (600) until the GPU has reached the event.
int cudaEventQuery(void* e) {
  auto* ev = static_cast<Event*>(e);
  if (ev == nullptr || ev->device < 0) return 400;
  if (const char* hang = std::getenv("FAKE_CUDA_HANG");
      hang != nullptr && std::atoi(hang) == ev->device) {
    return 600;  // this GPU never finishes
  }
  return std::chrono::steady_clock::now() >= Due(ev) ? 0 : 600;
}

int cudaEventElapsedTime(float* ms, void* a, void* b) {
  auto* x = static_cast<Event*>(a);
  auto* y = static_cast<Event*>(b);
  if (x == nullptr || y == nullptr || x->device < 0 || x->device != y->device) return 400;
  // As the runtime: not before both events are reached.
  if (std::chrono::steady_clock::now() < Due(y)) return 600;
  *ms = static_cast<float>(y->at_ms - x->at_ms);
  return 0;
}

const char* cudaGetErrorString(int code) {
  switch (code) {
    case 0: return "no error";
    case 1: return "invalid argument";
    case 2: return "out of memory";
    case 100: return "no CUDA-capable device is detected";
    case 101: return "invalid device ordinal";
    default: return "unknown error";
  }
}

int cudaRuntimeGetVersion(int* v) {
  *v = 12020;
  return 0;
}

// cublasStatus_t: CUBLAS_STATUS_SUCCESS 0, NOT_INITIALIZED 1,
// INVALID_VALUE 7.
int cublasCreate_v2(void** h) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (gpus.empty()) return 1;
    // A GPU's clock starts when work can first be given to it.
    gpus[static_cast<size_t>(current)].origin = std::chrono::steady_clock::now();
    gpus[static_cast<size_t>(current)].virtual_ms = 0;
  }
  *h = new Handle{current};
  return 0;
}

int cublasDestroy_v2(void* h) {
  delete static_cast<Handle*>(h);
  return 0;
}

int cublasGetProperty(int type, int* value) {
  static const int version[] = {12, 2, 5};
  if (type < 0 || type > 2) return 7;
  *value = version[type];
  return 0;
}

int cublasGemmEx(void* handle, int transa, int transb, int m, int n, int k, const void* alpha,
                 const void* a, int atype, int lda, const void* b, int btype, int ldb,
                 const void* beta, void* c, int ctype, int ldc, int compute, int algo) {
  std::lock_guard<std::mutex> lock(mu);
  auto* h = static_cast<Handle*>(handle);
  if (h == nullptr || h->device != current) return 7;
  if (transa != 0 || transb != 0 || m <= 0 || n <= 0 || k <= 0 || lda < m || ldb < k || ldc < m) {
    return 7;
  }
  if (atype != btype || btype != ctype || (atype != 0 && atype != 2 && atype != 14)) return 7;
  if (compute != 68 || algo != -1 || alpha == nullptr || beta == nullptr) return 7;
  size_t elem = atype == 0 ? 4 : 2;
  size_t mk = static_cast<size_t>(m) * static_cast<size_t>(k) * elem;
  size_t kn = static_cast<size_t>(k) * static_cast<size_t>(n) * elem;
  size_t mn = static_cast<size_t>(m) * static_cast<size_t>(n) * elem;
  if (!Holds(a, mk) || !Holds(b, kn) || !Holds(c, mn)) return 7;
  Gpu& g = gpus[static_cast<size_t>(current)];
  double flops = 2.0 * m * n * static_cast<double>(k);
  CatchUp(g);
  g.virtual_ms += flops / (g.tflops * 1e12) * 1e3;
  return 0;
}

}  // extern "C"
