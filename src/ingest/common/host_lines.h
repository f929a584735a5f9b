// Output of one command gathered from many hosts by a parallel shell, split
// back per host. Used by the network link readers (ibstat, ibstatus,
// ibv_devinfo, ethtool), whose outputs name no host of their own, so that
// `pdsh -w node[01-16] ibstat > all.txt` reads as sixteen hosts.
//
// Recognised layouts:
//
//   pdsh / clush     node-01: CA 'mlx5_0'          every line "HOST: LINE";
//                    node-02: CA 'mlx5_0'          hosts' lines may interleave
//   dshbak           ----------------
//                    node-01                       a host (or a pdsh host list
//                    ----------------              "node[01-03,07]" from
//                    CA 'mlx5_0'                   `dshbak -c`) between two
//                                                  rules, then its lines
//   ansible          node-01 | CHANGED | rc=0 >>   then the host's lines
//   srun --label     0: CA 'mlx5_0'                a task number, not a host
//
// A prefix "WORD: " is learnt as a host when the rest of its line is the
// format's first line (a header: "CA 'mlx5_0'", "Settings for eth0:"); from
// then on every line starting with "WORD: " belongs to that host. Each host's
// output starts with a header, so interleaved lines split correctly, and a
// flush-left "key: value" of the tool itself is never taken for a host.
// Launcher messages ("pdsh@head: node-03: ssh exited with exit code 255")
// are dropped.
//
// Thread-safety: one object per file being read.

#ifndef LAGGARD_INGEST_COMMON_HOST_LINES_H_
#define LAGGARD_INGEST_COMMON_HOST_LINES_H_

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace laggard {

// One line of the input with its host taken off.
struct HostLine {
  std::string_view text;  // the tool's own line (indentation kept)
  // Names the output stream the line belongs to: "" when the input has no
  // host marks, else the host (or host list, or "#N" for a task label).
  // Readers keep one parser state per stream. Both views are valid until
  // the next Split().
  std::string_view stream;
};

class HostLines {
 public:
  // `is_header`: whether a line (without prefix) starts the format's output.
  using HeaderTest = bool (*)(std::string_view line);
  explicit HostLines(HeaderTest is_header) : is_header_(is_header) {}

  // Splits `raw`. Returns false when the line only marks where a host's
  // output starts (a dshbak rule or host line, an ansible header): it holds
  // no content of the tool.
  bool Split(std::string_view raw, HostLine& out);

  // The hosts a stream stands for: {} for "" and task labels (the host is
  // unknown), one host for a prefix, every host of a dshbak -c host list.
  const std::vector<std::string>& HostsOf(std::string_view stream);

 private:
  enum class Dshbak { kNone, kAfterRule, kAfterHost };
  HeaderTest is_header_;
  std::set<std::string, std::less<>> prefixes_;  // learnt "WORD" of "WORD: "
  Dshbak dshbak_ = Dshbak::kNone;
  std::string block_;    // stream of the current dshbak / ansible block
  std::string pending_;  // dshbak host line waiting for its closing rule
  std::string label_;    // "#N" of the last task-labelled line
  std::string last_stream_;
  std::vector<std::string> last_hosts_;
  const std::vector<std::string> no_hosts_;
};

// Whether `s` can be a host name: letters, digits, '-', '.', '_', starting
// with a letter or digit, at most 253 characters.
bool LooksLikeHostName(std::string_view s);

// Expands a pdsh host list: "node[01-03,07],gpu-a" -> node01 node02 node03
// node07 gpu-a (zero padding kept). Returns nullopt when `list` is not one,
// or names more than `max_hosts` hosts.
std::optional<std::vector<std::string>> ExpandHostList(std::string_view list,
                                                       size_t max_hosts = 4096);

// A character a host name holds: letters, digits, '.', '-', '_'.
bool IsHostNameChar(char c);

// `s` without the characters around it that no host name holds: a pasted
// line's Markdown backtick, quotes, a '>' (NCCL's "host:pid:tid" prefix as
// users paste it).
std::string_view TrimToHostName(std::string_view s);

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_HOST_LINES_H_
