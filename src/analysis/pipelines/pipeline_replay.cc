#include "analysis/pipelines/pipeline_replay.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "analysis/common/finding.h"
#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

using Kind = TimelineOpKind;
constexpr int32_t kNone = -1;

// The dependency graph of every step, and the order its units run in. A
// unit is one compute op, or one communication group (its members end
// together).
struct Graph {
  std::vector<int32_t> op_of;        // graph op -> timeline op index
  std::vector<uint32_t> dep_begin;   // CSR: deps of graph op i
  std::vector<int32_t> deps;         // graph op indices
  std::vector<uint32_t> unit_begin;  // CSR: members of unit u, in run order
  std::vector<int32_t> members;      // graph op indices
  std::vector<int32_t> step_of;      // graph op -> dense step index
  std::vector<char> ends_step;       // graph op is an optimizer
  std::vector<uint32_t> end_begin;   // CSR per dense step: the ops whose latest end ends it
  std::vector<int32_t> end_ops;      //   (its optimizers; every op of a step without one)
  std::vector<int64_t> steps;        // dense step index -> step number
  std::vector<char> step_ok;         // per dense step: nothing left out
};

// The ops of one (step, worker), by kind, in seq order.
class WorkerStep {
 public:
  void Add(Kind k, int32_t op) { by_kind_[static_cast<size_t>(k)].push_back(op); }
  std::vector<int32_t>& of(Kind k) { return by_kind_[static_cast<size_t>(k)]; }
  const std::vector<int32_t>& of(Kind k) const { return by_kind_[static_cast<size_t>(k)]; }

 private:
  std::array<std::vector<int32_t>, kTimelineOpKinds> by_kind_;
};

class GraphBuilder {
 public:
  GraphBuilder(const OpTimeline& t, const ParallelLayout& l, const std::vector<ParallelCoord>& c,
               ReplayFit& fit)
      : t_(t), l_(l), coords_(c), fit_(fit) {}

  Graph Build();

 private:
  int32_t WorkerAt(int32_t dp, int32_t pp, int32_t tp) const {
    if (dp < 0 || pp < 0 || tp < 0 || dp >= l_.dp || pp >= l_.pp || tp >= l_.tp) return kNone;
    return worker_at_[(static_cast<size_t>(pp) * l_.dp + dp) * l_.tp + tp];
  }
  WorkerStep* Cell(size_t step, int32_t worker) {
    if (worker == kNone) return nullptr;
    return &cells_[step * t_.workers.size() + static_cast<size_t>(worker)];
  }
  // The op of `kind` with `seq` in a cell (seq is its place: ops are sorted).
  static int32_t At(const WorkerStep* c, Kind k, int32_t seq) {
    if (c == nullptr || seq < 0) return kNone;
    const auto& v = c->of(k);
    return static_cast<size_t>(seq) < v.size() ? v[static_cast<size_t>(seq)] : kNone;
  }
  void Dep(int32_t before, int32_t after) {
    if (before != kNone && after != kNone) edges_.emplace_back(before, after);
  }
  void Chain(const std::vector<int32_t>& ops) {
    for (size_t i = 1; i < ops.size(); ++i) Dep(ops[i - 1], ops[i]);
  }
  void Index();
  void WorkerDeps(size_t step, int32_t worker);
  void P2pDeps(WorkerStep& c, const std::vector<int32_t>& compute);
  void TailDeps(WorkerStep& c, const std::vector<int32_t>& compute, int32_t pp);
  void Groups(size_t step);
  void Group(std::vector<int32_t> ops) {
    ops.erase(std::remove(ops.begin(), ops.end(), kNone), ops.end());
    if (ops.size() < 2) return;
    for (int32_t op : ops)
      group_of_[static_cast<size_t>(op)] = static_cast<int32_t>(groups_.size());
    groups_.push_back(std::move(ops));
  }
  Graph Finish();

  const OpTimeline& t_;
  const ParallelLayout& l_;
  const std::vector<ParallelCoord>& coords_;
  ReplayFit& fit_;
  std::vector<int32_t> worker_at_;
  std::vector<int64_t> steps_;
  std::vector<int32_t> step_index_;  // timeline op -> dense step, kNone when left out
  std::vector<WorkerStep> cells_;
  std::vector<std::pair<int32_t, int32_t>> edges_;  // timeline op indices
  std::vector<int32_t> group_of_;
  std::vector<std::vector<int32_t>> groups_;
};

