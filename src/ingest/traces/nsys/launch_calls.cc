#include "ingest/traces/nsys/launch_calls.h"

#include <algorithm>

#include <fmt/format.h>

namespace laggard::nsys_sqlite {

QueryResult LaunchCalls::Read(sqlite3* db, const std::string& table, bool by_pid,
                              uint64_t rows_hint) {
  by_pid_ = by_pid;
  rows_hint_ = std::min<uint64_t>(rows_hint, UINT32_MAX);
  // Two dense entries per row at most (16 bytes a call); ids past that, or
  // negative, go to the sorted table.
  dense_budget_ = rows_hint_ * 2 + 65536;
  std::string sql = fmt::format(
      "SELECT \"correlationId\", \"start\"{} FROM {} WHERE \"correlationId\" IS NOT NULL",
      by_pid ? ", \"globalTid\" >> 24" : "", Quote(table));
  QueryResult r = ForEachRow(db, sql, [&](sqlite3_stmt* s) {
    std::optional<int64_t> corr = IntAt(s, 0), start = IntAt(s, 1);
    if (!corr || !start) return;
    uint32_t process = 0;
    if (by_pid_) {
      std::optional<int64_t> pid = IntAt(s, 2);
      if (!pid) return;  // a call of no process matches no op
      if (*pid == last_pid_ && last_process_ != UINT32_MAX) {
        process = last_process_;
      } else {
        std::optional<uint32_t> known = ProcessIndex(*pid);
        process = known ? *known : AddProcess(*pid);
        last_pid_ = *pid;
        last_process_ = process;
      }
    } else if (dense_.empty()) {
      dense_.emplace_back();
    }
    Add(process, *corr, *start);
  });
  std::sort(sparse_.begin(), sparse_.end(), [](const Call& a, const Call& b) {
    if (a.process != b.process) return a.process < b.process;
    if (a.correlation != b.correlation) return a.correlation < b.correlation;
    return a.start < b.start;
  });
  // One call per (process, correlation): the earliest, first after the sort.
  sparse_.erase(std::unique(sparse_.begin(), sparse_.end(),
                            [](const Call& a, const Call& b) {
                              return a.process == b.process && a.correlation == b.correlation;
                            }),
                sparse_.end());
  sparse_.shrink_to_fit();
  return r;
}

std::optional<uint32_t> LaunchCalls::ProcessIndex(int64_t pid) const {
  auto it = process_of_pid_.find(pid);
  if (it == process_of_pid_.end()) return std::nullopt;
  return it->second;
}

uint32_t LaunchCalls::AddProcess(int64_t pid) {
  auto index = static_cast<uint32_t>(dense_.size());
  dense_.emplace_back();
  process_of_pid_.emplace(pid, index);
  return index;
}

void LaunchCalls::Add(uint32_t process, int64_t correlation, int64_t start) {
  ++calls_;
  std::vector<int64_t>& dense = dense_[process];
  if (correlation >= 0) {
    const auto id = static_cast<uint64_t>(correlation);
    if (id >= dense.size()) {
      // Grow by doubling, within the budget; an id past it goes sparse.
      uint64_t want = std::max<uint64_t>(
          id + 1, std::min<uint64_t>(2 * dense.size(), dense.size() + dense_budget_));
      if (want - dense.size() <= dense_budget_) {
        // CUPTI counts correlations up from 1, about one per call: the
        // first process (nearly always the only one) gets room for the
        // table's rows at once rather than doubling past them.
        if (!reserved_) {
          dense.reserve(std::max<uint64_t>(want, rows_hint_ + 1));
          reserved_ = true;
        }
        dense_budget_ -= want - dense.size();
        dense.resize(want, kNone);
      }
    }
    if (id < dense.size()) {
      int64_t& slot = dense[id];
      slot = std::min(slot, start);
      return;
    }
  }
  sparse_.push_back({process, correlation, start});
}

std::optional<int64_t> LaunchCalls::FindIn(uint32_t process, int64_t correlation) const {
  const std::vector<int64_t>& dense = dense_[process];
  if (correlation >= 0 && static_cast<uint64_t>(correlation) < dense.size()) {
    int64_t start = dense[static_cast<size_t>(correlation)];
    if (start != kNone) return start;
  }
  if (sparse_.empty()) return std::nullopt;
  Call key{process, correlation, INT64_MIN};
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), key, [](const Call& a, const Call& b) {
    if (a.process != b.process) return a.process < b.process;
    return a.correlation < b.correlation;
  });
  if (it == sparse_.end() || it->process != process || it->correlation != correlation) {
    return std::nullopt;
  }
  return it->start;
}

std::optional<int64_t> LaunchCalls::Find(std::optional<int64_t> pid, int64_t correlation) const {
  if (dense_.empty()) return std::nullopt;
  if (!by_pid_) return FindIn(0, correlation);
  if (!pid) return std::nullopt;
  std::optional<uint32_t> process;
  if (*pid == last_pid_ && last_process_ != UINT32_MAX) {
    process = last_process_;
  } else {
    process = ProcessIndex(*pid);
  }
  return process ? FindIn(*process, correlation) : std::nullopt;
}

std::optional<int64_t> LaunchCalls::FindAnyProcess(int64_t correlation) const {
  std::optional<int64_t> best;
  for (uint32_t p = 0; p < dense_.size(); ++p) {
    std::optional<int64_t> start = FindIn(p, correlation);
    if (start && (!best || *start < *best)) best = start;
  }
  return best;
}

}  // namespace laggard::nsys_sqlite
