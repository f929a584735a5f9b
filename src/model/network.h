// Network and topology part of the run model: what the ibstat / ethtool /
// nccl-tests / NCCL_DEBUG / `nvidia-smi topo -m` readers produce and the
// network detector reads.
//
//   NetworkData
//   ├── ib_ports[]      one per (host, CA, port): state, physical state, rate
//   ├── eth_links[]     one per (host, interface): speed, duplex, link detected
//   ├── nccl_tests[]    one per nccl-tests run (a *_perf output): ranks with
//   │                   host/device, the size table, average bus bandwidth
//   ├── nccl_ranks[]    one per (host, pid, device) seen in an NCCL_DEBUG=INFO
//   │                   log: version, network plugin, NICs, GDR, transports
//   ├── topologies[]    one `nvidia-smi topo -m` matrix per host
//   ├── p2p_tests[]     p2pBandwidthLatencyTest matrices, one run per host
//   ├── pair_bandwidths[] one per row of a pasted node-pair table
//   │                   ("host1,host2  49.36"): two hosts and their bandwidth
//   ├── port_counters[] one per (host, LID, port) queried with `perfquery`:
//   │                   traffic, congestion (PortXmitWait) and error counters
//   └── switch_of       host -> switch, from a user's CSV map
//
// Host names are as the tools print them; a file without one gets its host
// from the directory layout (ReaderContext::host_from_path) or stays unknown.
// Unknown values are std::nullopt.

#ifndef LAGGARD_MODEL_NETWORK_H_
#define LAGGARD_MODEL_NETWORK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/source.h"
#include "model/time.h"

