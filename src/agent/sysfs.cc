#include "agent/sysfs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "base/file.h"
#include "base/text.h"

namespace laggard::agent {
namespace {

namespace fs = std::filesystem;

// The first 4 KiB of a sysfs file, trimmed; nullopt when it cannot be read
// (missing, or an attribute whose read fails, like speed of a down link).
std::optional<std::string> ReadAttr(const fs::path& p) {
  std::optional<std::string> text = ReadFileUpTo(p.string(), 4096);
  if (!text) return std::nullopt;
  return std::string(Trim(*text));
}

// Sorted entry names of a directory (empty when it does not exist).
std::vector<std::string> List(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

constexpr size_t kMaxEntries = 4096;  // per directory, against a pathological tree

}  // namespace

bool ParseCodedState(std::string_view text, int32_t& code, std::string& name) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  auto c = ParseInt<int32_t>(text.substr(0, colon));
  std::string_view n = Trim(text.substr(colon + 1));
  if (!c || n.empty()) return false;
  code = *c;
  name = std::string(n);
  return true;
}

std::string IbStateName(std::string_view kernel_name) {
  std::string out;
  bool upper = true;
  for (char c : kernel_name) {
    if (c == '_' || c == ' ') {
      upper = true;
      continue;
    }
    out.push_back(upper ? c : ToLowerAscii(c));
    upper = false;
  }
  return out;
}

bool ParseIbRate(std::string_view text, double& gbps, std::optional<int32_t>& width) {
  text = Trim(text);
  size_t end = 0;
  while (end < text.size() && (IsDigit(text[end]) || text[end] == '.')) ++end;
  auto v = ParseDouble(text.substr(0, end));
  if (!v || *v < 0 || FindIgnoreCase(text, "Gb/sec") == std::string_view::npos) return false;
  gbps = *v;
  width.reset();
  size_t paren = text.find('(');
  if (paren != std::string_view::npos) {
    size_t p = paren + 1;
    size_t q = p;
    while (q < text.size() && IsDigit(text[q])) ++q;
    if (q > p && q < text.size() && (text[q] == 'X' || text[q] == 'x')) {
      width = ParseInt<int32_t>(text.substr(p, q - p));
    }
  }
  return true;
}

std::optional<double> ParsePcieSpeed(std::string_view text) {
  text = Trim(text);
  size_t end = 0;
  while (end < text.size() && (IsDigit(text[end]) || text[end] == '.')) ++end;
  if (end == 0 || FindIgnoreCase(text, "GT/s") == std::string_view::npos) return std::nullopt;
  auto v = ParseDouble(text.substr(0, end));
  if (!v || *v <= 0) return std::nullopt;
  return v;
}

std::optional<int32_t> PcieGenFromSpeed(double gts) {
  constexpr double kSpeeds[] = {2.5, 5, 8, 16, 32, 64};
  for (size_t i = 0; i < std::size(kSpeeds); ++i) {
    if (std::fabs(gts - kSpeeds[i]) < 0.01) return static_cast<int32_t>(i + 1);
  }
  return std::nullopt;
}

SysfsReader::SysfsReader(std::string root) : root_(std::move(root)) {}

HostLinks SysfsReader::Read() const {
  HostLinks out;
  fs::path sys = fs::path(root_) / "sys";

  fs::path ib = sys / "class" / "infiniband";
  for (const std::string& ca : List(ib)) {
    fs::path ports = ib / ca / "ports";
    for (const std::string& port_name : List(ports)) {
      if (out.ib_ports.size() >= kMaxEntries) break;
      auto port_num = ParseInt<int32_t>(port_name);
      if (!port_num) continue;
      fs::path dir = ports / port_name;
      IbPortSample p;
      p.ca = ca;
      p.port = *port_num;
      int32_t code = 0;
      std::string name;
      if (auto s = ReadAttr(dir / "state")) {
        if (ParseCodedState(*s, code, name)) {
          p.state_code = code;
          p.state = IbStateName(name);
        } else {
          ++out.parse_errors;
        }
      }
      if (auto s = ReadAttr(dir / "phys_state")) {
        if (ParseCodedState(*s, code, name)) {
          p.phys_state_code = code;
          p.phys_state = name;
        } else {
          ++out.parse_errors;
        }
      }
      if (auto s = ReadAttr(dir / "rate")) {
        double gbps = 0;
        if (ParseIbRate(*s, gbps, p.width)) {
          p.rate_gbps = gbps;
        } else {
          ++out.parse_errors;
        }
      }
      if (auto s = ReadAttr(dir / "link_layer"); s && !s->empty()) p.link_layer = *s;
      fs::path counters = dir / "counters";
      for (const std::string& c : List(counters)) {
        if (p.counters.size() >= 64) break;
        auto s = ReadAttr(counters / c);
        if (!s) continue;
        auto v = ParseInt<uint64_t>(*s);
        if (!v) {
          ++out.parse_errors;
          continue;
        }
        bool words = c == "port_xmit_data" || c == "port_rcv_data";
        p.counters[c] = words ? *v * 4 : *v;
      }
      out.ib_ports.push_back(std::move(p));
    }
  }

  fs::path net = sys / "class" / "net";
  for (const std::string& iface : List(net)) {
    if (out.net_ifs.size() >= kMaxEntries) break;
    fs::path dir = net / iface;
    if (!Exists(dir / "device") && !Exists(dir / "bonding")) continue;
    NetIfSample n;
    n.iface = iface;
    if (auto s = ReadAttr(dir / "speed")) {
      auto v = ParseInt<int64_t>(*s);
      if (!v) ++out.parse_errors;
      else if (*v > 0) n.speed_mbps = v;  // -1: unknown (link down)
    }
    if (auto s = ReadAttr(dir / "operstate"); s && !s->empty()) n.operstate = *s;
    out.net_ifs.push_back(std::move(n));
  }

  fs::path pci = sys / "bus" / "pci" / "devices";
  for (const std::string& addr : List(pci)) {
    if (out.pcie_links.size() >= kMaxEntries) break;
    fs::path dir = pci / addr;
    auto vendor = ReadAttr(dir / "vendor");
    auto cls = ReadAttr(dir / "class");
    bool nvidia = vendor && EqualsIgnoreCase(*vendor, "0x10de");
    bool network = cls && StartsWith(*cls, "0x02");
    if (!nvidia && !network) continue;
    auto cur = ReadAttr(dir / "current_link_speed");
    if (!cur) continue;  // not a PCIe endpoint with link attributes
    PcieLinkSample l;
    l.address = addr;
    l.vendor = vendor;
    l.device_class = cls;
    l.speed_gts = ParsePcieSpeed(*cur);
    if (l.speed_gts) l.gen = PcieGenFromSpeed(*l.speed_gts);
    if (auto s = ReadAttr(dir / "max_link_speed")) {
      l.max_speed_gts = ParsePcieSpeed(*s);
      if (l.max_speed_gts) l.max_gen = PcieGenFromSpeed(*l.max_speed_gts);
    }
    auto width = [&](const char* name, std::optional<int32_t>& slot) {
      auto s = ReadAttr(dir / name);
      if (!s) return;
      auto v = ParseInt<int32_t>(*s);
      if (v && *v > 0 && *v <= 64) slot = v;
      else if (!v) ++out.parse_errors;  // 0 / 255: no link; not an error
    };
    width("current_link_width", l.width);
    width("max_link_width", l.max_width);
    out.pcie_links.push_back(std::move(l));
  }
  return out;
}

}  // namespace laggard::agent
