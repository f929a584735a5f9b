#include "ingest/input_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

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

class GzipSource final : public ByteSource {
 public:
  static constexpr size_t kInChunk = 256 * 1024;

  GzipSource(std::unique_ptr<Fd> fd, std::string prefix) : fd_(std::move(fd)), in_(kInChunk) {
    std::memcpy(in_.data(), prefix.data(), prefix.size());
    in_len_ = prefix.size();
    std::memset(&zs_, 0, sizeof zs_);
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(in_len_);
    ok_ = inflateInit2(&zs_, 15 + 16) == Z_OK;  // gzip wrapper only
    if (!ok_) damage_ = StreamDamage{StreamDamage::kCorrupt, 0, "zlib init failed"};
  }
  ~GzipSource() override {
    if (ok_) inflateEnd(&zs_);
  }

  size_t Read(char* buf, size_t n) override {
    if (done_ || !ok_) return 0;
    zs_.next_out = reinterpret_cast<Bytef*>(buf);
    zs_.avail_out = static_cast<uInt>(n);
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0) {
        if (!FillInput()) break;
        if (zs_.avail_in == 0) {  // end of file
          if (member_started_) {
            damage_ = StreamDamage{StreamDamage::kTruncated, consumed_,
                                   fmt::format("gzip stream ends early at byte {}", consumed_)};
          }
          done_ = true;
          break;
        }
      }
      uInt before = zs_.avail_in;
      int rc = inflate(&zs_, Z_NO_FLUSH);
      consumed_ += before - zs_.avail_in;
      member_started_ = true;
      if (rc == Z_STREAM_END) {
        member_started_ = false;
        // Another member may follow (concatenated gzip files).
        if (zs_.avail_in == 0 && !FillInput()) break;
        if (zs_.avail_in == 0) {
          done_ = true;
          break;
        }
        if (zs_.next_in[0] != 0x1f) {  // trailing garbage after the last member
          // Every member before was complete: nothing was cut.
          damage_ = StreamDamage{StreamDamage::kCorrupt, consumed_,
                                 fmt::format("non-gzip bytes after the gzip data at byte {}",
                                             consumed_),
                                 /*output_cut=*/false};
          done_ = true;
          break;
        }
        inflateReset(&zs_);
      } else if (rc == Z_BUF_ERROR) {
        continue;  // needs more input
      } else if (rc != Z_OK) {
        damage_ = StreamDamage{StreamDamage::kCorrupt, consumed_,
                               fmt::format("gzip data corrupt near byte {}: {}", consumed_,
                                           zs_.msg ? zs_.msg : "inflate error")};
        done_ = true;
        break;
      }
    }
    return n - zs_.avail_out;
  }
  const std::optional<StreamDamage>& damage() const override { return damage_; }
  bool compressed() const override { return true; }

 private:
  // Reads more compressed bytes; false on a read error (recorded as damage).
  bool FillInput() {
    ssize_t r = ReadFully(fd_->get(), in_.data(), in_.size());
    if (r < 0) {
      damage_ = StreamDamage{StreamDamage::kCorrupt, consumed_, std::strerror(errno)};
      done_ = true;
      return false;
    }
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(r);
    return true;
  }

  std::unique_ptr<Fd> fd_;
  std::vector<char> in_;
  size_t in_len_ = 0;
  z_stream zs_;
  bool ok_ = false;
  bool done_ = false;
  bool member_started_ = false;
  uint64_t consumed_ = 0;
  std::optional<StreamDamage> damage_;
};

}  // namespace

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path) {
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return Status::Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  auto fd = std::make_unique<Fd>(raw);
  char magic[2];
  ssize_t r = ReadFully(fd->get(), magic, 2);
  if (r < 0) return Status::Error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::string prefix(magic, static_cast<size_t>(r));
  if (r == 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
      static_cast<unsigned char>(magic[1]) == 0x8b) {
    return std::unique_ptr<ByteSource>(new GzipSource(std::move(fd), std::move(prefix)));
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
  size_t odd = 0;
  for (char c : head) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u == 0) return true;
    if (u < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\x1b') ++odd;
  }
  return odd * 20 > head.size();
}

LineReader::LineReader(ByteSource& source) : source_(source), buf_(kChunk + kMaxLine) {}

bool LineReader::Refill() {
  if (eof_) return false;
  // Move the unfinished line to the front, then read behind it.
  size_t keep = end_ - begin_;
  if (begin_ > 0 && keep > 0) std::memmove(buf_.data(), buf_.data() + begin_, keep);
  begin_ = 0;
  end_ = keep;
  size_t room = buf_.size() - end_;
  size_t got = source_.Read(buf_.data() + end_, room);
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
    const char* start = buf_.data() + begin_;
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
        start = buf_.data() + begin_;
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
