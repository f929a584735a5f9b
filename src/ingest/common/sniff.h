// Sniffing: how a reader says how sure it is that a file is its format.
// Ingest (ingest.h) offers the head of every file (its first kSniffBytes,
// decompressed) to every registered reader's Sniff(); the most confident one
// reads the file, ties going to the reader registered first (readers.cc).
//
// A score is one of the named levels below. Where two formats can claim the
// same file, a reader steps a little above or below a level and says in a
// comment which reader it must beat or yield to (the rank map at
// kSniffStrong - 2 yields to a step CSV at kSniffStrong).
//
// Thread-safety: pure functions.

#ifndef LAGGARD_INGEST_COMMON_SNIFF_H_
#define LAGGARD_INGEST_COMMON_SNIFF_H_

#include <optional>
#include <string_view>
#include <utility>

#include "base/text.h"
#include "ingest/common/host_lines.h"

namespace laggard {

inline constexpr int kSniffNo = 0;          // not this format
inline constexpr int kSniffAnyText = 5;     // any text: read for lack of a better reader
inline constexpr int kSniffWeak = 30;       // a line others print too (a header alone)
inline constexpr int kSniffPart = 40;       // part of the file is this format, amid other text
inline constexpr int kSniffPlausible = 50;  // the container or header fits, content unchecked
inline constexpr int kSniffLikely = 60;    // a record of this format parses, nothing says otherwise
inline constexpr int kSniffStrong = 90;    // this format's layout, one detail unconfirmed
inline constexpr int kSniffSure = 95;      // a header and a record only this format prints
inline constexpr int kSniffCertain = 100;  // a banner or top-level key only this format writes

// Which lines of a sniffing head ForEachHeadLine() hands out. By default
// the complete lines, without their "\n" or "\r\n"; the last line is left
// out unless a '\n' ends it, since the head may end inside it.
struct HeadLines {
  // Hand out the last line as well: for readers that judge a line by its
  // start, and for a short file, whose last line the head holds whole.
  bool with_last = false;
  // Leave the '\r' of a "\r\n" on the line, for readers whose sniffing
  // matches the line as the head holds it.
  bool keep_cr = false;
  // For many hosts' outputs in one file (host_lines.h): hand out each line
  // with its host taken off, the tool's own line, and skip the lines that
  // only mark where a host's output starts. The format's header test.
  HostLines::HeaderTest split_hosts = nullptr;
};

// Calls fn(line) for each line of a sniffing head (see HeadLines) until fn
// returns false.
template <typename Fn>
void ForEachHeadLine(std::string_view head, HeadLines which, Fn&& fn) {
  std::optional<HostLines> hosts;
  if (which.split_hosts) hosts.emplace(which.split_hosts);
  size_t pos = 0;
  while (pos < head.size()) {
    size_t nl = head.find('\n', pos);
    if (nl == std::string_view::npos && !which.with_last) return;
    size_t end = nl == std::string_view::npos ? head.size() : nl;
    std::string_view line = head.substr(pos, end - pos);
    if (!which.keep_cr && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    HostLine l{line, {}};
    if (hosts && !hosts->Split(line, l)) continue;
    if (!fn(l.text)) return;
  }
}

template <typename Fn>
void ForEachHeadLine(std::string_view head, Fn&& fn) {
  ForEachHeadLine(head, HeadLines{}, std::forward<Fn>(fn));
}

// Judges the lines of a sniffing head in turn (see HeadLines), at most
// `max_lines` of them: judge(line) returns the score the line decides,
// which ends the sniff, or nullopt to read on. Returns the score decided;
// nullopt when no line decided (the caller says what the lines seen make
// of the file).
template <typename Judge>
std::optional<int> JudgeHeadLines(std::string_view head, HeadLines which, int max_lines,
                                  Judge&& judge) {
  std::optional<int> score;
  int lines = 0;
  ForEachHeadLine(head, which, [&](std::string_view line) {
    score = judge(line);
    return !score && ++lines < max_lines;
  });
  return score;
}

// The first line of a head that is not blank, trimmed; "" when there is
// none. The head's last line counts even when no '\n' ends it: the caller
// judges whether a line that may be cut can be judged.
inline std::string_view FirstNonBlankHeadLine(std::string_view head) {
  std::string_view first;
  ForEachHeadLine(head, {.with_last = true}, [&](std::string_view line) {
    first = Trim(line);
    return first.empty();
  });
  return first;
}

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_SNIFF_H_
