#include "ingest/common/input_file.h"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace laggard {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// read(2) until n bytes or end of file.
ssize_t ReadFully(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, buf + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

class PlainSource final : public ByteSource {
 public:
  PlainSource(std::unique_ptr<Fd> fd, std::string prefix)
      : fd_(std::move(fd)), prefix_(std::move(prefix)) {}

  size_t Read(char* buf, size_t n) override {
    size_t got = 0;
    if (prefix_pos_ < prefix_.size()) {
      got = std::min(n, prefix_.size() - prefix_pos_);
      std::memcpy(buf, prefix_.data() + prefix_pos_, got);
      prefix_pos_ += got;
      if (got == n) return got;
    }
    ssize_t r = ReadFully(fd_->get(), buf + got, n - got);
    if (r < 0) {
      damage_ = StreamDamage{StreamDamage::kCorrupt, 0, std::strerror(errno)};
      return got;
    }
    return got + static_cast<size_t>(r);
  }
  const std::optional<StreamDamage>& damage() const override { return damage_; }
  bool compressed() const override { return false; }

 private:
  std::unique_ptr<Fd> fd_;
  std::string prefix_;  // bytes already read while checking the magic
  size_t prefix_pos_ = 0;
  std::optional<StreamDamage> damage_;
};

// What isa-l's inflate error codes mean, in words a user can act on.
const char* IsalErrorText(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate code";
    case ISAL_INVALID_LOOKBACK: return "back-reference before the start of the data";
    case ISAL_INVALID_WRAPPER: return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "compression method is not deflate";
    case ISAL_INCORRECT_CHECKSUM:
      return "CRC-32 or length in the gzip trailer does not match the data";
    default: return "inflate error";
  }
}

// gzip decoded with isa-l's igzip (several times zlib's speed). isa-l parses
// each member's header and checks its CRC-32 and length; between members,
// the next one must start with the gzip magic, else what follows is garbage
// after complete data (reported, nothing cut).
class GzipSource final : public ByteSource {
 public:
  static constexpr size_t kInChunk = 256 * 1024;

  GzipSource(std::unique_ptr<Fd> fd, std::string prefix)
      : fd_(std::move(fd)), in_(new uint8_t[kInChunk]), state_(new inflate_state) {
    std::memcpy(in_.get(), prefix.data(), prefix.size());
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP;
    state_->next_in = in_.get();
    state_->avail_in = static_cast<uint32_t>(prefix.size());
  }

  size_t Read(char* buf, size_t n) override {
    inflate_state& st = *state_;
    size_t out = 0;
    while (out < n && !done_) {
      if (st.avail_in == 0) {
        if (!FillInput()) break;
        if (st.avail_in == 0) {  // end of file
          if (in_member_) {
            damage_ = StreamDamage{StreamDamage::kTruncated, consumed_,
                                   fmt::format("gzip stream ends early at byte {}", consumed_)};
          }
          done_ = true;
          break;
        }
      }
      if (!in_member_) {
        if (members_ > 0 && st.next_in[0] != 0x1f) {
          // Every member before was complete: nothing was cut.
          damage_ =
              StreamDamage{StreamDamage::kCorrupt, consumed_,
                           fmt::format("non-gzip bytes after the gzip data at byte {}", consumed_),
                           /*output_cut=*/false};
          done_ = true;
          break;
        }
        in_member_ = true;
      }
      const uint32_t want = static_cast<uint32_t>(std::min<size_t>(n - out, UINT32_MAX));
      st.next_out = reinterpret_cast<uint8_t*>(buf + out);
      st.avail_out = want;
      const uint32_t avail_in = st.avail_in;
      int rc = isal_inflate(&st);
      consumed_ += avail_in - st.avail_in;
      out += want - st.avail_out;
      if (rc < 0 || (rc == ISAL_DECOMP_OK && st.avail_in == avail_in && st.avail_out == want &&
                     st.block_state != ISAL_BLOCK_FINISH)) {
        // An error, or (never seen) a call that neither read nor wrote.
        damage_ = StreamDamage{
            StreamDamage::kCorrupt, consumed_,
            fmt::format("gzip data corrupt near byte {}: {}", consumed_, IsalErrorText(rc))};
        done_ = true;
        break;
      }
      if (st.block_state == ISAL_BLOCK_FINISH) {  // member ended, trailer checked
        ++members_;
        in_member_ = false;
        uint8_t* next_in = st.next_in;
        uint32_t left = st.avail_in;
        isal_inflate_reset(&st);
        st.crc_flag = ISAL_GZIP;
        st.next_in = next_in;
        st.avail_in = left;
      }
    }
    return out;
  }
  const std::optional<StreamDamage>& damage() const override { return damage_; }
  bool compressed() const override { return true; }

 private:
  // Reads more compressed bytes; false on a read error (recorded as damage).
  bool FillInput() {
    ssize_t r = ReadFully(fd_->get(), reinterpret_cast<char*>(in_.get()), kInChunk);
    if (r < 0) {
      damage_ = StreamDamage{StreamDamage::kCorrupt, consumed_, std::strerror(errno)};
      done_ = true;
      return false;
    }
    state_->next_in = in_.get();
    state_->avail_in = static_cast<uint32_t>(r);
    return true;
  }

