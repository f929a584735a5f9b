#include "ingest/traces/kineto/kineto_parser.h"

#include <algorithm>
#include <climits>
#include <utility>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/kineto_keys.h"
#include "ingest/traces/common/kernel_names.h"
#include "ingest/traces/common/step_marker.h"

namespace laggard::kineto {
namespace {

namespace keys = kineto_keys;

// A cheap hash of a name's length and first, middle and last 8 bytes, for
// the lookup cache in front of the name table (cuBLAS kernel names differ in
// the middle: sm90_xmma_gemm_..._tilesize256x128x64_..._cublas; a collision
// costs one compare).
inline size_t QuickNameHash(std::string_view s) {
  uint64_t head = 0, mid = 0, tail = 0;
  if (s.size() >= 8) {
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&mid, s.data() + s.size() / 2 - 4, 8);
    std::memcpy(&tail, s.data() + s.size() - 8, 8);
  } else if (!s.empty()) {  // (an empty view may have no data pointer)
    std::memcpy(&head, s.data(), s.size());
  }
  uint64_t h = (s.size() * 0x9E3779B97F4A7C15ULL) ^ head;
  h = (h * 0xFF51AFD7ED558CCDULL) ^ mid;
  h = (h * 0xC4CEB9FE1A85EC53ULL) ^ tail;
  h *= 0xFF51AFD7ED558CCDULL;
  return static_cast<size_t>(h >> 40);
}

std::optional<int32_t> ToInt32(std::optional<int64_t> v) {
  if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*v);
}

std::string Clip(std::string_view s) {
  return std::string(s.substr(0, 40)) + (s.size() > 40 ? "..." : "");
}

}  // namespace

KinetoParser::KinetoParser(Mode mode, ReaderContext& ctx, EventDiagnostics& diag)
    : mode_(mode),
      collecting_cpu_(mode == Mode::kCpu),
      ctx_(ctx),
      diag_(diag),
      builder_(ctx.out->names()),
      marker_(ctx.step_marker) {}

KinetoParser::NameInfo& KinetoParser::Name(std::string_view s) {
  NameCacheEntry& hit = name_cache_[QuickNameHash(s) & (kNameCacheSize - 1)];
  if (hit.key != nullptr && *hit.key == s) return *hit.info;
  auto it = names_.find(s);
  if (it == names_.end()) {
    NameInfo info;
    info.id = builder_.names().Intern(s);
    it = names_.emplace(std::string(s), info).first;
  }
  hit = NameCacheEntry{&it->first, &it->second};
  return it->second;
}

std::optional<uint32_t> KinetoParser::GroupOf(const EventFields& e) {
  if (!e.pg_name.empty()) {
    if (auto g = DecodeString(e.pg_name, scratch_)) return Intern(*g);
    return Intern(e.pg_name);  // a number written without quotes
  }
  if (!e.pg_id.empty()) {
    if (auto id = ParseIntToken(e.pg_id)) return Intern(std::to_string(*id));
  }
  return std::nullopt;
}

[[gnu::always_inline]] inline std::string KinetoParser::CollectiveOf(const EventFields& e) {
  if (e.coll_name.empty()) return std::string();
  auto s = DecodeString(e.coll_name, scratch_);
  return s ? CanonicalCollective(*s, /*known_only=*/false) : std::string();
}

