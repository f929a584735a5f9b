#include "confirm/gpu_gemm.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "base/dynamic_library.h"
#include "base/process.h"
#include "base/stats/robust_stats.h"
#include "base/text.h"
#include "model/hardware.h"

namespace laggard::confirm {

// The CUDA runtime's and cuBLAS's C ABI, as much as is used. Handles,
// events and streams are opaque pointers; errors and enums are ints.
struct Cuda::Api {
  int (*get_device_count)(int*) = nullptr;
  int (*set_device)(int) = nullptr;
  int (*device_pci_bus_id)(char*, int, int) = nullptr;
  int (*malloc_device)(void**, size_t) = nullptr;
  int (*free_device)(void*) = nullptr;
  int (*memcpy_)(void*, const void*, size_t, int) = nullptr;
  int (*event_create)(void**) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_query)(void*) = nullptr;
  int (*event_elapsed_time)(float*, void*, void*) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*runtime_version)(int*) = nullptr;
  int (*blas_create)(void**) = nullptr;
  int (*blas_destroy)(void*) = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*,
                 int, int, const void*, void*, int, int, int, int) = nullptr;
  int (*blas_property)(int, int*) = nullptr;  // cublasGetProperty, optional
};

namespace {

// cudaMemcpyKind, cublasOperation_t, cudaDataType_t, cublasComputeType_t,
// cublasGemmAlgo_t (driver_types.h, library_types.h, cublas_api.h).
constexpr int kHostToDevice = 1;
constexpr int kOpN = 0;
constexpr int kR32F = 0;
constexpr int kR16F = 2;
constexpr int kR16BF = 14;
constexpr int kCompute32F = 68;
constexpr int kGemmDefault = -1;
constexpr int kNotReady = 600;  // cudaErrorNotReady

// `given` (--cudart-lib / --cublas-lib) alone, else the sonames in order.
void* OpenFirst(const std::string& given, std::initializer_list<const char*> sonames,
                std::string& tried) {
  if (!given.empty()) return OpenFirstLibrary({given}, tried);
  return OpenFirstLibrary(std::vector<std::string>(sonames.begin(), sonames.end()), tried);
}

// "00000000:3B:00.0" and "0000:3b:00.0" alike: the domain as a number and
// the rest lower case.
std::string BusKey(std::string_view id) {
  size_t colon = id.find(':');
  if (colon == std::string_view::npos) return std::string(id);
  unsigned long domain = std::strtoul(std::string(id.substr(0, colon)).c_str(), nullptr, 16);
  return fmt::format("{:x}:{}", domain, ToLower(id.substr(colon + 1)));
}

struct Device {
  int cuda = 0;   // CUDA's index
  int label = 0;  // NVML's (nvidia-smi's) index, else CUDA's
  std::optional<unsigned> nvml;
  std::string bus;
  bool clash = false;  // not in NVML, and its CUDA index is another GPU's NVML index
};

// One GPU's worker, shared with its thread (which may outlive the run when
// its GPU hangs): its stage, its bursts' rates, or what failed.
struct Worker {
  enum Stage { kSettingUp, kReady, kTiming, kDone };
  std::atomic<int> stage{kSettingUp};
  std::atomic<int> go{0};  // 1: start; -1: abandoned (it took too long)
  std::vector<double> rates;
  int reps = 0;
  double timed_s = 0;  // the timed bursts' GPU time
  std::string failure;
};

int ElementBytes(std::string_view dtype) { return dtype == "fp32" ? 4 : 2; }
int DataType(std::string_view dtype) {
  return dtype == "fp32" ? kR32F : dtype == "fp16" ? kR16F : kR16BF;
}

// The random matrix every GPU multiplies by itself, in the GEMM's type.
std::vector<unsigned char> HostMatrix(int n, std::string_view dtype) {
  size_t elems = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<unsigned char> bytes(elems * static_cast<size_t>(ElementBytes(dtype)));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < elems; ++i) {
    float f = u(rng);
    if (dtype == "fp32") {
      std::memcpy(&bytes[i * 4], &f, 4);
    } else {
      uint16_t h = dtype == "fp16" ? HalfBits(f) : Bfloat16Bits(f);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  return bytes;
}

std::string CudaError(const Cuda::Api& api, const char* call, int code) {
  const char* text = api.error_string != nullptr ? api.error_string(code) : nullptr;
  return fmt::format("{}: {} (error {})", call, text != nullptr ? text : "unknown", code);
}

using Clock = std::chrono::steady_clock;

// Waits for `ev` (cudaEventQuery, so a GPU that hangs cannot block the
// thread forever): 0, an error, or -1 past the deadline.
template <typename TimePoint>
int WaitEvent(const Cuda::Api& api, void* ev, TimePoint deadline) {
  while (true) {
    int rc = api.event_query(ev);
    if (rc != kNotReady) return rc;
    if (Clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Runs on its own thread: sets up, waits for the others (go), warms up,
// then times bursts until the deadline.
void TimeOneGpu(const Cuda::Api& api, int cuda, const GpuGemmOptions& o,
                std::shared_ptr<const std::vector<unsigned char>> host, std::shared_ptr<Worker> w) {
  void* handle = nullptr;
  void* buf[3] = {nullptr, nullptr, nullptr};
  void* ev[2] = {nullptr, nullptr};
  size_t bytes = host->size();
  auto fail = [&](const char* call, int code) {
    if (w->failure.empty()) w->failure = CudaError(api, call, code);
  };
  auto setup = [&] {
    if (int e = api.set_device(cuda)) return fail("cudaSetDevice", e);
    for (void*& b : buf) {
      if (int e = api.malloc_device(&b, bytes)) return fail("cudaMalloc", e);
    }
    for (int i = 0; i < 2; ++i) {
      if (int e = api.memcpy_(buf[i], host->data(), bytes, kHostToDevice)) {
        return fail("cudaMemcpy", e);
      }
    }
    for (void*& e : ev) {
      if (int c = api.event_create(&e)) return fail("cudaEventCreate", c);
    }
    if (int e = api.blas_create(&handle)) {
      w->failure = fmt::format("cublasCreate: status {}", e);
    }
  };
  setup();
  w->stage = Worker::kReady;
  while (w->go.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int type = DataType(o.dtype);
  const float alpha = 1, beta = 0;
  const double flops = 2.0 * o.n * o.n * static_cast<double>(o.n);
  auto t0 = Clock::now();
  auto warm_end = t0 + std::chrono::duration<double>(o.warmup_s);
  auto end = warm_end + std::chrono::duration<double>(o.seconds);
  // A burst that has not ended this long after the run should have: the
  // GPU hangs.
  auto deadline = end + std::chrono::duration<double>(o.stuck_s);
  int k = 1;
  while (w->failure.empty() && w->go.load() == 1) {
    bool timed = Clock::now() >= warm_end;
    if (timed) w->stage = Worker::kTiming;
    if (int e = api.event_record(ev[0], nullptr)) {
      fail("cudaEventRecord", e);
      break;
    }
    for (int i = 0; i < k && w->failure.empty(); ++i) {
      if (int e = api.gemm_ex(handle, kOpN, kOpN, o.n, o.n, o.n, &alpha, buf[0], type, o.n, buf[1],
                              type, o.n, &beta, buf[2], type, o.n, kCompute32F, kGemmDefault)) {
        w->failure = fmt::format("cublasGemmEx: status {}", e);
      }
    }
    if (!w->failure.empty()) break;
    float ms = 0;
    if (int e = api.event_record(ev[1], nullptr)) fail("cudaEventRecord", e);
    if (int e = w->failure.empty() ? WaitEvent(api, ev[1], deadline) : 0; e != 0) {
      if (e < 0) {
        w->failure = fmt::format("a burst of {} GEMMs did not end within {:.0f} s of the run's end",
                                 k, o.stuck_s);
        w->stage = Worker::kDone;
        return;  // the GPU hangs: its resources go with the process
      }
      fail("cudaEventQuery", e);
    }
    if (int e = api.event_elapsed_time(&ms, ev[0], ev[1])) fail("cudaEventElapsedTime", e);
    if (!w->failure.empty()) break;
    if (timed && ms > 0) {
      w->rates.push_back(flops * k / (ms / 1e3) / 1e9);
      w->reps += k;
      w->timed_s += ms / 1e3;
    }
    if (ms < o.burst_s * 1e3 / 2 && k < (1 << 16)) k *= 2;
    if (timed && Clock::now() >= end) break;
  }
  if (handle != nullptr) api.blas_destroy(handle);
  for (void* e : ev) {
    if (e != nullptr) api.event_destroy(e);
  }
  for (void* b : buf) {
    if (b != nullptr) api.free_device(b);
  }
  w->stage = Worker::kDone;
}

// What NVML showed of one GPU while it was timed.
struct Sampled {
  std::vector<double> sm_mhz;
  std::optional<double> temp_max, power_max;
  uint64_t events = 0;
};

void Sample(agent::GpuBackend& nvml, unsigned index, Sampled& s) {
  double v = 0;
  if (nvml.Read(index, agent::GpuField::kSmClockMhz, v) == agent::kNvmlSuccess) {
    s.sm_mhz.push_back(v);
  }
  if (nvml.Read(index, agent::GpuField::kTempC, v) == agent::kNvmlSuccess) {
    s.temp_max = std::max(s.temp_max.value_or(v), v);
  }
  if (nvml.Read(index, agent::GpuField::kPowerW, v) == agent::kNvmlSuccess) {
    s.power_max = std::max(s.power_max.value_or(v), v);
  }
  if (nvml.Read(index, agent::GpuField::kClockEvents, v) == agent::kNvmlSuccess) {
    // Idle, application-clock and display settings are not slowdowns.
    constexpr uint64_t kNotSlowdown = clock_event::kGpuIdle |
                                      clock_event::kApplicationsClocksSetting |
                                      clock_event::kDisplayClockSetting;
    s.events |= static_cast<uint64_t>(v) & ~kNotSlowdown;
  }
}

StatusOr<std::vector<Device>> Devices(const Cuda::Api& api, agent::GpuBackend* nvml) {
  int count = 0;
  if (int e = api.get_device_count(&count)) {
    return Status::Error(CudaError(api, "cudaGetDeviceCount", e));
  }
  std::vector<std::pair<std::string, unsigned>> nvml_bus;
  if (nvml != nullptr) {
    for (unsigned i = 0; i < nvml->DeviceCount(); ++i) {
      std::string id;
      if (nvml->ReadText(i, agent::GpuText::kBusId, id) == agent::kNvmlSuccess) {
        nvml_bus.emplace_back(BusKey(id), i);
      }
    }
  }
  std::vector<Device> out;
  for (int d = 0; d < count; ++d) {
    Device dev{d, d, std::nullopt, "", false};
    char bus[64] = {};
    if (api.device_pci_bus_id(bus, sizeof(bus), d) == 0) {
      dev.bus = bus;
      for (const auto& [key, index] : nvml_bus) {
        if (key == BusKey(bus)) {
          dev.nvml = index;
          dev.label = static_cast<int>(index);
        }
      }
    }
    out.push_back(dev);
  }
  for (Device& d : out) {
    if (d.nvml) continue;
    d.clash = std::any_of(out.begin(), out.end(),
                          [&](const Device& o) { return o.nvml && o.label == d.label; });
  }
  return out;
}

// The devices asked for (every one for nullopt), in nvidia-smi's order.
StatusOr<std::vector<Device>> Choose(const std::vector<Device>& all,
                                     const std::optional<std::vector<int>>& gpus) {
  std::vector<Device> chosen;
  if (!gpus) {
    chosen = all;
  } else {
    for (int g : *gpus) {
      auto it = std::find_if(all.begin(), all.end(), [g](const Device& d) { return d.label == g; });
      if (it == all.end()) {
        std::string have;
        for (const Device& d : all) have += fmt::format("{}{}", have.empty() ? "" : ",", d.label);
        return Status::Error(
            fmt::format("GPU {} is not one of this host's CUDA devices ({})", g, have));
      }
      chosen.push_back(*it);
    }
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const Device& a, const Device& b) { return a.label < b.label; });
  return chosen;
}

// A GPU's line from its bursts.
GemmResult ResultOf(const Worker& w, const GpuGemmOptions& o, const std::string& version) {
  GemmResult r;
  r.dtype = o.dtype;
  r.n = o.n;
  r.reps = w.reps;
  r.seconds = w.timed_s;
  if (std::optional<Summary> s = Summarize(w.rates)) {
    r.gflops = s->median;
    r.gflops_min = s->min;
    r.gflops_max = s->max;
  }
  r.blas = version;
  return r;
}

// What NVML says of the GPU, and showed while it was timed.
void AddSamples(agent::GpuBackend& nvml, unsigned index, const Sampled& s, GemmResult& r) {
  std::string text;
  if (nvml.ReadText(index, agent::GpuText::kName, text) == agent::kNvmlSuccess) r.model = text;
  if (nvml.ReadText(index, agent::GpuText::kUuid, text) == agent::kNvmlSuccess) r.uuid = text;
  if (std::optional<Summary> mhz = Summarize(s.sm_mhz)) {
    r.sm_mhz = mhz->median;
    r.sm_mhz_min = mhz->min;
  }
  r.temp_c_max = s.temp_max;
  r.power_w_max = s.power_max;
  r.throttle = ClockEventNames(s.events);
}

}  // namespace

uint16_t Bfloat16Bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

uint16_t HalfBits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;    // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;   // rounds to infinity
  if (abs < 0x33000001u) return sign;              // rounds to zero
  int exp = static_cast<int>(abs >> 23) - 127;     // unbiased
  uint32_t mant = (abs & 0x7fffffu) | 0x800000u;   // with the hidden bit
  int shift = exp >= -14 ? 13 : 13 + (-14 - exp);  // normal, else subnormal
  uint32_t half = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u) != 0)) ++half;
  if (exp >= -14) {
    // The hidden bit lands on the exponent field: add the biased exponent
    // less one, and a carry out of the mantissa rounds up the exponent.
    return static_cast<uint16_t>(sign | ((static_cast<uint32_t>(exp + 14) << 10) + half));
  }
  return static_cast<uint16_t>(sign | half);
}

