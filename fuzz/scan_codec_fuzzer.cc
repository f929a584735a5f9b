// Fuzzes the history store's packed job rows (history/scan_codec.h): a
// damaged store hands DecodeScanParts any bytes.
//
// Invariants:
//   - decoding never crashes, and never yields more parts than bytes;
//   - what decodes, once put as the store writes it (a culprit's cause,
//     cause class and confidence, no NaN confidence), packs and unpacks to
//     itself.

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "history/scan_codec.h"

LAGGARD_FUZZ_TARGET(scan_codec) {
  using namespace laggard::history;
  std::string_view blob(reinterpret_cast<const char*>(data), size);
  std::vector<ScanPart> parts;
  bool ok = DecodeScanParts(blob, parts);
  FUZZ_CHECK(parts.size() <= size, "{} parts from {} bytes", parts.size(), size);
  if (!ok) return 0;
  for (ScanPart& p : parts) {
    if (!p.culprit) {
      p.cause_class.reset();
      p.cause.reset();
      p.confidence.reset();
    }
    if (p.confidence && std::isnan(*p.confidence)) p.confidence.reset();
  }
  std::string packed = EncodeScanParts(parts);  // views into `blob` still live
  std::vector<ScanPart> back;
  FUZZ_CHECK(DecodeScanParts(packed, back), "a packed row does not unpack");
  FUZZ_CHECK(back.size() == parts.size(), "{} parts became {}", parts.size(), back.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const ScanPart& a = parts[i];
    const ScanPart& b = back[i];
    bool same_confidence =
        a.confidence.has_value() == b.confidence.has_value() &&
        (!a.confidence || std::memcmp(&*a.confidence, &*b.confidence, sizeof(double)) == 0);
    FUZZ_CHECK(a.part == b.part && a.host == b.host && a.gpu == b.gpu && a.rank == b.rank &&
                   a.culprit == b.culprit && a.cause_class == b.cause_class && a.cause == b.cause &&
                   same_confidence,
               "part {} changed in a round trip", i);
  }
  return 0;
}
