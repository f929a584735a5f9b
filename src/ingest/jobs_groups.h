// The groups ingest/jobs.cc forms while it tells jobs apart, and the rules
// on folders (ingest/jobs_folders.cc): runs copied side by side, and the
// folder that places a file the other evidence cannot. Internal to
// ingest/jobs.cc.

#ifndef LAGGARD_INGEST_JOBS_GROUPS_H_
#define LAGGARD_INGEST_JOBS_GROUPS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ingest/jobs.h"

namespace laggard::jobs_internal {

template <typename T>
void SortUnique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// A job being formed: its files and what they say together.
struct Group {
  std::optional<int32_t> world;
  std::optional<TimeNs> first_ns, last_ns;
  std::vector<size_t> files;

  void Take(size_t i, const JobKeys& k) {
    files.push_back(i);
    if (k.world_size) world = std::max(world.value_or(0), *k.world_size);
    if (k.first_ns) first_ns = first_ns ? std::min(*first_ns, *k.first_ns) : *k.first_ns;
    if (k.last_ns) last_ns = last_ns ? std::max(*last_ns, *k.last_ns) : *k.last_ns;
  }
  // Its span and the file's lie within kJobGapNs of each other.
  bool Near(const JobKeys& k) const {
    return first_ns && k.first_ns && *k.first_ns <= *last_ns + kJobGapNs &&
           *first_ns <= *k.last_ns + kJobGapNs;
  }
  // Its span and the file's overlap.
  bool Overlaps(const JobKeys& k) const {
    return first_ns && k.first_ns && *k.first_ns <= *last_ns && *first_ns <= *k.last_ns;
  }
  bool Holds(const JobKeys& k) const {
    return !world || k.ranks.empty() || k.ranks.back() < *world;
  }
};

// A file that fits several groups (`among`; empty: any): placed by folder
// at the end, else unplaced.
struct Ambiguous {
  size_t file;
  std::vector<size_t> among;
};

// The ranks a group's files name, sorted.
std::vector<int32_t> RanksOf(const Group& g, const std::vector<JobKeys>& files);

// Step 5 of ingest/jobs.h: each group whose folders hold runs side by side
// becomes one group per run; its files outside those folders go to
// `ambiguous` among them, and the entries of `ambiguous` that named it are
// widened to them.
void SplitRunsSideBySide(std::vector<Group>& groups, const std::vector<JobKeys>& files,
                         const std::vector<std::string>& paths, std::vector<Ambiguous>& ambiguous);

// Which group's files lie in the folder nearest a file's.
class FolderIndex {
 public:
  FolderIndex(const std::vector<Group>& groups, const std::vector<std::string>& paths);
  // The one group of `among` (any, when empty) with a file in the deepest
  // folder of `path` that holds a file of any of them; nullopt when several
  // or none.
  std::optional<size_t> Nearest(const std::string& path, const std::vector<size_t>& among) const;

 private:
  std::map<std::string, std::vector<size_t>, std::less<>> groups_under_;  // folder -> groups
};

}  // namespace laggard::jobs_internal

#endif  // LAGGARD_INGEST_JOBS_GROUPS_H_
