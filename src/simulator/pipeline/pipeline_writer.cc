// WritePipelineRun(): DIR/timeline.json.gz, the op timeline as ByteDance's
// StragglerAnalysis exporter writes it (analyzer/to_timeline.py; the corpus
// file megatron_timeline/bytedance_StragglerAnalysis_timeline-ST.json.gz),
// and DIR/truth.json (schema "laggard.sim.truth/pipeline-1",
// docs/simulator.md).
//
// The timeline is one line, a top-level JSON array without spaces:
//   [{"name":"backward-compute","cat":"backward-compute","pid":0,"tid":0,
//     "ts":848671.675,"dur":138679.683,"ph":"X",
//     "args":{"step":0,"model_chunk":0,"mb_id":0,"seq_id":0}},
//    ... every X event: step by step, rank by rank, by name, then seq_id ...
//    {"name":"thread_name","pid":0,"tid":0,"ph":"M","args":{"name":"PP rank 0, TP rank 0,
//    compute"}},
//    {"name":"thread_sort_index","pid":0,"tid":0,"ph":"M","args":{"sort_index":0}},
//    ... five threads per rank, in rank order ...
//    {"name":"process_name","pid":0,"ph":"M","args":{"name":"DP rank [0]"}}, ...]
// pid is the DP rank, tid = global rank · 5 + the thread's category; ts and
// dur are µs with three decimals (ns).

#include <chrono>
#include <filesystem>
#include <fstream>

#include <zlib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/megatron_timeline.h"
#include "formats/sim_truth.h"
#include "simulator/pipeline/pipeline_schedule.h"
#include "simulator/pipeline/pipeline_sim.h"

namespace laggard::sim {
namespace {

namespace mt = megatron_timeline;
using Json = nlohmann::ordered_json;

constexpr size_t kFlushBytes = 1 << 20;
constexpr int kThreads = static_cast<int>(mt::kCategories.size());

// The gzip'd timeline, written as it is formatted.
class TimelineFile {
 public:
  ~TimelineFile() {
    if (gz_) gzclose(gz_);
  }
  Status Open(const std::string& path) {
    path_ = path;
    gz_ = gzopen(path.c_str(), "wb1");
    if (!gz_) return Status::Error(fmt::format("{}: cannot write", path));
    buf_.push_back('[');
    return Status::Ok();
  }
  fmt::memory_buffer& Next() {  // the buffer, after the separator of a new element
    if (!first_) buf_.push_back(',');
    first_ = false;
    return buf_;
  }
  Status MaybeFlush() { return buf_.size() >= kFlushBytes ? Flush() : Status::Ok(); }
  Status Close() {
    buf_.push_back(']');
    if (Status st = Flush(); !st.ok()) return st;
    int rc = gzclose(gz_);
    gz_ = nullptr;
    return rc == Z_OK ? Status::Ok() : Status::Error(fmt::format("{}: write failed", path_));
  }

 private:
  Status Flush() {
    if (buf_.size() > 0 && gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) !=
                               static_cast<int>(buf_.size())) {
      return Status::Error(fmt::format("{}: write failed", path_));
    }
    buf_.clear();
    return Status::Ok();
  }
  std::string path_;
  gzFile gz_ = nullptr;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

Status WriteStep(TimelineFile& file, const PipelineLayout& layout, int step,
                 std::span<const PipelineEvent> events) {
  for (const PipelineEvent& ev : events) {
    std::string_view name = mt::kOpTypes[ev.kind];
    int dp = CoordOfRank(layout, ev.rank).dp;
    int tid = ev.rank * kThreads + pipeline::CategoryOf(ev.kind);
    fmt::format_to(fmt::appender(file.Next()),
                   R"({{"name":"{}","cat":"{}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},)"
                   R"("ph":"X","args":{{"{}":{},"{}":{},"{}":{},"{}":{}}}}})",
                   name, name, dp, tid, ev.ts_us, ev.dur_us, mt::kStep, step, mt::kModelChunk,
                   pipeline::ModelChunkOf(ev.kind), mt::kMicrobatch, ev.mb, mt::kSeqId, ev.seq);
    if (Status st = file.MaybeFlush(); !st.ok()) return st;
  }
  return Status::Ok();
}

Status WriteMetadata(TimelineFile& file, const PipelineLayout& layout) {
  for (int r = 0; r < layout.world(); ++r) {
    WorkerCoord c = CoordOfRank(layout, r);
    for (int i = 0; i < kThreads; ++i) {
      int tid = r * kThreads + i;
      fmt::format_to(
          fmt::appender(file.Next()),
          R"({{"name":"{}","pid":{},"tid":{},"ph":"M","args":{{"name":"{}{}, {}{}, {}"}}}})",
          mt::kThreadName, c.dp, tid, mt::kPpRankPrefix, c.pp, mt::kTpRankPrefix, c.tp,
          mt::kCategories[static_cast<size_t>(i)]);
      fmt::format_to(fmt::appender(file.Next()),
                     R"({{"name":"{}","pid":{},"tid":{},"ph":"M","args":{{"sort_index":{}}}}})",
                     mt::kThreadSortIndex, c.dp, tid, tid);
    }
    if (Status st = file.MaybeFlush(); !st.ok()) return st;
  }
  for (int d = 0; d < layout.dp; ++d) {
    fmt::format_to(fmt::appender(file.Next()),
                   R"({{"name":"{}","pid":{},"ph":"M","args":{{"name":"{}{}]"}}}})",
                   mt::kProcessName, d, mt::kDpRankPrefix, d);
  }
  return Status::Ok();
}

