// Hang episodes: which of a run's hang lines belong to one stop of the job.
// The hang detector (analysis/hangs/hang_detector.h) calls LatestHangEpisode()
// before it reads the lines, and decides on the latest stop only.
//
// A folder of logs can hold more than one stop: a log appended across
// restarts (torchrun --max-restarts, a Slurm requeue into the same file),
// or the logs of two jobs side by side. Sequence numbers start again at
// every restart, so lines of two stops read together look like a desync
// ("rank 4 at #7753 while ranks 0, 3 wait in #1580") that never happened.
//
// Rule. A hang is short: every rank's watchdog fires within about a step of
// the others (each times out on its own arrival + the same timeout), and
// the exception, abort and torchrun lines follow within seconds. The lines
// with a glog time ("[E1206 18:44:12.755 ...]", model/hang.h
// yearless_time_ns) are sorted by it, and a gap of more than `gap_ns`
// (default 1 h) between consecutive ones starts a new episode. A line with
// no glog time joins the episode of the closest timed line of its own file
// (the one before it, else the one after); one in a file without timed
// lines joins the latest episode, since a stop's undated lines (torchrun's
// failure block, gloo's errors) sit beside its dated ones. Other dated
// prefixes (time_ns) are not compared with glog times: glog prints local
// time and those are often UTC, so a real hang would look split.
//
// Thread-safety: pure function.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_EPISODES_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_EPISODES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "model/hang.h"

namespace laggard {

struct HangEpisodeOptions {
  int64_t gap_ns = 3600LL * 1'000'000'000;  // a longer silence between hang lines: another stop
};

// One earlier episode, left out of the analysis.
struct HangEpisodeSpan {
  size_t events = 0;
  int64_t first_yearless_ns = 0;  // its first and last glog times
  int64_t last_yearless_ns = 0;
  SourceRef first;  // its first line (in time)
};

struct HangEpisodeChoice {
  // Indices into the events, in their order there, of the latest episode;
  // every event when there is one episode.
  std::vector<size_t> chosen;
  std::vector<HangEpisodeSpan> earlier;      // in time order
  std::optional<int64_t> first_yearless_ns;  // the chosen episode's first glog time
  size_t episodes() const { return earlier.size() + 1; }
};

HangEpisodeChoice LatestHangEpisode(const std::vector<HangEvent>& events,
                                    const HangEpisodeOptions& options = {});

// "Dec 06 18:44:12" for a yearless glog time.
std::string YearlessText(int64_t yearless_ns);

// Puts at the front of `f`'s evidence which stop it is about, when the
// lines hold more than one: how many, from when the analysed one is, how
// many lines were left out, and up to three earlier stops with their first
// line.
void AddEpisodeEvidence(const HangEpisodeChoice& c, Finding& f);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_EPISODES_H_
