#include "cli/huge_pages.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace laggard {

std::optional<std::string> HugePageTunables(std::optional<std::string_view> tunables,
                                            std::string_view thp_mode,
                                            std::optional<std::string_view> opt_out,
                                            std::string_view exe) {
  constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
  if (opt_out && *opt_out == "0") return std::nullopt;
  if (thp_mode.find("[madvise]") == std::string_view::npos) return std::nullopt;
  if (tunables && tunables->find(kTunable) != std::string_view::npos) return std::nullopt;
  std::string_view name = exe.substr(exe.find_last_of('/') + 1);  // npos + 1 == 0
  if (name.rfind("laggard", 0) != 0) return std::nullopt;
  std::string value(kTunable);
  value += "=1";
  if (tunables && !tunables->empty()) value = std::string(*tunables) + ":" + value;
  return value;
}

bool ReadsData(const char* const* argv) {
  constexpr std::array<std::string_view, 6> kCommands = {"diagnose", "inspect", "demo",
                                                         "watch",    "agent",   "simulate"};
  for (const char* const* a = argv + 1; *a != nullptr; ++a) {
    std::string_view arg(*a);
    if (arg.empty() || arg[0] == '-') continue;
    return std::find(kCommands.begin(), kCommands.end(), arg) != kCommands.end();
  }
  return false;
}

void MaybeRunAgainWithHugePages(char** argv) {
  if (argv == nullptr || argv[0] == nullptr || !ReadsData(argv)) return;
  auto env = [](const char* name) -> std::optional<std::string_view> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string_view>(v) : std::nullopt;
  };
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return;
  std::optional<std::string_view> before = env("GLIBC_TUNABLES");
  auto value = HugePageTunables(before, mode, env("LAGGARD_HUGE_PAGES"), exe);
  if (!value) return;
  // The new image starts with the tunable set, so HugePageTunables gives
  // nothing there: it runs once more at most.
  std::optional<std::string> saved(before);
  if (::setenv("GLIBC_TUNABLES", value->c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // The exec failed: go on as before.
  if (saved) ::setenv("GLIBC_TUNABLES", saved->c_str(), 1);
  else ::unsetenv("GLIBC_TUNABLES");
}

}  // namespace laggard
