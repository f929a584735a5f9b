#include "confirm/cpu_gemm.h"

#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <random>

#include <fmt/format.h>

#include "base/process.h"
#include "base/stats/robust_stats.h"

namespace laggard::confirm {
namespace {

// cblas enums (cblas.h): row-major, no transpose.
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;

// Pins the calling thread to one core for its lifetime, then restores.
class Pin {
 public:
  explicit Pin(int core) {
    ok_ = sched_getaffinity(0, sizeof(before_), &before_) == 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    ok_ = ok_ && sched_setaffinity(0, sizeof(set), &set) == 0;
  }
  ~Pin() { sched_setaffinity(0, sizeof(before_), &before_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t before_{};
  bool ok_ = false;
};

}  // namespace

StatusOr<std::shared_ptr<Blas>> Blas::Load() {
  std::shared_ptr<Blas> blas(new Blas());
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    blas->handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (blas->handle_ != nullptr) break;
  }
  if (blas->handle_ == nullptr) {
    return Status::Error(
        "cannot load OpenBLAS (libopenblas.so.0): install Debian's libopenblas0 "
        "(apt-get install libopenblas0)");
  }
  blas->sgemm_ = reinterpret_cast<SgemmFn>(dlsym(blas->handle_, "cblas_sgemm"));
  if (blas->sgemm_ == nullptr) {
    return Status::Error("libopenblas.so.0 has no cblas_sgemm");
  }
  // One thread: each figure is one core's.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(blas->handle_, "openblas_set_num_threads"))) {
    set(1);
  }
  using GetConfig = const char* (*)();
  if (auto get = reinterpret_cast<GetConfig>(dlsym(blas->handle_, "openblas_get_config"))) {
    std::string config = get();
    // "OpenBLAS 0.3.21 NO_AFFINITY Haswell MAX_THREADS=64": name and version.
    size_t second_space = config.find(' ', config.find(' ') + 1);
    blas->config_ = config.substr(0, second_space);
  } else {
    blas->config_ = "OpenBLAS";
  }
  return blas;
}

Blas::~Blas() {
  if (handle_ != nullptr) dlclose(handle_);
}

void Blas::Sgemm(int n, const float* a, const float* b, float* c) const {
  sgemm_(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

std::vector<int> AllowedCores() {
  cpu_set_t set;
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cores.push_back(i);
  }
  return cores;
}

StatusOr<std::vector<int>> ParseCoreList(std::string_view text) {
  std::vector<int> cores;
  auto number = [](std::string_view s, int& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && out >= 0 && out < CPU_SETSIZE;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    size_t dash = item.find('-');
    int a = 0, b = 0;
    bool ok = dash == std::string_view::npos
                  ? number(item, a) && (b = a, true)
                  : number(item.substr(0, dash), a) && number(item.substr(dash + 1), b) && a <= b;
    if (!ok) {
      return Status::Error(fmt::format("core list '{}': give cores as 0-3,6", text));
    }
    for (int c = a; c <= b; ++c) cores.push_back(c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

StatusOr<std::vector<GemmResult>> RunCpuGemm(const Blas& blas, const std::vector<int>& cores,
                                             const GemmOptions& o) {
  if (cores.empty()) return Status::Error("no core to time");
  std::vector<int> allowed = AllowedCores();
  for (int core : cores) {
    if (!std::binary_search(allowed.begin(), allowed.end(), core)) {
      return Status::Error(fmt::format("core {} is not one this process may run on", core));
    }
  }
  size_t elems = static_cast<size_t>(o.n) * static_cast<size_t>(o.n);
  std::vector<float> a(elems), b(elems), c(elems);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < elems; ++i) {
    a[i] = u(rng);
    b[i] = u(rng);
  }
  const double flops = 2.0 * o.n * o.n * static_cast<double>(o.n);
  std::string host = LocalHostName();
  // Round robin over the cores, one repetition each per round: a burst of
  // load on the machine lands on every core's figures alike, not on the
  // one timed while it lasted.
  for (int core : cores) {
    Pin pin(core);
    if (!pin.ok()) return Status::Error(fmt::format("cannot pin to core {}", core));
    blas.Sgemm(o.n, a.data(), b.data(), c.data());  // warm the core's clock
  }
  std::vector<std::vector<double>> rates(cores.size());
  std::vector<int> reps(cores.size(), 0);
  auto start = std::chrono::steady_clock::now();
  const double budget = o.seconds * static_cast<double>(cores.size());
  double elapsed = 0;
  // Each turn is a burst of repetitions timed as a whole (wall time): a
  // core shared with a busy neighbour gives it its share only once the
  // scheduler has seen both run, after tens of ms; a single short
  // repetition would run at full speed in the slice it was woken into.
  while (elapsed < budget || static_cast<int>(rates[0].size()) < o.min_reps) {
    for (size_t i = 0; i < cores.size(); ++i) {
      Pin pin(cores[i]);
      if (!pin.ok()) return Status::Error(fmt::format("cannot pin to core {}", cores[i]));
      auto t0 = std::chrono::steady_clock::now();
      int n = 0;
      double s = 0;
      do {
        blas.Sgemm(o.n, a.data(), b.data(), c.data());
        ++n;
        s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } while (s < o.burst_s);
      rates[i].push_back(flops * n / s / 1e9);
      reps[i] += n;
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::vector<GemmResult> out;
  for (size_t i = 0; i < cores.size(); ++i) {
    GemmResult r;
    r.host = host;
    r.device = fmt::format("cpu:{}", cores[i]);
    r.n = o.n;
    r.reps = reps[i];
    r.seconds = elapsed;
    if (std::optional<Summary> s = Summarize(rates[i])) {
      r.gflops = s->median;
      r.gflops_min = s->min;
      r.gflops_max = s->max;
    }
    r.blas = blas.config();
    out.push_back(std::move(r));
  }
  return out;
}

std::string GemmLine(const GemmResult& r) {
  std::string line = fmt::format(
      "laggard-gemm host={} device={} dtype={} n={} reps={} seconds={:.2f} gflops={:.2f} "
      "gflops_min={:.2f} gflops_max={:.2f}",
      r.host, r.device, r.dtype, r.n, r.reps, r.seconds, r.gflops, r.gflops_min, r.gflops_max);
  auto word = [](std::string s) {
    std::replace_if(
        s.begin(), s.end(), [](char c) { return c == ' ' || c == '='; }, '_');
    return s;
  };
  if (r.model) line += " model=" + word(*r.model);
  if (r.uuid) line += " uuid=" + word(*r.uuid);
  auto number = [&](std::string_view key, const std::optional<double>& v) {
    if (v) line += fmt::format(" {}={:.0f}", key, *v);
  };
  number("sm_mhz", r.sm_mhz);
  number("sm_mhz_min", r.sm_mhz_min);
  number("temp_c_max", r.temp_c_max);
  number("power_w_max", r.power_w_max);
  if (!r.throttle.empty()) line += " throttle=" + word(r.throttle);
  return line + " blas=" + r.blas;
}

std::optional<GemmResult> ParseGemmLine(std::string_view line) {
  constexpr std::string_view kTag = "laggard-gemm ";
  if (line.substr(0, kTag.size()) != kTag) return std::nullopt;
  // key=value words; blas= takes the rest of the line.
  std::map<std::string, std::string, std::less<>> kv;
  std::string_view rest = line.substr(kTag.size());
  while (!rest.empty()) {
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key(rest.substr(0, eq));
    rest.remove_prefix(eq + 1);
    size_t end = key == "blas" ? rest.size() : rest.find(' ');
    if (end == std::string_view::npos) end = rest.size();
    kv[key] = std::string(rest.substr(0, end));
    rest.remove_prefix(std::min(rest.size(), end + 1));
  }
  auto num = [&](std::string_view key, double& out) {
    auto it = kv.find(key);
    if (it == kv.end()) return false;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), out);
    return ec == std::errc() && p == it->second.data() + it->second.size();
  };
  GemmResult r;
  double n = 0, reps = 0;
  if (!num("n", n) || !num("reps", reps) || !num("seconds", r.seconds) ||
      !num("gflops", r.gflops) || !num("gflops_min", r.gflops_min) ||
      !num("gflops_max", r.gflops_max) || kv.count("device") == 0 || kv.count("host") == 0) {
    return std::nullopt;
  }
  // Counts that fit an int (the line may come from another host): else not a line of ours.
  if (!(n >= 0 && n <= 1e9 && reps >= 0 && reps <= 2e9)) return std::nullopt;
  r.host = kv["host"];
  r.device = kv["device"];
  r.dtype = kv.count("dtype") != 0 ? kv["dtype"] : "fp32";
  r.n = static_cast<int>(n);
  r.reps = static_cast<int>(reps);
  r.blas = kv.count("blas") != 0 ? kv["blas"] : "";
  if (kv.count("model") != 0) {
    r.model = kv["model"];
    std::replace(r.model->begin(), r.model->end(), '_', ' ');
  }
  if (kv.count("uuid") != 0) r.uuid = kv["uuid"];
  for (auto [key, field] : {std::pair{"sm_mhz", &r.sm_mhz},
                            {"sm_mhz_min", &r.sm_mhz_min},
                            {"temp_c_max", &r.temp_c_max},
                            {"power_w_max", &r.power_w_max}}) {
    double v = 0;
    if (num(key, v)) *field = v;
  }
  if (kv.count("throttle") != 0) r.throttle = kv["throttle"];
  return r;
}

}  // namespace laggard::confirm