namespace laggard {

// One InfiniBand (or RoCE) port, from ibstat, ibstatus or ibv_devinfo.
struct IbPort {
  std::optional<std::string> host;
  std::string ca;  // "mlx5_0"
  int32_t port = 1;
  std::optional<std::string> state;       // "Active", "Down", "Init", "Polling", "Armed"
  std::optional<std::string> phys_state;  // "LinkUp", "Disabled", "Polling", ...
  std::optional<double> rate_gbps;        // 400, 200, 100 ...
  std::optional<int32_t> width;           // lanes: 4 for "4X", 1 for "1X"
  std::optional<std::string> link_layer;  // "InfiniBand", "Ethernet"
  std::optional<int64_t> base_lid;
  std::optional<std::string> port_guid;
  std::optional<std::string> ca_type;  // "MT4129"
  std::optional<std::string> firmware;
  SourceRef src;
  // Appended for the ibstat / ibstatus / ibv_devinfo readers.
  std::optional<int64_t> sm_lid;            // 0 on a port that sees no subnet manager
  std::optional<std::string> node_guid;     // "0x946dae0300cde72c" (GUIDs normalised to this form)
  std::optional<int32_t> active_mtu_bytes;  // ibv_devinfo: 1024 on a RoCE port with max 4096 ...
  std::optional<int32_t> max_mtu_bytes;
};

// One Ethernet interface, from `ethtool IFACE` (and `ethtool -S IFACE`).
// RunBuilder::Finalize() folds a statistics-only record into the settings
// record of the same host (or directory, without host) and interface.
struct EthLink {
  std::optional<std::string> host;
  std::string iface;                  // "eth0", "bond0"
  std::optional<int64_t> speed_mbps;  // nullopt for "Unknown!"
  std::optional<std::string> duplex;  // "Full", "Half"
  std::optional<bool> link_detected;
  std::optional<std::string> port;          // "FIBRE", "Direct Attach Copper", "Twisted Pair"
  std::map<std::string, int64_t> counters;  // ethtool -S, by name
  SourceRef src;
  // Appended for the ethtool reader: link modes as printed ("100000baseCR4/Full"),
  // empty when ethtool says "Not reported"; a link slower than its fastest
  // supported mode has negotiated down.
  std::vector<std::string> supported_link_modes;
  std::vector<std::string> advertised_link_modes;
  std::optional<bool> auto_negotiation;  // "Auto-negotiation: on/off"
};

// A rank of an nccl-tests run: "#  Rank  3 Group  0 Pid 78 on host device 1 [0xc7] NVIDIA A800".
struct NcclTestRank {
  int32_t rank = 0;
  std::optional<int32_t> group;
  std::optional<int64_t> pid;
  std::string host;
  std::optional<int32_t> device;
  std::optional<std::string> bus_id;  // "0xc7" as printed
  std::optional<std::string> gpu_name;
};

// One row of the size table. Out-of-place and in-place columns.
struct NcclTestRow {
  int64_t size_bytes = 0;
  std::optional<int64_t> count;
  std::optional<std::string> type;   // "float"
  std::optional<std::string> redop;  // "sum", "none"
  std::optional<int64_t> root;
  std::optional<double> oop_time_us, oop_algbw_gbps, oop_busbw_gbps;
  std::optional<int64_t> oop_wrong;  // nullopt for "N/A" (validation off)
  std::optional<double> ip_time_us, ip_algbw_gbps, ip_busbw_gbps;
  std::optional<int64_t> ip_wrong;
  SourceRef src;
};

struct NcclTestRun {
  std::string collective;  // "all_reduce", from the binary or the table
  std::optional<int32_t> threads, gpus_per_thread, iters, warmup_iters;
  std::vector<NcclTestRank> ranks;
  std::vector<NcclTestRow> rows;
  std::optional<double> avg_busbw_gbps;       // "# Avg bus bandwidth : 41.6967"
  std::optional<int64_t> out_of_bounds;       // "# Out of bounds values : 0 OK"
  std::vector<std::string> errors;            // error lines the run printed
  std::optional<std::string> host_from_path;  // when the output names no host
  SourceRef src;                              // the header line
  // "2.19.3": from an "NCCL version 2.19.3+cuda12.2" line inside the output,
  // else from "# nccl-tests version ... nccl-library=21903".
  std::optional<std::string> nccl_version;
};

// One rank's connection to a peer over a channel, from NCCL_DEBUG=INFO:
// "Channel 00/0 : 3[3] -> 4[0] [send] via NET/IB/0/GDRDMA".
struct NcclConnection {
  std::optional<int32_t> channel;
  int32_t from_rank = 0;
  int32_t to_rank = 0;
  std::string via;                  // "P2P/IPC", "SHM", "NET/IB/0/GDRDMA", "NET/Socket/1"
  std::optional<std::string> kind;  // "ring", "tree", "send", "recv" when printed
};

// What NCCL said about one process (host, pid, CUDA device).
struct NcclRankInfo {
  std::optional<std::string> host;  // nullopt: no "host:pid:tid" prefix, none from the path
  std::optional<int64_t> pid;
  std::optional<int32_t> cuda_device;  // the "[3]" of the line prefix
  std::optional<int32_t> rank;         // from "Init COMPLETE" / "comm ... rank N"
  std::optional<int32_t> nranks;
  std::optional<std::string> bus_id;
  std::optional<std::string> nccl_version;  // "2.19.3"
  std::optional<std::string> net;           // "IB", "Socket" (the NET/… chosen)
  std::vector<std::string> nics;            // "mlx5_0:1/IB", "eth0:10.0.0.1<0>"
  std::optional<bool> gdr;                  // GPU Direct RDMA in use for some connection
  std::vector<NcclConnection> connections;
  std::vector<std::string> warnings;  // "NCCL WARN ..." lines
  SourceRef src;                      // first line of this process
};

// `nvidia-smi topo -m`: the matrix as printed, rows and columns by device
// name ("GPU0", "NIC1", "mlx5_0" after the NIC legend is applied).
struct TopologyMatrix {
  std::optional<std::string> host;
  std::vector<std::string> devices;                  // column order
  std::vector<std::vector<std::string>> link;        // link[i][j]: "X", "NV12", "PIX", "SYS", ...
  std::map<std::string, std::string> cpu_affinity;   // GPU -> "0-127"
  std::map<std::string, std::string> numa_affinity;  // GPU -> "0"
  std::map<std::string, std::string> nic_names;      // "NIC0" -> "mlx5_0"
  SourceRef src;
};

// The matrices of the CUDA sample p2pBandwidthLatencyTest, as printed.
// Serialized by position: append only.
enum class P2pMatrixKind : uint8_t {
  kUniDisabled,      // Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
  kUniEnabled,       // Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)
  kUniEnabledReads,  // ... (P2P Reads) (--p2p_read)
  kBiDisabled,       // Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)
  kBiEnabled,        // Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
  kLatencyDisabled,  // P2P=Disabled Latency Matrix (us), GPU-timed
  kLatencyEnabled,   // P2P=Enabled Latency (P2P Writes) Matrix (us), GPU-timed
  kLatencyEnabledReads,
  kEnd,
};

// One matrix: n x n cells, row i the GPU that issues the copy, column j its
// peer; NaN where the output did not print the cell (a pasted copy cut with
// "..."). GB/s for bandwidth, us for latency; the diagonal is a local copy.
struct P2pMatrix {
  P2pMatrixKind kind = P2pMatrixKind::kEnd;
  int32_t n = 0;
  std::vector<double> cells;  // row-major
  SourceRef src;              // its header line
};

// One run of p2pBandwidthLatencyTest on one host.
struct P2pBandwidthTest {
  std::optional<std::string> host;
  std::vector<std::string> gpu_names;  // "Device: 0, NVIDIA A100-SXM4-80GB, ..." by index
  // can_access[i * n + j]: 1 peer access, 0 none, -1 not printed; empty when
  // the output has neither the "Device=i CAN Access" lines nor the matrix.
  std::vector<int8_t> can_access;
  int32_t n = 0;  // GPUs: the widest matrix or device list
  std::vector<P2pMatrix> matrices;
  SourceRef src;
};

// One port's performance counters from `perfquery` (PortCounters, 32-bit)
// or `perfquery -x` (PortCountersExtended, 64-bit), cumulative since the
// last reset. perfquery names the port by LID and port number only; the CA
// is the ibstat port of the same host whose IbPort::base_lid is `lid`.
// A 32-bit counter stuck at its maximum has saturated: it is kept out
// (nullopt) and its name listed in `saturated`.
struct IbPortCounters {
  std::optional<std::string> host;
  std::optional<int64_t> lid;              // "Lid 75" of the header
  int32_t port = 1;                        // "port 1" of the header (255: all ports)
  bool extended = false;                   // a `perfquery -x` block was read
  std::optional<int64_t> xmit_data_bytes;  // PortXmitData x 4 (counted in 4-octet words)
  std::optional<int64_t> rcv_data_bytes;   // PortRcvData x 4
  std::optional<int64_t> xmit_pkts;
  std::optional<int64_t> rcv_pkts;
  // Ticks during which the port had data to send but no flow-control
  // credits (back-pressure from the link's far end); the tick length is
  // the device's.
  std::optional<int64_t> xmit_wait_ticks;
  std::optional<int64_t> xmit_discards;
  std::optional<int64_t> symbol_errors;
  std::optional<int64_t> link_error_recoveries;
  std::optional<int64_t> link_downed;
  std::optional<int64_t> rcv_errors;
  std::vector<std::string> saturated;  // names of 32-bit counters at their maximum
  SourceRef src;                       // the header line
  // When the snapshot was taken: the latest timestamp line (`date -u
  // +%Y-%m-%dT%H:%M:%SZ`, `date -Is`, `date +%s`, plain `date`) printed
  // before the block by a sampling loop; nullopt when none was. A file of
  // such snapshots holds one record per (host, LID, port) and timestamp.
  std::optional<TimeNs> time_ns;
};

// One row of a node-pair bandwidth table as users paste it when telling a
// bad node from the fabric ("se02gn644,se02gn699     49.36  # crossing TOR"):
// the two hosts as printed and the pair's bandwidth in GB/s (nccl-tests bus
// bandwidth; rows printed in Gb/s or MB/s are converted when read).
struct PairBandwidth {
  std::string host_a, host_b;
  double gbps = 0;
  std::optional<std::string> note;  // the row's "# ..." comment
  SourceRef src;
  // The test a row belongs to where a table holds several ("test
  // alltoall_perf, G 8" from its test / GPU-count columns); "" for one.
  // Pairs are compared only within one test of one file.
  std::string group;
};

struct NetworkData {
  std::vector<IbPort> ib_ports;
  std::vector<EthLink> eth_links;
  std::vector<NcclTestRun> nccl_tests;
  std::vector<NcclRankInfo> nccl_ranks;
  std::vector<TopologyMatrix> topologies;
  std::map<std::string, std::string> switch_of;  // host -> switch
  std::map<std::string, SourceRef> switch_src;   // host -> where the map said so
  std::vector<IbPortCounters> port_counters;     // appended: perfquery
  std::vector<P2pBandwidthTest> p2p_tests;       // appended: p2pBandwidthLatencyTest
  std::vector<PairBandwidth> pair_bandwidths;    // appended: node-pair tables

  bool empty() const {
    return ib_ports.empty() && eth_links.empty() && nccl_tests.empty() && nccl_ranks.empty() &&
           topologies.empty() && switch_of.empty() && port_counters.empty() && p2p_tests.empty() &&
           pair_bandwidths.empty();
  }
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_NETWORK_H_
