// The merged trace (`laggard diagnose --trace`): Chrome trace JSON that
// Perfetto UI and chrome://tracing open. Checks the structure those viewers
// rely on (phases, one process per host, named tracks, properly nested
// slices, monotonic counters) and that the signals sit where they belong
// on the timeline (clock offsets removed, findings at their onset step).

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "report/hang_report_fixture.h"
#include "report/trace_writer.h"
#include "report_fixture.h"

namespace laggard {
namespace {

using Json = nlohmann::json;
using testing_util::Diagnosed;
using testing_util::FixtureOptions;
using testing_util::kFixtureCulprit;
using testing_util::kFixtureOnsetStep;
using testing_util::SimulatedRun;
using testing_util::TempDir;

std::string MergedTraceText(const Diagnosed& d) {
  std::ostringstream out;
  WriteMergedTrace(d.input(), out);
  return out.str();
}
Json MergedTrace(const Diagnosed& d) { return Json::parse(MergedTraceText(d)); }

struct Tracks {
  std::map<int, std::string> process;                 // pid -> name
  std::map<std::pair<int, int>, std::string> thread;  // (pid, tid) -> name
  std::pair<int, int> Find(const std::string& name) const {
    for (auto& [key, n] : thread) {
      if (n == name) return key;
    }
    return {-1, -1};
  }
  int Pid(const std::string& name) const {
    for (auto& [pid, n] : process) {
      if (n == name) return pid;
    }
    return -1;
  }
};

Tracks NamedTracks(const Json& trace) {
  Tracks t;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") {
      EXPECT_FALSE(t.process.count(e["pid"].get<int>())) << "pid named twice: " << e.dump();
      t.process[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    } else if (e["name"] == "thread_name") {
      t.thread[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
    }
  }
  return t;
}

class MergedTraceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    run_ = SimulatedRun(dir_->path()).release();
    trace_ = new Json(MergedTrace(*run_));
  }
  static void TearDownTestSuite() {
    delete trace_;
    delete run_;
    delete dir_;
  }
  static TempDir* dir_;
  static Diagnosed* run_;
  static Json* trace_;
};
TempDir* MergedTraceTest::dir_ = nullptr;
Diagnosed* MergedTraceTest::run_ = nullptr;
Json* MergedTraceTest::trace_ = nullptr;

TEST_F(MergedTraceTest, IsAnObjectWithTraceEventsInMicroseconds) {
  const Json& t = *trace_;
  ASSERT_TRUE(t.is_object());
  ASSERT_TRUE(t["traceEvents"].is_array());
  EXPECT_EQ(t["displayTimeUnit"], "ms");
  EXPECT_EQ(t["otherData"]["schema"], "laggard.trace/1");
  // The first step starts at 16:00:00 on its host's clock, which runs up to
  // 4 ms off the aligned clock.
  EXPECT_NEAR(t["otherData"]["origin_ns"].get<double>(), testing_util::kFixtureStartS * 1e9, 4.5e6);
  EXPECT_EQ(t["otherData"]["clock_offsets_ms"].size(), 2u);  // node-00, node-01
  EXPECT_EQ(t["otherData"]["steps_timing"], "logged");
  std::set<std::string> phases;
  for (const Json& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    ASSERT_TRUE(e["name"].is_string() && !e["name"].get<std::string>().empty()) << e.dump();
    phases.insert(e["ph"].get<std::string>());
    if (e["ph"] != "M") {
      ASSERT_TRUE(e["ts"].is_number()) << e.dump();
      EXPECT_GE(e["ts"].get<double>(), 0) << e.dump();
    }
  }
  EXPECT_EQ(phases, (std::set<std::string>{"M", "X", "C", "i"}));
}

TEST_F(MergedTraceTest, TopLevelKeysComeInTheOrderPerfettoReads) {
  // Perfetto's tokenizer stops at the first key it does not know and counts
  // a displayTimeUnit after the first chunk as late.
  std::string text = MergedTraceText(*run_);
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ms\",", 0), 0u) << text.substr(0, 80);
  size_t events = text.find("\"traceEvents\":["), other = text.find("\"otherData\":{");
  ASSERT_NE(events, std::string::npos);
  ASSERT_NE(other, std::string::npos);
  EXPECT_LT(events, other);
  // ... and keeps tids global: rank tracks never reuse a pid as tid.
  Tracks t = NamedTracks(*trace_);
  for (auto& [key, name] : t.thread) {
    EXPECT_FALSE(t.process.count(key.second))
        << "track " << name << " has tid " << key.second << ", a pid";
  }
}

