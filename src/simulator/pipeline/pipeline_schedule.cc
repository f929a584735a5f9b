// The step's programs (Megatron-LM's non-interleaved 1F1B,
// forward_backward_pipelining_without_interleaving, and the step's
// collectives) and the scheduler that times them. See pipeline_schedule.h.
//
// Stage s of P with M microbatches runs w = P − s − 1 warm-up forwards,
// M − w steady 1F1B pairs and w cool-down backwards. With P = 4, M = 4,
// stage 1 (w = 2) runs, as the exporter's timeline of such a job shows:
//   params-all-gather
//   fr F0 fs | fr F1 fs | fr                     warm-up, then the steady recv
//   F2 [fs+br] B0 [bs+fr] | F3 [fs+br] B1 bs     steady ([..]: one batched call)
//   br B2 bs | br B3 gc bs                       cool-down
//   layernorm, (embedding on stages 0 and P−1), grads-reduce-scatter,
//   optimizer-clip-main-grad, optimizer
// The k-th exchange a stage makes with its next stage is the k-th that stage
// makes with it: that order is the p2p rendezvous.

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "simulator/pipeline/pipeline_schedule.h"

namespace laggard::sim::pipeline {

int CategoryOf(uint8_t op) {
  // compute 0, pp-comm 1, tp-comm 2, dp-comm 3, misc 4
  if (IsComputeOp(op)) return 0;
  if (IsP2pOp(op)) return 1;
  return 3;
}

int ModelChunkOf(uint8_t op) {
  return op == kFwd || op == kBwd || op == kParamsAllGather || op == kGradsReduceScatter ? 0 : -1;
}

namespace {

class PlanBuilder {
 public:
  PlanBuilder(const PipelineLayout& layout, int microbatches) {
    plan_.layout = layout;
    plan_.microbatches = microbatches;
  }

  Plan Build() {
    const PipelineLayout& l = plan_.layout;
    const int d_size = l.dp, p = l.pp, t_size = l.tp, m = plan_.microbatches;
    clip_ = NewGroups(1, l.world());
    pag_ = NewGroups(p * t_size, d_size);
    rs_ = NewGroups(p * t_size, d_size);
    ln_ = NewGroups(d_size * p, t_size);
    if (p > 1) emb_ = NewGroups(d_size * t_size, 2);
    if (t_size > 1) compute_ = NewGroups(d_size * p * 2 * m, t_size);
    // Link (d, s, t) joins stage s and s + 1; it carries M + w_s exchanges.
    link_base_.assign(static_cast<size_t>(d_size * std::max(p - 1, 0) * t_size), 0);
    for (int d = 0; d < d_size; ++d) {
      for (int s = 0; s + 1 < p; ++s) {
        for (int t = 0; t < t_size; ++t) link_base_[Link(d, s, t)] = NewGroups(m + p - s - 1, 2);
      }
    }
    plan_.begin.push_back(0);
    for (int r = 0; r < l.world(); ++r) {
      AddWorker(CoordOfRank(l, r));
      plan_.begin.push_back(static_cast<int32_t>(plan_.actions.size()));
    }
    OrderEvents();
    return std::move(plan_);
  }

 private:
  int32_t NewGroups(int count, int size) {
    auto first = static_cast<int32_t>(plan_.groups.size());
    for (int i = 0; i < count; ++i) {
      plan_.groups.push_back({size, plan_.slots});
      plan_.slots += size;
    }
    return first;
  }
  size_t Link(int d, int s, int t) const {
    return static_cast<size_t>((d * (plan_.layout.pp - 1) + s) * plan_.layout.tp + t);
  }

  void Add(uint8_t kind, int32_t group, Sync sync, int mb = -1, uint8_t kind2 = kNoOp) {
    Action a;
    a.kind = kind;
    a.kind2 = kind2;
    a.group = group;
    a.sync = group < 0 ? Sync::kAlone : sync;
    a.mb = static_cast<int16_t>(mb);
    a.seq = static_cast<int16_t>(count_[kind]++);
    if (kind2 != kNoOp) a.seq2 = static_cast<int16_t>(count_[kind2]++);
    plan_.actions.push_back(a);
  }

