// Libraries opened at run time (dlopen): the first of several sonames that
// loads, and its symbols resolved into function pointers with the missing
// ones named, for the one error message that says what was found instead.

#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

namespace laggard {

// The first of `names` that dlopen loads with `mode`; nullptr when none
// does, `tried` then naming them and dlerror's last words ("libpq.so.5,
// libpq.so (libpq.so: cannot open shared object file ...)").
void* OpenFirstLibrary(const std::vector<std::string>& names, std::string& tried,
                       int mode = RTLD_NOW | RTLD_LOCAL);

// Appends `symbol` to the comma-separated `missing`.
void AddMissingSymbol(std::string& missing, const char* symbol);

// `fn` = `symbol` of `lib`; a symbol not there is added to `missing`.
// True when found.
template <typename Fn>
bool LoadSymbol(void* lib, Fn& fn, const char* symbol, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (fn == nullptr) AddMissingSymbol(missing, symbol);
  return fn != nullptr;
}

}  // namespace laggard