void GraphBuilder::Index() {
  worker_at_.assign(static_cast<size_t>(l_.world()), kNone);
  for (size_t w = 0; w < coords_.size(); ++w) {
    const ParallelCoord& c = coords_[w];
    worker_at_[(static_cast<size_t>(c.pp) * l_.dp + c.dp) * l_.tp + c.tp] = static_cast<int32_t>(w);
  }
  // Steps: ops come grouped by step in every real file, so most repeat the
  // previous op's.
  for (const TimelineOp& op : t_.ops) {
    if (steps_.empty() || steps_.back() != op.step) steps_.push_back(op.step);
  }
  std::sort(steps_.begin(), steps_.end());
  steps_.erase(std::unique(steps_.begin(), steps_.end()), steps_.end());
  cells_.assign(steps_.size() * t_.workers.size(), WorkerStep());
  step_index_.assign(t_.ops.size(), kNone);
  size_t s = 0;
  for (size_t i = 0; i < t_.ops.size(); ++i) {
    const TimelineOp& op = t_.ops[i];
    if (op.worker < 0 || static_cast<size_t>(op.worker) >= t_.workers.size()) continue;
    if (steps_[s] != op.step) {
      s = static_cast<size_t>(std::lower_bound(steps_.begin(), steps_.end(), op.step) -
                              steps_.begin());
    }
    Cell(s, op.worker)->of(op.kind).push_back(static_cast<int32_t>(i));
  }
  // Each cell's ops of one kind in (seq, start) order; a repeated seq is a
  // duplicate, left out.
  auto before = [&](int32_t a, int32_t b) {
    const TimelineOp& x = t_.ops[static_cast<size_t>(a)];
    const TimelineOp& y = t_.ops[static_cast<size_t>(b)];
    return std::tie(x.seq, x.start_ns, a) < std::tie(y.seq, y.start_ns, b);
  };
  for (size_t c = 0; c < cells_.size(); ++c) {
    for (int k = 0; k < kTimelineOpKinds; ++k) {
      std::vector<int32_t>& v = cells_[c].of(static_cast<Kind>(k));
      if (!std::is_sorted(v.begin(), v.end(), before)) std::sort(v.begin(), v.end(), before);
      size_t out = 0;
      for (size_t j = 0; j < v.size(); ++j) {
        if (out > 0 &&
            t_.ops[static_cast<size_t>(v[out - 1])].seq == t_.ops[static_cast<size_t>(v[j])].seq) {
          ++fit_.duplicates;
          continue;
        }
        v[out++] = v[j];
        step_index_[static_cast<size_t>(v[j])] = static_cast<int32_t>(c / t_.workers.size());
      }
      v.resize(out);
    }
  }
}

// The compute stream, the p2p streams and their ties to compute, the DP
// stream, and the step's tail.
void GraphBuilder::WorkerDeps(size_t step, int32_t worker) {
  WorkerStep& c = *Cell(step, worker);
  std::vector<int32_t> compute = c.of(Kind::kForwardCompute);
  const auto& bwd = c.of(Kind::kBackwardCompute);
  compute.insert(compute.end(), bwd.begin(), bwd.end());
  auto by_start = [&](int32_t a, int32_t b) {
    const TimelineOp& x = t_.ops[static_cast<size_t>(a)];
    const TimelineOp& y = t_.ops[static_cast<size_t>(b)];
    return std::tie(x.start_ns, x.seq, x.kind) < std::tie(y.start_ns, y.seq, y.kind);
  };
  std::sort(compute.begin(), compute.end(), by_start);
  Chain(compute);
  P2pDeps(c, compute);
  std::vector<int32_t> dp_stream = c.of(Kind::kParamsAllGather);
  const auto& rs = c.of(Kind::kGradsReduceScatter);
  dp_stream.insert(dp_stream.end(), rs.begin(), rs.end());
  std::sort(dp_stream.begin(), dp_stream.end(), by_start);
  Chain(dp_stream);
  // First forward of each chunk after that chunk's last all-gather.
  std::map<int32_t, int32_t> last_gather;
  for (int32_t g : c.of(Kind::kParamsAllGather))
    last_gather[t_.ops[static_cast<size_t>(g)].chunk] = g;
  std::map<int32_t, int32_t> first_forward;
  for (int32_t f : compute) {
    const TimelineOp& op = t_.ops[static_cast<size_t>(f)];
    if (op.kind == Kind::kForwardCompute) first_forward.emplace(op.chunk, f);
  }
  for (auto [chunk, g] : last_gather) {
    auto it = first_forward.find(chunk);
    // A gather whose chunk the forwards do not name (-1): the first forward.
    if (it == first_forward.end() && !first_forward.empty()) it = first_forward.begin();
    if (it != first_forward.end()) Dep(g, it->second);
  }
  TailDeps(c, compute, coords_[static_cast<size_t>(worker)].pp);
}

