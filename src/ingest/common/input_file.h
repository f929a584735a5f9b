// Reading input files: plain or gzip-compressed (detected by magic bytes, not
// by name), as a stream of bytes or of lines. Memory stays bounded by the
// chunk size whatever the file size.
//
// Used by every text reader in ingest/. A damaged gzip stream is not an
// error: reading stops at the damage, and the problem is reported through
// error() so the caller can count it (gzip.corrupt / gzip.truncated) and
// keep what came before.
//
// Thread-safety: one object per thread (a Decode::kAhead source runs its
// own worker thread behind that).

#ifndef LAGGARD_INGEST_COMMON_INPUT_FILE_H_
#define LAGGARD_INGEST_COMMON_INPUT_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard {

// How a read ended early, if it did.
struct StreamDamage {
  enum Kind { kCorrupt, kTruncated } kind;
  uint64_t compressed_offset;  // where in the file the damage was found
  std::string message;
  // True when the data read so far may stop inside a line; false when all
  // of it was complete (garbage after the last gzip member).
  bool output_cut = true;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes; returns 0 at the end of data (or at damage).
  virtual size_t Read(char* buf, size_t n) = 0;
  virtual const std::optional<StreamDamage>& damage() const = 0;
  virtual bool compressed() const = 0;
};

// Where gzip is decoded: in Read() on the caller's thread, or on a worker
// thread up to three 512 KiB blocks ahead of the caller (for large files
// read while a core is spare: the parser and the decoder then run side by
// side; Read() copies the decoded blocks out). Plain files are always read
// in Read().
enum class Decode { kInline, kAhead };

// Opens `path`; gzip is recognised by its magic bytes (1f 8b) and decoded
// on the fly with isa-l's igzip, concatenated members (cat a.gz b.gz, pigz)
// included. Anything but a regular file (a FIFO, a socket, a device) is
// refused without blocking, with a message that names what it is; so is a
// symlink loop.
StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path,
                                                     Decode decode = Decode::kInline);

// Up to `max_bytes` decompressed bytes from the start of `path`, for sniffing.
// `damage`, when given, receives damage met within those bytes (a gzip file
// cut inside its header yields no bytes and a truncation).
StatusOr<std::string> ReadHead(const std::string& path, size_t max_bytes,
                               std::optional<StreamDamage>* damage = nullptr);

// What a file of st_mode `mode` is when it is not a regular file ("a named
// pipe (FIFO)", "a socket", ...); nullptr for a regular file.
const char* NotRegularFileKind(mode_t mode);

// True when over a quarter of the lines of `head` hold NUL bytes (or fewer
// than two lines are free of them), or more than 5% of the other lines'
// bytes are control characters. A text log with a line of NULs is text.
bool LooksBinary(std::string_view head);

// Splits a ByteSource into lines ('\n' or "\r\n"; the terminator is not part
// of the line). The last line need not end with '\n', unless the source
// reports damage that cut the data (StreamDamage::output_cut): then that
// unterminated tail is a cut line, and it is dropped.
// A line longer than kMaxLine is skipped and counted in long_lines().
class LineReader {
 public:
  static constexpr size_t kChunk = 1 << 20;
  static constexpr size_t kMaxLine = 1 << 20;

  explicit LineReader(ByteSource& source);

  // Next line; false at the end. The view is valid until the next call.
  bool Next(std::string_view& line);
  uint64_t line_number() const { return line_number_; }  // of the last line returned
  uint64_t bytes() const { return bytes_; }
  // Line numbers of skipped over-long lines (at most the first 5) and count.
  uint64_t long_lines() const { return long_lines_; }
  const std::vector<uint64_t>& long_line_numbers() const { return long_line_numbers_; }

 private:
  bool Refill();

  static constexpr size_t kBufBytes = kChunk + kMaxLine;

  ByteSource& source_;
  // Not value-initialised: a file of a few KB touches a few pages of it, not
  // 2 MiB (a 100,000-rank job has a file per rank or per node).
  std::unique_ptr<char[]> buf_;
  size_t begin_ = 0;  // first unconsumed byte
  size_t end_ = 0;    // end of valid data
  bool eof_ = false;
  bool skipping_ = false;  // inside an over-long line
  uint64_t line_number_ = 0;
  uint64_t bytes_ = 0;
  uint64_t long_lines_ = 0;
  std::vector<uint64_t> long_line_numbers_;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_INPUT_FILE_H_
