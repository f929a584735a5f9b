// fuzz_smoke: runs every fuzz target's entry point without libFuzzer, so the
// fuzz targets build and their invariants are checked by ctest with any
// compiler. For each target it replays the seed corpus (fuzz/corpus/<target>/)
// and a fixed number of deterministic mutations of each seed (bit flips,
// truncations, inserted separators, digits and keywords, duplicated ranges,
// splices of two seeds). Same binary, same inputs, every run.
//
//   fuzz_smoke                          all targets, seeds + mutations
//   fuzz_smoke --mutations=N [TARGET]   N mutations per seed (default: per target)
//   fuzz_smoke TARGET FILE...           replay files (e.g. a libFuzzer crash)
//
// A broken invariant aborts with its location (fuzz_support.h: FUZZ_CHECK).
// On any crash the driver names the seed and mutation and writes the input
// to ./fuzz_smoke-crash-<target>, which `fuzz_smoke TARGET FILE` (or the
// libFuzzer binary) replays.

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

int LaggardFuzz_line_matchers(const uint8_t* data, size_t size);
int LaggardFuzz_csv_reader(const uint8_t* data, size_t size);
int LaggardFuzz_jsonl_reader(const uint8_t* data, size_t size);
int LaggardFuzz_text_log_reader(const uint8_t* data, size_t size);
int LaggardFuzz_line_reader(const uint8_t* data, size_t size);
int LaggardFuzz_ingest(const uint8_t* data, size_t size);
int LaggardFuzz_time_parsers(const uint8_t* data, size_t size);
int LaggardFuzz_kineto_reader(const uint8_t* data, size_t size);
int LaggardFuzz_torch_legacy_reader(const uint8_t* data, size_t size);
int LaggardFuzz_megatron_timeline_reader(const uint8_t* data, size_t size);
int LaggardFuzz_flight_recorder(const uint8_t* data, size_t size);
int LaggardFuzz_nsys_reader(const uint8_t* data, size_t size);
int LaggardFuzz_nvidia_smi_q(const uint8_t* data, size_t size);
int LaggardFuzz_nvidia_smi(const uint8_t* data, size_t size);
int LaggardFuzz_network_links(const uint8_t* data, size_t size);
int LaggardFuzz_perfquery(const uint8_t* data, size_t size);
int LaggardFuzz_agent_log(const uint8_t* data, size_t size);
int LaggardFuzz_step_datagram(const uint8_t* data, size_t size);
int LaggardFuzz_nccl(const uint8_t* data, size_t size);
int LaggardFuzz_dcgm(const uint8_t* data, size_t size);
int LaggardFuzz_prometheus_text(const uint8_t* data, size_t size);
int LaggardFuzz_watchdog_lines(const uint8_t* data, size_t size);
int LaggardFuzz_wire(const uint8_t* data, size_t size);
int LaggardFuzz_scan_codec(const uint8_t* data, size_t size);
int LaggardFuzz_confirm_inputs(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*run)(const uint8_t*, size_t);
  int mutations;  // per seed, sized so all targets take a few seconds under ASan
};

constexpr Target kTargets[] = {
    {"line_matchers", LaggardFuzz_line_matchers, 400},
    {"csv_reader", LaggardFuzz_csv_reader, 80},
    {"jsonl_reader", LaggardFuzz_jsonl_reader, 80},
    {"text_log_reader", LaggardFuzz_text_log_reader, 80},
    {"line_reader", LaggardFuzz_line_reader, 40},
    {"ingest", LaggardFuzz_ingest, 40},
    {"time_parsers", LaggardFuzz_time_parsers, 400},
    {"kineto_reader", LaggardFuzz_kineto_reader, 300},
    {"torch_legacy_reader", LaggardFuzz_torch_legacy_reader, 200},
    {"megatron_timeline_reader", LaggardFuzz_megatron_timeline_reader, 200},
    {"flight_recorder", LaggardFuzz_flight_recorder, 200},
    {"nsys_reader", LaggardFuzz_nsys_reader, 200},
    {"nvidia_smi_q", LaggardFuzz_nvidia_smi_q, 400},
    {"nvidia_smi", LaggardFuzz_nvidia_smi, 150},
    {"network_links", LaggardFuzz_network_links, 80},
    {"perfquery", LaggardFuzz_perfquery, 200},
    {"agent_log", LaggardFuzz_agent_log, 200},
    {"step_datagram", LaggardFuzz_step_datagram, 400},
    {"nccl", LaggardFuzz_nccl, 80},
    {"dcgm", LaggardFuzz_dcgm, 60},
    {"prometheus_text", LaggardFuzz_prometheus_text, 300},
    {"watchdog_lines", LaggardFuzz_watchdog_lines, 200},
    {"wire", LaggardFuzz_wire, 1000},
    {"scan_codec", LaggardFuzz_scan_codec, 1000},
    {"confirm_inputs", LaggardFuzz_confirm_inputs, 300},
};