void GraphBuilder::P2pDeps(WorkerStep& c, const std::vector<int32_t>& compute) {
  struct Stream {
    Kind op, compute;
    bool send;
  };
  constexpr Stream kStreams[] = {{Kind::kForwardSend, Kind::kForwardCompute, true},
                                 {Kind::kForwardRecv, Kind::kForwardCompute, false},
                                 {Kind::kBackwardSend, Kind::kBackwardCompute, true},
                                 {Kind::kBackwardRecv, Kind::kBackwardCompute, false}};
  for (const Stream& s : kStreams) {
    const auto& ops = c.of(s.op);
    Chain(ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      int32_t mine = At(&c, s.compute, static_cast<int32_t>(i));
      if (mine == kNone) {
        ++fit_.missing_compute;
        continue;
      }
      if (s.send) {
        Dep(mine, ops[i]);
      } else {
        Dep(ops[i], mine);
        Dep(At(&c, s.compute, static_cast<int32_t>(i) - 1), ops[i]);
      }
    }
  }
  // The first backward send / receive is posted with the forward two
  // computes before the first backward (1F1B's warm-up).
  for (size_t i = 0; i < compute.size(); ++i) {
    if (t_.ops[static_cast<size_t>(compute[i])].kind != Kind::kBackwardCompute) continue;
    if (i >= 2) {
      for (Kind k : {Kind::kBackwardRecv, Kind::kBackwardSend}) Dep(compute[i - 2], At(&c, k, 0));
    }
    break;
  }
}

void GraphBuilder::TailDeps(WorkerStep& c, const std::vector<int32_t>& compute, int32_t pp) {
  int32_t last = kNone;
  TimeNs last_end = 0;
  for (int32_t op : compute) {
    const TimelineOp& o = t_.ops[static_cast<size_t>(op)];
    if (last == kNone || o.start_ns + o.dur_ns > last_end)
      last = op, last_end = o.start_ns + o.dur_ns;
  }
  int32_t gc = At(&c, Kind::kGc, 0);
  Dep(last, gc);
  std::vector<int32_t> chain;
  std::vector<int32_t> head = {gc};
  const auto& rs = c.of(Kind::kGradsReduceScatter);
  bool separate = !c.of(Kind::kSeparateGradsAllReduce).empty();
  if (separate) {
    // Overlapped reduce-scatters: each after its chunk's last backward.
    std::map<int32_t, int32_t> last_backward;
    for (int32_t op : compute) {
      const TimelineOp& o = t_.ops[static_cast<size_t>(op)];
      if (o.kind == Kind::kBackwardCompute) last_backward[o.chunk] = op;
    }
    for (int32_t r : rs) {
      auto it = last_backward.find(t_.ops[static_cast<size_t>(r)].chunk);
      if (it != last_backward.end()) Dep(it->second, r);
    }
    if (!rs.empty()) head.push_back(rs.back());
  }
  chain.push_back(At(&c, Kind::kLayernormGradsAllReduce, 0));
  if (pp == 0 || pp == l_.pp - 1) chain.push_back(At(&c, Kind::kEmbeddingGradsAllReduce, 0));
  if (separate) {
    chain.push_back(At(&c, Kind::kSeparateGradsAllReduce, 0));
  } else {
    chain.insert(chain.end(), rs.begin(), rs.end());
  }
  chain.push_back(At(&c, Kind::kOptimizerClipMainGrad, 0));
  chain.push_back(At(&c, Kind::kOptimizer, 0));
  chain.erase(std::remove(chain.begin(), chain.end(), kNone), chain.end());
  if (chain.empty()) return;
  for (int32_t h : head) Dep(h == kNone ? last : h, chain.front());
  Chain(chain);
}

