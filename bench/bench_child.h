// Measurement helpers shared by the bench/ programs: wall and CPU time, and
// running one measurement in a forked child so its peak RSS is its own.
//
// A forked child inherits its parent's resident pages and high-water mark;
// resetting the mark (/proc/self/clear_refs, Linux >= 4.0) makes the child's
// peak its own. Sample is the program's own plain-data result type with
// `long peak_rss_kb` and `char note[]`; it travels back through a pipe.

#ifndef LAGGARD_BENCH_BENCH_CHILD_H_
#define LAGGARD_BENCH_BENCH_CHILD_H_

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace laggard::bench {

inline double Seconds(std::chrono::steady_clock::time_point a,
                      std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

inline double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

inline bool ResetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

inline long PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;  // kB on Linux
}

// The 1-minute load average, to show how noisy a run was.
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "?" : one;
}

// Whether malloc's heaps get transparent huge pages, as `laggard` itself
// arranges (cli/huge_pages.h): benches are not laggard's binary, so they
// run as started; set GLIBC_TUNABLES=glibc.malloc.hugetlb=1 to measure
// what `laggard` sees. Printed beside the machine.
inline std::string MallocHugePages() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  bool on =
      t != nullptr && std::string_view(t).find("glibc.malloc.hugetlb=1") != std::string_view::npos;
  return on ? "malloc huge pages on (GLIBC_TUNABLES)" : "malloc huge pages off";
}

// CPU time the hypervisor gave to other guests while this VM wanted it,
// over all CPUs since boot (the "steal" column of /proc/stat's cpu line), in
// seconds; NaN where the kernel does not say. On a VM whose other vCPUs are
// shared, this is what a slower second core shows up as.
inline double StealSeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu") {
    return std::nan("");
  }
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? static_cast<double>(steal) / static_cast<double>(hz) : std::nan("");
}

// "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "".
inline std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "";
}

// Compresses `from` into the gzip file `to` at `level` (1-9).
inline bool GzipFile(const std::string& from, const std::string& to, int level) {
  std::ifstream in(from, std::ios::binary);
  std::string mode = "wb" + std::to_string(level);
  gzFile out = gzopen(to.c_str(), mode.c_str());
  if (!in || out == nullptr) return false;
  std::vector<char> buf(1 << 20);
  bool ok = true;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    auto n = static_cast<unsigned>(in.gcount());
    if (n > 0 && gzwrite(out, buf.data(), n) != static_cast<int>(n)) ok = false;
  }
  return gzclose(out) == Z_OK && ok;
}

// A fresh directory under the system's temp dir, or "" (with errno set).
inline std::string MakeTempDir(const std::string& prefix) {
  std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  return mkdtemp(templ.data()) == nullptr ? std::string() : templ;
}

// Reads `path` to the end in read(2) calls of `chunk` bytes into `buf` (at
// least `chunk` long): the page-cache floor of a reader. The bytes read, or
// -1 when the file cannot be opened (errno says why); `checksum` sums the
// last byte of every read, so that nothing is optimised away.
inline int64_t ReadThrough(const std::string& path, char* buf, size_t chunk, uint64_t& checksum) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return -1;
  int64_t bytes = 0;
  for (;;) {
    ssize_t n = read(fd, buf, chunk);
    if (n <= 0) break;
    bytes += n;
    checksum += static_cast<unsigned char>(buf[n - 1]);
  }
  close(fd);
  return bytes;
}

// False once a child could not reset its peak-RSS mark (then the peaks
// include the parent's pages).
inline bool g_rss_reset_works = true;

