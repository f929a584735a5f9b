#include "mpi/share_wire.h"

#include <cstring>

#include <fmt/format.h>

#include "model/wire.h"

namespace laggard {
namespace {

constexpr char kMagic[4] = {'L', 'G', 'S', 'H'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

// Reads from the front of a share, failing (not crashing) past its end.
class ShareReader {
 public:
  explicit ShareReader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T& v) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(&v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool GetBytes(size_t n, std::string& out) {
    if (in_.size() < n) return false;
    out.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  std::string_view& rest() { return in_; }
  size_t offset(size_t total) const { return total - in_.size(); }

 private:
  std::string_view in_;
};

}  // namespace

std::string EncodeShare(std::span<const uint32_t> files, std::vector<IngestFileResult>& results) {
  std::string out;
  out.append(kMagic, sizeof kMagic);
  Put<uint32_t>(out, kVersion);
  Put<uint64_t>(out, files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    IngestFileResult& r = results[i];
    Put<uint32_t>(out, files[i]);
    Put<uint32_t>(out, static_cast<uint32_t>(r.format.size()));
    out += r.format;
    Put<uint64_t>(out, r.bytes);
    Put<uint64_t>(out, r.records);
    EncodeBuilder(r.builder, out);
    r = IngestFileResult();
  }
  return out;
}

Status DecodeShare(std::string_view bytes, std::vector<std::optional<IngestFileResult>>& slots) {
  ShareReader in(bytes);
  auto bad = [&](std::string_view what) {
    return Status::Error(fmt::format("share message: {} at byte {} of {}", what,
                                     in.offset(bytes.size()), bytes.size()));
  };
  std::string magic;
  uint32_t version = 0;
  uint64_t count = 0;
  if (!in.GetBytes(sizeof kMagic, magic) || magic != std::string_view(kMagic, sizeof kMagic))
    return bad("not a laggard share (no LGSH magic)");
  if (!in.Get(version) || version != kVersion)
    return bad(fmt::format("version {} (this laggard reads {})", version, kVersion));
  if (!in.Get(count)) return bad("cut off in the header");
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t index = 0, format_len = 0;
    IngestFileResult r;
    if (!in.Get(index) || !in.Get(format_len) || !in.GetBytes(format_len, r.format) ||
        !in.Get(r.bytes) || !in.Get(r.records)) {
      return bad(fmt::format("file {} of {} cut off", i + 1, count));
    }
    if (index >= slots.size())
      return bad(fmt::format("file index {} past the {} files listed", index, slots.size()));
    if (slots[index]) return bad(fmt::format("file index {} given by two shares", index));
    auto builder = DecodeBuilder(in.rest());
    if (!builder.ok())
      return bad(fmt::format("file index {}: {}", index, builder.status().message()));
    r.builder = std::move(builder.value());
    slots[index] = std::move(r);
  }
  if (!in.rest().empty()) return bad("bytes after the last file");
  return Status::Ok();
}

}  // namespace laggard