TEST_F(MergedTraceTest, OneProcessPerHostAndOneNamedTrackPerRank) {
  Tracks t = NamedTracks(*trace_);
  std::set<std::string> names;
  for (auto& [pid, name] : t.process)
    EXPECT_TRUE(names.insert(name).second) << "two processes named " << name;
  EXPECT_EQ(names, (std::set<std::string>{"job", "node-00", "node-01"}));
  for (int r = 0; r < 16; ++r) {
    auto [pid, tid] = t.Find("rank " + std::to_string(r));
    ASSERT_NE(pid, -1) << "no track for rank " << r;
    EXPECT_EQ(t.process[pid], r < 8 ? "node-00" : "node-01") << "rank " << r;
    auto coll = t.Find("rank " + std::to_string(r) + " collectives");
    EXPECT_EQ(coll.first, pid) << "rank " << r << "'s collectives are on another host";
  }
  // Every event's track is named.
  for (const Json& e : (*trace_)["traceEvents"]) {
    int pid = e["pid"].get<int>();
    EXPECT_TRUE(t.process.count(pid)) << e.dump();
    if (e["ph"] == "X") {
      EXPECT_TRUE(t.thread.count({pid, e["tid"].get<int>()})) << e.dump();
    }
  }
}

TEST_F(MergedTraceTest, EveryRankHasEveryStepAsACompleteEvent) {
  Tracks t = NamedTracks(*trace_);
  std::map<std::pair<int, int>, int> steps;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
    if (e["cat"] == "step") ++steps[{e["pid"].get<int>(), e["tid"].get<int>()}];
  }
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(steps[t.Find("rank " + std::to_string(r))], 200) << "rank " << r;
  }
}

TEST_F(MergedTraceTest, SlicesOnOneTrackNestWithoutPartialOverlap) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> by_track;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] != "X") continue;
    double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    by_track[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back({ts, ts + dur});
  }
  for (auto& [track, slices] : by_track) {
    std::sort(slices.begin(), slices.end(), [](auto& a, auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open;
    for (auto [s, e] : slices) {
      while (!open.empty() && open.back() <= s + 1e-6) open.pop_back();
      ASSERT_TRUE(open.empty() || e <= open.back() + 1e-6)
          << "slice [" << s << ", " << e << ") overlaps its parent ending at " << open.back()
          << " on pid " << track.first << " tid " << track.second;
      open.push_back(e);
    }
  }
}

TEST_F(MergedTraceTest, GpuCountersAreMonotonicPerTrackOnTheirHost) {
  Tracks t = NamedTracks(*trace_);
  std::map<std::pair<int, std::string>, std::vector<double>> ts;
  std::map<std::pair<int, std::string>, std::vector<double>> values;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] != "C") continue;
    ASSERT_EQ(e["args"].size(), 1u) << e.dump();
    ASSERT_TRUE(e["args"].begin().value().is_number()) << e.dump();
    std::pair<int, std::string> key{e["pid"].get<int>(), e["name"].get<std::string>()};
    ts[key].push_back(e["ts"].get<double>());
    values[key].push_back(e["args"].begin().value().get<double>());
  }
  EXPECT_EQ(ts.size(), 16u * 3u);  // 16 GPUs x temp_c, sm_clock_mhz, power_w
  for (auto& [key, v] : ts) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << key.second << " on pid " << key.first;
  }
  int node0 = t.Pid("node-00"), node1 = t.Pid("node-01");
  // 165 samples each; node-00 GPU 0 lost one temperature reading ([N/A]):
  // no value rather than 0.
  EXPECT_EQ((ts[{node0, "GPU 0 temp_c"}].size()), 164u);
  EXPECT_EQ((ts[{node0, "GPU 0 power_w"}].size()), 165u);
  EXPECT_EQ((ts[{node1, "GPU 5 sm_clock_mhz"}].size()), 165u);
  // The culprit's GPU (node-00 GPU 5) runs hot at the end, its peer does not.
  EXPECT_GT((values[{node0, "GPU 5 temp_c"}].back()), 85);
  EXPECT_LT((values[{node1, "GPU 5 temp_c"}].back()), 70);
  EXPECT_EQ((*trace_)["otherData"]["counter_events"], 16 * 3 * 165 - 1);
}

