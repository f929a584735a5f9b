#include "history/scan_codec.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace laggard::history {
namespace {

enum ScanFlag : uint8_t {
  kCulprit = 1 << 0,
  kHost = 1 << 1,
  kSameHost = 1 << 2,  // the previous part's host
  kGpu = 1 << 3,
  kRank = 1 << 4,
  kCauseClass = 1 << 5,
  kCause = 1 << 6,
  kConfidence = 1 << 7,
};

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void PutText(std::string& out, std::string_view s) {
  PutVarint(out, s.size());
  out += s;
}

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool Varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= b_.size()) return false;
      auto c = static_cast<uint8_t>(b_[at_++]);
      // The tenth byte holds the top bit only.
      if (shift == 63 && c > 1) return false;
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  }
  bool AtEnd() const { return at_ == b_.size(); }
  bool Signed(int64_t& v) {
    uint64_t u = 0;
    if (!Varint(u)) return false;
    v = UnZigZag(u);
    return true;
  }
  bool Int32(std::optional<int32_t>& v) {
    int64_t x = 0;
    if (!Signed(x) || x < INT32_MIN || x > INT32_MAX) return false;
    v = static_cast<int32_t>(x);
    return true;
  }
  bool Byte(uint8_t& v) {
    if (at_ >= b_.size()) return false;
    v = static_cast<uint8_t>(b_[at_++]);
    return true;
  }
  bool Text(std::optional<std::string_view>& s) {
    uint64_t n = 0;
    if (!Varint(n) || n > b_.size() - at_) return false;
    s = b_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool Double(std::optional<double>& d) {
    if (b_.size() - at_ < 8) return false;
    uint64_t bits = 0;
    for (int k = 7; k >= 0; --k) bits = (bits << 8) | static_cast<uint8_t>(b_[at_ + k]);
    at_ += 8;
    d = std::bit_cast<double>(bits);
    return true;
  }

 private:
  std::string_view b_;
  size_t at_ = 0;
};

}  // namespace

std::string EncodeScanParts(const std::vector<ScanPart>& parts) {
  std::string out;
  PutVarint(out, parts.size());
  int64_t last_part = 0;
  std::optional<int64_t> last_host;
  for (const ScanPart& p : parts) {
    bool confidence = p.culprit && p.confidence && !std::isnan(*p.confidence);
    uint8_t flags = (p.culprit ? kCulprit : 0) | (p.gpu ? kGpu : 0) | (p.rank ? kRank : 0) |
                    (p.culprit && p.cause_class ? kCauseClass : 0) |
                    (p.culprit && p.cause ? kCause : 0) | (confidence ? kConfidence : 0);
    if (p.host) flags |= p.host == last_host ? kSameHost : kHost;
    out.push_back(static_cast<char>(flags));
    // Wrapping differences: any two ids, however far apart.
    PutVarint(out, ZigZag(static_cast<int64_t>(static_cast<uint64_t>(p.part) -
                                               static_cast<uint64_t>(last_part))));
    last_part = p.part;
    if (flags & kHost) PutVarint(out, ZigZag(*p.host));
    if (p.host) last_host = p.host;
    if (p.gpu) PutVarint(out, ZigZag(*p.gpu));
    if (p.rank) PutVarint(out, ZigZag(*p.rank));
    if (flags & kCauseClass) PutText(out, *p.cause_class);
    if (flags & kCause) PutText(out, *p.cause);
    if (confidence) {
      auto bits = std::bit_cast<uint64_t>(*p.confidence);
      for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
    }
  }
  return out;
}

bool DecodeScanParts(std::string_view blob, std::vector<ScanPart>& out) {
  out.clear();
  Reader in(blob);
  uint64_t n = 0;
  // Each part takes at least two bytes.
  if (!in.Varint(n) || n > blob.size()) return false;
  int64_t part = 0;
  std::optional<int64_t> host;
  for (uint64_t i = 0; i < n; ++i) {
    ScanPart& p = out.emplace_back();
    uint8_t flags = 0;
    int64_t delta = 0;
    if (!in.Byte(flags) || !in.Signed(delta)) return false;
    part = static_cast<int64_t>(static_cast<uint64_t>(part) + static_cast<uint64_t>(delta));
    p.part = part;
    p.culprit = (flags & kCulprit) != 0;
    if (flags & kHost) {
      int64_t h = 0;
      if (!in.Signed(h)) return false;
      host = h;
    }
    if (flags & (kHost | kSameHost)) {
      if (!host) return false;
      p.host = host;
    }
    if ((flags & kGpu) && !in.Int32(p.gpu)) return false;
    if ((flags & kRank) && !in.Int32(p.rank)) return false;
    if ((flags & kCauseClass) && !in.Text(p.cause_class)) return false;
    if ((flags & kCause) && !in.Text(p.cause)) return false;
    if ((flags & kConfidence) && !in.Double(p.confidence)) return false;
  }
  // Bytes left over: the count was damaged.
  return in.AtEnd();
}

}  // namespace laggard::history