void GraphBuilder::Groups(size_t step) {
  const int32_t vpp = std::max(l_.vpp, 1);
  for (int32_t dp = 0; dp < l_.dp; ++dp) {
    for (int32_t tp = 0; tp < l_.tp; ++tp) {
      for (int32_t pp = 0; pp < l_.pp; ++pp) {
        WorkerStep* c = Cell(step, WorkerAt(dp, pp, tp));
        if (c == nullptr) continue;
        // Sends pair with the peer stage's receives of the same seq.
        for (auto [send, recv, delta] :
             {std::tuple{Kind::kForwardSend, Kind::kForwardRecv, 1},
              std::tuple{Kind::kBackwardSend, Kind::kBackwardRecv, -1}}) {
          int32_t peer = pp + delta;
          if (vpp > 1) peer = (peer + l_.pp) % l_.pp;
          WorkerStep* pc = Cell(step, WorkerAt(dp, peer, tp));
          const auto& ops = c->of(send);
          for (size_t i = 0; i < ops.size(); ++i) {
            int32_t r = At(pc, recv, static_cast<int32_t>(i));
            if (r == kNone) ++fit_.unpaired;
            Group({ops[i], r});
          }
          if (pc != nullptr && pc->of(recv).size() > ops.size()) {
            fit_.unpaired += pc->of(recv).size() - ops.size();
          }
        }
        if (pp == 0 && l_.pp > 1) {
          WorkerStep* last = Cell(step, WorkerAt(dp, l_.pp - 1, tp));
          Group({At(c, Kind::kEmbeddingGradsAllReduce, 0),
                 At(last, Kind::kEmbeddingGradsAllReduce, 0)});
        }
      }
    }
  }
  // DP collectives across the replicas of one (stage, tp).
  for (int32_t pp = 0; pp < l_.pp; ++pp) {
    for (int32_t tp = 0; tp < l_.tp; ++tp) {
      for (Kind k :
           {Kind::kParamsAllGather, Kind::kGradsReduceScatter, Kind::kSeparateGradsAllReduce}) {
        size_t n = 0;
        for (int32_t dp = 0; dp < l_.dp; ++dp) {
          if (WorkerStep* c = Cell(step, WorkerAt(dp, pp, tp))) n = std::max(n, c->of(k).size());
        }
        for (size_t i = 0; i < n; ++i) {
          std::vector<int32_t> g;
          for (int32_t dp = 0; dp < l_.dp; ++dp) {
            g.push_back(At(Cell(step, WorkerAt(dp, pp, tp)), k, static_cast<int32_t>(i)));
          }
          if (std::count(g.begin(), g.end(), kNone) > 0) ++fit_.incomplete_group;
          Group(std::move(g));
        }
      }
    }
  }
  std::vector<int32_t> clip;
  for (size_t w = 0; w < t_.workers.size(); ++w) {
    clip.push_back(At(Cell(step, static_cast<int32_t>(w)), Kind::kOptimizerClipMainGrad, 0));
  }
  if (std::count(clip.begin(), clip.end(), kNone) > 0 &&
      std::count(clip.begin(), clip.end(), kNone) < static_cast<ptrdiff_t>(clip.size())) {
    ++fit_.incomplete_group;
  }
  Group(std::move(clip));
}

Graph GraphBuilder::Build() {
  Index();
  group_of_.assign(t_.ops.size(), kNone);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (size_t w = 0; w < t_.workers.size(); ++w) WorkerDeps(s, static_cast<int32_t>(w));
    Groups(s);
  }
  return Finish();
}

// Units, their dependencies and a topological order (Kahn); what a cycle
// leaves is counted and its steps dropped.
Graph GraphBuilder::Finish() {
  Graph g;
  g.steps = steps_;
  g.step_ok.assign(steps_.size(), 1);
  const size_t n_ops = t_.ops.size();
  const size_t n_groups = groups_.size();
  auto unit_of = [&](int32_t op) {
    int32_t gr = group_of_[static_cast<size_t>(op)];
    return gr != kNone ? static_cast<size_t>(gr) : n_groups + static_cast<size_t>(op);
  };
  const size_t n_units = n_groups + n_ops;
  std::vector<uint32_t> indeg(n_units, 0);
  std::vector<uint32_t> succ_begin(n_units + 1, 0);
  for (auto [a, b] : edges_) {
    if (unit_of(a) != unit_of(b)) ++succ_begin[unit_of(a) + 1];
  }
  for (size_t u = 0; u < n_units; ++u) succ_begin[u + 1] += succ_begin[u];
  std::vector<uint32_t> succ(succ_begin.back());
  {
    std::vector<uint32_t> fill(succ_begin.begin(), succ_begin.end() - 1);
    for (auto [a, b] : edges_) {
      size_t ua = unit_of(a), ub = unit_of(b);
      if (ua == ub) continue;
      succ[fill[ua]++] = static_cast<uint32_t>(ub);
      ++indeg[ub];
    }
  }
  std::vector<char> live(n_units, 0);
  for (size_t u = 0; u < n_groups; ++u) live[u] = 1;
  for (size_t i = 0; i < n_ops; ++i) {
    if (step_index_[i] != kNone && group_of_[i] == kNone) live[n_groups + i] = 1;
  }
  std::vector<uint32_t> order;
  order.reserve(n_units);
  for (size_t u = 0; u < n_units; ++u) {
    if (live[u] && indeg[u] == 0) order.push_back(static_cast<uint32_t>(u));
  }
  for (size_t h = 0; h < order.size(); ++h) {
    uint32_t u = order[h];
    for (uint32_t k = succ_begin[u]; k < succ_begin[u + 1]; ++k) {
      if (--indeg[succ[k]] == 0 && live[succ[k]]) order.push_back(succ[k]);
    }
  }
  std::vector<char> placed(n_units, 0);
  for (uint32_t u : order) placed[u] = 1;
  // Graph op numbering: timeline ops in unit order.
  std::vector<int32_t> gop(n_ops, kNone);
  g.unit_begin.push_back(0);
  auto add_op = [&](int32_t op) {
    gop[static_cast<size_t>(op)] = static_cast<int32_t>(g.op_of.size());
    g.op_of.push_back(op);
    g.step_of.push_back(step_index_[static_cast<size_t>(op)]);
    g.ends_step.push_back(t_.ops[static_cast<size_t>(op)].kind == Kind::kOptimizer);
  };
  for (uint32_t u : order) {
    if (u < n_groups) {
      for (int32_t op : groups_[u]) add_op(op);
    } else {
      add_op(static_cast<int32_t>(u - n_groups));
    }
    g.unit_begin.push_back(static_cast<uint32_t>(g.op_of.size()));
  }
  for (size_t i = 0; i < n_ops; ++i) {
    if (step_index_[i] != kNone && gop[i] == kNone) {
      ++fit_.cyclic;
      g.step_ok[static_cast<size_t>(step_index_[i])] = 0;
    }
  }
  for (char ok : g.step_ok) fit_.steps_dropped += ok ? 0 : 1;
  // Deps per graph op (CSR), from the edges into placed ops.
  std::vector<uint32_t> count(g.op_of.size() + 1, 0);
  for (auto [a, b] : edges_) {
    if (gop[static_cast<size_t>(b)] != kNone && gop[static_cast<size_t>(a)] != kNone) {
      ++count[static_cast<size_t>(gop[static_cast<size_t>(b)]) + 1];
    }
  }
  for (size_t i = 0; i + 1 < count.size(); ++i) count[i + 1] += count[i];
  g.dep_begin = count;
  g.deps.resize(count.back());
  for (auto [a, b] : edges_) {
    int32_t ga = gop[static_cast<size_t>(a)], gb = gop[static_cast<size_t>(b)];
    if (ga != kNone && gb != kNone) g.deps[count[static_cast<size_t>(gb)]++] = ga;
  }
  fit_.ops = g.op_of.size();
  // The ops that end each step.
  std::vector<std::vector<int32_t>> ends(steps_.size()), all(steps_.size());
  for (size_t i = 0; i < g.op_of.size(); ++i) {
    size_t st = static_cast<size_t>(g.step_of[i]);
    (g.ends_step[i] ? ends : all)[st].push_back(static_cast<int32_t>(i));
  }
  g.end_begin.push_back(0);
  for (size_t st = 0; st < steps_.size(); ++st) {
    const auto& v = ends[st].empty() ? all[st] : ends[st];
    g.end_ops.insert(g.end_ops.end(), v.begin(), v.end());
    g.end_begin.push_back(static_cast<uint32_t>(g.end_ops.size()));
  }
  return g;
}

