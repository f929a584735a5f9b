// The data-quality channel: a named catalogue of everything that went wrong
// inside otherwise usable input (a garbled line, a duplicate step, a file that
// was skipped). Parsers count here and carry on; reports print the counts and
// a few located examples; `--strict` fails the run when any bad record was
// counted.
//
// Serialized names (DiagInfo::name) are part of the JSON schema: append new
// codes, never rename or reuse one.
//
// Thread-safety: a Diagnostics is not synchronised; each ingest worker owns
// one and they are merged with MergeFrom() afterwards.

#ifndef LAGGARD_MODEL_DIAGNOSTICS_H_
#define LAGGARD_MODEL_DIAGNOSTICS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace laggard {

enum class DiagKind : uint8_t {
  kBadRecord,    // data that was dropped or could not be read; fails --strict
  kSkippedFile,  // a whole file that was not used (unknown format, empty, binary)
  kNote,         // worth knowing, nothing was lost (mixed units, a missing rank)
};

enum class DiagCode : uint16_t {
  kFileUnreadable,
  kFileEmpty,
  kFileBinary,
  kFileUnrecognised,
  kGzipCorrupt,
  kGzipTruncated,
  kLineTooLong,
  kStepGarbled,
  kStepNonPositiveDuration,
  kStepDuplicate,
  kStepBadRankOrStep,
  kCsvBadRow,
  kCsvNoHeader,
  kJsonlBadLine,
  kMixedUnits,
  kRankUnknown,
  kRankMissing,
  kRankStepCountMismatch,
  kRankConflictingInfo,
  kRankTooFewSteps,
  kTraceTruncated,
  kTraceBadEvent,
  kTraceNoRank,
  kTraceDuplicateRank,
  kTraceMixedJobs,
  kTraceUnsupported,
  kTraceNoEvents,
  kHwBadRecord,
  kHwUnknownField,
  kHwApproximateTime,
  kHwNoHost,
  kHwConflictingFacts,
  kNetBadRecord,
  kNetNoHost,
  kHwNoGpuId,
  kTraceNoStepMarker,
  kFileRanksUnmatched,
  kStepRepeatedByAnotherFile,
  kTraceEventsUnused,
  kTraceClockAligned,
  kTraceClockUnaligned,
  kFileDuplicate,
  kStepBadComputeTime,
  kStepBadCpuTime,
  kTimelineOpUnknown,
  kTimelineLayoutUnknown,
  kLayoutContradicts,
  kHangDumpTruncated,
  kHangDumpCorrupt,
  kHangDumpRefused,
  kHangDumpBadEntry,
  kHangDumpNoRank,
  kHangDumpVersionUnknown,
  kHangRasBadLine,
  kHangRasTruncated,
  kHangDumpNoPgConfig,
  kToolReportBadField,
  kP2pBadRow,
  kPairBadRow,
  kPairTooFew,
  kPairMixedUnits,
  kJobOther,
  kJobUnplaced,
  kRankHostFromAgent,
  kCount,
};

struct DiagInfo {
  std::string_view name;  // stable, dotted: "step.garbled"
  DiagKind kind;
  std::string_view description;
};

const DiagInfo& Describe(DiagCode code);

// One located example of a diagnostic, for the report.
struct DiagExample {
  std::string file;     // path as given by the user
  uint64_t line = 0;    // 1-based line, or 0 when `offset` locates it
  uint64_t offset = 0;  // byte offset (decompressed) when there is no line
  std::string message;
};

class Diagnostics {
 public:
  static constexpr size_t kMaxExamplesPerCode = 5;

  void Add(DiagCode code, std::string_view file, uint64_t line, std::string message,
           uint64_t count = 1);
  // `count` records of one kind, located by the first one's byte offset.
  void AddAtOffset(DiagCode code, std::string_view file, uint64_t offset, std::string message,
                   uint64_t count = 1);

  uint64_t count(DiagCode code) const { return counts_[static_cast<size_t>(code)]; }
  const std::vector<DiagExample>& examples(DiagCode code) const {
    return examples_[static_cast<size_t>(code)];
  }
  uint64_t TotalOfKind(DiagKind kind) const;

  void MergeFrom(const Diagnostics& other);

 private:
  friend struct WireAccess;  // model/wire.cc: the MPI wire codec
  static constexpr size_t kCodes = static_cast<size_t>(DiagCode::kCount);
  std::array<uint64_t, kCodes> counts_{};
  std::array<std::vector<DiagExample>, kCodes> examples_;
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_DIAGNOSTICS_H_
