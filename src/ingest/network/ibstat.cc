// `ibstat` (infiniband-diags): one block per channel adapter, one IbPort per
// port.
//
//   CA 'mlx5_0'
//   	CA type: MT4129
//   	Number of ports: 1
//   	Firmware version: 28.39.1002
//   	Hardware version: 0
//   	Node GUID: 0x946dae0300cde72c
//   	System image GUID: 0x946dae0300cde72c
//   	Port 1:
//   		State: Active
//   		Physical state: LinkUp
//   		Rate: 400
//   		Base lid: 75
//   		LMC: 0
//   		SM lid: 334
//   		Capability mask: 0xa751e848
//   		Port GUID: 0x946dae0300cde72c
//   		Link layer: InfiniBand
//
// Also read: `ibstat CA PORT` ("CA: 'mlx5_0'" then one flush-left port),
// `ibstat -s` (adapters without ports: nothing to take), and `ibstat -p` /
// `ibstat -l` (port GUIDs / adapter names, one a line: recognised, nothing
// to take). Rate is the port's total in Gb/s ("2.5" for 1X SDR, "40
// (FDR10)"); ibstat prints no width. Outputs of many hosts in one file
// (pdsh prefixes, dshbak blocks) are split per host (host_lines.h).
//
// Counted as network.bad_record: a value that cannot be read (the port is
// kept without it), a line that is no "key: value" inside an adapter, a port
// block without any field, an adapter that lists more ports than were
// printed (the output was cut).

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/network/ib_text.h"
#include "ingest/network/net_streams.h"
#include "ingest/network/network_readers.h"

