#include "agent/rolling_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace laggard::agent {

namespace fs = std::filesystem;

std::string JsonString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) out += fmt::format("\\u{:04x}", u);
        else out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

RollingLog::RollingLog(std::string dir, std::string stem, uint64_t max_bytes, int files,
                       Header header)
    : dir_(std::move(dir)),
      stem_(std::move(stem)),
      max_bytes_(max_bytes),
      files_(files < 1 ? 1 : files),
      header_(std::move(header)) {}

RollingLog::~RollingLog() {
  if (file_ != nullptr) std::fclose(file_);
}

std::string RollingLog::path(int generation) const {
  return generation == 0 ? fmt::format("{}/{}.jsonl", dir_, stem_)
                         : fmt::format("{}/{}.{}.jsonl", dir_, stem_, generation);
}

Status RollingLog::Open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return Status::Error(fmt::format("cannot create log directory {}: {}", dir_, ec.message()));
  if (!OpenCurrent()) {
    return Status::Error(fmt::format("cannot open {}: {}", path(), std::strerror(errno)));
  }
  return Status::Ok();
}

bool RollingLog::OpenCurrent() {
  std::string p = path();
  file_ = std::fopen(p.c_str(), "ae");
  if (file_ == nullptr) return false;
  std::error_code ec;
  uint64_t existing = fs::file_size(p, ec);
  size_ = ec ? 0 : existing;
  if (size_ == 0 && header_) {
    for (const std::string& line : header_()) Write(line);
  }
  return true;
}

void RollingLog::Rotate() {
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  std::error_code ec;
  if (files_ == 1) {
    fs::remove(path(), ec);
  } else {
    fs::remove(path(files_ - 1), ec);
    for (int g = files_ - 2; g >= 0; --g) {
      if (fs::exists(path(g), ec)) fs::rename(path(g), path(g + 1), ec);
    }
  }
  ++rotations_;
  if (!OpenCurrent()) ++write_errors_;
}

void RollingLog::Write(std::string_view line) {
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fputc('\n', file_) == EOF) {
    ++write_errors_;
    return;
  }
  size_ += line.size() + 1;
  bytes_written_ += line.size() + 1;
}

void RollingLog::Append(std::string_view line) {
  if (file_ == nullptr && !OpenCurrent()) {
    ++write_errors_;
    return;
  }
  if (size_ > 0 && size_ + line.size() + 1 > max_bytes_) {
    Rotate();
    if (file_ == nullptr) return;
  }
  Write(line);
}

void RollingLog::Flush() {
  if (file_ != nullptr && std::fflush(file_) != 0) ++write_errors_;
}

}  // namespace laggard::agent
