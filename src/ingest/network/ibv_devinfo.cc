// `ibv_devinfo` (rdma-core): one block per device ("hca_id:"), one IbPort
// per "port:" in it, InfiniBand and Ethernet (RoCE) ports alike.
//
//   hca_id:	mlx5_ib0
//   	transport:			InfiniBand (0)
//   	fw_ver:				28.40.1702
//   	node_guid:			0015:5dff:fe34:0033
//   	vendor_id:			0x02c9
//   	vendor_part_id:			4126
//   	board_id:			MSF0000000047
//   	phys_port_cnt:			1
//   		port:	1
//   			state:			PORT_ACTIVE (4)
//   			max_mtu:		4096 (5)
//   			active_mtu:		4096 (5)
//   			sm_lid:			1
//   			port_lid:		1227
//   			port_lmc:		0x00
//   			link_layer:		InfiniBand
//
// With -v, device capabilities (ignored) come before the ports, and each
// port adds "active_width: 4X (2)", "active_speed: 25.0 Gbps (10)",
// "phys_state: LINK_UP (5)" and its GIDs: the rate is width x lane speed
// (4 x 25.0 = 100 Gb/s), the port GUID the low half of GID[0] on an
// InfiniBand port. Without -v neither rate nor width is printed. A Mellanox
// device (vendor_id 0x02c9) gets ca_type "MT<vendor_part_id>", the name
// ibstat prints. Many hosts in one file: host_lines.h.
//
// Counted as network.bad_record: a value that cannot be read (the port is
// kept without it), a port without any field, a line that is neither
// "key: value" nor a capability name, text outside any device block.

#include <cmath>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/network/ib_text.h"
#include "ingest/network/net_streams.h"
#include "ingest/network/network_readers.h"

namespace laggard {
namespace {

// "hca_id:\tmlx5_0".
bool IsHeader(std::string_view line) {
  std::string_view key, value;
  return SplitKeyValue(line, key, value) && key == "hca_id" && !value.empty();
}

// Capability names and notes of -v ("RESIZE_MAX_WR", "core clock not
// supported", "C-VLAN stripping offload"): printable words, no ':'.
bool IsCapabilityLine(std::string_view t) {
  for (char c : t) {
    bool ok = IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              c == ' ' || c == '\t' || c == '-' || c == '.' || c == '(' || c == ')' || c == '/';
    if (!ok) return false;
  }
  return true;
}

bool IsUnknownValue(std::string_view v) { return StartsWith(ToLower(Trim(v)), "invalid"); }

struct Stream {
  std::string stream;
  bool in_device = false;
  std::string ca;
  std::optional<std::string> firmware, node_guid, vendor_id, vendor_part_id;
  bool in_port = false;
  bool has_field = false;
  uint64_t line = 0;
  std::optional<double> lane_gbps;
  std::optional<std::string> gid0;
  IbPort port;
};

// The reading of one file.
class IbvDevinfoFile : public NetFileReader<IbvDevinfoFile, Stream> {
 public:
  explicit IbvDevinfoFile(ReaderContext& ctx)
      : NetFileReader(IsHeader, BlankLines::kToStream, ctx) {}

  void Line(Stream& s, const TextLine& l) {
    std::string_view t = l.trimmed;
    uint64_t n = l.number;
    if (t.empty()) {
      Close(s);  // every port ends with a blank line
      return;
    }
    std::string_view key, value;
    bool kv = SplitKeyValue(t, key, value);
    if (kv && key == "hca_id") {
      Close(s);
      s = Stream{s.stream};
      if (value.empty()) {
        Bad(n, "device block without a device name");
        return;
      }
      s.in_device = true;
      s.ca = std::string(value);
      return;
    }
    if (!s.in_device) {
      // `ibv_devinfo -l` ("2 HCAs found:", then names) and the tool's
      // messages carry nothing to take.
      if (EndsWith(t, "found:") || EndsWith(t, "found") || IsCapabilityLine(t)) return;
      Bad(n, fmt::format("line outside any device block: \"{}\"", Printable(t, 80)));
      return;
    }
    if (!kv) {
      if (!IsCapabilityLine(t)) {
        Bad(n, fmt::format("not a \"key: value\" line: \"{}\"", Printable(t, 80)));
      }
      return;
    }
    if (key == "port") {
      Close(s);
      StartPort(s, value, n);
    } else if (!s.in_port) {
      DeviceField(s, key, value, n);
    } else {
      s.has_field = true;
      PortField(s, key, value, n);
    }
  }

  void Close(Stream& s) {
    if (!s.in_port) return;
    s.in_port = false;
    if (!s.has_field) {
      Bad(s.line, fmt::format("port {} of '{}' has no fields (output cut?)", s.port.port, s.ca));
      return;
    }
    IbPort& p = s.port;
    if (p.width && s.lane_gbps) p.rate_gbps = *p.width * *s.lane_gbps;
    if (s.gid0 && p.link_layer.value_or("InfiniBand") == "InfiniBand") {
      p.port_guid = GuidOfGid(*s.gid0);
    }
    Take(s.stream, s.line, p, ctx_.out->network().ib_ports);
  }