  std::unique_ptr<Fd> fd_;
  std::unique_ptr<uint8_t[]> in_;
  std::unique_ptr<inflate_state> state_;  // ~ 40 KiB of Huffman tables
  bool done_ = false;
  bool in_member_ = false;  // a member's header has been started
  uint64_t members_ = 0;    // members decoded to their trailer
  uint64_t consumed_ = 0;   // compressed bytes handed to the decoder
  std::optional<StreamDamage> damage_;
};

// Runs another source on a worker thread, kBlocks blocks ahead of the
// reader: while the caller parses one block, the worker decodes the next
// (a bounded pipeline: memory is kBlocks * kBlockBytes whatever the file).
// The blocks are allocated once and reused, so their pages fault once.
class DecodeAheadSource final : public ByteSource {
 public:
  static constexpr size_t kBlockBytes = 512 * 1024;
  static constexpr size_t kBlocks = 3;

  // Starts the worker; returns `inner` itself when no thread can be started.
  static std::unique_ptr<ByteSource> Wrap(std::unique_ptr<ByteSource> inner) {
    auto ahead = std::unique_ptr<DecodeAheadSource>(new DecodeAheadSource(std::move(inner)));
    try {
      ahead->worker_ = std::thread([p = ahead.get()] { p->Work(); });
    } catch (const std::system_error&) {
      return std::move(ahead->inner_);
    }
    return ahead;
  }

  ~DecodeAheadSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  size_t Read(char* buf, size_t n) override {
    size_t out = 0;
    while (out < n) {
      if (pos_ == current_len_) {  // the current block is used up: take the next
        std::unique_lock<std::mutex> lock(mu_);
        if (holding_) {
          holding_ = false;
          --filled_;
          head_ = (head_ + 1) % kBlocks;
          cv_.notify_all();
        }
        cv_.wait(lock, [&] { return filled_ > 0 || worker_done_; });
        if (filled_ == 0) {  // the worker has stopped and every block was read
          if (!damage_) damage_ = inner_->damage();
          break;
        }
        holding_ = true;
        current_len_ = len_[head_];
        pos_ = 0;
        // The last block: what ended the stream is now in the reader's hands.
        if (worker_done_ && filled_ == 1 && !damage_) damage_ = inner_->damage();
      }
      size_t take = std::min(n - out, current_len_ - pos_);
      std::memcpy(buf + out, blocks_[head_].get() + pos_, take);
      pos_ += take;
      out += take;
    }
    return out;
  }
  // Damage is reported once the reader has been handed the last block.
  const std::optional<StreamDamage>& damage() const override { return damage_; }
  bool compressed() const override { return inner_->compressed(); }

 private:
  explicit DecodeAheadSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {
    for (auto& block : blocks_) block.reset(new char[kBlockBytes]);
  }

  void Work() {
    size_t tail = 0;  // the block the worker fills next
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return filled_ < kBlocks || stop_; });
        if (stop_) break;
      }
      // The block at `tail` is free: only this thread touches it until filled.
      size_t len = 0;
      while (len < kBlockBytes) {
        size_t got = inner_->Read(blocks_[tail].get() + len, kBlockBytes - len);
        if (got == 0) break;
        len += got;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (len > 0) {
          len_[tail] = len;
          ++filled_;
          tail = (tail + 1) % kBlocks;
        }
      }
      cv_.notify_all();
      if (len < kBlockBytes) break;  // end of data (or damage)
    }
    std::lock_guard<std::mutex> lock(mu_);
    worker_done_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<ByteSource> inner_;
  std::thread worker_;
  std::unique_ptr<char[]> blocks_[kBlocks];
  size_t len_[kBlocks] = {};
  std::mutex mu_;
  std::condition_variable cv_;
  size_t filled_ = 0;         // blocks decoded and not yet released by the reader
  bool worker_done_ = false;  // no block will be added
  bool stop_ = false;         // the reader is gone
  // Reader side, touched only by the reading thread.
  size_t head_ = 0;       // the block being read (or to read next)
  bool holding_ = false;  // the reader is inside block head_
  size_t current_len_ = 0;
  size_t pos_ = 0;
  std::optional<StreamDamage> damage_;
};

}  // namespace

