#include "analysis/common/run_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace laggard {
namespace {

enum class Axis : uint8_t { kTp, kCp, kDp, kPp, kDpShard, kDpReplicate };

struct NamedAxis {
  std::string_view desc;
  Axis axis;
};

// Group descriptions that name one axis of the layout: Megatron-core's
// group_desc, and DeviceMesh's "mesh_" + dimension name (torchtitan's).
constexpr std::array<NamedAxis, 11> kAxisNames = {{
    {"TENSOR_MODEL_PARALLEL_GROUP", Axis::kTp},
    {"PIPELINE_MODEL_PARALLEL_GROUP", Axis::kPp},
    {"DATA_PARALLEL_GROUP", Axis::kDp},
    {"DATA_PARALLEL_GROUP_GLOO", Axis::kDp},
    {"CONTEXT_PARALLEL_GROUP", Axis::kCp},
    {"mesh_tp", Axis::kTp},
    {"mesh_pp", Axis::kPp},
    {"mesh_dp", Axis::kDp},
    {"mesh_cp", Axis::kCp},
    {"mesh_dp_shard", Axis::kDpShard},
    {"mesh_dp_replicate", Axis::kDpReplicate},
}};

std::optional<Axis> AxisOf(std::string_view desc) {
  for (const NamedAxis& n : kAxisNames) {
    if (n.desc == desc) return n.axis;
  }
  return std::nullopt;
}

std::string_view AxisName(Axis a) {
  switch (a) {
    case Axis::kTp: return "tensor";
    case Axis::kCp: return "context";
    case Axis::kDp: return "data";
    case Axis::kPp: return "pipeline";
    case Axis::kDpShard: return "data (shard)";
    case Axis::kDpReplicate: return "data (replicate)";
  }
  return "?";
}

// Whether `ranks` is one group of `axis` in layout `l`: members differ in
// that axis only (data: dp, or dp shard / replicate, which both vary the dp
// coordinate).
bool IsAxisGroup(const ParallelLayout& l, Axis axis, const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return true;
  const ParallelCoord first = MegatronCoord(l, ranks[0]);
  for (int32_t r : ranks) {
    if (r >= l.world()) return false;
    ParallelCoord c = MegatronCoord(l, r);
    bool same_tp = c.tp == first.tp, same_cp = c.cp == first.cp, same_dp = c.dp == first.dp,
         same_pp = c.pp == first.pp;
    bool ok = false;
    switch (axis) {
      case Axis::kTp: ok = same_cp && same_dp && same_pp; break;
      case Axis::kCp: ok = same_tp && same_dp && same_pp; break;
      case Axis::kDp:
      case Axis::kDpShard:
      case Axis::kDpReplicate: ok = same_tp && same_cp && same_pp; break;
      case Axis::kPp: ok = same_tp && same_cp && same_dp; break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::vector<int32_t> RunLayout::RolePeers(int32_t rank) const {
  std::vector<int32_t> out;
  const ParallelCoord me = Coord(rank);
  for (int32_t r = 0; r < layout.world(); ++r) {
    ParallelCoord c = Coord(r);
    if (c.pp == me.pp && c.tp == me.tp && c.cp == me.cp) out.push_back(r);
  }
  return out;
}

std::vector<int32_t> RunLayout::StageRanks(int32_t stage) const {
  std::vector<int32_t> out;
  for (int32_t r = 0; r < layout.world(); ++r) {
    if (Coord(r).pp == stage) out.push_back(r);
  }
  return out;
}

int32_t RanksSeen(const Run& run) {
  int32_t seen = 0;
  for (const StepSeries& s : run.ranks) seen = std::max(seen, s.info.rank + 1);
  for (const RankTrace& t : run.traces) {
    if (t.rank) seen = std::max(seen, *t.rank + 1);
  }
  return seen;
}

std::optional<ParallelLayout> LayoutFromProcessGroups(const std::vector<RankTrace>& traces,
                                                      std::vector<std::string>* conflicts) {
  std::array<std::optional<int32_t>, 6> size;  // per Axis
  struct Seen {
    Axis axis;
    const ProcessGroupInfo* group;
  };
  std::vector<Seen> seen;
  int32_t world = 0;
  for (const RankTrace& t : traces) {
    if (t.world_size) world = std::max(world, *t.world_size);
    for (const ProcessGroupInfo& g : t.groups) {
      auto axis = AxisOf(g.desc);
      if (!axis) continue;
      int32_t n = g.size.value_or(static_cast<int32_t>(g.ranks.size()));
      if (n <= 0) continue;
      auto& slot = size[static_cast<size_t>(*axis)];
      if (slot && *slot != n) {
        conflicts->push_back(fmt::format("process groups {} have sizes {} and {}; no layout taken",
                                         g.desc, *slot, n));
        return std::nullopt;
      }
      slot = n;
      seen.push_back({*axis, &g});
    }
  }
  if (seen.empty() || world <= 0) return std::nullopt;
  auto get = [&](Axis a) { return size[static_cast<size_t>(a)]; };
  std::optional<int32_t> dp = get(Axis::kDp);
  if (!dp && (get(Axis::kDpShard) || get(Axis::kDpReplicate))) {
    dp = get(Axis::kDpShard).value_or(1) * get(Axis::kDpReplicate).value_or(1);
  }
  std::optional<int32_t> tp = get(Axis::kTp), pp = get(Axis::kPp);
  const int32_t cp = get(Axis::kCp).value_or(1);
  // At most one of dp, tp, pp may be missing: the world gives it, or it is
  // 1 when the others already make the world.
  int missing = !dp + !tp + !pp;
  int64_t known = int64_t{dp.value_or(1)} * tp.value_or(1) * pp.value_or(1) * cp;
  if (missing > 0 && known == world) {
    if (!dp) dp = 1;
    if (!tp) tp = 1;
    if (!pp) pp = 1;
  } else if (missing == 1 && known > 0 && world % known == 0) {
    int32_t rest = static_cast<int32_t>(world / known);
    if (!dp) dp = rest;
    else if (!tp) tp = rest;
    else pp = rest;
  } else if (missing > 0) {
    return std::nullopt;
  }
  ParallelLayout l;
  l.dp = *dp;
  l.tp = *tp;
  l.pp = *pp;
  l.cp = cp;
  if (l.world() != world) {
    conflicts->push_back(
        fmt::format("process groups give {} ({} ranks) for a world of {}; no layout taken",
                    LayoutText(l), l.world(), world));
    return std::nullopt;
  }
  for (const Seen& s : seen) {
    if (!IsAxisGroup(l, s.axis, s.group->ranks)) {
      conflicts->push_back(fmt::format(
          "{} group {} ranks [{}] is not a {}-parallel group of {} in Megatron's rank order "
          "(tp-cp-dp-pp); no layout taken",
          s.group->desc, s.group->id, fmt::join(s.group->ranks, ", "), AxisName(s.axis),
          LayoutText(l)));
      return std::nullopt;
    }
  }
  if (l.pp == 1 && l.tp == 1 && l.cp == 1) return std::nullopt;  // plain data parallel
  return l;
}

RunLayoutResult ResolveRunLayout(const Run& run, const std::optional<ParallelLayout>& flag) {
  RunLayoutResult out;
  const int32_t seen = RanksSeen(run);
  auto fits = [&](const ParallelLayout& l, std::string_view who) {
    if (seen <= l.world()) return true;
    out.conflicts.push_back(fmt::format("{} {} has {} ranks, the run {}; not used", who,
                                        LayoutText(l), l.world(), seen));
    return false;
  };
  auto make = [&](const ParallelLayout& l, LayoutSource source, std::optional<SourceRef> src) {
    RunLayout r;
    r.layout = l;
    r.source = source;
    r.src = src;
    r.world_seen = seen;
    out.layout = r;
  };
  if (flag) {
    if (fits(*flag, "--layout")) make(*flag, LayoutSource::kFlag, std::nullopt);
    return out;
  }
  if (!run.layouts.empty()) {
    const LayoutStatement& first = run.layouts.front();
    bool agree = std::all_of(run.layouts.begin(), run.layouts.end(),
                             [&](const LayoutStatement& s) { return s.layout == first.layout; });
    if (!agree) {
      for (const LayoutStatement& s : run.layouts) {
        if (s.layout == first.layout) continue;
        out.conflicts.push_back(
            fmt::format("launch logs state {} and {}; neither is used (give --layout)",
                        LayoutText(first.layout), LayoutText(s.layout)));
        break;
      }
    } else if (fits(first.layout, "the launch log's layout")) {
      make(first.layout, LayoutSource::kLaunchLog, first.src);
      return out;
    }
  }
  if (auto l = LayoutFromProcessGroups(run.traces, &out.conflicts)) {
    if (fits(*l, "the process groups' layout"))
      make(*l, LayoutSource::kProcessGroups, std::nullopt);
  }
  return out;
}

}  // namespace laggard