TEST_F(MergedTraceTest, CollectivesCarryLatenessAndSequenceOnTheAlignedClock) {
  Tracks t = NamedTracks(*trace_);
  auto culprit = t.Find("rank " + std::to_string(kFixtureCulprit) + " collectives");
  // Per sequence number: where the collective ends on each rank.
  std::map<int64_t, std::vector<double>> ends;
  std::vector<double> culprit_lateness, other_lateness;
  size_t collectives = 0;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "collective") continue;
    ++collectives;
    const Json& a = e["args"];
    ASSERT_TRUE(a.contains("lateness_ms")) << e.dump();
    ASSERT_TRUE(a["seq"].is_number()) << e.dump();
    EXPECT_FALSE(a["kernel"].get<std::string>().empty());
    ends[a["seq"].get<int64_t>()].push_back(e["ts"].get<double>() + e["dur"].get<double>());
    bool is_culprit = e["pid"] == culprit.first && e["tid"] == culprit.second;
    (is_culprit ? culprit_lateness : other_lateness).push_back(a["lateness_ms"].get<double>());
  }
  EXPECT_EQ(collectives, 16u * 3u * 4u);  // ranks x profiled steps x buckets
  // The culprit arrives late at every collective; its peers around 0.
  ASSERT_FALSE(culprit_lateness.empty());
  for (double l : culprit_lateness) EXPECT_GT(l, 0.1);
  std::sort(other_lateness.begin(), other_lateness.end());
  EXPECT_LT(std::abs(other_lateness[other_lateness.size() / 2]), 0.1);
  // Host clocks were up to 4 ms apart; after alignment a collective ends at
  // nearly the same instant on every rank.
  for (auto& [seq, e] : ends) {
    auto [lo, hi] = std::minmax_element(e.begin(), e.end());
    EXPECT_LT(*hi - *lo, 300.0) << "collective " << seq << " ends " << (*hi - *lo) << " us apart";
  }
}

TEST_F(MergedTraceTest, FindingsAreInstantsAtTheirOnsetStep) {
  Tracks t = NamedTracks(*trace_);
  auto track = t.Find("rank " + std::to_string(kFixtureCulprit));
  double onset_ts = -1;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == track.first && e["tid"] == track.second &&
        e["name"] == "step " + std::to_string(kFixtureOnsetStep)) {
      onset_ts = e["ts"].get<double>();
    }
  }
  ASSERT_GE(onset_ts, 0);
  // Trace findings have no onset: they sit where the rank's profiled window starts.
  auto coll = t.Find("rank " + std::to_string(kFixtureCulprit) + " collectives");
  double window_ts = 1e300;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == coll.first && e["tid"] == coll.second) {
      window_ts = std::min(window_ts, e["ts"].get<double>());
    }
  }
  bool late_found = false;
  bool found = false;
  size_t instants = 0;
  for (const Json& e : (*trace_)["traceEvents"]) {
    if (e["ph"] != "i") continue;
    ++instants;
    EXPECT_TRUE(e["s"] == "t" || e["s"] == "p" || e["s"] == "g") << e.dump();
    EXPECT_TRUE(e["args"]["message"].is_string());
    if (e["name"] == "trace.late_arrival") {
      late_found = true;
      EXPECT_EQ(e["pid"], track.first);
      EXPECT_EQ(e["tid"], track.second);
      EXPECT_NEAR(e["ts"].get<double>(), window_ts, 0.001);
    }
    if (e["name"] == "step.straggler") {
      found = true;
      EXPECT_EQ(e["pid"], track.first);
      EXPECT_EQ(e["tid"], track.second);
      EXPECT_NEAR(e["ts"].get<double>(), onset_ts, 1.0);
    }
  }
  EXPECT_TRUE(found) << "no step.straggler instant";
  EXPECT_TRUE(late_found) << "no trace.late_arrival instant";
  // Findings without a time are listed, not dropped silently.
  size_t findings = run_->analyses.steps.findings.size() + run_->analyses.traces.findings.size();
  EXPECT_EQ(instants + (*trace_)["otherData"]["findings_without_time"].size(), findings);
}