  void Compute(const WorkerCoord& c, bool backward, int mb) {
    const PipelineLayout& l = plan_.layout;
    int32_t group = -1;
    if (l.tp > 1) {
      group = compute_ + ((c.dp * l.pp + c.pp) * 2 + (backward ? 1 : 0)) * plan_.microbatches + mb;
    }
    Add(backward ? kBwd : kFwd, group, Sync::kLockstep, mb);
    if (backward && mb == plan_.microbatches - 1) Add(kGc, -1, Sync::kAlone, 0);
  }

  // The next exchange with the previous stage (up) or the next one (down).
  int32_t Up(const WorkerCoord& c) { return link_base_[Link(c.dp, c.pp - 1, c.tp)] + up_count_++; }
  int32_t Down(const WorkerCoord& c) { return link_base_[Link(c.dp, c.pp, c.tp)] + down_count_++; }

  void AddWorker(const WorkerCoord& c) {
    const PipelineLayout& l = plan_.layout;
    const int p = l.pp, s = c.pp, m = plan_.microbatches;
    const bool first = s == 0, last = s == p - 1;
    std::fill(std::begin(count_), std::end(count_), 0);
    up_count_ = down_count_ = 0;
    const int warmup = p - s - 1, steady = m - warmup;
    Add(kParamsAllGather, pag_ + s * l.tp + c.tp, Sync::kTransfer);
    for (int i = 0; i < warmup; ++i) {
      if (!first) Add(kFwdRecv, Up(c), Sync::kTransfer);
      Compute(c, false, i);
      if (!last) Add(kFwdSend, Down(c), Sync::kTransfer);
    }
    if (!first && steady > 0) Add(kFwdRecv, Up(c), Sync::kTransfer);
    for (int i = 0; i < steady; ++i) {
      Compute(c, false, warmup + i);
      if (!last) Add(kFwdSend, Down(c), Sync::kTransfer, -1, kBwdRecv);
      Compute(c, true, i);
      if (first) continue;
      if (i == steady - 1) Add(kBwdSend, Up(c), Sync::kTransfer);
      else Add(kBwdSend, Up(c), Sync::kTransfer, -1, kFwdRecv);
    }
    for (int i = 0; i < warmup; ++i) {
      if (!last) Add(kBwdRecv, Down(c), Sync::kTransfer);
      Compute(c, true, steady + i);
      if (!first) Add(kBwdSend, Up(c), Sync::kTransfer);
    }
    Add(kLayernormAllReduce, ln_ + c.dp * p + s, Sync::kTransfer);
    if (p > 1 && (first || last))
      Add(kEmbeddingAllReduce, emb_ + c.dp * l.tp + c.tp, Sync::kTransfer);
    Add(kGradsReduceScatter, rs_ + s * l.tp + c.tp, Sync::kTransfer);
    Add(kClip, clip_, Sync::kTransfer);
    Add(kOptimizer, -1, Sync::kAlone);
  }

  // Events sorted by op name, then seq_id, per rank (the exporter's order).
  void OrderEvents() {
    std::array<int, kOpCount> name_rank{};
    std::array<int, kOpCount> by_name{};
    std::iota(by_name.begin(), by_name.end(), 0);
    std::sort(by_name.begin(), by_name.end(), [](int a, int b) {
      return megatron_timeline::kOpTypes[static_cast<size_t>(a)] <
             megatron_timeline::kOpTypes[static_cast<size_t>(b)];
    });
    for (int i = 0; i < kOpCount; ++i) name_rank[static_cast<size_t>(by_name[i])] = i;
    plan_.event_begin.push_back(0);
    const size_t world = plan_.begin.size() - 1;
    for (size_t r = 0; r < world; ++r) {
      auto first = plan_.event_order.size();
      for (auto a = static_cast<uint32_t>(plan_.begin[r]);
           a < static_cast<uint32_t>(plan_.begin[r + 1]); ++a) {
        plan_.event_order.push_back(a * 2);
        if (plan_.actions[a].kind2 != kNoOp) plan_.event_order.push_back(a * 2 + 1);
      }
      auto key = [&](uint32_t e) {
        const Action& a = plan_.actions[e / 2];
        uint8_t kind = e % 2 ? a.kind2 : a.kind;
        return std::pair(name_rank[kind], e % 2 ? a.seq2 : a.seq);
      };
      std::sort(plan_.event_order.begin() + static_cast<std::ptrdiff_t>(first),
                plan_.event_order.end(), [&](uint32_t x, uint32_t y) { return key(x) < key(y); });
      plan_.event_begin.push_back(static_cast<int32_t>(plan_.event_order.size()));
    }
  }