Status CheckGpuDtype(std::string_view dtype) {
  if (dtype == "bf16" || dtype == "fp16" || dtype == "fp32") return Status::Ok();
  return Status::Error(fmt::format("dtype '{}': give bf16, fp16 or fp32", dtype));
}

StatusOr<std::shared_ptr<Cuda>> Cuda::Load(const std::string& cudart, const std::string& cublas) {
  // The runtime reads it when it starts: PCI order, as NVML and nvidia-smi
  // count, when NVML cannot map the devices.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  std::shared_ptr<Cuda> cuda(new Cuda());
  cuda->api_ = std::make_unique<Api>();
  std::string tried;
  cuda->cudart_ = OpenFirst(
      cudart, {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}, tried);
  if (cuda->cudart_ == nullptr) {
    return Status::Error(fmt::format(
        "cannot load the CUDA runtime (tried {}): install CUDA 11, 12 or 13's runtime "
        "(Debian: nvidia-cuda-toolkit; or pip's nvidia-cuda-runtime-cu12) or give --cudart-lib",
        tried));
  }
  cuda->cublas_ = OpenFirst(
      cublas, {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}, tried);
  if (cuda->cublas_ == nullptr) {
    return Status::Error(
        fmt::format("cannot load cuBLAS (tried {}): install CUDA 11, 12 or 13's cuBLAS (Debian: "
                    "libcublas12 or libcublas11; or pip's nvidia-cublas-cu12) or give --cublas-lib",
                    tried));
  }
  Api& a = *cuda->api_;
  void* rt = cuda->cudart_;
  void* bl = cuda->cublas_;
  std::string missing;
  LoadSymbol(rt, a.get_device_count, "cudaGetDeviceCount", missing);
  LoadSymbol(rt, a.set_device, "cudaSetDevice", missing);
  LoadSymbol(rt, a.device_pci_bus_id, "cudaDeviceGetPCIBusId", missing);
  LoadSymbol(rt, a.malloc_device, "cudaMalloc", missing);
  LoadSymbol(rt, a.free_device, "cudaFree", missing);
  LoadSymbol(rt, a.memcpy_, "cudaMemcpy", missing);
  LoadSymbol(rt, a.event_create, "cudaEventCreate", missing);
  LoadSymbol(rt, a.event_record, "cudaEventRecord", missing);
  LoadSymbol(rt, a.event_query, "cudaEventQuery", missing);
  LoadSymbol(rt, a.event_elapsed_time, "cudaEventElapsedTime", missing);
  LoadSymbol(rt, a.event_destroy, "cudaEventDestroy", missing);
  LoadSymbol(rt, a.error_string, "cudaGetErrorString", missing);
  LoadSymbol(rt, a.runtime_version, "cudaRuntimeGetVersion", missing);
  LoadSymbol(bl, a.blas_create, "cublasCreate_v2", missing);
  LoadSymbol(bl, a.blas_destroy, "cublasDestroy_v2", missing);
  LoadSymbol(bl, a.gemm_ex, "cublasGemmEx", missing);
  if (!missing.empty()) {
    return Status::Error(fmt::format(
        "the CUDA runtime or cuBLAS loaded lacks {}: not CUDA 11, 12 or 13's libraries", missing));
  }
  a.blas_property = reinterpret_cast<decltype(a.blas_property)>(dlsym(bl, "cublasGetProperty"));
  int runtime = 0;
  a.runtime_version(&runtime);
  int major = 0, minor = 0, patch = 0;
  if (a.blas_property != nullptr && a.blas_property(0, &major) == 0 &&
      a.blas_property(1, &minor) == 0 && a.blas_property(2, &patch) == 0) {
    cuda->version_ = fmt::format("cuBLAS {}.{}.{} (CUDA runtime {})", major, minor, patch, runtime);
  } else {
    cuda->version_ = fmt::format("cuBLAS (CUDA runtime {})", runtime);
  }
  return cuda;
}

