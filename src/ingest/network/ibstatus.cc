// `ibstatus` (infiniband-diags script over /sys/class/infiniband): one block
// per port, one IbPort per block.
//
//   Infiniband device 'mlx5_0' port 1 status:
//   	default gid:	 fe80:0000:0000:0000:0015:5dff:fd34:11eb
//   	base lid:	 0x33bf
//   	sm lid:		 0x1
//   	state:		 4: ACTIVE
//   	phys state:	 5: LinkUp
//   	rate:		 200 Gb/sec (4X HDR)
//   	link_layer:	 InfiniBand
//
// The rate gives rate_gbps and the width ("4X" -> 4). On an InfiniBand port
// the default GID ends with the port GUID, which is kept as port_guid (so
// the port can be matched with ibstat's); a RoCE port's GID is derived from
// its addresses and is not. Values the script could not read print as
// "unknown" and stay unknown; old versions without link_layer print "IB".
// Many hosts in one file: host_lines.h.
//
// Counted as network.bad_record: a value that cannot be read (the port is
// kept without it), a line inside a block that is no "key: value", a block
// without any field (output cut), text outside any block.

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/network/ib_text.h"
#include "ingest/network/net_streams.h"
#include "ingest/network/network_readers.h"

namespace laggard {
namespace {

// "Infiniband device 'mlx5_0' port 1 status:" -> (mlx5_0, 1).
bool PortHeader(std::string_view line, std::string_view& ca, int32_t& port) {
  std::string_view t = Trim(line);
  constexpr std::string_view kStart = "Infiniband device '";
  if (!StartsWith(t, kStart) || !EndsWith(t, " status:")) return false;
  size_t quote = t.find('\'', kStart.size());
  if (quote == std::string_view::npos || quote == kStart.size()) return false;
  ca = t.substr(kStart.size(), quote - kStart.size());
  std::string_view rest = t.substr(quote + 1);
  if (!StartsWith(rest, " port ")) return false;
  auto n = ParseInt<int32_t>(rest.substr(6, rest.size() - 6 - 8));
  if (!n || *n < 0 || *n > 255) return false;
  port = *n;
  return true;
}

bool IsHeader(std::string_view line) {
  std::string_view ca;
  int32_t port = 0;
  return PortHeader(line, ca, port);
}

struct Stream {
  std::string stream;
  bool in_port = false;
  bool has_field = false;
  uint64_t line = 0;
  std::optional<std::string> gid;
  IbPort port;
};

// The reading of one file.
class IbstatusFile : public NetFileReader<IbstatusFile, Stream> {
 public:
  explicit IbstatusFile(ReaderContext& ctx) : NetFileReader(IsHeader, BlankLines::kToStream, ctx) {}

  void Line(Stream& s, const TextLine& l) {
    std::string_view t = l.trimmed;
    uint64_t n = l.number;
    if (t.empty()) {
      Close(s);  // the script ends every block with a blank line
      return;
    }
    std::string_view ca;
    int32_t port_number = 0;
    if (PortHeader(t, ca, port_number)) {
      Close(s);
      s.in_port = true;
      s.has_field = false;
      s.line = n;
      s.gid.reset();
      s.port = IbPort();
      s.port.ca = std::string(ca);
      s.port.port = port_number;
      s.port.src = ctx_.Ref(n);
      return;
    }
    if (!s.in_port) {
      if (StartsWith(t, "Fatal error")) return;  // the script's own message
      Bad(n, fmt::format("line outside any port block: \"{}\"", Printable(t, 80)));
      return;
    }
    std::string_view key, value;
    if (!SplitKeyValue(t, key, value)) {
      Bad(n, fmt::format("not a \"key: value\" line: \"{}\"", Printable(t, 80)));
      return;
    }
    s.has_field = true;
    Field(s, key, value, n);
  }

  void Close(Stream& s) {
    if (!s.in_port) return;
    s.in_port = false;
    if (!s.has_field) {
      Bad(s.line,
          fmt::format("port {} of '{}' has no fields (output cut?)", s.port.port, s.port.ca));
      return;
    }
    if (s.gid && s.port.link_layer.value_or("InfiniBand") == "InfiniBand") {
      s.port.port_guid = GuidOfGid(*s.gid);
    }
    Take(s.stream, s.line, s.port, ctx_.out->network().ib_ports);
  }

 private:
  // A "key: value" line of a port block.
  void Field(Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    IbPort& p = s.port;
    bool unknown = EqualsIgnoreCase(value, "unknown");
    auto bad_value = [&] {
      Bad(n, fmt::format("'{}' of '{}' port {} is not readable: \"{}\"", key, p.ca, p.port,
                         Printable(value, 60)));
    };
    if (key == "default gid") {
      if (!unknown) {
        if (GuidOfGid(value)) s.gid = std::string(value);
        else bad_value();
      }
    } else if (key == "base lid" || key == "sm lid") {
      std::optional<int64_t> lid = unknown ? std::nullopt : ParseLid(value);
      if (!unknown && !lid) bad_value();
      (key == "base lid" ? p.base_lid : p.sm_lid) = lid;
    } else if (key == "state") {
      IbValue v = ParseIbPortState(value);
      if (!v.ok) bad_value();
      p.state = v.value;
    } else if (key == "phys state") {
      IbValue v = ParseIbPhysState(value);
      if (!v.ok) bad_value();
      p.phys_state = v.value;
    } else if (key == "rate") {
      if (!unknown) {
        if (auto r = ParseIbSysfsRate(value)) {
          p.rate_gbps = r->rate_gbps;
          p.width = r->width;
        } else {
          bad_value();
        }
      }
    } else if (key == "link_layer" || key == "link layer") {
      IbValue v = ParseIbLinkLayer(value);
      if (!v.ok) bad_value();
      p.link_layer = v.value;
    }
    // Other keys (none today) are ignored.
  }
};

int SniffIbstatus(std::string_view head) {
  auto port_header = [](std::string_view text) -> std::optional<int> {
    std::string_view ca;
    int32_t port = 0;
    if (PortHeader(text, ca, port)) return kSniffSure;
    return std::nullopt;
  };
  return JudgeHeadLines(head, {.split_hosts = IsHeader}, 200, port_header).value_or(kSniffNo);
}

}  // namespace

std::unique_ptr<TextReader> MakeIbstatusReader() {
  return MakeFileReader<IbstatusFile>("ibstatus", SniffIbstatus);
}

}  // namespace laggard
