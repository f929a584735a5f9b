#include "model/trace.h"

#include <algorithm>
#include <cstdint>

namespace laggard {

std::string_view OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kGemm: return "gemm";
    case OpClass::kAttention: return "attention";
    case OpClass::kOtherCompute: return "other_compute";
    case OpClass::kCommunication: return "communication";
    case OpClass::kMemcpy: return "memcpy";
    case OpClass::kMemset: return "memset";
    case OpClass::kCount: break;
  }
  return "other_compute";
}

uint32_t NameTable::Intern(std::string_view s) {
  auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  index_.emplace(names_.back(), id);
  return id;
}

}  // namespace laggard

namespace laggard {

namespace {

// Adds [from, to) to `field` of every step it overlaps. `by_start` holds the
// step indices sorted by start_ns, `max_end` the running maximum of their
// ends; `first` only moves forward, as the intervals come in time order.
struct StepSpreader {
  std::vector<TraceStep>& steps;
  std::vector<size_t> by_start;
  std::vector<TimeNs> max_end;
  size_t first = 0;

  explicit StepSpreader(std::vector<TraceStep>& s) : steps(s) {
    by_start.resize(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) by_start[i] = i;
    std::sort(by_start.begin(), by_start.end(),
              [&](size_t a, size_t b) { return steps[a].start_ns < steps[b].start_ns; });
    TimeNs m = INT64_MIN;
    for (size_t i : by_start) max_end.push_back(m = std::max(m, steps[i].end_ns));
  }

  template <typename Field>
  void Add(TimeNs from, TimeNs to, Field field) {
    if (to <= from) return;
    while (first < by_start.size() && max_end[first] <= from) ++first;
    for (size_t j = first; j < by_start.size(); ++j) {
      TraceStep& s = steps[by_start[j]];
      if (s.start_ns >= to) break;
      TimeNs a = std::max(from, s.start_ns), b = std::min(to, s.end_ns);
      if (b > a) field(s) += b - a;
    }
  }
};

}  // namespace

void AttributeLaunchGaps(RankTrace& trace, const LaunchTimes& launch_ns) {
  auto counts = [&](const TraceOp& op) {
    return op.device >= 0 && (!trace.device || op.device == *trace.device);
  };
  trace.launches_linked = 0;
  for (size_t i = 0; i < trace.ops.size() && i < launch_ns.size(); ++i) {
    if (launch_ns[i] != kNoLaunch && counts(trace.ops[i])) ++trace.launches_linked;
  }
  const bool linked = trace.launches_linked > 0;
  auto zero_or_none = [&] { return linked ? std::optional<DurationNs>(0) : std::nullopt; };
  trace.gpu_idle_ns = 0;
  trace.idle_unlaunched_ns = zero_or_none();
  trace.idle_queued_ns = zero_or_none();
  for (TraceStep& s : trace.steps) {
    s.gpu_idle_ns = 0;
    s.idle_unlaunched_ns = zero_or_none();
    s.idle_queued_ns = zero_or_none();
  }
  StepSpreader spread(trace.steps);
  bool open = false;
  TimeNs cur_end = 0;
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const TraceOp& op = trace.ops[i];
    if (!counts(op)) continue;
    TimeNs end = op.start_ns + op.dur_ns;
    if (!open) {
      open = true;
      cur_end = end;
      continue;
    }
    if (op.start_ns > cur_end) {
      TimeNs a = cur_end, b = op.start_ns;
      trace.gpu_idle_ns += b - a;
      spread.Add(a, b, [](TraceStep& s) -> DurationNs& { return s.gpu_idle_ns; });
      if (i < launch_ns.size() && launch_ns[i] != kNoLaunch) {
        TimeNs split = std::min(std::max(launch_ns[i], a), b);
        *trace.idle_unlaunched_ns += split - a;
        *trace.idle_queued_ns += b - split;
        spread.Add(a, split, [](TraceStep& s) -> DurationNs& { return *s.idle_unlaunched_ns; });
        spread.Add(split, b, [](TraceStep& s) -> DurationNs& { return *s.idle_queued_ns; });
      }
    }
    cur_end = std::max(cur_end, end);
  }
}

void SortOpsByStart(std::vector<TraceOp>& ops, LaunchTimes& launch_ns) {
  auto by_start = [](const TraceOp& a, const TraceOp& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(ops.begin(), ops.end(), by_start)) return;
  if (launch_ns.size() != ops.size()) {
    std::stable_sort(ops.begin(), ops.end(), by_start);
    return;
  }
  std::vector<uint32_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return ops[a].start_ns < ops[b].start_ns; });
  // Position j takes the element at order[j]: follow each cycle once,
  // marking a position done by order[j] = j.
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == i) continue;
    TraceOp op = ops[i];
    TimeNs launch = launch_ns[i];
    size_t j = i;
    for (;;) {
      size_t k = order[j];
      order[j] = static_cast<uint32_t>(j);
      if (k == i) {
        ops[j] = op;
        launch_ns[j] = launch;
        break;
      }
      ops[j] = ops[k];
      launch_ns[j] = launch_ns[k];
      j = k;
    }
  }
}

}  // namespace laggard
