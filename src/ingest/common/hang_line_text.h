// Text helpers of the hang-line matcher (ingest/common/hang_lines.h),
// shared by its files: hang_lines.cc (the line forms),
// hang_lines_fr.cc (torch's dump-signal lines, desync and mismatch
// reports, fr_trace's blocks) and
// python_traceback.cc (a rank's last uncaught exception).
// Internal to the matcher; not an interface of ingest.

#ifndef LAGGARD_INGEST_COMMON_HANG_LINE_TEXT_H_
#define LAGGARD_INGEST_COMMON_HANG_LINE_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "model/hang.h"
#include "model/run.h"

namespace laggard::hang_line_text {

constexpr size_t npos = std::string_view::npos;

inline bool Has(std::string_view s, std::string_view word) { return s.find(word) != npos; }

// Digits (with an optional '-') at s[pos...]; nullopt when none.
inline std::optional<int64_t> IntAt(std::string_view s, size_t pos) {
  if (pos >= s.size()) return std::nullopt;
  size_t end = pos;
  if (s[end] == '-') ++end;
  size_t digits = end;
  while (end < s.size() && IsDigit(s[end])) ++end;
  if (end == digits || end - digits > 18) return std::nullopt;
  return ParseInt<int64_t>(s.substr(pos, end - pos));
}

// The integer right after the first `key` in `s` (blanks skipped).
inline std::optional<int64_t> IntAfter(std::string_view s, std::string_view key) {
  size_t at = s.find(key);
  if (at == npos) return std::nullopt;
  size_t pos = at + key.size();
  while (pos < s.size() && s[pos] == ' ') ++pos;
  return IntAt(s, pos);
}

inline std::optional<int32_t> Int32(std::optional<int64_t> v) {
  if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*v);
}

// A rank: 0 .. kMaxRank.
inline std::optional<int32_t> Rank(std::optional<int64_t> v) {
  if (!v || *v < 0 || *v > kMaxRank) return std::nullopt;
  return static_cast<int32_t>(*v);
}

// The word after `key`, up to ',' ')' or a blank: "OpType=ALLREDUCE,".
inline std::string WordAfter(std::string_view s, std::string_view key) {
  size_t at = s.find(key);
  if (at == npos) return {};
  size_t pos = at + key.size();
  size_t end = pos;
  while (end < s.size() && s[end] != ',' && s[end] != ')' && s[end] != ' ') ++end;
  return std::string(s.substr(pos, end - pos));
}

// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence.
inline std::string CutText(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

// Longest HangEvent::detail kept, in bytes.
constexpr size_t kDetailBytes = 256;

// IntAfter() with `key` matched in any case: "Last enqueued NCCL work: ".
inline std::optional<int64_t> IntAfterIgnoreCase(std::string_view s, std::string_view key) {
  size_t at = FindIgnoreCase(s, key);
  if (at == npos) return std::nullopt;
  size_t pos = at + key.size();
  while (pos < s.size() && s[pos] == ' ') ++pos;
  return IntAt(s, pos);
}

// "[rank12]:" near the start of a line (after launcher tags, dates).
struct RankPrefix {
  std::optional<int32_t> rank;
  size_t end = 0;  // first byte after it; 0 when there is none
};
RankPrefix FindRankPrefix(std::string_view line);

// Open MPI's output tag "[1,3]<stdout>:" (after its date with
// --timestamp-output) near the start of `line`: the byte after it (0 when
// there is none), and the MPI rank (its second number) into `rank`.
size_t SkipMpiTag(std::string_view line, std::optional<int32_t>& rank);

// torch's reports beside the watchdog's: the dump-signal lines and the
// one-line forms and block headers of fr_trace (the collector reads a
// block's fields). False when `body` is none of them; `ended` false when
// the form ends early (a cut line).
bool ReadDumpOrFrTrace(std::string_view body, HangEvent& e, bool& ended);

// "Detected mismatch between collectives" (TORCH_DISTRIBUTED_DEBUG=DETAIL):
// the sequence number, the op and the ranks it names as running another.
// TORCH_NCCL_DESYNC_DEBUG's report, one line per finding: the ranks it
// names and the collective they did not join or finish. False when `body`
// is not that report.
bool ReadCollectiveMismatch(std::string_view body, HangEvent& e);
bool ReadDesyncReport(std::string_view body, HangEvent& e);

// Python's "{0, 1, 2}" (fr_trace's rank sets): the ranks, sorted and
// unique. `closed` tells whether the '}' is there; without it the last
// number may be cut and is not taken.
std::vector<int32_t> RankSet(std::string_view s, bool& closed);

}  // namespace laggard::hang_line_text

#endif  // LAGGARD_INGEST_COMMON_HANG_LINE_TEXT_H_