// Step times (ns) of one replay with per-graph-op durations `dur`; `end`
// is scratch of one value per graph op.
std::vector<double> Replay(const Graph& g, const std::vector<double>& dur,
                           std::vector<double>& end) {
  end.resize(g.op_of.size());
  const uint32_t* unit = g.unit_begin.data();
  const uint32_t* dep_begin = g.dep_begin.data();
  const int32_t* deps = g.deps.data();
  double* e = end.data();
  const double* d = dur.data();
  const size_t units = g.unit_begin.size() - 1;
  for (size_t u = 0; u < units; ++u) {
    double start = 0;
    for (uint32_t m = unit[u]; m < unit[u + 1]; ++m) {
      for (uint32_t k = dep_begin[m]; k < dep_begin[m + 1]; ++k)
        start = std::max(start, e[deps[k]]);
    }
    for (uint32_t m = unit[u]; m < unit[u + 1]; ++m) e[m] = start + d[m];
  }
  std::vector<double> step_end(g.steps.size(), 0);
  for (size_t st = 0; st < step_end.size(); ++st) {
    for (uint32_t k = g.end_begin[st]; k < g.end_begin[st + 1]; ++k) {
      step_end[st] = std::max(step_end[st], e[g.end_ops[k]]);
    }
  }
  return step_end;
}

double MeanOk(const std::vector<double>& v, const std::vector<char>& ok) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (ok[i]) sum += v[i], ++n;
  }
  return n > 0 ? sum / static_cast<double>(n) : 0;
}

}  // namespace

std::string WhatIfOpType(TimelineOpKind kind) {
  switch (kind) {
    case Kind::kForwardSend:
    case Kind::kForwardRecv: return "forward-pp-comm";
    case Kind::kBackwardSend:
    case Kind::kBackwardRecv: return "backward-pp-comm";
    default: return std::string(TimelineOpName(kind));
  }
}

