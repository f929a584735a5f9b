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

class IbstatReader final : public TextReader {
 public:
  std::string_view name() const override { return "ibstat"; }

  int Sniff(std::string_view head) const override {
    HostLines hosts(IsHeader);
    int lines = 0, guid_lines = 0, adapter_lines = 0;
    bool header = false, confirmed = false;
    ForEachHeadLine(head, [&](std::string_view raw) {
      HostLine l;
      if (!hosts.Split(raw, l) || Trim(l.text).empty()) return true;
      ++lines;
      bool single = false;
      if (AdapterHeader(l.text, single)) {
        header = true;
        return true;
      }
      std::string_view key, value;
      if (header && SplitKeyValue(l.text, key, value) &&
          (key == "CA type" || key == "Number of ports" || key == "Firmware version" ||
           key == "Physical state" || key == "Node GUID")) {
        confirmed = true;
        return false;
      }
      guid_lines += IsGuidLine(l.text);
      adapter_lines += IsAdapterNameLine(l.text);
      return lines < 200;
    });
    if (confirmed) return 95;
    if (header) return 30;  // a header alone: weak evidence
    // ibstat -p: nothing but port GUIDs. Claimed so that it is not taken
    // for an unknown text file; it holds nothing to read.
    if (lines > 0 && guid_lines == lines) return 40;
    return 0;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    HostLines host_lines(IsHeader);
    RecordHosts hosts(host_lines, ctx);
    StreamStates<Stream> streams;
    uint64_t taken = 0;
    bool any_port = false;
    struct Short {
      std::string ca;
      uint64_t line;
      int64_t listed, printed;
    };
    std::vector<Short> short_adapters;

    auto bad = [&](uint64_t n, std::string message) {
      ctx.diag().Add(DiagCode::kNetBadRecord, ctx.path, n, std::move(message));
    };
    auto flush_port = [&](Stream& s) {
      if (!s.in_port) return;
      s.in_port = false;
      if (!s.port_has_field) {
        bad(s.port_line, fmt::format("port {} of '{}' has no fields (output cut?)", s.port.port,
                                     s.ca));
        return;
      }
      hosts.ForEach(s.stream, s.port_line, [&](const std::optional<std::string>& host) {
        IbPort p = s.port;
        p.host = host;
        ctx.out->network().ib_ports.push_back(std::move(p));
        ++taken;
      });
    };
    auto close_ca = [&](Stream& s) {
      flush_port(s);
      if (s.in_ca && s.listed_ports && *s.listed_ports > s.printed_ports) {
        short_adapters.push_back({s.ca, s.ca_line, *s.listed_ports, s.printed_ports});
      }
      s.in_ca = false;
    };

    std::string_view raw;
    while (lines.Next(raw)) {
      uint64_t n = lines.line_number();
      HostLine l;
      if (!host_lines.Split(raw, l)) continue;
      std::string_view t = Trim(l.text);
      if (t.empty()) continue;
      Stream& s = streams.Get(l.stream);

      bool single = false;
      if (auto ca = AdapterHeader(t, single)) {
        close_ca(s);
        s = Stream{s.stream};
        s.in_ca = true;
        s.ca = std::string(*ca);
        s.ca_line = n;
        if (single) {  // "CA: 'mlx5_0'" then one flush-left port, numbered by its "Port N:"
          s.listed_ports.reset();
        }
        continue;
      }
      if (auto port = PortHeader(t)) {
        if (!s.in_ca) {
          bad(n, fmt::format("port outside any adapter block: \"{}\"", Printable(t, 80)));
          continue;
        }
        flush_port(s);
        s.in_port = true;
        s.port_has_field = false;
        s.port_line = n;
        ++s.printed_ports;
        any_port = true;
        s.port = IbPort();
        s.port.ca = s.ca;
        s.port.port = *port;
        s.port.ca_type = s.ca_type;
        s.port.firmware = s.firmware;
        s.port.node_guid = s.node_guid;
        s.port.src = ctx.Ref(n);
        continue;
      }
      std::string_view key, value;
      if (!s.in_ca) {
        // ibstat -p / -l lines, or text before the first adapter.
        if (IsGuidLine(t) || IsAdapterNameLine(t)) continue;
        bad(n, fmt::format("line outside any adapter block: \"{}\"", Printable(t, 80)));
        continue;
      }
      if (!SplitKeyValue(t, key, value)) {
        bad(n, fmt::format("not a \"key: value\" line: \"{}\"", Printable(t, 80)));
        continue;
      }
      auto bad_value = [&] {
        bad(n, fmt::format("'{}' of '{}' is not readable: \"{}\"", key, s.ca, Printable(value, 60)));
      };
      if (s.in_port) {
        IbPort& p = s.port;
        bool port_key = true;
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
          port_key = false;
        }
        if (port_key) {
          s.port_has_field = true;
          continue;
        }
      }
      if (EndsWith(key, " type") && !s.in_port) {
        s.ca_type = std::string(Trim(value));
        if (s.ca_type->empty()) s.ca_type.reset();
      } else if (key == "Number of ports") {
        s.listed_ports = ParseInt<int64_t>(value);
        if (!s.listed_ports || *s.listed_ports < 0) {
          s.listed_ports.reset();
          bad_value();
        }
      } else if (key == "Firmware version") {
        s.firmware = value.empty() ? std::nullopt : std::optional<std::string>(value);
      } else if (key == "Node GUID") {
        s.node_guid = NormalizeGuid(value);
        if (!s.node_guid) bad_value();
      }
      // Anything else (Hardware version, System image GUID, fields of newer
      // versions) carries nothing the model keeps.
    }
    for (Stream& s : streams.all()) close_ca(s);
    // Adapters short of ports: the output was cut, unless this is
    // `ibstat -s`, which prints no port at all.
    if (any_port) {
      for (const Short& a : short_adapters) {
        bad(a.line, fmt::format("'{}' lists {} port(s), {} printed (output cut?)", a.ca, a.listed,
                                a.printed));
      }
    }
    return taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeIbstatReader() { return std::make_unique<IbstatReader>(); }

}  // namespace laggard