namespace laggard {
namespace {

// "CA 'mlx5_0'" / "CA: 'mlx5_0'" (also Switch, Router, iWARP RNIC):
// the adapter's name; `single_port` for the colon form.
std::optional<std::string_view> AdapterHeader(std::string_view line, bool& single_port) {
  std::string_view t = Trim(line);
  if (t.size() < 4 || t.back() != '\'') return std::nullopt;
  size_t quote = t.find('\'');
  if (quote == t.size() - 1 || quote < 2) return std::nullopt;
  std::string_view kind = t.substr(0, quote);
  single_port = false;
  if (EndsWith(kind, ": ")) {
    single_port = true;
    kind.remove_suffix(2);
  } else if (EndsWith(kind, " ")) {
    kind.remove_suffix(1);
  } else {
    return std::nullopt;
  }
  if (kind != "CA" && kind != "Switch" && kind != "Router" && kind != "iWARP RNIC" &&
      kind != "???") {
    return std::nullopt;
  }
  std::string_view name = t.substr(quote + 1, t.size() - quote - 2);
  if (name.empty() || name.find('\'') != std::string_view::npos) return std::nullopt;
  return name;
}

bool IsHeader(std::string_view line) {
  bool single = false;
  return AdapterHeader(line, single).has_value();
}

// "Port 1:" -> 1.
std::optional<int32_t> PortHeader(std::string_view line) {
  std::string_view t = Trim(line);
  if (!StartsWith(t, "Port ") || !EndsWith(t, ":")) return std::nullopt;
  auto n = ParseInt<int32_t>(t.substr(5, t.size() - 6));
  if (!n || *n < 0 || *n > 255) return std::nullopt;
  return n;
}

// ibstat -p: "0x946dae0300cde72c".
bool IsGuidLine(std::string_view line) {
  std::string_view t = Trim(line);
  return t.size() == 18 && StartsWith(t, "0x") && NormalizeGuid(t).has_value();
}

// ibstat -l: "mlx5_0".
bool IsAdapterNameLine(std::string_view line) {
  std::string_view t = Trim(line);
  if (t.empty() || t.size() > 64) return false;
  for (char c : t) {
    if (!(IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

struct Stream {
  std::string stream;
  bool in_ca = false;
  std::string ca;
  uint64_t ca_line = 0;
  std::optional<std::string> ca_type, firmware, node_guid;
  std::optional<int64_t> listed_ports;
  int64_t printed_ports = 0;
  bool in_port = false;
  bool port_has_field = false;
  uint64_t port_line = 0;
  IbPort port;
};

// The reading of one file.
class IbstatFile : public NetFileReader<IbstatFile, Stream> {
 public:
  explicit IbstatFile(ReaderContext& ctx) : NetFileReader(IsHeader, BlankLines::kSkip, ctx) {}

  void Line(Stream& s, const TextLine& l) {
    std::string_view t = l.trimmed;
    uint64_t n = l.number;
    bool single = false;
    if (auto ca = AdapterHeader(t, single)) {
      Close(s);
      s = Stream{s.stream};
      s.in_ca = true;
      s.ca = std::string(*ca);
      s.ca_line = n;
      if (single) {  // "CA: 'mlx5_0'" then one flush-left port, numbered by its "Port N:"
        s.listed_ports.reset();
      }
      return;
    }
    if (auto port = PortHeader(t)) {
      if (!s.in_ca) {
        Bad(n, fmt::format("port outside any adapter block: \"{}\"", Printable(t, 80)));
        return;
      }
      StartPort(s, *port, n);
      return;
    }
    std::string_view key, value;
    if (!s.in_ca) {
      // ibstat -p / -l lines, or text before the first adapter.
      if (IsGuidLine(t) || IsAdapterNameLine(t)) return;
      Bad(n, fmt::format("line outside any adapter block: \"{}\"", Printable(t, 80)));
      return;
    }
    if (!SplitKeyValue(t, key, value)) {
      Bad(n, fmt::format("not a \"key: value\" line: \"{}\"", Printable(t, 80)));
      return;
    }
    if (s.in_port && PortField(s, key, value, n)) {
      s.port_has_field = true;
      return;
    }
    AdapterField(s, key, value, n);
  }

  void Close(Stream& s) {
    FlushPort(s);
    if (s.in_ca && s.listed_ports && *s.listed_ports > s.printed_ports) {
      short_adapters_.push_back({s.ca, s.ca_line, *s.listed_ports, s.printed_ports});
    }
    s.in_ca = false;
  }

  // Adapters short of ports: the output was cut, unless this is
  // `ibstat -s`, which prints no port at all.
  void Finish() {
    if (!any_port_) return;
    for (const Short& a : short_adapters_) {
      Bad(a.line, fmt::format("'{}' lists {} port(s), {} printed (output cut?)", a.ca, a.listed,
                              a.printed));
    }
  }

 private:
  void BadValue(const Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    Bad(n, fmt::format("'{}' of '{}' is not readable: \"{}\"", key, s.ca, Printable(value, 60)));
  }

  void StartPort(Stream& s, int32_t port, uint64_t n) {
    FlushPort(s);
    s.in_port = true;
    s.port_has_field = false;
    s.port_line = n;
    ++s.printed_ports;
    any_port_ = true;
    s.port = IbPort();
    s.port.ca = s.ca;
    s.port.port = port;
    s.port.ca_type = s.ca_type;
    s.port.firmware = s.firmware;
    s.port.node_guid = s.node_guid;
    s.port.src = ctx_.Ref(n);
  }

  // A field of the port block; false when `key` is none of a port's.
  bool PortField(Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    IbPort& p = s.port;
    auto bad_value = [&] { BadValue(s, key, value, n); };
    if (key == "State") {
      IbValue v = ParseIbPortState(value);
      if (!v.ok) bad_value();
      p.state = v.value;
    } else if (key == "Physical state") {
      IbValue v = ParseIbPhysState(value);
      if (!v.ok) bad_value();
      p.phys_state = v.value;
    } else if (key == "Rate") {
      // "400", "2.5", "40 (FDR10)".
      std::string_view num = value.substr(0, value.find(' '));
      std::string_view rest = Trim(value.substr(num.size()));
      auto r = ParseDouble(num);
      if (r && *r >= 0 && (rest.empty() || (StartsWith(rest, "(") && EndsWith(rest, ")")))) {
        p.rate_gbps = r;
      } else if (!EqualsIgnoreCase(Trim(value), "???")) {
        bad_value();
      }
    } else if (key == "Base lid") {
      p.base_lid = ParseLid(value);
      if (!p.base_lid) bad_value();
    } else if (key == "SM lid") {
      p.sm_lid = ParseLid(value);
      if (!p.sm_lid) bad_value();
    } else if (key == "Port GUID") {
      p.port_guid = NormalizeGuid(value);
      if (!p.port_guid) bad_value();
    } else if (key == "Link layer") {
      IbValue v = ParseIbLinkLayer(value);
      if (!v.ok) bad_value();
      p.link_layer = v.value;
    } else if (key == "LMC" || key == "Capability mask") {
      // Read but not kept: they say nothing about speed or health.
    } else {
      return false;
    }
    return true;
  }

  // A field of the adapter (or one a port does not have).
  void AdapterField(Stream& s, std::string_view key, std::string_view value, uint64_t n) {
    if (EndsWith(key, " type") && !s.in_port) {
      s.ca_type = std::string(Trim(value));
      if (s.ca_type->empty()) s.ca_type.reset();
    } else if (key == "Number of ports") {
      s.listed_ports = ParseInt<int64_t>(value);
      if (!s.listed_ports || *s.listed_ports < 0) {
        s.listed_ports.reset();
        BadValue(s, key, value, n);
      }
    } else if (key == "Firmware version") {
      s.firmware = value.empty() ? std::nullopt : std::optional<std::string>(value);
    } else if (key == "Node GUID") {
      s.node_guid = NormalizeGuid(value);
      if (!s.node_guid) BadValue(s, key, value, n);
    }
    // Anything else (Hardware version, System image GUID, fields of newer
    // versions) carries nothing the model keeps.
  }

  void FlushPort(Stream& s) {
    if (!s.in_port) return;
    s.in_port = false;
    if (!s.port_has_field) {
      Bad(s.port_line,
          fmt::format("port {} of '{}' has no fields (output cut?)", s.port.port, s.ca));
      return;
    }
    Take(s.stream, s.port_line, s.port, ctx_.out->network().ib_ports);
  }

  struct Short {
    std::string ca;
    uint64_t line;
    int64_t listed, printed;
  };

  bool any_port_ = false;
  std::vector<Short> short_adapters_;
};

int SniffIbstat(std::string_view head) {
  int lines = 0, guid_lines = 0, adapter_lines = 0;
  bool header = false, confirmed = false;
  ForEachHeadLine(head, {.split_hosts = IsHeader}, [&](std::string_view text) {
    if (Trim(text).empty()) return true;
    ++lines;
    bool single = false;
    if (AdapterHeader(text, single)) {
      header = true;
      return true;
    }
    std::string_view key, value;
    if (header && SplitKeyValue(text, key, value) &&
        (key == "CA type" || key == "Number of ports" || key == "Firmware version" ||
         key == "Physical state" || key == "Node GUID")) {
      confirmed = true;
      return false;
    }
    guid_lines += IsGuidLine(text);
    adapter_lines += IsAdapterNameLine(text);
    return lines < 200;
  });
  if (confirmed) return kSniffSure;
  if (header) return kSniffWeak;
  // ibstat -p: nothing but port GUIDs. Claimed so that the text-log
  // reader (kSniffAnyText) does not take it for an unknown text file; it
  // holds nothing to read. Above a header alone, as every line is ibstat's.
  if (lines > 0 && guid_lines == lines) return kSniffWeak + 10;
  return kSniffNo;
}

}  // namespace

std::unique_ptr<TextReader> MakeIbstatReader() {
  return MakeFileReader<IbstatFile>("ibstat", SniffIbstat);
}

}  // namespace laggard
