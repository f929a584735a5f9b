// The 3D-parallel simulator's command-line vocabulary: layouts
// ("dp=2,pp=4,tp=1"), fault specs ("slow_worker@dp=1,pp=2:1.3") and their
// resolution against a layout (pipeline_sim.h has the grammar).

#include <fmt/format.h>

#include "base/text.h"
#include "simulator/pipeline/pipeline_schedule.h"
#include "simulator/pipeline/pipeline_sim.h"

namespace laggard::sim {
namespace {

constexpr uint64_t kTargetTag = 31;

struct KindRow {
  PipelineFaultKind kind;
  std::string_view name, cls, keys;  // keys: the coordinates its target takes
  double default_factor;
};
constexpr KindRow kKinds[] = {
    {PipelineFaultKind::kNone, "none", "none", "", 1},
    {PipelineFaultKind::kSlowWorker, "slow_worker", "worker", "dp,pp,tp", 1.3},
    {PipelineFaultKind::kHeavyStage, "heavy_stage", "stage", "pp", 1.25},
    {PipelineFaultKind::kSeqlen, "seqlen", "workload", "", 0.15},
    {PipelineFaultKind::kSlowLink, "slow_link", "communication", "dp,pp,tp", 3},
};

const KindRow& Row(PipelineFaultKind kind) {
  for (const KindRow& r : kKinds) {
    if (r.kind == kind) return r;
  }
  return kKinds[0];
}

std::string KindList() {
  std::string s;
  for (const KindRow& r : kKinds) s += fmt::format("{}{}", s.empty() ? "" : ", ", r.name);
  return s;
}

// One KEY=N item of a spec into `f`.
Status SetKey(PipelineFault& f, std::string_view key, std::string_view value) {
  auto v = ParseInt<int>(value);
  if (!v || *v < 0) return Status::Error(fmt::format("{}= needs a non-negative integer", key));
  if (key == "onset") {
    f.onset_step = *v;
    return Status::Ok();
  }
  if (key == "end") {
    f.end_step = *v;
    return Status::Ok();
  }
  std::string_view keys = Row(f.kind).keys;
  bool coordinate = key == "dp" || key == "pp" || key == "tp";
  if (!coordinate) {
    return Status::Error(fmt::format("unknown key '{}' (dp, pp, tp, onset, end)", key));
  }
  if (keys.find(key) == std::string_view::npos) {
    return Status::Error(fmt::format("{} takes {}", Row(f.kind).name,
                                     keys.empty() ? "no coordinates" : fmt::format("{}=", keys)));
  }
  (key == "dp" ? f.dp : key == "pp" ? f.pp : f.tp) = *v;
  return Status::Ok();
}

Status SetFactor(PipelineFault& f, std::string_view text) {
  text = Trim(text);
  std::optional<double> v;
  if (f.kind == PipelineFaultKind::kSeqlen && EndsWith(text, "%")) {
    if (auto pct = ParseDouble(text.substr(0, text.size() - 1))) v = *pct / 100;
  } else {
    v = ParseDouble(text);
  }
  if (!v || !(*v >= 0) || *v > 1e6) {
    return Status::Error(
        fmt::format("'{}' is not a factor (write 1.3; seqlen: a cv, 0.15 or 15%)", text));
  }
  if (f.kind != PipelineFaultKind::kSeqlen && *v <= 0) {
    return Status::Error("the factor must be positive");
  }
  f.factor = *v;
  return Status::Ok();
}

}  // namespace

std::string_view PipelineFaultKindName(PipelineFaultKind kind) { return Row(kind).name; }
std::string_view PipelineFaultClassName(PipelineFaultKind kind) { return Row(kind).cls; }
double DefaultPipelineFactor(PipelineFaultKind kind) { return Row(kind).default_factor; }

StatusOr<PipelineFault> ParsePipelineFault(std::string_view spec_in) {
  std::string_view spec = Trim(spec_in);
  PipelineFault f;
  f.spec = std::string(spec);
  auto bad = [&](std::string_view why) {
    return Status::Error(fmt::format("fault '{}': {}", spec, why));
  };
  size_t end_of_kind = spec.find_first_of("@:,");
  std::string_view kind = Trim(spec.substr(0, end_of_kind));
  bool found = false;
  for (const KindRow& r : kKinds) {
    if (r.name == kind) {
      f.kind = r.kind;
      found = true;
    }
  }
  if (!found) return bad(fmt::format("unknown kind '{}'; kinds: {}", kind, KindList()));
  if (end_of_kind == std::string_view::npos) return f;
  std::string_view rest = spec.substr(end_of_kind);
  if (rest.front() == '@' || rest.front() == ',') rest.remove_prefix(1);
  bool factor_seen = false;
  for (std::string_view item : Split(rest, ',')) {
    item = Trim(item);
    if (size_t colon = item.find(':'); colon != std::string_view::npos) {
      if (factor_seen) return bad("one :FACTOR only");
      factor_seen = true;
      if (Status st = SetFactor(f, item.substr(colon + 1)); !st.ok()) return bad(st.message());
      item = Trim(item.substr(0, colon));
      if (item.empty()) continue;
    }
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return bad(fmt::format("'{}' is not KEY=N (dp=1, pp=2, tp=0, onset=5, end=9)", item));
    }
    if (Status st = SetKey(f, Trim(item.substr(0, eq)), item.substr(eq + 1)); !st.ok()) {
      return bad(st.message());
    }
  }
  if (f.end_step && *f.end_step < f.onset_step) return bad("end is before onset");
  return f;
}