Json Rounded(double v, double scale) { return Json(std::round(v * scale) / scale); }

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// What a correct diagnosis names: the coordinates the fault's class
// singles out (null where it names none).
Json Culprit(const PipelineFault& f) {
  Json c = {
      {"dp", nullptr}, {"pp", nullptr}, {"tp", nullptr}, {"link", nullptr}, {"peer_pp", nullptr}};
  switch (f.kind) {
    case PipelineFaultKind::kNone:
    case PipelineFaultKind::kSeqlen: break;
    case PipelineFaultKind::kSlowWorker:
      c["dp"] = *f.dp;
      c["pp"] = *f.pp;
      c["tp"] = *f.tp;
      break;
    case PipelineFaultKind::kHeavyStage: c["pp"] = *f.pp; break;
    case PipelineFaultKind::kSlowLink:
      c["dp"] = OrNull(f.dp);
      c["pp"] = *f.pp;
      c["tp"] = OrNull(f.tp);
      c["link"] = f.link_is_p2p ? "p2p" : "dp_group";
      if (f.link_is_p2p) c["peer_pp"] = *f.pp + 1;
      break;
  }
  return c;
}

Json TruthJson(const PipelineResult& r) {
  const PipelineScenario& sc = r.scenario;
  const PipelineFault& f = sc.fault;
  Json t;
  t["schema"] = formats::kSimPipelineTruthSchema;
  t["seed"] = sc.seed;
  t["layout"] = {{"dp", sc.layout.dp},
                 {"pp", sc.layout.pp},
                 {"tp", sc.layout.tp},
                 {"world", sc.layout.world()}};
  t["rank_order"] = "tp + TP * (dp + DP * pp)";
  t["microbatches"] = sc.microbatches;
  t["steps"] = sc.steps;
  t["schedule"] = "1f1b";
  t["timeline"] = "timeline.json.gz";
  t["class"] = PipelineFaultClassName(f.kind);
  t["culprit"] = Culprit(f);
  t["fault"] = {{"kind", PipelineFaultKindName(f.kind)},
                {"spec", f.spec},
                {"factor", f.kind == PipelineFaultKind::kNone ? Json(nullptr) : Json(*f.factor)},
                {"onset_step", f.onset_step},
                {"end_step", OrNull(f.end_step)}};
  t["slowdown"] = Rounded(r.slowdown, 1e6);
  t["mean_step_s"] = Rounded(r.mean_actual_us / 1e6, 1e6);
  t["ideal_step_s"] = Rounded(r.mean_ideal_us / 1e6, 1e6);
  t["events"] = r.events;
  Json typical = Json::object();
  for (size_t k = 0; k < r.typical_us.size(); ++k) {
    if (r.typical_us[k] > 0 || k == pipeline::kGc) {
      typical[std::string(mt::kOpTypes[k])] = Rounded(r.typical_us[k], 1e3);
    }
  }
  t["typical_us"] = typical;
  Json steps = Json::array();
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const PipelineStepTruth& s = r.steps[i];
    steps.push_back({{"step", i},
                     {"start_us", Rounded(s.start_us, 1e3)},
                     {"actual_s", Rounded(s.actual_us / 1e6, 1e6)},
                     {"ideal_s", Rounded(s.ideal_us / 1e6, 1e6)},
                     {"slowdown", Rounded(s.ideal_us > 0 ? s.actual_us / s.ideal_us : 1, 1e6)},
                     {"heaviest_dp", OrNull(s.heaviest_dp)}});
  }
  t["per_step"] = steps;
  return t;
}

}  // namespace

StatusOr<PipelineRunSummary> WritePipelineRun(PipelineScenario scenario, const std::string& dir) {
  auto t0 = std::chrono::steady_clock::now();
  if (Status st = ResolvePipelineScenario(&scenario); !st.ok()) return st;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(fmt::format("{}: cannot create ({})", dir, ec.message()));
  const std::string timeline_path = dir + "/timeline.json.gz";
  TimelineFile file;
  if (Status st = file.Open(timeline_path); !st.ok()) return st;
  auto result = SimulatePipeline(scenario, [&](int step, std::span<const PipelineEvent> events) {
    return WriteStep(file, scenario.layout, step, events);
  });
  if (!result.ok()) return result.status();
  if (Status st = WriteMetadata(file, scenario.layout); !st.ok()) return st;
  if (Status st = file.Close(); !st.ok()) return st;
  const std::string truth_path = dir + "/truth.json";
  std::ofstream truth(truth_path, std::ios::binary | std::ios::trunc);
  truth << TruthJson(*result).dump(2) << "\n";
  if (!truth.flush()) return Status::Error(fmt::format("{}: write failed", truth_path));
  PipelineRunSummary summary;
  summary.result = std::move(result.value());
  summary.bytes = std::filesystem::file_size(timeline_path, ec);
  summary.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace laggard::sim