// Runs `body` in a forked child and returns what it measured.
template <typename Sample>
Sample RunInChild(const std::function<Sample()>& body) {
  int fds[2];
  if (pipe(fds) != 0) {
    Sample s;
    std::snprintf(s.note, sizeof s.note, "pipe: %s", std::strerror(errno));
    return s;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    bool reset = ResetPeakRss();
    Sample s = body();
    s.peak_rss_kb = PeakRssKb();
    if (!reset) s.peak_rss_kb = -s.peak_rss_kb;  // inherited mark: flag it
    ssize_t w = write(fds[1], &s, sizeof s);
    _exit(w == static_cast<ssize_t>(sizeof s) ? 0 : 1);
  }
  close(fds[1]);
  Sample s;
  size_t got = 0;
  while (pid > 0 && got < sizeof s) {
    ssize_t r = read(fds[0], reinterpret_cast<char*>(&s) + got, sizeof s - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fds[0]);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid < 0 || got != sizeof s || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    s = Sample();
    std::snprintf(s.note, sizeof s.note, "child failed (status %d)", status);
  }
  if (s.peak_rss_kb < 0) {
    g_rss_reset_works = false;
    s.peak_rss_kb = -s.peak_rss_kb;
  }
  return s;
}

// --- Rounds ---------------------------------------------------------------
//
// A table's rows, each run once per round for several rounds, so that a burst
// of other work on the machine hits all rows alike. Sample also needs `bool
// ok`, `double cpu_s` and `double wall_s`.

template <typename Sample>
struct Measurement {
  std::string name;
  std::function<Sample()> body;
};

template <typename Sample>
struct RoundsRow {
  std::string name;
  Sample s;  // the round with the lowest CPU time, with the highest peak RSS of all
  std::vector<double> cpu_s, wall_s;  // every good round's
  double steal_s = 0, ran_s = 0;      // steal over the row's rounds, and their wall time

  // The share of the VM's CPU time the hypervisor gave to other guests
  // while the row ran (NaN where /proc/stat does not say).
  double steal_share() const {
    double cpus = std::max(1u, std::thread::hardware_concurrency());
    return ran_s > 0 ? steal_s / (ran_s * cpus) : 0;
  }
};

// The order statistics of `v` (not empty): min, median, max.
struct Spread {
  double min = 0, median = 0, max = 0;
};
inline Spread SpreadOf(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {v.front(), median, v.back()};
}

// "min / median / max" of `v`, `digits` after the point.
inline std::string SpreadText(const std::vector<double>& v, int digits = 2) {
  Spread s = SpreadOf(v);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.*f / %.*f / %.*f", digits, s.min, digits, s.median, digits,
                s.max);
  return buf;
}

// Runs every measurement once per round (each in its own child), `rounds`
// times; a row that fails keeps that failure and is not run again.
// Prints a line per round with the load average.
template <typename Sample>
std::vector<RoundsRow<Sample>> RunRounds(const std::vector<Measurement<Sample>>& ms, int rounds) {
  std::vector<RoundsRow<Sample>> rows;
  for (const Measurement<Sample>& m : ms) rows.push_back({m.name, Sample(), {}, {}, 0, 0});
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < ms.size(); ++i) {
      RoundsRow<Sample>& row = rows[i];
      if (round > 0 && !row.s.ok) continue;
      const double steal0 = StealSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      Sample s = RunInChild<Sample>(ms[i].body);
      row.steal_s += StealSeconds() - steal0;
      row.ran_s += Seconds(t0, std::chrono::steady_clock::now());
      if (!s.ok) {  // reported as failed, whichever round it was
        row.s = s;
        continue;
      }
      row.cpu_s.push_back(s.cpu_s);
      row.wall_s.push_back(s.wall_s);
      long peak = std::max(row.s.peak_rss_kb, s.peak_rss_kb);
      if (round == 0 || s.cpu_s < row.s.cpu_s) row.s = s;
      row.s.peak_rss_kb = peak;
    }
    std::printf("round %d of %d done, load average %s\n", round + 1, rounds, LoadAverage().c_str());
    std::fflush(stdout);
  }
  return rows;
}

}  // namespace laggard::bench

#endif  // LAGGARD_BENCH_BENCH_CHILD_H_