 private:
  void BadValue(const Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    Bad(n, fmt::format("'{}' of '{}' is not readable: \"{}\"", key, s.ca, Printable(value, 60)));
  }

  // "port: N" opens a port of the device.
  void StartPort(Stream& s, std::string_view value, uint64_t n) {
    auto number = ParseInt<int32_t>(value);
    if (!number || *number < 0 || *number > 255) {
      BadValue(s, "port", value, n);
      return;
    }
    s.in_port = true;
    s.has_field = false;
    s.line = n;
    s.lane_gbps.reset();
    s.gid0.reset();
    s.port = IbPort();
    s.port.ca = s.ca;
    s.port.port = *number;
    s.port.firmware = s.firmware;
    s.port.node_guid = s.node_guid;
    if (s.vendor_id && s.vendor_part_id && *s.vendor_id == "0x02c9") {
      s.port.ca_type = "MT" + *s.vendor_part_id;
    }
    s.port.src = ctx_.Ref(n);
  }

  // A field of the device, before its first port.
  void DeviceField(Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    if (key == "fw_ver") {
      if (!value.empty()) s.firmware = std::string(value);
    } else if (key == "node_guid") {
      s.node_guid = NormalizeGuid(value);
      if (!s.node_guid) BadValue(s, key, value, n);
    } else if (key == "vendor_id") {
      s.vendor_id = ToLower(value);
    } else if (key == "vendor_part_id") {
      if (ParseInt<int64_t>(value)) s.vendor_part_id = std::string(value);
      else BadValue(s, key, value, n);
    }
    // transport, board_id, phys_port_cnt and -v capabilities: not kept.
  }

  void PortField(Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    IbPort& p = s.port;
    auto bad_value = [&] { BadValue(s, key, value, n); };
    if (key == "state") {
      IbValue v = ParseIbPortState(value);
      if (!v.ok) bad_value();
      p.state = v.value;
    } else if (key == "phys_state") {
      IbValue v = ParseIbPhysState(value);
      if (!v.ok) bad_value();
      p.phys_state = v.value;
    } else if (key == "max_mtu" || key == "active_mtu") {
      std::optional<int32_t> mtu;
      if (auto v = LeadingNumber(value); v && *v >= 1 && *v <= 65536 && *v == std::floor(*v)) {
        mtu = static_cast<int32_t>(*v);
      } else if (!IsUnknownValue(value)) {
        bad_value();
      }
      (key == "max_mtu" ? p.max_mtu_bytes : p.active_mtu_bytes) = mtu;
    } else if (key == "sm_lid" || key == "port_lid") {
      std::optional<int64_t> lid = ParseLid(value);
      if (!lid) bad_value();
      (key == "sm_lid" ? p.sm_lid : p.base_lid) = lid;
    } else if (key == "link_layer") {
      IbValue v = ParseIbLinkLayer(value);
      if (!v.ok) bad_value();
      p.link_layer = v.value;
    } else if (key == "active_width") {
      p.width = ParseIbWidth(value);
      if (!p.width && !IsUnknownValue(value)) bad_value();
    } else if (key == "active_speed") {
      auto v = LeadingNumber(value);
      if (v && FindIgnoreCase(value, "Gbps") != std::string_view::npos) {
        s.lane_gbps = v;
      } else if (!IsUnknownValue(value)) {
        bad_value();
      }
    } else if (StartsWith(key, "GID[")) {
      auto index = ParseInt<int32_t>(key.substr(4, key.size() - 5));
      if (index && *index == 0 && EndsWith(key, "]")) {
        std::string_view gid = value.substr(0, value.find(','));  // ", RoCE v2"
        s.gid0 = std::string(Trim(gid));
      }
    }
    // port_lmc, max_msg_sz, port_cap_flags, ...: not kept.
  }
};

int SniffIbvDevinfo(std::string_view head) {
  bool header = false;
  auto fields = [&](std::string_view text) -> std::optional<int> {
    std::string_view key, value;
    if (!SplitKeyValue(text, key, value)) return std::nullopt;
    if (key == "hca_id" && !value.empty()) {
      header = true;
    } else if (header && (key == "transport" || key == "fw_ver" || key == "node_guid")) {
      return kSniffSure;
    }
    return std::nullopt;
  };
  std::optional<int> score = JudgeHeadLines(head, {.split_hosts = IsHeader}, 200, fields);
  return score.value_or(header ? kSniffWeak : kSniffNo);  // a header alone: weak
}

}  // namespace

std::unique_ptr<TextReader> MakeIbvDevinfoReader() {
  return MakeFileReader<IbvDevinfoFile>("ibv_devinfo", SniffIbvDevinfo);
}

}  // namespace laggard
