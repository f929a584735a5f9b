// Values that ibstat, ibstatus and ibv_devinfo print differently for the
// same port attribute, brought to one spelling for the model (IbPort):
//
//   port state      ibstat "Active" / "Initializing", ibstatus "4: ACTIVE",
//                   ibv_devinfo "PORT_ACTIVE (4)"            -> "Active", "Init"
//   physical state  ibstat "LinkUp", ibstatus "5: LinkUp",
//                   ibv_devinfo "LINK_UP (5)"                -> "LinkUp"
//   GUID            ibstat "0x946dae0300cde72c", ibv_devinfo
//                   "0015:5dff:fe34:0033"                    -> "0x00155dfffe340033"
//   link layer      "InfiniBand", "Ethernet" ("IB" from old ibstatus)
//
// Each parse says whether the text was a value, a spelling of "unknown"
// ("???", "unknown", "invalid state") or neither, which readers count as a
// bad record.

#ifndef LAGGARD_INGEST_NETWORK_IB_TEXT_H_
#define LAGGARD_INGEST_NETWORK_IB_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace laggard {

struct IbValue {
  std::optional<std::string> value;  // set when the text named a value
  bool ok = true;                    // false: the text is not a value of this field
};

IbValue ParseIbPortState(std::string_view text);
IbValue ParseIbPhysState(std::string_view text);
IbValue ParseIbLinkLayer(std::string_view text);
// "0x946dae0300cde72c" or "0015:5dff:fe34:0033" -> "0x..." (16 lowercase hex digits).
std::optional<std::string> NormalizeGuid(std::string_view text);
// The port GUID inside an InfiniBand GID (its low 64 bits):
// "fe80:0000:0000:0000:0015:5dff:fd34:11eb" -> "0x00155dfffd3411eb".
std::optional<std::string> GuidOfGid(std::string_view gid);

// A LID as printed: decimal ("75") or hex ("0x33bf").
std::optional<int64_t> ParseLid(std::string_view text);

// ibstatus / sysfs rate: "200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X)", "10 Gb/sec (4X)".
struct IbRate {
  double rate_gbps = 0;
  std::optional<int32_t> width;
};
std::optional<IbRate> ParseIbSysfsRate(std::string_view text);

// Lanes of "4X", "1X", "12X" (a trailing " (2)" code is ignored).
std::optional<int32_t> ParseIbWidth(std::string_view text);

// The leading number of "25.0 Gbps (32)", "400", "40 (FDR10)", "4096 (5)".
std::optional<double> LeadingNumber(std::string_view text);

}  // namespace laggard

#endif  // LAGGARD_INGEST_NETWORK_IB_TEXT_H_