StatusOr<ParallelLayout> ResolveLayout(const OpTimeline& timeline,
                                       const std::optional<ParallelLayout>& layout,
                                       std::vector<ParallelCoord>* coords) {
  std::vector<int32_t> unplaced;
  for (const TimelineWorker& w : timeline.workers) {
    if (!w.coord_known) unplaced.push_back(w.rank.value_or(-1));
  }
  ParallelLayout l;
  if (layout) {
    l = *layout;
  } else if (timeline.layout && unplaced.empty()) {
    l = *timeline.layout;
  } else {
    return Status::Error(fmt::format(
        "the timeline does not say where {} of its {} workers sit (ranks {}): give --layout "
        "dp=D,pp=P,tp=T",
        unplaced.size(), timeline.workers.size(), RankListText(unplaced)));
  }
  if (l.dp < 1 || l.pp < 1 || l.tp < 1 || l.vpp < 1) {
    return Status::Error(fmt::format("layout dp={} pp={} tp={} vpp={}: every size must be >= 1",
                                     l.dp, l.pp, l.tp, l.vpp));
  }
  if (layout && timeline.layout && unplaced.empty() &&
      (timeline.layout->dp != l.dp || timeline.layout->pp != l.pp || timeline.layout->tp != l.tp)) {
    return Status::Error(fmt::format(
        "--layout dp={} pp={} tp={} contradicts the timeline's own dp={} pp={} tp={}", l.dp, l.pp,
        l.tp, timeline.layout->dp, timeline.layout->pp, timeline.layout->tp));
  }
  if (static_cast<int64_t>(timeline.workers.size()) > l.world()) {
    return Status::Error(
        fmt::format("the timeline has {} workers, more than the layout's {} ({}x{}x{})",
                    timeline.workers.size(), l.world(), l.dp, l.pp, l.tp));
  }
  coords->clear();
  std::vector<char> taken(static_cast<size_t>(l.world()), 0);
  for (const TimelineWorker& w : timeline.workers) {
    ParallelCoord c = w.coord;
    if (!w.coord_known) {
      if (!w.rank || *w.rank < 0 || *w.rank >= l.world()) {
        return Status::Error(fmt::format("a worker's rank {} is outside the layout's {} ranks",
                                         w.rank.value_or(-1), l.world()));
      }
      c = MegatronCoord(l, *w.rank);
    }
    if (c.dp < 0 || c.pp < 0 || c.tp < 0 || c.dp >= l.dp || c.pp >= l.pp || c.tp >= l.tp) {
      return Status::Error(
          fmt::format("worker dp={} pp={} tp={} is outside the layout dp={} "
                      "pp={} tp={}",
                      c.dp, c.pp, c.tp, l.dp, l.pp, l.tp));
    }
    size_t slot = (static_cast<size_t>(c.pp) * l.dp + c.dp) * l.tp + c.tp;
    if (taken[slot]) {
      return Status::Error(fmt::format("two workers claim dp={} pp={} tp={}", c.dp, c.pp, c.tp));
    }
    taken[slot] = 1;
    coords->push_back(c);
  }
  return l;
}

namespace {

// The replays of one what-if: measured and typical durations per graph op,
// and each graph op's group keys (stage, DP rank, op type, worker).
class WhatIfRunner {
 public:
  WhatIfRunner(const OpTimeline& t, const Graph& g, const std::vector<ParallelCoord>& coords,
               const std::vector<std::string>& types, int32_t pp_count)
      : g_(g) {
    std::array<int32_t, kTimelineOpKinds> type_of_kind{};
    for (int k = 0; k < kTimelineOpKinds; ++k) {
      type_of_kind[static_cast<size_t>(k)] = static_cast<int32_t>(
          std::lower_bound(types.begin(), types.end(), WhatIfOpType(static_cast<Kind>(k))) -
          types.begin());
    }
    const size_t n = g.op_of.size();
    measured_.resize(n);
    ideal_.resize(n);
    pp_.resize(n), dp_.resize(n), type_.resize(n), worker_.resize(n), cell_.resize(n);
    std::array<std::vector<double>, kTimelineOpKinds> by_kind;
    for (size_t i = 0; i < n; ++i) {
      const TimelineOp& op = t.ops[static_cast<size_t>(g.op_of[i])];
      measured_[i] = static_cast<double>(op.dur_ns);
      by_kind[static_cast<size_t>(op.kind)].push_back(measured_[i]);
      const ParallelCoord& c = coords[static_cast<size_t>(op.worker)];
      pp_[i] = c.pp, dp_[i] = c.dp, worker_[i] = op.worker;
      cell_[i] = c.dp * pp_count + c.pp;
      type_[i] = type_of_kind[static_cast<size_t>(op.kind)];
    }
    std::array<double, kTimelineOpKinds> typical{};
    for (size_t k = 0; k < by_kind.size(); ++k) {
      if (by_kind[k].empty()) continue;
      typical[k] = IsCommunicationOp(static_cast<Kind>(k)) ? Median(by_kind[k]).value_or(0)
                                                           : *Mean(by_kind[k]);
    }
    for (size_t i = 0; i < n; ++i) {
      ideal_[i] = typical[static_cast<size_t>(t.ops[static_cast<size_t>(g.op_of[i])].kind)];
    }
    measured_steps_ = Replay(g, measured_, end_);
    ideal_steps_ = Replay(g, ideal_, end_);
    ideal_end_ = end_;
    measured_mean_ = MeanOk(measured_steps_, g.step_ok);
    ideal_mean_ = MeanOk(ideal_steps_, g.step_ok);
  }