StatusOr<PipelineLayout> ParsePipelineLayout(std::string_view spec) {
  PipelineLayout l;
  auto bad = [&](std::string_view why) {
    return Status::Error(fmt::format("layout '{}': {}", spec, why));
  };
  for (std::string_view item : Split(spec, ',')) {
    item = Trim(item);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad("write dp=N,pp=N,tp=N");
    std::string_view key = Trim(item.substr(0, eq));
    auto v = ParseInt<int>(item.substr(eq + 1));
    if (!v || *v < 1) return bad(fmt::format("{} needs a positive integer", key));
    if (key == "dp") l.dp = *v;
    else if (key == "pp") l.pp = *v;
    else if (key == "tp") l.tp = *v;
    else return bad(fmt::format("unknown size '{}' (dp, pp, tp)", key));
  }
  return l;
}

Status ResolvePipelineScenario(PipelineScenario* sc) {
  const PipelineLayout& l = sc->layout;
  if (l.dp < 1 || l.pp < 1 || l.tp < 1) return Status::Error("layout: every size must be >= 1");
  if (static_cast<int64_t>(l.dp) * l.pp * l.tp > (1 << 20)) {
    return Status::Error("layout: more than 1,048,576 workers");
  }
  if (sc->microbatches < l.pp || sc->microbatches > 4096) {
    return Status::Error(
        fmt::format("--microbatches {}: 1F1B needs at least one per stage (pp = {}), at most 4096",
                    sc->microbatches, l.pp));
  }
  if (sc->steps < 1) return Status::Error("--steps must be at least 1");
  PipelineFault& f = sc->fault;
  if (!f.factor) f.factor = DefaultPipelineFactor(f.kind);
  auto out_of_range = [&](const char* key, const std::optional<int>& v, int size) {
    return v && *v >= size ? Status::Error(fmt::format("fault '{}': {}={} is outside the layout "
                                                       "({} {})",
                                                       f.spec, key, *v, key, size))
                           : Status::Ok();
  };
  for (Status st : {out_of_range("dp", f.dp, l.dp), out_of_range("pp", f.pp, l.pp),
                    out_of_range("tp", f.tp, l.tp)}) {
    if (!st.ok()) return st;
  }
  Rng rng(pipeline::StreamSeed(sc->seed, kTargetTag, 0, 0));
  auto draw = [&](std::optional<int>& v, int size) {
    int drawn = static_cast<int>(rng.Next() % static_cast<uint64_t>(size));
    if (!v) v = drawn;
  };
  switch (f.kind) {
    case PipelineFaultKind::kNone:
    case PipelineFaultKind::kSeqlen: break;
    case PipelineFaultKind::kSlowWorker:
      draw(f.dp, l.dp);
      draw(f.pp, l.pp);
      draw(f.tp, l.tp);
      break;
    case PipelineFaultKind::kHeavyStage: draw(f.pp, l.pp); break;
    case PipelineFaultKind::kSlowLink:
      f.link_is_p2p = f.dp.has_value() || (!f.pp && l.pp > 1);
      if (f.link_is_p2p) {
        if (l.pp < 2)
          return Status::Error(fmt::format("fault '{}': no pipeline link (pp 1)", f.spec));
        draw(f.dp, l.dp);
        draw(f.pp, l.pp - 1);
        if (*f.pp >= l.pp - 1) {
          return Status::Error(fmt::format(
              "fault '{}': the link of stage pp joins pp and pp+1; the last stage is {}", f.spec,
              l.pp - 1));
        }
      } else {
        if (l.dp < 2) {
          return Status::Error(
              fmt::format("fault '{}': a data-parallel group needs dp > 1 (give dp= for the "
                          "pipeline link of a replica)",
                          f.spec));
        }
        draw(f.pp, l.pp);
      }
      break;
  }
  if (f.end_step && *f.end_step < f.onset_step) {
    return Status::Error(fmt::format("fault '{}': end is before onset", f.spec));
  }
  return Status::Ok();
}

}  // namespace laggard::sim