TEST(MergedTraceLayoutTest, StepsWithoutStartTimesAreLaidEndToEndFromZero) {
  TempDir dir;
  auto d = SimulatedRun(
      dir.path(),
      FixtureOptions{.format = sim::StepLogFormat::kArticle, .traces = false, .hardware = false});
  Json t = MergedTrace(*d);
  EXPECT_EQ(t["otherData"]["steps_timing"], "laid_end_to_end");
  EXPECT_EQ(t["otherData"]["ranks_laid_end_to_end"].size(), 16u);
  Tracks tracks = NamedTracks(t);
  auto rank0 = tracks.Find("rank 0");
  std::vector<std::pair<double, double>> slices;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == rank0.first && e["tid"] == rank0.second) {
      slices.push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    }
  }
  ASSERT_EQ(slices.size(), 200u);
  EXPECT_EQ(slices[0].first, 0);
  for (size_t i = 1; i < slices.size(); ++i) {
    EXPECT_NEAR(slices[i].first, slices[i - 1].first + slices[i - 1].second, 0.002) << "step " << i;
  }
}

// Rank 0's steps on host "h", each `dur_ms` long, starting at `starts_ms`.
Diagnosed OneRank(const std::vector<double>& starts_ms, double dur_ms) {
  Diagnosed d;
  d.run.ranks.emplace_back();
  StepSeries& s = d.run.ranks.back();
  s.info.rank = 0;
  s.info.host = "h";
  for (size_t i = 0; i < starts_ms.size(); ++i) {
    s.steps.push_back(StepRecord{static_cast<int64_t>(i),
                                 static_cast<DurationNs>(dur_ms * 1e6),
                                 5'000'000'000 + static_cast<TimeNs>(starts_ms[i] * 1e6),
                                 {}});
  }
  testing_util::Diagnose(d);
  return d;
}

std::map<std::string, std::pair<int, int>> TrackOfSlice(const Json& t) {
  std::map<std::string, std::pair<int, int>> where;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "X")
      where[e["name"].get<std::string>()] = {e["pid"].get<int>(), e["tid"].get<int>()};
  }
  return where;
}

TEST(MergedTraceLayoutTest, OverlappingStepsGoToAnOverlapTrack) {
  // Step 1 starts 8 ms before step 0 ends (a clock step, or async logging).
  Json t = MergedTrace(OneRank({0, 2, 10}, 10));
  Tracks tracks = NamedTracks(t);
  auto main = tracks.Find("rank 0"), overlap = tracks.Find("rank 0 (overlap 2)");
  ASSERT_NE(overlap.first, -1);
  auto where = TrackOfSlice(t);
  EXPECT_EQ(where["step 0"], main);
  EXPECT_EQ(where["step 1"], overlap);
  EXPECT_EQ(where["step 2"], main);
}

TEST(MergedTraceLayoutTest, StepsOverlappingByTimestampRoundingStayOnOneTrack) {
  // 800 ms steps logged with millisecond timestamps: each "ends" 0.4 ms
  // after the next starts. Cut at the next start; the logged duration stays
  // in args.
  Json t = MergedTrace(OneRank({0, 799.6, 1599.2}, 800));
  Tracks tracks = NamedTracks(t);
  EXPECT_EQ(tracks.Find("rank 0 (overlap 2)").first, -1);
  std::vector<double> dur, logged;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "X") {
      dur.push_back(e["dur"].get<double>());
      logged.push_back(e["args"]["duration_ms"].get<double>());
    }
  }
  EXPECT_EQ(dur, (std::vector<double>{799'600, 799'600, 800'000}));
  EXPECT_EQ(logged, (std::vector<double>{800, 800, 800}));
}

TEST(MergedTraceLayoutTest, EmptyRunGivesAValidTrace) {
  Diagnosed d;
  testing_util::Diagnose(d);
  Json t = MergedTrace(d);
  ASSERT_TRUE(t["traceEvents"].is_array());
  EXPECT_EQ(NamedTracks(t).process, (std::map<int, std::string>{{1, "job"}}));
  EXPECT_TRUE(t["otherData"]["origin"].is_null());
}

TEST(MergedTraceLayoutTest, GpuSamplesWithoutADateAreMarkedApproximate) {
  Diagnosed d;
  GpuRecord g;
  g.host = "node-07";
  g.index = 2;
  g.time_is_approximate = true;
  for (int s = 0; s < 5; ++s) {
    GpuSample x;
    x.time_ns = s * 1'000'000'000LL;
    x.power_w = 300 + s;
    g.samples.push_back(x);
  }
  d.run.hardware.gpus.push_back(g);
  testing_util::Diagnose(d);
  Json t = MergedTrace(d);
  std::vector<double> ts;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "C") {
      EXPECT_EQ(e["name"], "GPU 2 power_w (time approximate)");
      ts.push_back(e["ts"].get<double>());
    }
  }
  EXPECT_EQ(ts, (std::vector<double>{0, 1e6, 2e6, 3e6, 4e6}));
  EXPECT_EQ(t["otherData"]["gpus_time_approximate"], Json::array({"node-07 GPU 2"}));
  EXPECT_EQ(NamedTracks(t).Pid("node-07"), 2);
}