  enum class Key { kStage, kDp, kType, kWorker, kCell };
  const std::vector<int32_t>& keys(Key k) const {
    switch (k) {
      case Key::kStage: return pp_;
      case Key::kDp: return dp_;
      case Key::kType: return type_;
      case Key::kWorker: return worker_;
      case Key::kCell: break;
    }
    return cell_;
  }
  // Mean step time with the ops whose key is `value` measured, the rest
  // ideal (measured_in), or the other way round; per-step times in `steps`.
  double With(Key key, int32_t value, bool measured_in, std::vector<double>* steps = nullptr) {
    const std::vector<int32_t>& k = keys(key);
    dur_.resize(k.size());
    const double* in = measured_in ? measured_.data() : ideal_.data();
    const double* out = measured_in ? ideal_.data() : measured_.data();
    for (size_t i = 0; i < k.size(); ++i) dur_[i] = k[i] == value ? in[i] : out[i];
    std::vector<double> st = Replay(g_, dur_, end_);
    double mean = MeanOk(st, g_.step_ok);
    if (steps != nullptr) *steps = std::move(st);
    return mean;
  }
  double Slowdown(double mean) const { return ideal_mean_ > 0 ? mean / ideal_mean_ : 1; }
  double Recovered(double mean) const { return measured_mean_ > 0 ? 1 - mean / measured_mean_ : 0; }

  // The ideal replay's start and end per timeline op (NaN: not replayed).
  void IdealTimeline(size_t ops, std::vector<float>& start, std::vector<float>& end) const {
    start.assign(ops, std::nanf(""));
    end.assign(ops, std::nanf(""));
    for (size_t i = 0; i < g_.op_of.size(); ++i) {
      size_t op = static_cast<size_t>(g_.op_of[i]);
      end[op] = static_cast<float>(ideal_end_[i]);
      start[op] = static_cast<float>(ideal_end_[i] - ideal_[i]);
    }
  }
  double measured_mean() const { return measured_mean_; }
  double ideal_mean() const { return ideal_mean_; }
  const std::vector<double>& measured_steps() const { return measured_steps_; }
  const std::vector<double>& ideal_steps() const { return ideal_steps_; }
  // Per worker: sum over its compute ops of measured - typical.
  std::vector<double> ComputeExcess(const OpTimeline& t) const {
    std::vector<double> ex(t.workers.size(), 0);
    for (size_t i = 0; i < g_.op_of.size(); ++i) {
      if (!IsCommunicationOp(t.ops[static_cast<size_t>(g_.op_of[i])].kind)) {
        ex[static_cast<size_t>(worker_[i])] += measured_[i] - ideal_[i];
      }
    }
    return ex;
  }

 private:
  const Graph& g_;
  std::vector<double> measured_, ideal_, end_, dur_, ideal_end_;
  std::vector<int32_t> pp_, dp_, type_, worker_, cell_;  // cell: dp x pp + pp
  std::vector<double> measured_steps_, ideal_steps_;
  double measured_mean_ = 0, ideal_mean_ = 0;
};

// Sorts by slowdown and gives the first `top` groups their "recovered"
// (one more replay each: the group ideal, the rest measured).
void SortAndRecover(std::vector<WhatIfGroup>& v, WhatIfRunner& run, WhatIfRunner::Key key,
                    const std::vector<int32_t>& values, size_t top) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return v[a].slowdown > v[b].slowdown; });
  std::vector<WhatIfGroup> sorted;
  for (size_t i = 0; i < order.size(); ++i) {
    WhatIfGroup g = std::move(v[order[i]]);
    if (i < top) g.recovered = run.Recovered(run.With(key, values[order[i]], false));
    sorted.push_back(std::move(g));
  }
  v = std::move(sorted);
}

}  // namespace

