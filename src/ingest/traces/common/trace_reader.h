// The interface of profiler-trace readers (Kineto / Chrome trace JSON,
// Nsight Systems SQLite). Unlike step readers they read a whole file by
// path (SQLite needs random access; JSON is streamed in chunks) and produce
// one RankTrace (model/trace.h) per file through ctx.out->AddTrace().
//
// Readers are stateless and shared by all ingest threads.

#ifndef LAGGARD_INGEST_TRACES_COMMON_TRACE_READER_H_
#define LAGGARD_INGEST_TRACES_COMMON_TRACE_READER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "ingest/common/text_reader.h"

namespace laggard {

class TraceReader {
 public:
  virtual ~TraceReader() = default;
  virtual std::string_view name() const = 0;
  // 0 = not mine .. 100 = certain, from the first kSniffBytes of the file
  // (decompressed; binary files are offered too).
  virtual int Sniff(std::string_view head) const = 0;
  // Reads `path` into ctx.out (AddTrace, names(), diagnostics()). Returns
  // the number of events taken. Damage is counted, never thrown.
  virtual uint64_t Read(const std::string& path, ReaderContext& ctx) const = 0;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_TRACE_READER_H_