Cuda::~Cuda() {
  if (cublas_ != nullptr) dlclose(cublas_);
  if (cudart_ != nullptr) dlclose(cudart_);
}

StatusOr<GpuGemmRun> RunGpuGemm(const Cuda& cuda, agent::GpuBackend* nvml,
                                const std::optional<std::vector<int>>& gpus,
                                const GpuGemmOptions& o) {
  if (Status s = CheckGpuDtype(o.dtype); !s.ok()) return s;
  const Cuda::Api& api = cuda.api();
  auto all = Devices(api, nvml);
  if (!all.ok()) return all.status();
  if (all->empty()) return Status::Error("no CUDA device: cudaGetDeviceCount found none");
  auto picked = Choose(*all, gpus);
  if (!picked.ok()) return picked.status();
  const std::vector<Device>& chosen = *picked;
  auto host = std::make_shared<const std::vector<unsigned char>>(HostMatrix(o.n, o.dtype));
  GpuGemmRun run;
  std::vector<std::shared_ptr<Worker>> workers;
  std::vector<Sampled> sampled(chosen.size());
  std::vector<std::thread> threads;
  for (const Device& d : chosen) {
    auto w = std::make_shared<Worker>();
    workers.push_back(w);
    if (d.clash) {
      w->failure =
          fmt::format("CUDA device {} (bus {}) is not among NVML's GPUs; not timed", d.cuda, d.bus);
      w->stage = Worker::kDone;
      threads.emplace_back();
      continue;
    }
    threads.emplace_back(TimeOneGpu, std::cref(api), d.cuda, o, host, w);
  }
  // Every GPU set up (or given up on), then all start at once.
  auto waited = [&](auto deadline, int stage) {
    while (Clock::now() < deadline) {
      bool every = std::all_of(workers.begin(), workers.end(),
                               [&](const auto& w) { return w->stage.load() >= stage; });
      if (every) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  waited(Clock::now() + std::chrono::duration<double>(o.setup_s), Worker::kReady);
  for (size_t i = 0; i < workers.size(); ++i) {
    if (workers[i]->stage.load() >= Worker::kReady) {
      workers[i]->go = 1;
    } else {
      workers[i]->go = -1;  // it may still wake: it then stops at once
      run.failures.push_back({fmt::format("gpu:{}", chosen[i].label),
                              fmt::format("not set up within {:.0f} s (cudaSetDevice, cudaMalloc "
                                          "or cuBLAS hung: a lost GPU?)",
                                          o.setup_s)});
    }
  }
  auto end = Clock::now() + std::chrono::duration<double>(o.warmup_s + o.seconds + o.stuck_s + 1);
  auto all_done = [&] {
    return std::all_of(workers.begin(), workers.end(), [](const auto& w) {
      return w->go.load() == -1 || w->stage.load() == Worker::kDone;
    });
  };
  while (!all_done() && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.sample_s));
    if (nvml == nullptr) continue;
    for (size_t i = 0; i < chosen.size(); ++i) {
      // Only while it is timed: a GPU done or warming up is not loaded.
      if (chosen[i].nvml && workers[i]->stage.load() == Worker::kTiming) {
        Sample(*nvml, *chosen[i].nvml, sampled[i]);
      }
    }
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    if (!threads[i].joinable()) continue;
    if (workers[i]->stage.load() == Worker::kDone) {
      threads[i].join();
    } else {
      // Hung in the driver: it keeps its Worker and the matrix alive, and
      // the caller ends the process without waiting for it.
      threads[i].detach();
      run.stuck = true;
      if (workers[i]->go.load() == 1) {
        run.failures.push_back(
            {fmt::format("gpu:{}", chosen[i].label), "stuck: its GEMMs never ended (a lost GPU?)"});
      }
    }
  }
  std::string here = LocalHostName();
  for (size_t i = 0; i < chosen.size(); ++i) {
    std::string device = fmt::format("gpu:{}", chosen[i].label);
    // Given up on or hung: said above.
    if (workers[i]->go.load() == -1 || workers[i]->stage.load() != Worker::kDone) continue;
    const Worker& w = *workers[i];
    if (!w.failure.empty() || w.rates.empty()) {
      run.failures.push_back(
          {device, w.failure.empty() ? "no burst finished within the time" : w.failure});
      continue;
    }
    GemmResult r = ResultOf(w, o, cuda.version());
    r.host = here;
    r.device = device;
    if (chosen[i].nvml && nvml != nullptr) AddSamples(*nvml, *chosen[i].nvml, sampled[i], r);
    run.results.push_back(std::move(r));
  }
  return run;
}

}  // namespace laggard::confirm