const char* NotRegularFileKind(mode_t mode) {
  if (S_ISREG(mode)) return nullptr;
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

namespace {

// Opens a regular file for reading. O_NONBLOCK keeps open(2) of a FIFO
// from waiting for a writer; anything but a regular file is refused, and
// the flag is cleared again for the file's reads.
StatusOr<int> OpenRegularFile(const std::string& path) {
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) {
    if (errno == ELOOP) return Status::Error(fmt::format("{}: cannot open: symlink loop", path));
    return Status::Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  Fd guard(raw);
  struct stat st;
  if (::fstat(raw, &st) != 0) {
    return Status::Error(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  }
  if (const char* kind = NotRegularFileKind(st.st_mode)) {
    return Status::Error(
        fmt::format("{}: {}, not a regular file: not read (reading it could block)", path, kind));
  }
  int flags = ::fcntl(raw, F_GETFL);
  if (flags < 0 || ::fcntl(raw, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return Status::Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  return guard.release();
}

}  // namespace

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path, Decode decode) {
  auto opened = OpenRegularFile(path);
  if (!opened.ok()) return opened.status();
  auto fd = std::make_unique<Fd>(*opened);
  char magic[2];
  ssize_t r = ReadFully(fd->get(), magic, 2);
  if (r < 0) return Status::Error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::string prefix(magic, static_cast<size_t>(r));
  if (r == 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
      static_cast<unsigned char>(magic[1]) == 0x8b) {
    auto gzip = std::unique_ptr<ByteSource>(new GzipSource(std::move(fd), std::move(prefix)));
    if (decode == Decode::kAhead) return DecodeAheadSource::Wrap(std::move(gzip));
    return gzip;
  }
  return std::unique_ptr<ByteSource>(new PlainSource(std::move(fd), std::move(prefix)));
}

StatusOr<std::string> ReadHead(const std::string& path, size_t max_bytes,
                               std::optional<StreamDamage>* damage) {
  auto source = OpenByteSource(path);
  if (!source.ok()) return source.status();
  std::string head(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    size_t r = (*source)->Read(head.data() + got, max_bytes - got);
    if (r == 0) break;
    got += r;
  }
  head.resize(got);
  if (damage != nullptr) *damage = (*source)->damage();
  return head;
}

bool LooksBinary(std::string_view head) {
  // NUL bytes on a few lines of text (a block a crash left unwritten) keep
  // it text: the readers skip those lines. Binary data has them on most.
  size_t lines = 0, nul_lines = 0, odd = 0, text_bytes = 0;
  for (size_t begin = 0; begin < head.size();) {
    size_t end = std::min(head.find('\n', begin), head.size());
    std::string_view line = head.substr(begin, end - begin);
    begin = end + 1;
    ++lines;
    if (line.find('\0') != std::string_view::npos) {
      ++nul_lines;
      continue;
    }
    text_bytes += line.size() + 1;
    for (char c : line) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x20 && c != '\r' && c != '\t' && c != '\f' && c != '\x1b') ++odd;
    }
  }
  if (nul_lines > 0 && (nul_lines * 4 > lines || lines - nul_lines < 2)) return true;
  return odd * 20 > text_bytes;
}

LineReader::LineReader(ByteSource& source) : source_(source), buf_(new char[kBufBytes]) {}

bool LineReader::Refill() {
  if (eof_) return false;
  // Move the unfinished line to the front, then read behind it.
  size_t keep = end_ - begin_;
  if (begin_ > 0 && keep > 0) std::memmove(buf_.get(), buf_.get() + begin_, keep);
  begin_ = 0;
  end_ = keep;
  size_t room = kBufBytes - end_;
  size_t got = source_.Read(buf_.get() + end_, room);
  if (got == 0) {
    eof_ = true;
    return false;
  }
  bytes_ += got;
  end_ += got;
  return true;
}

bool LineReader::Next(std::string_view& line) {
  while (true) {
    const char* start = buf_.get() + begin_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (nl != nullptr) {
      size_t len = static_cast<size_t>(nl - start);
      begin_ += len + 1;
      ++line_number_;
      if (skipping_) {  // the tail of an over-long line
        skipping_ = false;
        continue;
      }
      if (len >= kMaxLine) {  // over-long, but it arrived whole in one read
        ++long_lines_;
        if (long_line_numbers_.size() < 5) long_line_numbers_.push_back(line_number_);
        continue;
      }
      if (len > 0 && start[len - 1] == '\r') --len;
      line = std::string_view(start, len);
      return true;
    }
    if (end_ - begin_ >= kMaxLine) {  // no newline within the limit
      if (!skipping_) {
        ++long_lines_;
        if (long_line_numbers_.size() < 5) long_line_numbers_.push_back(line_number_ + 1);
        skipping_ = true;
      }
      begin_ = end_;
    }
    if (!Refill()) {
      if (end_ > begin_ && source_.damage() && source_.damage()->output_cut) {
        // The stream broke inside this line: it was cut, not finished
        // ("time 812.0ms" would read as "time 812"). Drop it; the damage
        // itself is what gets reported.
        begin_ = end_;
        skipping_ = false;
        return false;
      }
      if (end_ > begin_) {  // last line without a newline
        size_t len = end_ - begin_;
        start = buf_.get() + begin_;
        begin_ = end_;
        ++line_number_;
        if (skipping_) {
          skipping_ = false;
          return false;
        }
        if (len > 0 && start[len - 1] == '\r') --len;
        line = std::string_view(start, len);
        return true;
      }
      return false;
    }
  }
}

}  // namespace laggard
