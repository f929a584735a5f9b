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

#include <string_view>

namespace laggard {

inline constexpr int kSniffNo = 0;          // not this format
inline constexpr int kSniffAnyText = 5;     // any text: read for lack of a better reader
inline constexpr int kSniffWeak = 30;       // a line others print too (a header alone)
inline constexpr int kSniffPlausible = 50;  // the container fits (SQLite, JSON), content unchecked
inline constexpr int kSniffLikely = 60;     // a record of this format parses, nothing says otherwise
inline constexpr int kSniffStrong = 90;     // this format's layout, one detail unconfirmed
inline constexpr int kSniffSure = 95;       // a header and a record only this format prints
inline constexpr int kSniffCertain = 100;   // a banner or top-level key only this format writes

// Calls fn(line) for each complete line of a sniffing head (without its
// "\n" or "\r\n"; the last, possibly cut, line is left out) until fn
// returns false.
template <typename Fn>
void ForEachHeadLine(std::string_view head, Fn&& fn) {
  size_t pos = 0;
  while (pos < head.size()) {
    size_t nl = head.find('\n', pos);
    if (nl == std::string_view::npos) return;
    std::string_view line = head.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    if (!fn(line)) return;
  }
}

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_SNIFF_H_