StatusOr<WhatIf> RunWhatIf(const OpTimeline& timeline, const std::optional<ParallelLayout>& layout,
                           const WhatIfOptions& options) {
  std::vector<ParallelCoord> coords;
  auto l = ResolveLayout(timeline, layout, &coords);
  if (!l.ok()) return l.status();
  WhatIf w;
  w.layout = l.value();
  Graph g = GraphBuilder(timeline, w.layout, coords, w.fit).Build();
  if (g.op_of.empty()) return Status::Error("no op of the timeline fits a training step");
  std::array<bool, kTimelineOpKinds> present{};
  for (const TimelineOp& op : timeline.ops) present[static_cast<size_t>(op.kind)] = true;
  std::vector<std::string> types;
  for (int k = 0; k < kTimelineOpKinds; ++k) {
    std::string type = WhatIfOpType(static_cast<Kind>(k));
    if (present[static_cast<size_t>(k)] &&
        std::find(types.begin(), types.end(), type) == types.end()) {
      types.push_back(type);
    }
  }
  std::sort(types.begin(), types.end());
  WhatIfRunner run(timeline, g, coords, types, w.layout.pp);
  w.measured_step_ns = run.measured_mean();
  w.ideal_step_ns = run.ideal_mean();
  w.slowdown = w.ideal_step_ns > 0 ? w.measured_step_ns / w.ideal_step_ns : 1;
  using Key = WhatIfRunner::Key;
  const size_t top = options.recovered_groups;
  std::vector<std::vector<double>> stage_steps(static_cast<size_t>(w.layout.pp), run.ideal_steps());
  std::vector<int32_t> values;
  if (options.decompose) {
    for (int32_t p = 0; p < w.layout.pp; ++p) {
      WhatIfGroup gr;
      gr.label = std::to_string(p);
      gr.pp = p;
      gr.slowdown =
          run.Slowdown(run.With(Key::kStage, p, true, &stage_steps[static_cast<size_t>(p)]));
      w.by_stage.push_back(std::move(gr));
      values.push_back(p);
    }
    SortAndRecover(w.by_stage, run, Key::kStage, values, top);
    values.clear();
    for (int32_t d = 0; d < w.layout.dp; ++d) {
      WhatIfGroup gr;
      gr.label = std::to_string(d);
      gr.dp = d;
      gr.slowdown = run.Slowdown(run.With(Key::kDp, d, true));
      w.by_dp_rank.push_back(std::move(gr));
      values.push_back(d);
    }
    SortAndRecover(w.by_dp_rank, run, Key::kDp, values, top);
    values.clear();
    for (size_t i = 0; i < types.size(); ++i) {
      WhatIfGroup gr;
      gr.label = types[i];
      gr.slowdown = run.Slowdown(run.With(Key::kType, static_cast<int32_t>(i), true));
      w.by_op_type.push_back(std::move(gr));
      values.push_back(static_cast<int32_t>(i));
    }
    SortAndRecover(w.by_op_type, run, Key::kType, values, top);
    values.clear();
    // Workers (dp, pp): all, or those whose compute exceeds its typical
    // time most. The tensor-parallel ranks of one are replayed together:
    // they wait for each other inside every op.
    std::vector<double> excess = run.ComputeExcess(timeline);
    std::map<int32_t, double> cell_excess;
    std::map<int32_t, int32_t> cell_worker;  // its only worker, when tp is 1
    for (size_t i = 0; i < coords.size(); ++i) {
      int32_t cell = coords[i].dp * w.layout.pp + coords[i].pp;
      cell_excess[cell] += excess[i];
      cell_worker[cell] = static_cast<int32_t>(i);
    }
    std::vector<int32_t> cells;
    for (const auto& [cell, ex] : cell_excess) cells.push_back(cell);
    if (cells.size() > options.max_worker_groups) {
      std::stable_sort(cells.begin(), cells.end(),
                       [&](int32_t a, int32_t b) { return cell_excess[a] > cell_excess[b]; });
      cells.resize(options.max_worker_groups);
    }
    for (int32_t cell : cells) {
      WhatIfGroup gr;
      gr.dp = cell / w.layout.pp, gr.pp = cell % w.layout.pp;
      if (w.layout.tp == 1) {
        gr.tp = 0;
        gr.worker = cell_worker[cell];
        gr.label = fmt::format("dp{} pp{} tp0", *gr.dp, *gr.pp);
      } else {
        gr.label = fmt::format("dp{} pp{} (tp 0-{})", *gr.dp, *gr.pp, w.layout.tp - 1);
      }
      gr.slowdown = run.Slowdown(run.With(Key::kCell, cell, true));
      w.by_worker.push_back(std::move(gr));
    }
    SortAndRecover(w.by_worker, run, Key::kCell, cells, top);
  }
  w.workers_replayed = w.by_worker.size();
  if (options.keep_ideal_timeline) {
    run.IdealTimeline(timeline.ops.size(), w.ideal_start_ns, w.ideal_end_ns);
  }
  for (size_t st = 0; st < g.steps.size(); ++st) {
    if (!g.step_ok[st]) continue;
    WhatIfStep ws;
    ws.step = g.steps[st];
    ws.measured_ns = run.measured_steps()[st];
    ws.ideal_ns = run.ideal_steps()[st];
    ws.slowdown = ws.ideal_ns > 0 ? ws.measured_ns / ws.ideal_ns : 1;
    for (const auto& v : stage_steps)
      ws.by_stage.push_back(ws.ideal_ns > 0 ? v[st] / ws.ideal_ns : 1);
    w.per_step.push_back(std::move(ws));
  }
  return w;
}

}  // namespace laggard
