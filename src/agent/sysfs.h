// The host-link seam of the agent: InfiniBand ports, Ethernet interfaces and
// PCIe links, read from sysfs under a configurable root ("/" in production,
// a fake tree in tests):
//
//   <root>/sys/class/infiniband/<ca>/ports/<n>/{state,phys_state,rate,link_layer}
//       state       "4: ACTIVE"            -> state_code 4, state "Active"
//       phys_state  "5: LinkUp"            -> phys_state_code 5, phys_state "LinkUp"
//       rate        "400 Gb/sec (4X NDR)"  -> rate_gbps 400, width 4
//   <root>/sys/class/infiniband/<ca>/ports/<n>/counters/<name>
//       one unsigned number per file; port_xmit_data and port_rcv_data count
//       4-byte words (InfiniBand PortXmitData), given here as bytes
//   <root>/sys/class/net/<iface>/{speed,operstate}
//       speed "25000" (Mb/s; "-1", or a read error, when the link is down ->
//       absent), operstate "up" / "down" / "unknown" ...; only interfaces
//       backed by a device (a `device` link) or bonds, so container veths and
//       bridges do not flood the metrics
//   <root>/sys/bus/pci/devices/<addr>/{current,max}_link_{speed,width}
//       speed "16.0 GT/s PCIe" (older kernels: "16 GT/s", "Unknown"),
//       width "16"; only NVIDIA devices (vendor 0x10de: GPUs, NVSwitches) and
//       network controllers (class 0x02xxxx: NICs, HCAs)
//
// A file that is missing or unreadable leaves its value absent; unexpected
// contents are counted in HostLinks::parse_errors. Nothing here throws or
// stops the agent.
//
// Thread-safety: SysfsReader is immutable; Read() may run on any thread.

#ifndef LAGGARD_AGENT_SYSFS_H_
#define LAGGARD_AGENT_SYSFS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace laggard::agent {

struct IbPortSample {
  std::string ca;  // "mlx5_0"
  int32_t port = 1;
  std::optional<int32_t> state_code;       // 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER
  std::optional<std::string> state;        // "Active", "Down", "Init", "Armed", "ActiveDefer"
  std::optional<int32_t> phys_state_code;  // 5 LinkUp, 3 Disabled, 2 Polling ...
  std::optional<std::string> phys_state;   // "LinkUp", as the kernel prints it
  std::optional<double> rate_gbps;
  std::optional<int32_t> width;              // lanes
  std::optional<std::string> link_layer;     // "InfiniBand", "Ethernet"
  std::map<std::string, uint64_t> counters;  // counters/<name>; *_data in bytes
};

struct NetIfSample {
  std::string iface;
  std::optional<int64_t> speed_mbps;
  std::optional<std::string> operstate;  // "up", "down", "unknown", ...
};

struct PcieLinkSample {
  std::string address;                      // "0000:18:00.0"
  std::optional<std::string> vendor;        // "0x10de"
  std::optional<std::string> device_class;  // "0x030200"
  std::optional<double> speed_gts, max_speed_gts;
  std::optional<int32_t> gen, max_gen;
  std::optional<int32_t> width, max_width;
};

struct HostLinks {
  std::vector<IbPortSample> ib_ports;
  std::vector<NetIfSample> net_ifs;
  std::vector<PcieLinkSample> pcie_links;
  uint64_t parse_errors = 0;
};

class SysfsReader {
 public:
  // `root` is the directory that holds "sys" ("/" on a host, "/host" in a
  // container that mounts the host's /sys at /host/sys).
  explicit SysfsReader(std::string root);
  HostLinks Read() const;

 private:
  std::string root_;
};

// Value parsers, exposed for tests and the fuzzer.
// "4: ACTIVE" -> (4, "ACTIVE").
bool ParseCodedState(std::string_view text, int32_t& code, std::string& name);
// "ACTIVE" -> "Active", "ACTIVE_DEFER" -> "ActiveDefer" (ibstat's spelling).
std::string IbStateName(std::string_view kernel_name);
// "400 Gb/sec (4X NDR)" -> 400, 4.
bool ParseIbRate(std::string_view text, double& gbps, std::optional<int32_t>& width);
// "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s; nullopt for "Unknown".
std::optional<double> ParsePcieSpeed(std::string_view text);
// 2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5, 64 -> 6; nullopt otherwise.
std::optional<int32_t> PcieGenFromSpeed(double gts);

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_SYSFS_H_