// splitmix64: small, fast, and the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

constexpr char kBytes[] = {'\0',   '\n',   '\r',   ',',    ';',    '\t',   '"',   '\'',
                           '{',    '}',    '[',    ']',    ':',    ' ',    '-',   '+',
                           '.',    'e',    '0',    '1',    '5',    '9',    '#',   '\\',
                           '\x1f', '\x8b', '\x7f', '\xff', '\xfe', '\xc2', '\xb5'};
constexpr std::string_view kTokens[] = {
    "rank",
    "step",
    "time",
    "iteration",
    " | ",
    "elapsed time per iteration (ms):",
    "current time:",
    "ms",
    "us",
    "ns",
    "s",
    "sec",
    "\xc2\xb5s",
    "-1",
    "0",
    "4194304",
    "4194305",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e308",
    "-1e308",
    "1e-400",
    "nan",
    "inf",
    "0x10",
    "2024-02-02T15:50:01.123+01:00",
    "1706860208.35",
    "9999-12-31T23:59:59Z",
    "0000-01-01 00:00",
    "\"rank\":",
    "\"step\":",
    "\"duration\":",
    "\"step_time_ms\":",
    "{\"rank\":1,\"step\":2,\"duration\":0.5}\n",
    "rank,step,duration\n",
    "[rank3]: ",
    "\r\n",
    "\"\"",
    "\\u0000",
    "\\ud800",
};

