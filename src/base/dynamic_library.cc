#include "base/dynamic_library.h"

#include <fmt/format.h>

namespace laggard {

void* OpenFirstLibrary(const std::vector<std::string>& names, std::string& tried, int mode) {
  tried.clear();
  for (const std::string& n : names) {
    if (void* h = dlopen(n.c_str(), mode)) return h;
    if (!tried.empty()) tried += ", ";
    tried += n;
  }
  if (const char* e = dlerror()) tried += fmt::format(" ({})", e);
  return nullptr;
}

void AddMissingSymbol(std::string& missing, const char* symbol) {
  if (!missing.empty()) missing += ", ";
  missing += symbol;
}

}  // namespace laggard
