// Transparent huge pages for malloc's heaps, which glibc (>= 2.35) turns on
// with the tunable glibc.malloc.hugetlb=1 and reads only when a process
// starts. A diagnosis of 10^8 step records touches 5 GB of fresh memory; on
// a 2-core KVM guest each 4 KiB page fault exits to the hypervisor, and
// `laggard diagnose` of those records took 48.2 s with 4 KiB pages and
// 23.4 s with huge pages, the same 5.28 GB peak RSS (docs/performance.md).
// So main() runs laggard again, once, with the tunable added, unless
//   - the kernel's THP mode is not "madvise" ("always" needs no tunable,
//     "never" ignores it);
//   - GLIBC_TUNABLES already sets glibc.malloc.hugetlb (the user's choice);
//   - LAGGARD_HUGE_PAGES=0;
//   - /proc/self/exe is not a file named laggard* (valgrind's tool, say);
//   - the command reads no data (`--version`, `--help`, `formats`, no
//     command): the second start would double its time, 9.9 ms against
//     5.3 ms for `laggard --version` on that guest (ReadsData).
// glibc before 2.35 ignores the unknown tunable.

#ifndef LAGGARD_CLI_HUGE_PAGES_H_
#define LAGGARD_CLI_HUGE_PAGES_H_

#include <optional>
#include <string>
#include <string_view>

namespace laggard {

// The GLIBC_TUNABLES value to run again with, or nullopt to go on as is.
// `tunables`: the current value (nullopt: unset); `thp_mode`: the contents
// of /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never");
// `opt_out`: LAGGARD_HUGE_PAGES; `exe`: where /proc/self/exe points.
std::optional<std::string> HugePageTunables(std::optional<std::string_view> tunables,
                                            std::string_view thp_mode,
                                            std::optional<std::string_view> opt_out,
                                            std::string_view exe);

// Whether `argv` (null-terminated) runs a command that reads or makes data:
// its first argument that is not an option is diagnose, inspect, demo,
// watch, agent or simulate (laggard has no global option with a value).
bool ReadsData(const char* const* argv);

// Runs this process's program again with HugePageTunables' value when it
// gives one and the command ReadsData (execv of /proc/self/exe with the
// same arguments); returns otherwise, or when the exec fails, and the
// caller goes on.
void MaybeRunAgainWithHugePages(char** argv);

}  // namespace laggard

#endif  // LAGGARD_CLI_HUGE_PAGES_H_
