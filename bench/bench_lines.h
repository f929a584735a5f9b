// Shared by the bench/ programs that read text logs: the line-split
// baseline (the ceiling any line parser can reach) and the table of rounds
// (bench_child.h RunRounds) with Mlines/s and MB/s from the median round.
// Sample is the program's own plain-data type with `ok`, `wall_s`, `cpu_s`,
// `bytes`, `lines`, `peak_rss_kb` and `char note[]`.

#ifndef LAGGARD_BENCH_BENCH_LINES_H_
#define LAGGARD_BENCH_BENCH_LINES_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bench_child.h"
#include "ingest/common/input_file.h"

namespace laggard::bench {

// Reads `path` (plain or gzip) and splits it into lines (LineReader).
template <typename Sample>
Sample SplitLines(const std::string& path) {
  Sample s;
  double cpu0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  auto source = OpenByteSource(path);
  if (!source.ok()) {
    std::snprintf(s.note, sizeof s.note, "%s", source.status().message().c_str());
    return s;
  }
  LineReader lines(**source);
  std::string_view line;
  uint64_t n = 0, chars = 0;
  while (lines.Next(line)) {
    ++n;
    chars += line.size();  // touch the result so the loop is not elided
  }
  s.wall_s = Seconds(t0, std::chrono::steady_clock::now());
  s.cpu_s = CpuSeconds() - cpu0;
  s.bytes = lines.bytes();
  s.lines = n;
  s.ok = chars > 0;
  return s;
}

inline std::string Rate(double count, double seconds, double unit) {
  return seconds > 0 ? fmt::format("{:.1f}", count / seconds / unit) : "-";
}

// One line per row: Mlines/s where `line_rate[i]`, MB/s where
// `byte_rate[i]` (from the median round's wall time), wall and CPU s as
// min / median / max, peak RSS, steal.
template <typename Sample>
void PrintRoundsTable(const std::vector<RoundsRow<Sample>>& rows,
                      const std::vector<bool>& line_rate, const std::vector<bool>& byte_rate,
                      int name_width = 44) {
  const int w = name_width;
  fmt::print("{:<{}} {:>9} {:>9} {:>23} {:>23} {:>10} {:>6}\n", "measurement", w, "Mlines/s",
             "MB/s", "wall s", "CPU s", "peak RSS", "steal");
  fmt::print("{:<{}} {:>9} {:>9} {:>23} {:>23}\n", "", w, "median", "median", "min / median / max",
             "min / median / max");
  fmt::print("{:-<{}}\n", "", w + 87);
  for (size_t i = 0; i < rows.size(); ++i) {
    const RoundsRow<Sample>& r = rows[i];
    if (!r.s.ok) {
      fmt::print("{:<{}} failed: {}\n", r.name, w, r.s.note);
      continue;
    }
    const double wall = SpreadOf(r.wall_s).median;
    const bool lr = i < line_rate.size() && line_rate[i];
    const bool br = i < byte_rate.size() && byte_rate[i];
    fmt::print("{:<{}} {:>9} {:>9} {:>23} {:>23} {:>7.0f} MB {:>5.1f}%\n", r.name, w,
               lr ? Rate(static_cast<double>(r.s.lines), wall, 1e6) : "-",
               br ? Rate(static_cast<double>(r.s.bytes), wall, 1e6) : "-", SpreadText(r.wall_s, 3),
               SpreadText(r.cpu_s, 3), static_cast<double>(r.s.peak_rss_kb) * 1024 / 1e6,
               100 * r.steal_share());
  }
}

}  // namespace laggard::bench

#endif  // LAGGARD_BENCH_BENCH_LINES_H_
