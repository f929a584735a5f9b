// A torch.distributed process group as the files name it: Kineto's
// distributedInfo.pg_config, a Flight Recorder dump's pg_config, the
// "[PG 1 (default_pg) Rank 0]" of a watchdog line.

#ifndef LAGGARD_MODEL_PROCESS_GROUP_H_
#define LAGGARD_MODEL_PROCESS_GROUP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/source.h"

namespace laggard {

struct ProcessGroupInfo {
  std::string id;               // pg_name / "PG 1" id: "0", "1", a hash name
  std::string desc;             // pg_desc: "default_pg", "undefined", a user label
  std::vector<int32_t> ranks;   // global ranks, ascending; empty: unknown (or the world)
  std::optional<int32_t> size;  // pg_size
  bool whole_world = false;     // FR / Kineto give ranks [] for a group of every rank
  SourceRef src;
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_PROCESS_GROUP_H_