// --- hangs: Flight Recorder entries and hang lines --------------------------

std::vector<Json> EventsOn(const Json& t, std::pair<int, int> track, const std::string& ph) {
  std::vector<Json> out;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == ph && e["pid"] == track.first && e["tid"] == track.second) out.push_back(e);
  }
  return out;
}

// ts of an absolute instant, given the trace's origin.
double TsOf(const Json& t, TimeNs at) {
  return static_cast<double>(at - t["otherData"]["origin_ns"].get<int64_t>()) / 1e3;
}

TEST(MergedTraceHangTest, FlightRecorderEntriesAreSlicesAndANeverCompletedOneRunsToTheLastTime) {
  testing_util::HangDiagnosed h;
  testing_util::NotJoinedHang(h);
  std::ostringstream out;
  WriteMergedTrace(h.input(), out);
  Json t = Json::parse(out.str());
  // The earliest instant written: rank 2's start of #5.
  EXPECT_EQ(t["otherData"]["origin_ns"], testing_util::Sec(10.05));
  Tracks tracks = NamedTracks(t);
  auto fr0 = tracks.Find("rank 0 collectives (Flight Recorder)");
  ASSERT_NE(fr0.first, -1);
  EXPECT_EQ(tracks.Find("rank 3 collectives (Flight Recorder)").first, -1) << "rank 3 never dumped";
  std::vector<Json> slices = EventsOn(t, fr0, "X");
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["name"], "nccl:all_reduce #5");
  EXPECT_NEAR(slices[0]["ts"].get<double>(), TsOf(t, testing_util::Sec(10.1)), 0.01);
  EXPECT_NEAR(slices[0]["dur"].get<double>(), 200'000, 0.01);
  EXPECT_EQ(slices[0]["args"]["state"], "completed");
  EXPECT_FALSE(slices[0]["args"].contains("frames")) << "only the last entry has its stack";
  // #6 never completed: it runs to the last time shown (rank 0's dated
  // watchdog line, 15.0 s).
  EXPECT_EQ(slices[1]["name"], "nccl:all_reduce #6 (never completed)");
  EXPECT_NEAR(slices[1]["ts"].get<double>(), TsOf(t, testing_util::Sec(11.2)), 0.01);
  EXPECT_NEAR(slices[1]["dur"].get<double>(), 3.8e6, 0.01);
  EXPECT_EQ(slices[1]["args"]["pg"], "0");
  EXPECT_EQ(slices[1]["args"]["seq"], 6);
  EXPECT_EQ(slices[1]["args"]["state"], "started");
  EXPECT_EQ(slices[1]["args"]["input_sizes"], Json::parse("[[1024]]"));
  ASSERT_EQ(slices[1]["args"]["frames"].size(), 2u);
  EXPECT_EQ(slices[1]["args"]["frames"][0], "all_reduce (distributed_c10d.py:2501)");
  EXPECT_EQ(t["otherData"]["hang"]["fr_entries"], 5);
  EXPECT_EQ(t["otherData"]["hang"]["fr_entries_written"], 5);
  EXPECT_EQ(t["otherData"]["hang"]["fr_entries_omitted"], 0);
}

