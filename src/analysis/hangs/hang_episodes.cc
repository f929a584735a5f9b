#include "analysis/hangs/hang_episodes.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <numeric>

#include <fmt/format.h>

namespace laggard {

HangEpisodeChoice LatestHangEpisode(const std::vector<HangEvent>& events,
                                    const HangEpisodeOptions& o) {
  HangEpisodeChoice out;
  std::vector<size_t> timed;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].yearless_time_ns) timed.push_back(i);
  }
  auto all = [&] {
    out.chosen.resize(events.size());
    std::iota(out.chosen.begin(), out.chosen.end(), size_t{0});
    if (!timed.empty()) {
      int64_t first = *events[timed.front()].yearless_time_ns;
      for (size_t i : timed) first = std::min(first, *events[i].yearless_time_ns);
      out.first_yearless_ns = first;
    }
    return out;
  };
  if (timed.size() < 2) return all();
  std::stable_sort(timed.begin(), timed.end(), [&](size_t a, size_t b) {
    return *events[a].yearless_time_ns < *events[b].yearless_time_ns;
  });
  // Episode of each timed event, by the gaps in time order.
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> episode(events.size(), kNone);
  size_t current = 0;
  for (size_t k = 0; k < timed.size(); ++k) {
    if (k > 0 &&
        *events[timed[k]].yearless_time_ns - *events[timed[k - 1]].yearless_time_ns > o.gap_ns)
      ++current;
    episode[timed[k]] = current;
  }
  if (current == 0) return all();
  const size_t latest = current;

  // Untimed events: the closest timed line of their own file, the one
  // before it (by line) first; none in the file: the latest episode.
  std::map<uint32_t, std::vector<size_t>> timed_by_file;  // by line
  for (size_t i : timed) timed_by_file[events[i].src.file].push_back(i);
  for (auto& [file, list] : timed_by_file) {
    std::sort(list.begin(), list.end(),
              [&](size_t a, size_t b) { return events[a].src.line < events[b].src.line; });
  }
  for (size_t i = 0; i < events.size(); ++i) {
    if (episode[i] != kNone) continue;
    auto it = timed_by_file.find(events[i].src.file);
    if (it == timed_by_file.end()) {
      episode[i] = latest;
      continue;
    }
    const std::vector<size_t>& list = it->second;
    auto next =
        std::upper_bound(list.begin(), list.end(), events[i].src.line,
                         [&](uint32_t line, size_t t) { return line < events[t].src.line; });
    episode[i] = episode[next == list.begin() ? *next : *std::prev(next)];
  }

  out.earlier.resize(latest);
  std::vector<char> started(latest, 0);
  for (size_t i : timed) {  // in time order
    const int64_t t = *events[i].yearless_time_ns;
    if (episode[i] == latest) {
      if (!out.first_yearless_ns) out.first_yearless_ns = t;
      continue;
    }
    HangEpisodeSpan& s = out.earlier[episode[i]];
    if (!started[episode[i]]) {
      started[episode[i]] = 1;
      s.first_yearless_ns = t;
      s.first = events[i].src;
    }
    s.last_yearless_ns = t;
  }
  for (size_t i = 0; i < events.size(); ++i) {
    if (episode[i] == latest) {
      out.chosen.push_back(i);
    } else {
      ++out.earlier[episode[i]].events;
    }
  }
  return out;
}

std::string YearlessText(int64_t yearless_ns) {
  static constexpr std::array<int, 12> kDaysBefore = {0,   31,  59,  90,  120, 151,
                                                      181, 212, 243, 273, 304, 334};
  static constexpr std::array<const char*, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int64_t secs = yearless_ns / 1'000'000'000;
  int64_t days = secs / 86400;
  int64_t rest = secs % 86400;
  size_t m = 0;
  while (m + 1 < kDaysBefore.size() && days >= kDaysBefore[m + 1]) ++m;
  return fmt::format("{} {:02} {:02}:{:02}:{:02}", kMonths[m], days - kDaysBefore[m] + 1,
                     rest / 3600, rest / 60 % 60, rest % 60);
}

void AddEpisodeEvidence(const HangEpisodeChoice& c, Finding& f) {
  if (c.episodes() == 1) return;
  std::vector<Evidence> lines;
  size_t left = 0;
  for (const HangEpisodeSpan& s : c.earlier) left += s.events;
  lines.push_back(
      {fmt::format("the hang lines hold {} stops more than an hour apart (a log appended across "
                   "restarts, or several jobs): this is the last, from {}; the {} of the "
                   "earlier ones were not used, since sequence numbers start again at a restart",
                   c.episodes(), c.first_yearless_ns ? YearlessText(*c.first_yearless_ns) : "?",
                   fmt::format("{} line{}", left, left == 1 ? "" : "s")),
       std::nullopt});
  for (size_t i = c.earlier.size(); i-- > 0 && lines.size() < 4;) {
    const HangEpisodeSpan& s = c.earlier[i];
    lines.push_back({fmt::format("an earlier stop: {} hang line{} from {} to {}", s.events,
                                 s.events == 1 ? "" : "s", YearlessText(s.first_yearless_ns),
                                 YearlessText(s.last_yearless_ns)),
                     s.first});
  }
  f.evidence.insert(f.evidence.begin(), lines.begin(), lines.end());
}

}  // namespace laggard
