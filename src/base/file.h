// Reading a whole small file: /proc and sysfs entries, scripts, configs.

#ifndef LAGGARD_BASE_FILE_H_
#define LAGGARD_BASE_FILE_H_

#include <cstddef>
#include <optional>
#include <string>

namespace laggard {

// The first `max_bytes` bytes of the file at `path` (fewer when it is
// shorter); nullopt when it cannot be opened or a read fails (a sysfs
// attribute whose read fails, a /proc entry of a process that exited).
// One open and reads until end of file: /proc files are read whole at
// their size of the moment.
std::optional<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes);

}  // namespace laggard

#endif  // LAGGARD_BASE_FILE_H_