TEST(MergedTraceHangTest, DatedHangLinesAndTheDecidedFindingAreInstantsOnTheirRanks) {
  testing_util::HangDiagnosed h;
  testing_util::NotJoinedHang(h);
  ASSERT_EQ(h.hang.findings.front().code, FindingCode::kHangHostStopped);
  std::ostringstream out;
  WriteMergedTrace(h.input(), out);
  Json t = Json::parse(out.str());
  Tracks tracks = NamedTracks(t);
  // Rank 0's dated watchdog line; rank 1's yearless one is no time.
  std::vector<Json> r0 = EventsOn(t, tracks.Find("rank 0"), "i");
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(r0[0]["name"], "watchdog_timeout");
  EXPECT_NEAR(r0[0]["ts"].get<double>(), TsOf(t, testing_util::Sec(15.0)), 0.01);
  EXPECT_EQ(r0[0]["args"]["seq"], 6);
  EXPECT_TRUE(EventsOn(t, tracks.Find("rank 1"), "i").empty());
  EXPECT_EQ(t["otherData"]["hang"]["hang_lines_without_time"], 1);
  // The decided finding: on the culprit's track, when #6 first started.
  std::vector<Json> r2 = EventsOn(t, tracks.Find("rank 2"), "i");
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0]["name"], "hang.host_stopped");
  EXPECT_EQ(r2[0]["cat"], "finding");
  EXPECT_NEAR(r2[0]["ts"].get<double>(), TsOf(t, testing_util::Sec(11.2)), 0.01);
  EXPECT_EQ(r2[0]["args"]["message"], h.hang.findings.front().message);
  EXPECT_EQ(r2[0]["args"]["stuck_seq"], 6);
  for (const Json& code : t["otherData"]["findings_without_time"]) {
    EXPECT_NE(code, "hang.host_stopped") << "written once, with its time";
  }
}

TEST(MergedTraceHangTest, EntriesTakeTheirRanksClockShift) {
  testing_util::HangDiagnosed h;
  testing_util::NotJoinedHang(h);
  report_trace::HangTimeline tl = report_trace::BuildHangTimeline(
      h.input(), [](std::optional<int32_t> r) -> int64_t { return r == 1 ? 3'000'000 : 0; });
  ASSERT_EQ(tl.entries.at(1).size(), 2u);
  EXPECT_EQ(tl.entries.at(1)[0].start, testing_util::Sec(10.15) - 3'000'000);
  EXPECT_EQ(tl.entries.at(1)[0].dur, testing_util::Sec(10.3) - testing_util::Sec(10.15));
  EXPECT_EQ(tl.entries.at(0)[0].start, testing_util::Sec(10.1));
}

TEST(MergedTraceHangTest, EntriesPastTheBoundAreCountedAndTheLastOnesKept) {
  testing_util::HangDiagnosed h;
  for (int32_t rank : {0, 1}) {
    std::vector<CollectiveRecord> entries;
    for (int64_t seq = 1; seq <= 300; ++seq) {
      entries.push_back(testing_util::Entry(seq, seq * 0.01, seq * 0.01 + 0.005));
    }
    h.d.run.hang.dumps.push_back(testing_util::FrDump(rank, 300, 300, std::move(entries)));
  }
  h.hang = AnalyzeHang(h.d.run);
  // 100 in all asked: each rank keeps its last kMinHangEntriesPerRank (200).
  report_trace::HangTimeline tl = report_trace::BuildHangTimeline(
      h.input(), [](std::optional<int32_t>) -> int64_t { return 0; }, 100);
  ASSERT_EQ(tl.entries.at(0).size(), report_trace::kMinHangEntriesPerRank);
  EXPECT_EQ(tl.entries.at(0).front().name, "nccl:all_reduce #101");
  EXPECT_EQ(tl.entries.at(0).back().name, "nccl:all_reduce #300");
  EXPECT_EQ(tl.other["fr_entries"], 600);
  EXPECT_EQ(tl.other["fr_entries_written"], 400);
  EXPECT_EQ(tl.other["fr_entries_omitted"], 200);
}

TEST(MergedTraceHangTest, ARunWithoutHangDataHasNoHangPart) {
  TempDir dir;
  auto d = SimulatedRun(dir.path(), FixtureOptions{.traces = false, .hardware = false});
  Json t = MergedTrace(*d);
  EXPECT_FALSE(t["otherData"].contains("hang"));
  for (auto& [key, name] : NamedTracks(t).thread) {
    EXPECT_EQ(name.find("Flight Recorder"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace laggard