void KinetoParser::OnEvent(const EventFields& e, uint64_t offset) {
  if (e.ph != keys::phase::kCompleteQuoted || e.cat_kind == Cat::kUnseen ||
      e.cat_kind == Cat::kIgnored) {
    return;
  }
  if ((IsDeviceCat(e.cat_kind) || e.cat_kind == Cat::kRuntime) && mode_ != Mode::kDevice) return;
  if (e.cat_kind == Cat::kRuntime) return TakeLaunchCall(e, offset);
  std::optional<std::string_view> name;
  if (e.name_plain) {
    name = e.name.substr(1, e.name.size() - 2);
  } else if (!e.name.empty()) {
    name = DecodeString(e.name, name_scratch_);
  }
  if (!name) return diag_.BadEvent(offset, "event without a string \"name\"");
  std::optional<int64_t> ts = ParseMicrosToNs(e.ts);
  if (!ts) {
    return diag_.BadEvent(offset, e.ts.empty()
                                      ? std::string("event without \"ts\"")
                                      : fmt::format("\"ts\": {} is not a number", Clip(e.ts)));
  }
  std::optional<int64_t> dur = ParseMicrosToNs(e.dur);
  if (!dur) {
    return diag_.BadEvent(offset, e.dur.empty()
                                      ? std::string("complete event (ph X) without \"dur\"")
                                      : fmt::format("\"dur\": {} is not a number", Clip(e.dur)));
  }
  if (*dur < 0) return diag_.BadEvent(offset, fmt::format("negative \"dur\": {}", Clip(e.dur)));
  if (*ts + *dur > kMaxAbsTimeUs * 1000) {  // end + base would overflow int64 ns
    return diag_.BadEvent(offset, fmt::format("event ends past 4e15 us: \"ts\": {}, \"dur\": {}",
                                              Clip(e.ts), Clip(e.dur)));
  }

  if (IsDeviceCat(e.cat_kind)) return TakeDeviceOp(e, *name, *ts, *dur, offset);

  if (!marker_.empty()) {
    if (std::optional<MarkedStep> m = MatchStepMarker(marker_, *name)) {
      builder_.steps().AddMarked(MarkerRange{m->number, *ts, *ts + *dur});
      return;
    }
  }
  if (StartsWith(*name, keys::name::kProfilerStep)) {
    if (auto n = ParseInt<int64_t>(name->substr(keys::name::kProfilerStep.size()))) {
      builder_.steps().AddBuiltin(*n, *ts, *ts + *dur);
    }
    return;
  }
  bool is_rpc = *name == keys::name::kRecordParamComms;
  if (is_rpc && mode_ == Mode::kDevice) {
    if (auto ext = ParseIntToken(e.ext_id)) RememberCommMeta(*ext, e);
  }
  if (!collecting_cpu_) return;
  bool comm = IsCpuCommName(*name);
  if (e.cat_kind == Cat::kAnnotation && !comm) return;
  NameInfo& info = Name(*name);
  TraceOp op;
  op.start_ns = *ts;
  op.dur_ns = *dur;
  op.name = info.id;
  op.stream = ToInt32(ParseIntToken(e.tid)).value_or(-1);
  op.cls = comm ? OpClass::kCommunication : OpClass::kOtherCompute;
  op.device = -1;
  builder_.AddOp(op);
  if (!comm) return;
  std::optional<CpuCommLayer> layer;
  if (IsBackendCommAnnotation(*name)) {
    layer = CpuCommLayer::kBackend;
  } else if (is_rpc) {
    layer = CpuCommLayer::kParamComms;
  } else if (StartsWith(*name, "c10d::")) {
    layer = CpuCommLayer::kC10d;
  }
  if (!layer) return;
  CollectiveCall& c = cpu_collectives_.Add(*layer, *ts, *dur, info.id, offset);
  std::string coll = CollectiveOf(e);
  if (coll.empty() && !is_rpc) coll = CanonicalCollective(*name, /*known_only=*/false);
  c.collective = Intern(coll);
  c.group = GroupOf(e);
  c.seq = ParseIntToken(e.seq);
  c.nelems = ParseIntToken(e.nelems);
  if (!c.nelems) c.nelems = e.dims_product;
  c.group_size = ToInt32(ParseIntToken(e.group_size));
}

// A launch call (cat cuda_runtime / cuda_driver / Runtime): its start and
// correlation, matched to its device op in Finish(). A call without a
// correlation launches nothing this trace can link (not an error).
[[gnu::always_inline]] inline void KinetoParser::TakeLaunchCall(const EventFields& e,
                                                                uint64_t offset) {
  std::optional<int64_t> corr = ParseIntToken(e.correlation);
  if (!corr || *corr < 0 || *corr >= kNoCorrelation) return;
  std::optional<int64_t> ts = ParseMicrosToNs(e.ts);
  if (!ts || *ts > kMaxAbsTimeUs * 1000) {
    return diag_.BadEvent(offset, e.ts.empty()
                                      ? std::string("launch call without \"ts\"")
                                      : fmt::format("\"ts\": {} is not a number", Clip(e.ts)));
  }
  builder_.AddLaunchCall(static_cast<uint32_t>(*corr), *ts);
}

// "grid 132x1x1 block 128x1x1", interned; kNoShape without both or past
// kMaxShapes distinct shapes in this file.
[[gnu::always_inline]] inline uint32_t KinetoParser::ShapeOf(const EventFields& e,
                                                             NameInfo& kernel) {
  if (!e.grid || !e.block) return kNoShape;
  const auto& g = *e.grid;
  const auto& b = *e.block;
  // Looked up by the numbers (once per kernel: the hot path), first in
  // what this kernel had last; the text is formatted once per distinct shape.
  LaunchShape key{g[0], g[1], g[2], b[0], b[1], b[2]};
  if (kernel.last_shape_id && kernel.last_shape == key) return *kernel.last_shape_id;
  uint32_t id = builder_.Shape(key);
  if (id == kNoShape) return kNoShape;  // the table is full: not remembered either
  kernel.last_shape = key;
  kernel.last_shape_id = id;
  return id;
}