std::string Mutate(const std::string& seed, const std::vector<std::string>& seeds, Rng& rng) {
  std::string s = seed;
  int ops = 1 + static_cast<int>(rng.Below(4));
  for (int i = 0; i < ops; ++i) {
    size_t at = rng.Below(s.size() + 1);
    switch (rng.Below(9)) {
      case 0:
        if (!s.empty()) s[rng.Below(s.size())] ^= static_cast<char>(1u << rng.Below(8));
        break;
      case 1:
        if (!s.empty()) s[rng.Below(s.size())] = kBytes[rng.Below(std::size(kBytes))];
        break;
      case 2: s.insert(at, 1, kBytes[rng.Below(std::size(kBytes))]); break;
      case 3: s.insert(at, kTokens[rng.Below(std::size(kTokens))]); break;
      case 4: s.erase(std::min(at, s.size()), 1 + rng.Below(16)); break;
      case 5: s.resize(at); break;
      case 6: {  // copy a range elsewhere
        size_t from = rng.Below(s.size() + 1);
        size_t len = std::min(s.size() - from, 1 + rng.Below(64));
        std::string piece = s.substr(from, len);
        s.insert(rng.Below(s.size() + 1), piece);
        break;
      }
      case 7: {  // splice with another seed
        const std::string& other = seeds[rng.Below(seeds.size())];
        s = s.substr(0, at) + other.substr(rng.Below(other.size() + 1));
        break;
      }
      case 8: {  // repeat a line many times
        size_t nl = s.find('\n', at);
        size_t begin = s.rfind('\n', at == 0 ? 0 : at - 1);
        begin = begin == std::string::npos ? 0 : begin + 1;
        if (nl != std::string::npos && nl >= begin) {
          std::string line = s.substr(begin, nl - begin + 1);
          for (size_t k = rng.Below(20); k > 0; --k) s.insert(nl + 1, line);
        }
        break;
      }
    }
    if (s.size() > 64 * 1024) s.resize(64 * 1024);
  }
  return s;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t NameHash(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// What is running, for the crash handler (plain buffers: it may only call
// async-signal-safe functions).
char current_label[256];
char crash_path[128];
const std::string* current_input = nullptr;

void OnCrash(int sig) {
  if (current_input != nullptr) {
    const char msg[] = "\nfuzz_smoke: crashed on ";
    (void)!write(2, msg, sizeof msg - 1);
    (void)!write(2, current_label, strlen(current_label));
    const char msg2[] = "; input saved as ";
    (void)!write(2, msg2, sizeof msg2 - 1);
    (void)!write(2, crash_path, strlen(crash_path));
    (void)!write(2, "\n", 1);
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, current_input->data(), current_input->size());
      close(fd);
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void RunOne(const Target& t, const std::string& input, const std::string& label) {
  std::snprintf(current_label, sizeof current_label, "%s %s", t.name, label.c_str());
  std::snprintf(crash_path, sizeof crash_path, "fuzz_smoke-crash-%s", t.name);
  current_input = &input;
  t.run(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  current_input = nullptr;
}

int RunTarget(const Target& t, const fs::path& corpus, int mutations) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(corpus / t.name, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_smoke: no seeds in %s\n", (corpus / t.name).c_str());
    return 1;
  }
  std::vector<std::string> seeds;
  for (const fs::path& f : files) seeds.push_back(ReadFile(f));

  auto start = std::chrono::steady_clock::now();
  size_t runs = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::string base = files[i].filename().string();
    RunOne(t, seeds[i], base);
    ++runs;
    Rng rng(NameHash(t.name) ^ NameHash(base));
    for (int m = 0; m < mutations; ++m) {
      RunOne(t, Mutate(seeds[i], seeds, rng), base + ".m" + std::to_string(m));
      ++runs;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "  %-16s %3zu seeds, %6zu inputs, %6.2f s\n", t.name, seeds.size(), runs,
               secs);
  return 0;
}

const Target* FindTarget(std::string_view name) {
  for (const Target& t : kTargets) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  int mutations = -1;  // per target
  fs::path corpus = LAGGARD_FUZZ_CORPUS_DIR;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.substr(0, 12) == "--mutations=") {
      mutations = std::atoi(argv[i] + 12);
    } else if (a.substr(0, 9) == "--corpus=") {
      corpus = std::string(a.substr(9));
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: fuzz_smoke [--mutations=N] [--corpus=DIR] [TARGET [FILE...]]\n");
      for (const Target& t : kTargets) std::printf("  %s\n", t.name);
      return 0;
    } else {
      args.emplace_back(a);
    }
  }
  // Signals a sanitizer already handles keep their handler (and report).
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(sig, OnCrash);
  }
  if (args.empty()) {
    auto start = std::chrono::steady_clock::now();
    int failed = 0;
    for (const Target& t : kTargets) {
      failed += RunTarget(t, corpus, mutations >= 0 ? mutations : t.mutations);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "fuzz_smoke: %zu targets, %.2f s%s\n", std::size(kTargets), secs,
                 failed ? ", missing seeds" : "");
    return failed ? 1 : 0;
  }
  const Target* t = FindTarget(args[0]);
  if (t == nullptr) {
    std::fprintf(stderr, "fuzz_smoke: unknown target '%s' (--help lists them)\n", args[0].c_str());
    return 2;
  }
  if (args.size() == 1) return RunTarget(*t, corpus, mutations >= 0 ? mutations : t->mutations);
  for (size_t i = 1; i < args.size(); ++i) {
    RunOne(*t, ReadFile(args[i]), fs::path(args[i]).filename().string());
    std::fprintf(stderr, "  %-16s %s: ok\n", t->name, args[i].c_str());
  }
  return 0;
}
