#include "analysis/hangs/hang_groups.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace laggard {
namespace {

std::string SizesText(const std::vector<std::vector<int64_t>>& sizes) {
  std::vector<std::string> parts;
  for (const auto& s : sizes) parts.push_back(fmt::format("[{}]", fmt::join(s, ", ")));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// A group as every process knows it (model/hang.h): not its id, which each
// process counts on its own, but its pg_config record: description and
// member ranks. `key` merges the ranks' states of one group and orders the
// groups: "m" + desc + ranks for a group matched by pg_config, "i" + id for
// one known only by its id (lines, dumps without pg_config).
struct GroupIdentity {
  std::string key;
  std::string desc;
  bool matched = false;          // by pg_config's description and ranks; else by id
  std::string id;                // by id: the id every rank is taken to share
  std::vector<int32_t> members;  // matched: pg_config's ranks; empty: every rank
};

GroupIdentity ById(const std::string& id, const std::string& desc) {
  return GroupIdentity{"i\x1f" + id, desc, false, id, {}};
}

// One dump's ids tied to its pg_config records. An entry carries both the
// id (pg_id) and the name (process_group[0], pg_config's key); pg_status
// has only ids. An id no entry ties to a name is taken as a name when
// pg_config holds it and no entry ties that name to another id (the
// default group, "0" for both; dumps whose entries name no group);
// otherwise it cannot be placed: its group's collectives have all left the
// ring buffer, and it is not compared with other ranks. Two groups of one
// process with one description and the same ranks (new_group() twice over
// the same ranks) are told apart by their names, which every process gives
// alike (torch names a group by a counter all ranks advance together, or by
// a hash of its ranks).
class DumpGroups {
 public:
  // `config`: the pg_config records of the dump's file.
  DumpGroups(const std::vector<const ProcessGroupInfo*>& config, const FlightRecorderDump& d) {
    for (const ProcessGroupInfo* g : config) {
      config_.emplace(g->id, g);
      ++alike_[BaseKey(*g)];
    }
    for (const CollectiveRecord& e : d.entries) {
      if (e.pg_name.empty()) continue;
      name_of_.emplace(e.pg_id, e.pg_name);
      tied_names_.insert(e.pg_name);
    }
  }

  bool has_config() const { return !config_.empty(); }

  // The group this process calls `id`: by id when the dump has no
  // pg_config; nullopt when it has one but `id` cannot be tied to it.
  std::optional<GroupIdentity> Resolve(const std::string& id, const std::string& desc) const {
    if (config_.empty()) return ById(id, desc);
    auto named = name_of_.find(id);
    if (named != name_of_.end()) return ByName(named->second);
    if (tied_names_.count(id)) return std::nullopt;
    return ByName(id);
  }

  // The group of pg_config name `name` (a watchdog line's PG GUID).
  std::optional<GroupIdentity> ByName(const std::string& name) const {
    auto it = config_.find(name);
    if (it == config_.end()) return std::nullopt;
    const ProcessGroupInfo& g = *it->second;
    GroupIdentity id;
    id.key = BaseKey(g);
    if (alike_.at(id.key) > 1) id.key += "\x1f" + g.id;
    id.desc = g.desc;
    id.matched = true;
    id.members = g.ranks;
    return id;
  }

 private:
  static std::string BaseKey(const ProcessGroupInfo& g) {
    return fmt::format(
        "m\x1f{}\x1f{}", g.desc,
        g.ranks.empty() ? std::string("world") : fmt::format("{}", fmt::join(g.ranks, ",")));
  }

  std::map<std::string, const ProcessGroupInfo*> config_;  // by name
  std::map<std::string, int> alike_;                       // records per (desc, ranks)
  std::map<std::string, std::string> name_of_;             // id -> name, from the entries
  std::set<std::string> tied_names_;
};

class Collector {
 public:
  Collector(const Run& run, const std::vector<HangEvent>& events) : run_(run), events_(events) {}

  HangRankState& State(const GroupIdentity& id, const std::string& pg_id, int32_t rank) {
    auto [it, fresh] = groups_.try_emplace(id.key);
    Group& g = it->second;
    if (fresh) g.identity = id;
    if (g.desc.empty()) g.desc = id.desc;
    HangRankState& s = g.ranks[rank];
    s.rank = rank;
    if (s.pg_id.empty()) s.pg_id = pg_id;
    return s;
  }

  void FromDumps() {
    // Each file's pg_config records, found in one pass (not one pass over
    // every rank's records per dump: 10^4 dumps).
    std::map<uint32_t, std::vector<const ProcessGroupInfo*>> config_of_file;
    for (const ProcessGroupInfo& g : run_.hang.groups) config_of_file[g.src.file].push_back(&g);
    static const std::vector<const ProcessGroupInfo*> kNone;
    for (const FlightRecorderDump& d : run_.hang.dumps) {
      if (!d.rank) continue;
      auto config = config_of_file.find(d.file);
      DumpGroups names(config == config_of_file.end() ? kNone : config->second, d);
      if (!names.has_config()) ++dumps_without_config_;
      for (const GroupProgress& p : d.status) {
        std::optional<GroupIdentity> id = names.Resolve(p.pg_id, "");
        if (!id) {
          ++statuses_unplaced_;
          continue;
        }
        HangRankState& s = State(*id, p.pg_id, *d.rank);
        s.from_dump = true;
        s.enqueued = p.last_enqueued;
        // -1: none started, or none seen (a process that records no start
        // events): unknown either way.
        if (p.last_started && *p.last_started >= 0) s.started = p.last_started;
        s.completed = p.last_completed;
        s.src = SourceRef{d.file, 0};
      }
      // The entry each group waits in (its first not completed), else its
      // last one: op, sizes and stack.
      for (const CollectiveRecord& e : d.entries) {
        if (e.is_p2p.value_or(false) || !e.collective_seq) continue;
        std::optional<GroupIdentity> id = names.Resolve(e.pg_id, e.pg_desc);
        if (!id) continue;
        auto git = groups_.find(id->key);
        if (git == groups_.end()) continue;
        auto rit = git->second.ranks.find(*d.rank);
        if (rit == git->second.ranks.end()) continue;
        HangRankState& s = rit->second;
        if (git->second.desc.empty()) git->second.desc = e.pg_desc;
        const int64_t waiting = s.completed.value_or(-1) + 1;
        if (*e.collective_seq == waiting) {
          s.op_waiting = e.op;
          s.sizes_waiting = SizesText(e.input_sizes);
          s.frames = e.frames;
          s.waiting_created_ns = e.created_ns;
        } else if (s.op_waiting.empty() && *e.collective_seq < waiting) {
          s.frames = e.frames;  // the latest entry before it, until the one waited in shows
        }
      }
      dump_groups_.try_emplace(*d.rank, std::move(names));
    }
  }

  void FromEvents() {
    for (const HangEvent& e : events_) {
      const bool timeout = e.kind == HangEventKind::kWatchdogTimeout ||
                           e.kind == HangEventKind::kWatchdogException ||
                           e.kind == HangEventKind::kBlockingWaitTimeout ||
                           e.kind == HangEventKind::kDumpSignal;
      if (!timeout) continue;
      std::string id = e.pg_id;
      // One char, not a string literal: g++ 12 misreads the inlined copy of
      // a literal here as overlapping (-Wrestrict, a known false positive).
      if (id.empty()) id.assign(1, e.pg_desc == "default_pg" ? '0' : '?');
      std::optional<int32_t> rank = e.rank;
      if (!rank && IsDefaultGroup(id, e.pg_desc)) rank = e.group_rank;
      if (!rank) continue;
      // "[rank3]: ... [Rank 3] Watchdog caught": the rank in a group the
      // line does not name equals the global one, as in the default group.
      if (id == "?" && e.group_rank == e.rank) same_rank_unnamed_.insert(*rank);
      HangRankState& s = State(LineGroup(e, *rank, id), id, *rank);
      if (!s.src) s.src = e.src;
      if (e.seq) s.timed_out = s.timed_out ? std::min(*s.timed_out, *e.seq) : *e.seq;
      if (s.from_dump) continue;  // the dump's numbers are the rank's own, exact
      if (e.last_completed) {
        s.completed = std::max(s.completed.value_or(-1), *e.last_completed);
        s.completed_inferred = false;
      }
      if (e.last_enqueued) s.enqueued = std::max(s.enqueued.value_or(-1), *e.last_enqueued);
      if (e.kind == HangEventKind::kWatchdogTimeout && e.seq) {
        // Collectives of a group complete in order: the ones before the
        // timed-out work had completed, it had been enqueued.
        if (!s.completed) {
          s.completed = *e.seq - 1;
          s.completed_inferred = true;
        }
        s.enqueued = std::max(s.enqueued.value_or(*e.seq), *e.seq);
      }
      if (s.op_waiting.empty() && !e.op.empty()) {
        s.op_waiting = e.op;
        if (e.numel_in) s.sizes_waiting = fmt::format("(numel {})", *e.numel_in);
      }
    }
  }

  // The groups, with members and the stuck collective.
  std::vector<HangGroupState> Finish(std::optional<int32_t> world) const {
    std::vector<HangGroupState> out;
    for (const auto& [key, g] : groups_) {
      HangGroupState gs;
      gs.matched = g.identity.matched;
      gs.pg_desc = g.desc;
      for (const auto& [rank, s] : g.ranks) gs.ranks.push_back(s);
      if (g.identity.matched) {
        gs.pg_id = IdsOf(gs.ranks);
        gs.members = g.identity.members;
      } else {
        // Known by id only: the pg_config records of that id, whichever
        // rank gave them.
        gs.pg_id = g.identity.id;
        for (const ProcessGroupInfo& info : run_.hang.groups) {
          if (info.id == gs.pg_id && !info.ranks.empty()) gs.members = info.ranks;
          if (gs.pg_desc.empty() && info.id == gs.pg_id) gs.pg_desc = info.desc;
        }
      }
      const bool world_group =
          g.identity.matched ? g.identity.members.empty() : IsDefaultGroup(gs.pg_id, gs.pg_desc);
      if (gs.members.empty() && world && world_group) {
        for (int32_t r = 0; r < *world; ++r) gs.members.push_back(r);
      }
      gs.stuck_seq = StuckSeq(gs.ranks);
      out.push_back(std::move(gs));
    }
    DropRepeatedUnnamed(out, same_rank_unnamed_);
    return out;
  }

  size_t dumps_without_config() const { return dumps_without_config_; }
  size_t statuses_unplaced() const { return statuses_unplaced_; }

  // torch 2.x prints a timeout's "[Rank 0] Watchdog caught ..." without
  // its group and the "[PG 1 Rank 0] Exception ..." beside it with it: a
  // rank's state in the unnamed group that a named group holds with the
  // same collective is that group's, said twice.
  // A rank whose only line names no group, with "[rankR]" equal to its
  // "[Rank R]" (`same_rank`) and timed out at the default group's stuck
  // collective, is that group's: moved there, so that its op is compared.
  static void DropRepeatedUnnamed(std::vector<HangGroupState>& groups,
                                  const std::set<int32_t>& same_rank) {
    auto unnamed = std::find_if(groups.begin(), groups.end(),
                                [](const HangGroupState& g) { return g.pg_id == "?"; });
    if (unnamed == groups.end()) return;
    auto waiting_in = [](const HangRankState& s) -> std::optional<int64_t> {
      if (s.timed_out) return s.timed_out;
      if (WaitsInCollective(s) && s.completed) return *s.completed + 1;
      return std::nullopt;
    };
    // The named groups' collectives per rank, with the state that waits in
    // each, looked up once per unnamed state (10^4-rank logs: not every
    // group's ranks for every state).
    std::multimap<int32_t, std::pair<int64_t, HangRankState*>> named;
    for (HangGroupState& g : groups) {
      if (&g == &*unnamed) continue;
      for (HangRankState& t : g.ranks) {
        if (auto n = waiting_in(t)) named.emplace(t.rank, std::make_pair(*n, &t));
      }
    }
    HangGroupState* default_group = nullptr;
    for (HangGroupState& g : groups) {
      if (&g != &*unnamed && IsDefaultGroup(g.pg_id, g.pg_desc)) {
        default_group = default_group == nullptr ? &g : nullptr;
        if (default_group == nullptr) break;  // two default groups: none is the one
      }
    }
    std::vector<HangRankState> moved;
    std::erase_if(unnamed->ranks, [&](const HangRankState& s) {
      const std::optional<int64_t> n = waiting_in(s);
      if (!n) return false;
      auto [lo, hi] = named.equal_range(s.rank);
      auto same = std::find_if(lo, hi, [&](const auto& kv) { return kv.second.first == *n; });
      if (same != hi) {
        // The same collective said twice: keep what only this line says.
        HangRankState& t = *same->second.second;
        if (t.op_waiting.empty()) {
          t.op_waiting = s.op_waiting;
          t.sizes_waiting = s.sizes_waiting;
        }
        return true;
      }
      if (default_group != nullptr && lo == hi && same_rank.count(s.rank) > 0 && s.timed_out &&
          std::none_of(default_group->ranks.begin(), default_group->ranks.end(),
                       [&](const HangRankState& t) { return t.rank == s.rank; }) &&
          default_group->stuck_seq == s.timed_out &&
          (default_group->members.empty() ||
           std::binary_search(default_group->members.begin(), default_group->members.end(),
                              s.rank))) {
        moved.push_back(s);
        return true;
      }
      return false;
    });
    if (!moved.empty()) {
      for (HangRankState& s : moved) {
        s.pg_id = default_group->pg_id;
        default_group->ranks.push_back(std::move(s));
      }
      std::sort(default_group->ranks.begin(), default_group->ranks.end(),
                [](const HangRankState& a, const HangRankState& b) { return a.rank < b.rank; });
    }
    if (unnamed->ranks.empty()) {
      groups.erase(unnamed);
    } else {
      unnamed->stuck_seq = StuckSeq(unnamed->ranks);
    }
  }

  // The smallest collective a rank waits in.
  static std::optional<int64_t> StuckSeq(const std::vector<HangRankState>& ranks) {
    std::optional<int64_t> stuck;
    for (const HangRankState& s : ranks) {
      if (!WaitsInCollective(s)) continue;
      int64_t n = s.completed ? *s.completed + 1 : *s.timed_out;
      stuck = stuck ? std::min(*stuck, n) : n;
    }
    return stuck;
  }

 private:
  struct Group {
    GroupIdentity identity;
    std::string desc;
    std::map<int32_t, HangRankState> ranks;
  };

  // The ids the ranks' processes gave a matched group, in rank order,
  // each once: "3" when they agree, "3 / 2" when they do not.
  static std::string IdsOf(const std::vector<HangRankState>& ranks) {
    std::vector<std::string> ids;
    for (const HangRankState& s : ranks) {
      if (s.pg_id.empty() || s.pg_id == "?") continue;
      if (std::find(ids.begin(), ids.end(), s.pg_id) == ids.end()) {
        ids.push_back(s.pg_id);
      }
    }
    return fmt::format("{}", fmt::join(ids, " / "));
  }

  // The group a hang line of `rank` names: through that rank's own dump
  // (its ids; the PG GUID of torch 2.5+ lines is the pg_config name), else
  // the one group matched from the dumps that has the line's description
  // and holds the rank, else by id.
  GroupIdentity LineGroup(const HangEvent& e, int32_t rank, const std::string& id) const {
    auto own = dump_groups_.find(rank);
    if (own != dump_groups_.end()) {
      if (!e.pg_guid.empty()) {
        if (auto g = own->second.ByName(e.pg_guid)) return *g;
      }
      if (id != "?") {
        if (auto g = own->second.Resolve(id, e.pg_desc)) return *g;
      }
    }
    const std::string desc = IsDefaultGroup(id, e.pg_desc) ? "default_pg" : e.pg_desc;
    if (!desc.empty()) {
      const Group* only = nullptr;
      size_t candidates = 0;
      for (const auto& [key, g] : groups_) {
        const GroupIdentity& gi = g.identity;
        if (!gi.matched || gi.desc != desc) continue;
        if (!gi.members.empty() &&
            !std::binary_search(gi.members.begin(), gi.members.end(), rank)) {
          continue;
        }
        only = &g;
        ++candidates;
      }
      if (candidates == 1) return only->identity;
    }
    return ById(id, e.pg_desc);
  }

  const Run& run_;
  const std::vector<HangEvent>& events_;       // the latest stop's (hang_episodes.h)
  std::map<std::string, Group> groups_;        // by GroupIdentity::key
  std::map<int32_t, DumpGroups> dump_groups_;  // each rank's first dump's
  size_t dumps_without_config_ = 0;
  size_t statuses_unplaced_ = 0;
  std::set<int32_t> same_rank_unnamed_;  // ranks of unnamed lines whose [Rank R] is [rankR]
};

}  // namespace

bool IsDefaultGroup(std::string_view id, std::string_view desc) {
  return id == "0" || desc == "default_pg";
}

bool WaitsInCollective(const HangRankState& s) {
  if (s.enqueued && s.completed) return *s.enqueued > *s.completed;
  return s.timed_out.has_value();
}

HangGroups CollectHangGroups(const Run& run, const std::vector<HangEvent>& events,
                             std::optional<int32_t> world) {
  Collector c(run, events);
  c.FromDumps();
  c.FromEvents();
  HangGroups out;
  out.groups = c.Finish(world);
  out.dumps_without_config = c.dumps_without_config();
  out.statuses_unplaced = c.statuses_unplaced();
  return out;
}

}  // namespace laggard