[[gnu::always_inline]] inline void KinetoParser::TakeDeviceOp(const EventFields& e,
                                                              std::string_view name, int64_t ts,
                                                              int64_t dur, uint64_t offset) {
  NameInfo& info = Name(name);
  OpClass cls = OpClass::kOtherCompute;
  if (e.cat_kind == Cat::kMemcpy) {
    cls = OpClass::kMemcpy;
  } else if (e.cat_kind == Cat::kMemset) {
    cls = OpClass::kMemset;
  } else {
    if (!info.kernel_class) info.kernel_class = ClassifyKernelName(name, ctx_.comm_kernels);
    cls = e.coll_name.empty() ? *info.kernel_class : OpClass::kCommunication;
  }
  TraceOp op;
  op.start_ns = ts;
  op.dur_ns = dur;
  op.name = info.id;
  std::optional<int64_t> device = ParseIntToken(e.device);
  if (!device) device = ParseIntToken(e.pid);  // Kineto's GPU pid is the device
  op.device = device && *device >= 0 && *device <= INT16_MAX ? static_cast<int16_t>(*device) : -1;
  std::optional<int64_t> stream = ParseIntToken(e.stream);
  if (!stream) stream = ParseIntToken(e.tid);
  op.stream = ToInt32(stream).value_or(-1);
  op.cls = cls;
  op.shape = ShapeOf(e, info);
  std::optional<int64_t> corr = ParseIntToken(e.correlation);
  builder_.AddCorrelatedOp(op, corr && *corr >= 0 && *corr < kNoCorrelation
                                   ? static_cast<uint32_t>(*corr)
                                   : kNoCorrelation);
  if (cls != OpClass::kCommunication) return;

  CollectiveCall c;
  c.start_ns = ts;
  c.dur_ns = dur;
  c.kernel = info.id;
  std::string coll = CollectiveOf(e);
  if (coll.empty()) {
    if (!info.kernel_collective) info.kernel_collective = Intern(CollectiveFromKernel(name));
    c.collective = *info.kernel_collective;
  } else {
    c.collective = Intern(coll);
  }
  c.group = GroupOf(e);
  c.seq = ParseIntToken(e.seq);
  c.nelems = ParseIntToken(e.nelems);
  c.group_size = ToInt32(ParseIntToken(e.group_size));
  c.offset = offset;
  builder_.AddCollective(c, ParseIntToken(e.ext_id));
}

[[gnu::always_inline]] inline void KinetoParser::RememberCommMeta(int64_t ext,
                                                                  const EventFields& e) {
  CommMeta m;
  m.seq = ParseIntToken(e.seq);
  m.group = GroupOf(e);
  m.nelems = ParseIntToken(e.nelems);
  m.group_size = ToInt32(ParseIntToken(e.group_size));
  m.collective = CollectiveOf(e);
  builder_.AddCommMeta(ext, std::move(m));
}

RankTrace KinetoParser::Finish(const TraceHeader& header, uint64_t events_total,
                               uint64_t events_lost, bool truncated) {
  const bool cpu_only = mode_ == Mode::kCpu && builder_.has_ops();
  if (mode_ == Mode::kCpu) cpu_collectives_.AddLowestTo(builder_);
  const bool marked = builder_.steps().marked();
  RankTrace t = builder_.Finish(header.base_ns, RepeatedSteps::kSpan);
  t.file = ctx_.file_index;
  t.producer = "kineto";
  t.cpu_only = cpu_only;
  if (!marker_.empty() && !marked) {
    diag_.diag().Add(
        DiagCode::kTraceNoStepMarker, diag_.path(), 0,
        fmt::format("no range named '{}' (--step-marker); {} ProfilerStep#N steps used", marker_,
                    t.steps.size()));
  }
  std::sort(t.steps.begin(), t.steps.end(),
            [](const TraceStep& a, const TraceStep& b) { return a.step < b.step; });

  if (header.rank) t.rank = header.rank;
  else if (ctx_.rank_from_path) t.rank = ctx_.rank_from_path;
  t.world_size = header.world_size;
  t.groups = header.groups;
  for (ProcessGroupInfo& g : t.groups) {
    // "ranks": [] stands for every rank only when the group is the world's size.
    if (g.whole_world && !(g.size && t.world_size && *g.size == *t.world_size))
      g.whole_world = false;
  }
  if (header.dist_host) t.host = header.dist_host;
  else if (header.top_host) t.host = header.top_host;
  // The device: the one with the most ops (ties: the lowest).
  std::unordered_map<int16_t, uint64_t> per_device;
  for (const TraceOp& op : t.ops) {
    if (op.device >= 0) ++per_device[op.device];
  }
  uint64_t best = 0;
  for (const auto& [device, count] : per_device) {
    if (count > best || (count == best && t.device && device < *t.device)) {
      best = count;
      t.device = device;
    }
  }
  t.events_total = events_total;
  t.events_lost = events_lost;
  t.truncated = truncated;
  builder_.AttributeLaunchGaps(t);

  diag_.AddBadEventSummary();
  if (!t.rank) {
    diag_.diag().Add(DiagCode::kTraceNoRank, diag_.path(), 0,
                     "no distributedInfo.rank and no rank in the file name");
  }
  if (t.ops.empty() && t.steps.empty()) {
    diag_.diag().Add(
        DiagCode::kTraceNoEvents, diag_.path(), 0,
        fmt::format("{} events, none of them a kernel, memcpy, memset or CPU op", events_total));
  }
  return t;
}

}  // namespace laggard::kineto
