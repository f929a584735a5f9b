// Folders as evidence of jobs (ingest/jobs_groups.h): runs copied side by
// side disagree on the same rank's steps, and a file no other evidence
// places goes with the job whose files share its folder.

#include <numeric>
#include <tuple>

#include "ingest/jobs_groups.h"

namespace laggard::jobs_internal {
namespace {

// Two records of one step agree as the merger counts them
// (step.repeated_by_another_file, model/run.cc): within 2% or 0.5 ms.
constexpr double kAgreeRel = 0.02;
constexpr DurationNs kAgreeAbsNs = 500'000;
// Steps compared between two folders: with each offset up to this (a second
// logger that counts from 1), the best agreement counts.
constexpr int64_t kMaxStepOffset = 2;
// Fewer shared steps than this tell nothing.
constexpr int kMinShared = 3;
// More folders than this with steps are not clustered (pairs would cost too
// much): the group stays whole.
constexpr size_t kMaxFolders = 4096;

std::string FolderOf(const std::string& path) {
  size_t cut = path.rfind('/');
  return cut == std::string::npos ? "" : path.substr(0, cut);
}

// "a/b/c" at depth 2: "a/b"; a folder shallower than `depth`: itself.
std::string_view Ancestor(std::string_view folder, size_t depth) {
  size_t at = 0;
  for (size_t d = 0; d < depth; ++d) {
    at = folder.find('/', at + (d > 0));
    if (at == std::string_view::npos) return folder;
  }
  return depth == 0 ? std::string_view() : folder.substr(0, at);
}

size_t Depth(std::string_view folder) {
  return folder.empty() ? 0
                        : 1 + static_cast<size_t>(std::count(folder.begin(), folder.end(), '/'));
}

bool Agree(DurationNs a, DurationNs b) {
  DurationNs gap = a > b ? a - b : b - a;
  return gap <= kAgreeAbsNs ||
         static_cast<double>(gap) <= kAgreeRel * static_cast<double>(std::max(a, b));
}

// One step record of a folder: what two folders compare.
struct Entry {
  JobKeys::StepPrint print;
  uint32_t folder;
  bool operator<(const Entry& o) const {
    return std::tie(print.source, print.rank, print.step, folder) <
           std::tie(o.print.source, o.print.rank, o.print.step, o.folder);
  }
};

// Per folder pair (a < b) and step offset: steps both give, and how many agree.
using PairCounts = std::map<std::tuple<uint32_t, uint32_t, int64_t>, std::pair<int, int>>;

PairCounts CountAgreement(std::vector<Entry>& entries) {
  std::sort(entries.begin(), entries.end());
  PairCounts counts;
  for (size_t lo = 0; lo < entries.size();) {
    size_t hi = lo;  // [lo, hi): one rank of one source, by step
    while (hi < entries.size() && entries[hi].print.source == entries[lo].print.source &&
           entries[hi].print.rank == entries[lo].print.rank) {
      ++hi;
    }
    for (size_t i = lo; i < hi; ++i) {
      for (size_t j = i + 1;
           j < hi && entries[j].print.step - entries[i].print.step <= kMaxStepOffset; ++j) {
        const Entry& x = entries[i];
        const Entry& y = entries[j];
        if (x.folder == y.folder) continue;
        bool x_first = x.folder < y.folder;
        int64_t offset = x_first ? y.print.step - x.print.step : x.print.step - y.print.step;
        auto& c = counts[{std::min(x.folder, y.folder), std::max(x.folder, y.folder), offset}];
        ++c.first;
        c.second += Agree(x.print.duration_ns, y.print.duration_ns);
      }
    }
    lo = hi;
  }
  return counts;
}

// What one folder of a group holds.
struct Folder {
  std::string path;
  std::vector<size_t> files;
  Group span;  // its files as one group
  std::vector<int32_t> ranks;
};

// Folder pairs that disagree: at no offset do most of the steps both give
// agree, and they are no restart (the same ranks, one's span after the
// other's). Pairs that agree at some offset go to `agree`.
std::vector<std::pair<uint32_t, uint32_t>> Conflicts(
    const PairCounts& counts, const std::vector<Folder>& folders,
    std::vector<std::pair<uint32_t, uint32_t>>& agree) {
  std::map<std::pair<uint32_t, uint32_t>, std::pair<bool, bool>> verdict;  // (told, agreed)
  for (const auto& [key, c] : counts) {
    if (c.first < kMinShared) continue;
    auto& v = verdict[{std::get<0>(key), std::get<1>(key)}];
    v.first = true;
    v.second = v.second || 2 * c.second > c.first;
  }
  std::vector<std::pair<uint32_t, uint32_t>> conflicts;
  for (const auto& [pair, v] : verdict) {
    if (v.second) {
      agree.push_back(pair);
      continue;
    }
    const Folder& a = folders[pair.first];
    const Folder& b = folders[pair.second];
    bool restart = a.span.first_ns && b.span.first_ns && a.ranks == b.ranks &&
                   (*a.span.last_ns < *b.span.first_ns || *b.span.last_ns < *a.span.first_ns);
    if (!restart) conflicts.push_back(pair);
  }
  return conflicts;
}

// Union-find over folders, merging only clusters with no conflict between them.
class Clusters {
 public:
  Clusters(size_t n, std::vector<std::pair<uint32_t, uint32_t>> conflicts)
      : parent_(n), conflicts_(std::move(conflicts)) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void MergeUnlessConflicting(uint32_t a, uint32_t b) {
    a = Find(a), b = Find(b);
    if (a == b) return;
    for (const auto& [x, y] : conflicts_) {
      uint32_t fx = Find(x), fy = Find(y);
      if ((fx == a && fy == b) || (fx == b && fy == a)) return;
    }
    parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<uint32_t> parent_;
  std::vector<std::pair<uint32_t, uint32_t>> conflicts_;
};

// The runs of one group: its folders with steps, clustered. Folders that
// agree first; then, deepest first, folders under one parent unless they
// conflict. One entry per run; one entry only when nothing conflicts.
std::vector<std::vector<uint32_t>> Runs(const std::vector<Folder>& folders,
                                        std::vector<Entry>& entries) {
  std::vector<std::pair<uint32_t, uint32_t>> agree;
  auto conflicts = Conflicts(CountAgreement(entries), folders, agree);
  std::vector<std::vector<uint32_t>> runs;
  if (conflicts.empty()) return runs;
  Clusters clusters(folders.size(), std::move(conflicts));
  for (const auto& [a, b] : agree) clusters.MergeUnlessConflicting(a, b);
  size_t deepest = 0;
  for (const Folder& f : folders) deepest = std::max(deepest, Depth(f.path));
  for (size_t depth = deepest + 1; depth-- > 0;) {
    // Per ancestor, a folder of each cluster under it so far.
    std::map<std::string_view, std::vector<uint32_t>> under;
    for (uint32_t f = 0; f < folders.size(); ++f) {
      std::vector<uint32_t>& seen = under[Ancestor(folders[f].path, depth)];
      for (uint32_t other : seen) clusters.MergeUnlessConflicting(other, f);
      if (std::none_of(seen.begin(), seen.end(),
                       [&](uint32_t o) { return clusters.Find(o) == clusters.Find(f); })) {
        seen.push_back(f);
      }
    }
  }
  std::map<uint32_t, std::vector<uint32_t>> by_root;
  for (uint32_t f = 0; f < folders.size(); ++f) by_root[clusters.Find(f)].push_back(f);
  for (auto& [root, members] : by_root) runs.push_back(std::move(members));
  return runs;
}

}  // namespace

std::vector<int32_t> RanksOf(const Group& g, const std::vector<JobKeys>& files) {
  std::vector<int32_t> ranks;
  for (size_t i : g.files) ranks.insert(ranks.end(), files[i].ranks.begin(), files[i].ranks.end());
  SortUnique(ranks);
  return ranks;
}

void SplitRunsSideBySide(std::vector<Group>& groups, const std::vector<JobKeys>& files,
                         const std::vector<std::string>& paths, std::vector<Ambiguous>& ambiguous) {
  std::vector<Group> out;
  std::vector<std::vector<size_t>> now(groups.size());  // old group -> its groups now
  std::vector<Ambiguous> spread;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::map<std::string, uint32_t> index;
    std::vector<Folder> folders;
    std::vector<Entry> entries;
    std::vector<size_t> rest;  // files without steps
    for (size_t i : groups[g].files) {
      if (files[i].prints.empty()) {
        rest.push_back(i);
        continue;
      }
      auto [it, fresh] = index.emplace(FolderOf(paths[i]), static_cast<uint32_t>(folders.size()));
      if (fresh) folders.push_back(Folder{it->first, {}, {}, {}});
      Folder& f = folders[it->second];
      f.files.push_back(i);
      f.span.Take(i, files[i]);
      for (const JobKeys::StepPrint& p : files[i].prints) entries.push_back({p, it->second});
    }
    for (Folder& f : folders) f.ranks = RanksOf(f.span, files);
    std::vector<std::vector<uint32_t>> runs;
    if (folders.size() >= 2 && folders.size() <= kMaxFolders) runs = Runs(folders, entries);
    if (runs.size() < 2) {
      now[g].push_back(out.size());
      out.push_back(std::move(groups[g]));
      continue;
    }
    for (const std::vector<uint32_t>& run : runs) {
      now[g].push_back(out.size());
      Group& split = out.emplace_back();
      for (uint32_t f : run) {
        for (size_t i : folders[f].files) split.Take(i, files[i]);
      }
      if (groups[g].world) split.world = groups[g].world;
    }
    for (size_t i : rest) spread.push_back({i, now[g]});
  }
  for (Ambiguous& a : ambiguous) {
    std::vector<size_t> among;
    for (size_t g : a.among) among.insert(among.end(), now[g].begin(), now[g].end());
    a.among = std::move(among);
  }
  ambiguous.insert(ambiguous.end(), spread.begin(), spread.end());
  groups = std::move(out);
}

FolderIndex::FolderIndex(const std::vector<Group>& groups, const std::vector<std::string>& paths) {
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i : groups[g].files) {
      std::string folder = FolderOf(paths[i]);
      for (size_t depth = Depth(folder) + 1; depth-- > 0;) {
        std::vector<size_t>& under = groups_under_[std::string(Ancestor(folder, depth))];
        if (!under.empty() && under.back() == g) break;  // the rest is there already
        if (std::find(under.begin(), under.end(), g) == under.end()) under.push_back(g);
      }
    }
  }
}

std::optional<size_t> FolderIndex::Nearest(const std::string& path,
                                           const std::vector<size_t>& among) const {
  std::string folder = FolderOf(path);
  for (size_t depth = Depth(folder) + 1; depth-- > 0;) {
    auto it = groups_under_.find(Ancestor(folder, depth));
    if (it == groups_under_.end()) continue;
    std::vector<size_t> fits;
    for (size_t g : it->second) {
      if (among.empty() || std::find(among.begin(), among.end(), g) != among.end())
        fits.push_back(g);
    }
    if (fits.size() == 1) return fits[0];
    if (fits.size() > 1) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace laggard::jobs_internal