  Plan plan_;
  int32_t clip_ = 0, pag_ = 0, rs_ = 0, ln_ = 0, emb_ = 0, compute_ = 0;
  std::vector<int32_t> link_base_;
  int count_[kOpCount] = {};
  int up_count_ = 0, down_count_ = 0;
};

}  // namespace

Plan BuildPipelinePlan(const PipelineLayout& layout, int microbatches) {
  return PlanBuilder(layout, microbatches).Build();
}

Status RunPipelineSchedule(const Plan& plan, std::span<const double> dur_us, double origin_us,
                           std::span<double> ts_us, std::span<double> out_dur_us) {
  struct Arrival {
    int32_t worker;
    int32_t action;
  };
  const auto world = static_cast<int32_t>(plan.begin.size() - 1);
  std::vector<double> clock(static_cast<size_t>(world), origin_us);
  std::vector<int32_t> pc(plan.begin.begin(), plan.begin.end() - 1);
  std::vector<int32_t> arrived(plan.groups.size(), 0);
  std::vector<Arrival> slots(static_cast<size_t>(plan.slots));
  std::vector<int32_t> runnable(static_cast<size_t>(world));
  std::iota(runnable.rbegin(), runnable.rend(), 0);
  auto finish = [&](const Arrival& m, double ts, double end) {
    ts_us[static_cast<size_t>(m.action)] = ts;
    out_dur_us[static_cast<size_t>(m.action)] = end - ts;
    clock[static_cast<size_t>(m.worker)] = end;
    ++pc[static_cast<size_t>(m.worker)];
  };
  while (!runnable.empty()) {
    const int32_t w = runnable.back();
    runnable.pop_back();
    auto wi = static_cast<size_t>(w);
    while (pc[wi] < plan.begin[wi + 1]) {
      const auto a = static_cast<size_t>(pc[wi]);
      const Action& act = plan.actions[a];
      if (act.group < 0) {
        finish({w, pc[wi]}, clock[wi], clock[wi] + dur_us[a]);
        continue;
      }
      const RendezvousGroup& g = plan.groups[static_cast<size_t>(act.group)];
      int32_t& n = arrived[static_cast<size_t>(act.group)];
      slots[static_cast<size_t>(g.first_slot + n++)] = {w, pc[wi]};
      if (n < g.size) break;  // waits for its peers
      double last_arrival = -1e300, last_end = -1e300;
      for (int32_t i = 0; i < g.size; ++i) {
        const Arrival& m = slots[static_cast<size_t>(g.first_slot + i)];
        double at = clock[static_cast<size_t>(m.worker)];
        last_arrival = std::max(last_arrival, at);
        last_end = std::max(last_end, at + dur_us[static_cast<size_t>(m.action)]);
      }
      for (int32_t i = 0; i < g.size; ++i) {
        const Arrival& m = slots[static_cast<size_t>(g.first_slot + i)];
        if (act.sync == Sync::kLockstep) finish(m, clock[static_cast<size_t>(m.worker)], last_end);
        else finish(m, last_arrival, last_arrival + dur_us[static_cast<size_t>(m.action)]);
        if (m.worker != w) runnable.push_back(m.worker);
      }
    }
  }
  for (int32_t r = 0; r < world; ++r) {
    if (pc[static_cast<size_t>(r)] != plan.begin[static_cast<size_t>(r) + 1]) {
      return Status::Error(
          fmt::format("pipeline schedule: rank {} is stuck at action {} of {} (a bug in the plan)",
                      r, pc[static_cast<size_t>(r)] - plan.begin[static_cast<size_t>(r)],
                      plan.begin[static_cast<size_t>(r) + 1] - plan.begin[static_cast<size_t>(r)]));
    }
  }
  return Status::Ok();
}

}  // namespace laggard::sim::pipeline
