// The network link readers (ibstat, ibstatus, ibv_devinfo, ethtool, the
// host -> switch map) on the shared corpus, on synthetic variants (down and
// polling ports, 1X vs 4X, unknown speeds, many hosts in one file) and on
// damaged input, through the standard ingest, as `laggard diagnose` reads
// them.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "ingest/common/host_lines.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

namespace fs = std::filesystem;
using testing_util::IngestPaths;
using testing_util::TempDir;
using testing_util::WriteFile;

const std::string kCorpus = std::string(LAGGARD_CORPUS_DIR) + "/ib_eth/";

#define REQUIRE_CORPUS() \
  if (!fs::exists(kCorpus)) GTEST_SKIP() << "shared corpus not found at " << kCorpus

uint64_t Count(const Run& run, DiagCode code) { return run.diagnostics.count(code); }

// Lines of the network.bad_record examples.
std::vector<uint64_t> BadLines(const Run& run) {
  std::vector<uint64_t> lines;
  for (const DiagExample& e : run.diagnostics.examples(DiagCode::kNetBadRecord)) {
    lines.push_back(e.line);
  }
  return lines;
}

const IbPort* FindPort(const Run& run, std::string_view ca, int32_t port = 1,
                       std::optional<std::string> host = std::nullopt) {
  for (const IbPort& p : run.network.ib_ports) {
    if (p.ca == ca && p.port == port && (!host || p.host == host)) return &p;
  }
  return nullptr;
}

const EthLink* FindLink(const Run& run, std::string_view iface,
                        std::optional<std::string> host = std::nullopt) {
  for (const EthLink& e : run.network.eth_links) {
    if (e.iface == iface && (!host || e.host == host)) return &e;
  }
  return nullptr;
}

Run IngestText(const TempDir& dir, const std::string& name, const std::string& content) {
  return IngestPaths({WriteFile(dir.File(name), content)});
}

// ---------------------------------------------------------------- corpus

TEST(NetworkCorpusTest, GpudIbstatShowsWhichPortsAreDown) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "gpud_ibstat.47.0.h100.some.down.0.txt"});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "ibstat");
  EXPECT_EQ(run.files[0].records, 12u);
  ASSERT_EQ(run.network.ib_ports.size(), 12u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 1u);  // a bare file: no host anywhere

  const IbPort* p0 = FindPort(run, "mlx5_0");
  ASSERT_NE(p0, nullptr);
  EXPECT_FALSE(p0->host.has_value());
  EXPECT_EQ(p0->state, "Active");
  EXPECT_EQ(p0->phys_state, "LinkUp");
  EXPECT_EQ(p0->rate_gbps, 400.0);
  EXPECT_FALSE(p0->width.has_value());  // ibstat prints no width
  EXPECT_EQ(p0->link_layer, "InfiniBand");
  EXPECT_EQ(p0->base_lid, 75);
  EXPECT_EQ(p0->sm_lid, 334);
  EXPECT_EQ(p0->port_guid, "0x946dae0300cde72c");
  EXPECT_EQ(p0->node_guid, "0x946dae0300cde72c");
  EXPECT_EQ(p0->ca_type, "MT4129");
  EXPECT_EQ(p0->firmware, "28.39.1002");
  EXPECT_EQ(p0->src.line, 8u);  // "	Port 1:"

  // The down ports are the Ethernet ones of the ConnectX-6 Dx (MT4125).
  std::set<std::string> down;
  int ib_active_400 = 0;
  for (const IbPort& p : run.network.ib_ports) {
    if (p.state == "Down") {
      down.insert(p.ca);
      EXPECT_EQ(p.phys_state, "Disabled");
      EXPECT_EQ(p.link_layer, "Ethernet");
      EXPECT_EQ(p.rate_gbps, 40.0);
      EXPECT_EQ(p.ca_type, "MT4125");
    }
    if (p.state == "Active" && p.link_layer == "InfiniBand" && p.rate_gbps == 400.0)
      ++ib_active_400;
  }
  EXPECT_EQ(down, (std::set<std::string>{"mlx5_2", "mlx5_7", "mlx5_8"}));
  EXPECT_EQ(ib_active_400, 8);
  const IbPort* p1 = FindPort(run, "mlx5_1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->state, "Active");
  EXPECT_EQ(p1->rate_gbps, 100.0);
  EXPECT_EQ(p1->sm_lid, 0);
  // The last block has no final newline; it is complete all the same.
  const IbPort* p9 = FindPort(run, "mlx5_9");
  ASSERT_NE(p9, nullptr);
  EXPECT_EQ(p9->link_layer, "InfiniBand");
  EXPECT_EQ(p9->base_lid, 771);
}

TEST(NetworkCorpusTest, GpudIbstatusGivesRateAndWidth) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "gpud_ibstatus.39.0.a100.all.active.0.txt"});
  EXPECT_EQ(run.files[0].format, "ibstatus");
  ASSERT_EQ(run.network.ib_ports.size(), 9u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 1u);
  for (const IbPort& p : run.network.ib_ports) {
    EXPECT_EQ(p.state, "Active") << p.ca;
    EXPECT_EQ(p.phys_state, "LinkUp") << p.ca;
    EXPECT_EQ(p.width, 4) << p.ca;
  }
  const IbPort* p0 = FindPort(run, "mlx5_0");
  ASSERT_NE(p0, nullptr);
  EXPECT_EQ(p0->rate_gbps, 200.0);
  EXPECT_EQ(p0->base_lid, 0x33bf);
  EXPECT_EQ(p0->sm_lid, 1);
  EXPECT_EQ(p0->link_layer, "InfiniBand");
  EXPECT_EQ(p0->port_guid, "0x00155dfffd3411eb");  // from the default GID
  EXPECT_EQ(p0->src.line, 1u);
  const IbPort* p7 = FindPort(run, "mlx5_7");
  ASSERT_NE(p7, nullptr);
  EXPECT_EQ(p7->base_lid, 0x33f9);
  EXPECT_EQ(p7->src.line, 64u);
  // mlx5_8 is the 40G RoCE port: its GID is "unknown", so no GUID.
  const IbPort* p8 = FindPort(run, "mlx5_8");
  ASSERT_NE(p8, nullptr);
  EXPECT_EQ(p8->link_layer, "Ethernet");
  EXPECT_EQ(p8->rate_gbps, 40.0);
  EXPECT_EQ(p8->base_lid, 0);
  EXPECT_FALSE(p8->port_guid.has_value());
}

TEST(NetworkCorpusTest, AzureIbvDevinfoReadsEightNdrPortsAndTheEthernetOne) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "ibv_devinfo_azure_ndv5_8xNDR_plus_eth.txt"});
  EXPECT_EQ(run.files[0].format, "ibv_devinfo");
  ASSERT_EQ(run.network.ib_ports.size(), 9u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  int ib = 0;
  for (const IbPort& p : run.network.ib_ports) {
    EXPECT_EQ(p.state, "Active") << p.ca;
    EXPECT_FALSE(p.rate_gbps.has_value()) << p.ca;  // no -v: no width or speed
    ib += p.link_layer == "InfiniBand";
  }
  EXPECT_EQ(ib, 8);
  const IbPort* ib0 = FindPort(run, "mlx5_ib0");
  ASSERT_NE(ib0, nullptr);
  EXPECT_EQ(ib0->firmware, "28.40.1702");
  EXPECT_EQ(ib0->node_guid, "0x00155dfffe340033");
  EXPECT_EQ(ib0->ca_type, "MT4126");
  EXPECT_EQ(ib0->base_lid, 1227);
  EXPECT_EQ(ib0->sm_lid, 1);
  EXPECT_EQ(ib0->max_mtu_bytes, 4096);
  EXPECT_EQ(ib0->active_mtu_bytes, 4096);
  EXPECT_EQ(ib0->src.line, 11u);
  EXPECT_EQ(FindPort(run, "mlx5_ib7")->base_lid, 1554);
  const IbPort* eth = FindPort(run, "mlx5_an0");
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->link_layer, "Ethernet");
  EXPECT_EQ(eth->active_mtu_bytes, 1024);
  EXPECT_EQ(eth->max_mtu_bytes, 4096);
  EXPECT_EQ(eth->firmware, "16.30.5000");
  EXPECT_EQ(eth->ca_type, "MT4122");
  EXPECT_EQ(eth->sm_lid, 0);
}

TEST(NetworkCorpusTest, EthtoolBondReportsTheSumOfItsMembers) {
  REQUIRE_CORPUS();
  laggard::Run run = IngestPaths({kCorpus + "ethtool_bond0_2x100G_lacp.txt"});
  EXPECT_EQ(run.files[0].format, "ethtool");
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 1u);
  const EthLink& bond = run.network.eth_links[0];
  EXPECT_EQ(bond.iface, "bond0");
  EXPECT_EQ(bond.speed_mbps, 200000);
  EXPECT_EQ(bond.duplex, "Full");
  EXPECT_EQ(bond.port, "Other");
  EXPECT_EQ(bond.link_detected, true);
  EXPECT_EQ(bond.auto_negotiation, false);
  EXPECT_TRUE(bond.supported_link_modes.empty());  // "Not reported"
  EXPECT_TRUE(bond.advertised_link_modes.empty());
  EXPECT_TRUE(bond.counters.empty());
  EXPECT_EQ(bond.src.line, 1u);
}

TEST(NetworkCorpusTest, CorpusDirectoryUnderAHostFolderTakesThatHost) {
  REQUIRE_CORPUS();
  TempDir dir;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    fs::create_directories(dir.File("gpu-node-17"));
    fs::copy_file(entry.path(), dir.File("gpu-node-17/" + entry.path().filename().string()));
  }
  laggard::Run run = IngestPaths({dir.path()});
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 0u);
  EXPECT_EQ(run.network.ib_ports.size(), 12u + 9u + 9u);
  EXPECT_EQ(run.network.eth_links.size(), 1u);
  for (const IbPort& p : run.network.ib_ports) EXPECT_EQ(p.host, "gpu-node-17");
  EXPECT_EQ(run.network.eth_links[0].host, "gpu-node-17");
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kSkippedFile), 0u);
}

TEST(NetworkCorpusTest, NetworkReadersClaimNoOtherCorpusFile) {
  REQUIRE_CORPUS();
  std::vector<std::unique_ptr<TextReader>> readers;
  readers.push_back(MakeIbstatReader());
  readers.push_back(MakeIbstatusReader());
  readers.push_back(MakeIbvDevinfoReader());
  readers.push_back(MakeEthtoolReader());
  readers.push_back(MakeSwitchMapReader());
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(std::string(LAGGARD_CORPUS_DIR))) {
    if (!entry.is_regular_file() || entry.path().parent_path().filename() == "ib_eth") continue;
    auto head = ReadHead(entry.path().string(), kSniffBytes);
    ASSERT_TRUE(head.ok());
    for (const auto& r : readers) {
      EXPECT_EQ(r->Sniff(*head), 0) << r->name() << " claims " << entry.path();
    }
    ++files;
  }
  EXPECT_GT(files, 20);
}

TEST(NetworkSniffTest, AStepLogThatLooksLikeAHeaderStaysAStepLog) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "train.log",
                                "Settings for run:\n  epochs: 3\n  lr: 0.1\n"
                                "CA 'fine-tune'\n"
                                "rank 0, step 1, time 0.8s\nrank 0, step 2, time 0.9s\n");
  EXPECT_EQ(run.files[0].format, "text-log");
  EXPECT_EQ(run.total_steps(), 2u);
  EXPECT_TRUE(run.network.empty());
}

// ---------------------------------------------------------------- ibstat

constexpr const char* kIbstatTwoPorts =
    "CA 'mlx5_4'\n"
    "\tCA type: MT4123\n"
    "\tNumber of ports: 2\n"
    "\tFirmware version: 20.31.1014\n"
    "\tHardware version: 0\n"
    "\tNode GUID: 0x0c42a10300b3c8a0\n"
    "\tSystem image GUID: 0x0c42a10300b3c8a0\n"
    "\tPort 1:\n"
    "\t\tState: Down\n"
    "\t\tPhysical state: Polling\n"
    "\t\tRate: 10\n"
    "\t\tBase lid: 65535\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 0\n"
    "\t\tCapability mask: 0x2651e848\n"
    "\t\tPort GUID: 0x0c42a10300b3c8a0\n"
    "\t\tLink layer: InfiniBand\n"
    "\tPort 2:\n"
    "\t\tState: Initializing\n"
    "\t\tPhysical state: LinkUp\n"
    "\t\tRate: 2.5\n"
    "\t\tBase lid: 0\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 0\n"
    "\t\tCapability mask: 0x2651e848\n"
    "\t\tPort GUID: 0x0c42a10300b3c8a1\n"
    "\t\tLink layer: InfiniBand\n";

TEST(IbstatReaderTest, PollingAndInitializingPortsKeepTheirState) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibstat.txt", kIbstatTwoPorts);
  EXPECT_EQ(run.files[0].format, "ibstat");
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  const IbPort* p1 = FindPort(run, "mlx5_4", 1);
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->state, "Down");
  EXPECT_EQ(p1->phys_state, "Polling");
  EXPECT_EQ(p1->rate_gbps, 10.0);
  EXPECT_EQ(p1->base_lid, 65535);
  const IbPort* p2 = FindPort(run, "mlx5_4", 2);
  ASSERT_NE(p2, nullptr);
  EXPECT_EQ(p2->state, "Init");
  EXPECT_EQ(p2->rate_gbps, 2.5);  // 1X SDR
  EXPECT_EQ(p2->port_guid, "0x0c42a10300b3c8a1");
  EXPECT_EQ(p2->src.line, 18u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

TEST(IbstatReaderTest, SinglePortQueryAndFdr10Rate) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibstat_port.txt",
                                "CA: 'mlx4_0'\n"
                                "Port 2:\n"
                                "State: Active\n"
                                "Physical state: LinkUp\n"
                                "Rate: 40 (FDR10)\n"
                                "Base lid: 12\n"
                                "LMC: 0\n"
                                "SM lid: 1\n"
                                "Capability mask: 0x02514868\n"
                                "Port GUID: 0x0002c903000e0b72\n"
                                "Link layer: InfiniBand\n");
  EXPECT_EQ(run.files[0].format, "ibstat");
  ASSERT_EQ(run.network.ib_ports.size(), 1u);
  const IbPort& p = run.network.ib_ports[0];
  EXPECT_EQ(p.ca, "mlx4_0");
  EXPECT_EQ(p.port, 2);
  EXPECT_EQ(p.state, "Active");
  EXPECT_EQ(p.rate_gbps, 40.0);
  EXPECT_FALSE(p.host.has_value());  // "State:" is ibstat's key, not a host
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

TEST(IbstatReaderTest, PdshPrefixesSplitInterleavedHosts) {
  TempDir dir;
  std::string text;
  // Two hosts, lines interleaved as pdsh prints them.
  std::vector<std::string> lines;
  std::string block = kIbstatTwoPorts;
  size_t pos = 0;
  while (pos < block.size()) {
    size_t nl = block.find('\n', pos);
    lines.push_back(block.substr(pos, nl - pos));
    pos = nl + 1;
  }
  for (const std::string& l : lines) {
    text += "node-01: " + l + "\n";
    text += "node-02: " + l + "\n";
  }
  text += "pdsh@login1: node-03: ssh exited with exit code 255\n";
  laggard::Run run = IngestText(dir, "all.txt", text);
  EXPECT_EQ(run.files[0].format, "ibstat");
  ASSERT_EQ(run.network.ib_ports.size(), 4u);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 0u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  for (const char* host : {"node-01", "node-02"}) {
    const IbPort* p = FindPort(run, "mlx5_4", 2, host);
    ASSERT_NE(p, nullptr) << host;
    EXPECT_EQ(p->state, "Init");
  }
  EXPECT_EQ(FindPort(run, "mlx5_4", 2, "node-02")->src.line, 36u);
}

TEST(IbstatReaderTest, DshbakCoalescedHostListGivesEveryHostItsPorts) {
  TempDir dir;
  std::string text = "----------------\nnode[01-03]\n----------------\n";
  text += kIbstatTwoPorts;
  text +=
      "----------------\ngpu-b7\n----------------\nCA 'mlx5_0'\n\tNumber of ports: 1\n"
      "\tPort 1:\n\t\tState: Active\n\t\tRate: 200\n";
  laggard::Run run = IngestText(dir, "dshbak.txt", text);
  ASSERT_EQ(run.network.ib_ports.size(), 3u * 2u + 1u);
  for (const char* host : {"node01", "node02", "node03"}) {
    EXPECT_NE(FindPort(run, "mlx5_4", 1, host), nullptr) << host;
  }
  ASSERT_NE(FindPort(run, "mlx5_0", 1, "gpu-b7"), nullptr);
  EXPECT_EQ(FindPort(run, "mlx5_0", 1, "gpu-b7")->rate_gbps, 200.0);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 0u);
}

TEST(IbstatReaderTest, AnsibleOutputNamesEachHost) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "ansible.txt",
                 "gpu-a1 | CHANGED | rc=0 >>\nCA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n"
                 "gpu-a2 | CHANGED | rc=0 >>\nCA 'mlx5_0'\n\tPort 1:\n\t\tState: Down\n");
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_EQ(FindPort(run, "mlx5_0", 1, "gpu-a1")->state, "Active");
  EXPECT_EQ(FindPort(run, "mlx5_0", 1, "gpu-a2")->state, "Down");
}

TEST(IbstatReaderTest, PortGuidListAndShortFormAreRecognisedAndHoldNothing) {
  TempDir dir;
  laggard::Run guids = IngestText(dir, "ibstat_p.txt", "0x946dae0300cde72c\n0x946dae0300cde884\n");
  EXPECT_EQ(guids.files[0].format, "ibstat");
  EXPECT_TRUE(guids.network.ib_ports.empty());
  EXPECT_EQ(guids.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(guids.diagnostics.TotalOfKind(DiagKind::kSkippedFile), 0u);

  laggard::Run short_form = IngestText(dir, "ibstat_s.txt",
                                       "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n"
                                       "CA 'mlx5_1'\n\tCA type: MT4129\n\tNumber of ports: 1\n");
  EXPECT_EQ(short_form.files[0].format, "ibstat");
  EXPECT_TRUE(short_form.network.ib_ports.empty());
  EXPECT_EQ(short_form.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(IbstatReaderTest, CrlfLineEndingsReadTheSame) {
  TempDir dir;
  std::string crlf;
  for (char c : std::string(kIbstatTwoPorts)) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  laggard::Run run = IngestText(dir, "ibstat_crlf.txt", crlf);
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_EQ(FindPort(run, "mlx5_4", 1)->link_layer, "InfiniBand");
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

// -------------------------------------------------------------- ibstatus

TEST(IbstatusReaderTest, OneLaneAndFourLanePortsAndDownStates) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibstatus.txt",
                                "Infiniband device 'mlx5_0' port 1 status:\n"
                                "\tdefault gid:\t fe80:0000:0000:0000:b859:9f03:00d4:4f8e\n"
                                "\tbase lid:\t 0x12\n"
                                "\tsm lid:\t\t 0x1\n"
                                "\tstate:\t\t 4: ACTIVE\n"
                                "\tphys state:\t 5: LinkUp\n"
                                "\trate:\t\t 100 Gb/sec (4X EDR)\n"
                                "\tlink_layer:\t InfiniBand\n"
                                "\n"
                                "Infiniband device 'mlx5_1' port 1 status:\n"
                                "\tdefault gid:\t fe80:0000:0000:0000:b859:9f03:00d4:4f8f\n"
                                "\tbase lid:\t 0x13\n"
                                "\tsm lid:\t\t 0x1\n"
                                "\tstate:\t\t 4: ACTIVE\n"
                                "\tphys state:\t 5: LinkUp\n"
                                "\trate:\t\t 25 Gb/sec (1X EDR)\n"
                                "\tlink_layer:\t InfiniBand\n"
                                "\n"
                                "Infiniband device 'mlx5_2' port 1 status:\n"
                                "\tdefault gid:\t unknown\n"
                                "\tbase lid:\t 0xffff\n"
                                "\tsm lid:\t\t 0x0\n"
                                "\tstate:\t\t 1: DOWN\n"
                                "\tphys state:\t 2: Polling\n"
                                "\trate:\t\t 10 Gb/sec (4X)\n"
                                "\tlink_layer:\t IB\n"
                                "\n"
                                "Infiniband device 'mlx5_3' port 1 status:\n"
                                "\tdefault gid:\t fe80:0000:0000:0000:b859:9f03:00d4:4f90\n"
                                "\tbase lid:\t unknown\n"
                                "\tsm lid:\t\t unknown\n"
                                "\tstate:\t\t 2: INIT\n"
                                "\tphys state:\t 3: Disabled\n"
                                "\trate:\t\t 2.5 Gb/sec (1X)\n"
                                "\tlink_layer:\t InfiniBand\n");
  EXPECT_EQ(run.files[0].format, "ibstatus");
  ASSERT_EQ(run.network.ib_ports.size(), 4u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  const IbPort* four = FindPort(run, "mlx5_0");
  EXPECT_EQ(four->width, 4);
  EXPECT_EQ(four->rate_gbps, 100.0);
  EXPECT_EQ(four->base_lid, 0x12);
  const IbPort* one = FindPort(run, "mlx5_1");
  EXPECT_EQ(one->width, 1);
  EXPECT_EQ(one->rate_gbps, 25.0);
  EXPECT_EQ(one->src.line, 10u);
  const IbPort* down = FindPort(run, "mlx5_2");
  EXPECT_EQ(down->state, "Down");
  EXPECT_EQ(down->phys_state, "Polling");
  EXPECT_EQ(down->link_layer, "InfiniBand");  // old ibstatus: "IB"
  EXPECT_FALSE(down->port_guid.has_value());
  const IbPort* init = FindPort(run, "mlx5_3");
  EXPECT_EQ(init->state, "Init");
  EXPECT_EQ(init->phys_state, "Disabled");
  EXPECT_EQ(init->rate_gbps, 2.5);
  EXPECT_EQ(init->width, 1);
  EXPECT_FALSE(init->base_lid.has_value());  // "unknown", not 0
  EXPECT_FALSE(init->sm_lid.has_value());
}

TEST(IbstatusReaderTest, PdshPrefixedBlocksOfTwoHosts) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibstatus_all.txt",
                                "a01: Infiniband device 'mlx5_0' port 1 status:\n"
                                "a02: Infiniband device 'mlx5_0' port 1 status:\n"
                                "a01: \tstate:\t\t 4: ACTIVE\n"
                                "a02: \tstate:\t\t 1: DOWN\n"
                                "a01: \trate:\t\t 400 Gb/sec (4X NDR)\n"
                                "a02: \trate:\t\t 400 Gb/sec (4X NDR)\n"
                                "a01: \n"
                                "a02:\n");
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_EQ(FindPort(run, "mlx5_0", 1, "a01")->state, "Active");
  EXPECT_EQ(FindPort(run, "mlx5_0", 1, "a02")->state, "Down");
  EXPECT_EQ(FindPort(run, "mlx5_0", 1, "a02")->rate_gbps, 400.0);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 0u);
}

// ----------------------------------------------------------- ibv_devinfo

TEST(IbvDevinfoReaderTest, VerboseOutputGivesRateAsWidthTimesLaneSpeed) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "ibv_devinfo_v.txt",
                 "hca_id:\tmlx5_0\n"
                 "\ttransport:\t\t\tInfiniBand (0)\n"
                 "\tfw_ver:\t\t\t\t20.35.1012\n"
                 "\tnode_guid:\t\t\t0c42:a103:00b3:c8a0\n"
                 "\tvendor_id:\t\t\t0x02c9\n"
                 "\tvendor_part_id:\t\t\t4123\n"
                 "\tphys_port_cnt:\t\t\t1\n"
                 "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
                 "\tdevice_cap_flags:\t\t0x25e1361\n"
                 "\t\t\t\t\tBAD_PKEY_CNTR\n"
                 "\t\t\t\t\tBAD_QKEY_CNTR\n"
                 "\tgeneral_odp_caps:\n"
                 "\t\t\t\t\tODP_SUPPORT\n"
                 "\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff\n"
                 "\tcore clock not supported\n"
                 "\t\tport:\t1\n"
                 "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
                 "\t\t\tmax_mtu:\t\t4096 (5)\n"
                 "\t\t\tactive_mtu:\t\t4096 (5)\n"
                 "\t\t\tsm_lid:\t\t\t1\n"
                 "\t\t\tport_lid:\t\t16\n"
                 "\t\t\tport_lmc:\t\t0x00\n"
                 "\t\t\tlink_layer:\t\tInfiniBand\n"
                 "\t\t\tmax_msg_sz:\t\t0x40000000\n"
                 "\t\t\tactive_width:\t\t4X (2)\n"
                 "\t\t\tactive_speed:\t\t50.0 Gbps (64)\n"
                 "\t\t\tphys_state:\t\tLINK_UP (5)\n"
                 "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:00b3:c8a0\n"
                 "\n"
                 "hca_id:\tmlx5_1\n"
                 "\ttransport:\t\t\tInfiniBand (0)\n"
                 "\tfw_ver:\t\t\t\t22.36.1010\n"
                 "\tnode_guid:\t\t\t0c42:a103:00b3:c8a1\n"
                 "\t\tport:\t1\n"
                 "\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
                 "\t\t\tmax_mtu:\t\t4096 (5)\n"
                 "\t\t\tactive_mtu:\t\t1024 (3)\n"
                 "\t\t\tlink_layer:\t\tEthernet\n"
                 "\t\t\tactive_width:\t\t1X (1)\n"
                 "\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
                 "\t\t\tphys_state:\t\tDISABLED (3)\n"
                 "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0e42:a1ff:feb3:c8a1, RoCE v1\n"
                 "\t\t\tGID[  1]:\t\tfe80:0000:0000:0000:0e42:a1ff:feb3:c8a1, RoCE v2\n"
                 "\n");
  EXPECT_EQ(run.files[0].format, "ibv_devinfo");
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
  const IbPort* hdr = FindPort(run, "mlx5_0");
  EXPECT_EQ(hdr->width, 4);
  EXPECT_EQ(hdr->rate_gbps, 200.0);  // 4 x 50.0 (HDR)
  EXPECT_EQ(hdr->phys_state, "LinkUp");
  EXPECT_EQ(hdr->port_guid, "0x0c42a10300b3c8a0");
  EXPECT_EQ(hdr->node_guid, "0x0c42a10300b3c8a0");
  EXPECT_EQ(hdr->ca_type, "MT4123");
  EXPECT_EQ(hdr->src.line, 16u);
  const IbPort* roce = FindPort(run, "mlx5_1");
  EXPECT_EQ(roce->state, "Down");
  EXPECT_EQ(roce->phys_state, "Disabled");
  EXPECT_EQ(roce->width, 1);
  EXPECT_EQ(roce->rate_gbps, 25.0);
  EXPECT_EQ(roce->active_mtu_bytes, 1024);
  EXPECT_FALSE(roce->port_guid.has_value());  // a RoCE GID holds no port GUID
  EXPECT_FALSE(roce->ca_type.has_value());    // no vendor id printed
}

TEST(IbvDevinfoReaderTest, TwoPortDeviceAndListOutput) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibv_devinfo.txt",
                                "hca_id:\tmlx4_1\n"
                                "\ttransport:\t\t\tInfiniBand (0)\n"
                                "\tphys_port_cnt:\t\t\t2\n"
                                "\tDevice ports:\n"
                                "\t\tport:\t1\n"
                                "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
                                "\t\t\tport_lid:\t\t22\n"
                                "\n"
                                "\t\tport:\t2\n"
                                "\t\t\tstate:\t\t\tPORT_INIT (2)\n"
                                "\t\t\tport_lid:\t\t0\n"
                                "\n");
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_EQ(FindPort(run, "mlx4_1", 1)->state, "Active");
  EXPECT_EQ(FindPort(run, "mlx4_1", 2)->state, "Init");
  EXPECT_EQ(FindPort(run, "mlx4_1", 2)->src.line, 9u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

// --------------------------------------------------------------- ethtool

constexpr const char* kEthtoolEth0 =
    "Settings for eth0:\n"
    "\tSupported ports: [ FIBRE ]\n"
    "\tSupported link modes:   1000baseKX/Full\n"
    "\t                        25000baseCR/Full\n"
    "\t                        100000baseCR4/Full\n"
    "\tSupported pause frame use: Symmetric\n"
    "\tSupports auto-negotiation: Yes\n"
    "\tAdvertised link modes:  25000baseCR/Full\n"
    "\t                        100000baseCR4/Full\n"
    "\tAdvertised auto-negotiation: Yes\n"
    "\tSpeed: 25000Mb/s\n"
    "\tDuplex: Full\n"
    "\tAuto-negotiation: on\n"
    "\tPort: Direct Attach Copper\n"
    "\tPHYAD: 0\n"
    "\tTransceiver: internal\n"
    "Cannot get wake-on-lan settings: Operation not permitted\n"
    "\tCurrent message level: 0x00000004 (4)\n"
    "\t\t\t       link\n"
    "\tLink detected: yes\n";

TEST(EthtoolReaderTest, MultiLineLinkModesShowANegotiatedDownLink) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ethtool_eth0.txt", kEthtoolEth0);
  EXPECT_EQ(run.files[0].format, "ethtool");
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  const EthLink& e = run.network.eth_links[0];
  EXPECT_EQ(e.speed_mbps, 25000);
  EXPECT_EQ(e.port, "Direct Attach Copper");
  EXPECT_EQ(e.auto_negotiation, true);
  EXPECT_EQ(e.supported_link_modes, (std::vector<std::string>{"1000baseKX/Full", "25000baseCR/Full",
                                                              "100000baseCR4/Full"}));
  EXPECT_EQ(e.advertised_link_modes,
            (std::vector<std::string>{"25000baseCR/Full", "100000baseCR4/Full"}));
  EXPECT_EQ(e.link_detected, true);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

TEST(EthtoolReaderTest, UnknownSpeedAndNoLinkStayUnknownNotZero) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ethtool_ens1f1.txt",
                                "Settings for ens1f1:\n"
                                "\tSupported ports: [ FIBRE ]\n"
                                "\tSupported link modes:   Not reported\n"
                                "\tSpeed: Unknown!\n"
                                "\tDuplex: Unknown! (255)\n"
                                "\tAuto-negotiation: off\n"
                                "\tPort: FIBRE\n"
                                "\tLink detected: no\n");
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  const EthLink& e = run.network.eth_links[0];
  EXPECT_EQ(e.iface, "ens1f1");
  EXPECT_FALSE(e.speed_mbps.has_value());
  EXPECT_FALSE(e.duplex.has_value());
  EXPECT_EQ(e.link_detected, false);
  EXPECT_EQ(e.port, "FIBRE");
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

TEST(EthtoolReaderTest, StatisticsAfterSettingsJoinTheSameLink) {
  TempDir dir;
  std::string text = kEthtoolEth0;
  text +=
      "NIC statistics:\n     rx_packets: 1234567\n     tx_packets: 7654321\n"
      "     rx_crc_errors_phy: 17\n     [0]: rx_bytes: 99\n";
  laggard::Run run = IngestText(dir, "eth0_all.txt", text);
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  const EthLink& e = run.network.eth_links[0];
  EXPECT_EQ(e.speed_mbps, 25000);
  EXPECT_EQ(e.counters.size(), 4u);
  EXPECT_EQ(e.counters.at("rx_packets"), 1234567);
  EXPECT_EQ(e.counters.at("rx_crc_errors_phy"), 17);
  EXPECT_EQ(e.counters.at("[0]: rx_bytes"), 99);
  EXPECT_EQ(run.files[0].records, 1u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

TEST(EthtoolReaderTest, StatisticsFileJoinsSettingsOfTheSameHostFolder) {
  TempDir dir;
  WriteFile(dir.File("node-05/ethtool_eth0.txt"), kEthtoolEth0);
  WriteFile(dir.File("node-05/ethtool-S-eth0.txt"), "NIC statistics:\n     rx_packets: 5\n");
  // Another host's statistics stay apart, as a record with counters only.
  WriteFile(dir.File("node-06/ethtool-S-eth0.txt"), "NIC statistics:\n     rx_packets: 6\n");
  laggard::Run run = IngestPaths({dir.path()});
  ASSERT_EQ(run.network.eth_links.size(), 2u);
  const EthLink* five = FindLink(run, "eth0", "node-05");
  ASSERT_NE(five, nullptr);
  EXPECT_EQ(five->speed_mbps, 25000);
  EXPECT_EQ(five->counters.at("rx_packets"), 5);
  const EthLink* six = FindLink(run, "eth0", "node-06");
  ASSERT_NE(six, nullptr);
  EXPECT_FALSE(six->speed_mbps.has_value());
  EXPECT_EQ(six->counters.at("rx_packets"), 6);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 0u);
}

TEST(EthtoolReaderTest, StatisticsWithoutAnyInterfaceNameKeepAnEmptyName) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "stats.txt", "NIC statistics:\n     rx_packets: 5\n");
  EXPECT_EQ(run.files[0].format, "ethtool");
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  EXPECT_EQ(run.network.eth_links[0].iface, "");
  EXPECT_EQ(run.network.eth_links[0].counters.at("rx_packets"), 5);
}

TEST(EthtoolReaderTest, PdshPrefixedSettingsAndStatisticsOfTwoHosts) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ethtool_all.txt",
                                "gpu01: Settings for ib0:\n"
                                "gpu02: Settings for ib0:\n"
                                "gpu01: \tSpeed: 200000Mb/s\n"
                                "gpu02: \tSpeed: 100000Mb/s\n"
                                "gpu01: \tLink detected: yes\n"
                                "gpu02: \tLink detected: yes\n"
                                "gpu01: NIC statistics:\n"
                                "gpu01:      rx_packets: 10\n"
                                "gpu02: NIC statistics:\n"
                                "gpu02:      rx_packets: 20\n");
  ASSERT_EQ(run.network.eth_links.size(), 2u);
  EXPECT_EQ(FindLink(run, "ib0", "gpu01")->speed_mbps, 200000);
  EXPECT_EQ(FindLink(run, "ib0", "gpu02")->speed_mbps, 100000);  // the slow one
  EXPECT_EQ(FindLink(run, "ib0", "gpu02")->counters.at("rx_packets"), 20);
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 0u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

TEST(EthtoolReaderTest, EthtoolDriverInfoIsNotTakenForAHostPrefix) {
  TempDir dir;
  std::string text = kEthtoolEth0;
  text += "driver: mlx5_core\nversion: 5.8-1.0.1\nfirmware-version: 22.36.1010 (MT_0000000359)\n";
  laggard::Run run = IngestText(dir, "ethtool_eth0_i.txt", text);
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  EXPECT_FALSE(run.network.eth_links[0].host.has_value());
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 0u);
}

// ------------------------------------------------------------ switch map

TEST(SwitchMapReaderTest, HostSwitchCsvFillsTheMap) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "switches.csv",
                 "# from the fabric manager\nhost,switch\nnode-01,leaf-3\nnode-02,leaf-3\n"
                 "node-03,leaf-4\n");
  EXPECT_EQ(run.files[0].format, "switch-map");
  EXPECT_EQ(run.files[0].records, 3u);
  EXPECT_EQ(run.network.switch_of.size(), 3u);
  EXPECT_EQ(run.network.switch_of.at("node-03"), "leaf-4");
  EXPECT_EQ(run.network.switch_src.at("node-03").line, 5u);
}

TEST(SwitchMapReaderTest, OtherColumnNamesDelimitersAndUnknownSwitches) {
  TempDir dir;
  laggard::Run tsv = IngestText(dir, "map.tsv",
                                "rack\thostname\tleaf_switch\n"
                                "r1\t\"gpu-a1\"\tsw-a\n"
                                "r1\tgpu-a2\tN/A\n");
  EXPECT_EQ(tsv.files[0].format, "switch-map");
  ASSERT_EQ(tsv.network.switch_of.size(), 1u);
  EXPECT_EQ(tsv.network.switch_of.at("gpu-a1"), "sw-a");
  EXPECT_EQ(tsv.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  laggard::Run blanks = IngestText(dir, "map.txt", "node   tor\nn1     tor-1\nn2     tor-2\n");
  EXPECT_EQ(blanks.files[0].format, "switch-map");
  EXPECT_EQ(blanks.network.switch_of.at("n2"), "tor-2");
}

TEST(SwitchMapReaderTest, AStepCsvWithASwitchColumnStaysAStepCsv) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "steps.csv", "rank,step,step_time_ms,host,switch\n0,1,800,n1,leaf-1\n");
  EXPECT_EQ(run.files[0].format, "csv");
  EXPECT_EQ(run.total_steps(), 1u);
}

// ------------------------------------------------------- host prefixes

TEST(HostLinesTest, ExpandsPdshHostLists) {
  EXPECT_EQ(ExpandHostList("node[01-03,07]"),
            (std::vector<std::string>{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(ExpandHostList("a[1-2]-b[8-9],c"),
            (std::vector<std::string>{"a1-b8", "a1-b9", "a2-b8", "a2-b9", "c"}));
  EXPECT_EQ(ExpandHostList("gpu-7"), (std::vector<std::string>{"gpu-7"}));
  EXPECT_FALSE(ExpandHostList("node[3-1]").has_value());
  EXPECT_FALSE(ExpandHostList("node[1-999999999]").has_value());
  EXPECT_FALSE(ExpandHostList("not a host").has_value());
}

TEST(HostLinesTest, TaskLabelsAreStreamsWithoutAHost) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "srun_l.txt",
                                "0: CA 'mlx5_0'\n1: CA 'mlx5_0'\n0: \tPort 1:\n1: \tPort 1:\n"
                                "0: \t\tState: Active\n1: \t\tState: Down\n");
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_FALSE(run.network.ib_ports[0].host.has_value());
  EXPECT_EQ(Count(run, DiagCode::kNetNoHost), 1u);
  std::multiset<std::string> states;
  for (const IbPort& p : run.network.ib_ports) states.insert(p.state.value_or("?"));
  EXPECT_EQ(states, (std::multiset<std::string>{"Active", "Down"}));
}

// ---------------------------------------------------------- corruption

TEST(NetworkCorruptionTest, TruncatedIbstatKeepsCompletePortsAndCountsTheCut) {
  TempDir dir;
  std::string text = std::string(kIbstatTwoPorts) +
                     "CA 'mlx5_5'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware versi";
  laggard::Run run = IngestText(dir, "ibstat_cut.txt", text);
  EXPECT_EQ(run.network.ib_ports.size(), 2u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 2u);  // the cut line, the missing port
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{31, 28}));

  // Cut right after "Port 1:": the port has no fields.
  laggard::Run cut_port =
      IngestText(dir, "ibstat_cut_port.txt", "CA 'mlx5_0'\n\tNumber of ports: 1\n\tPort 1:\n");
  EXPECT_TRUE(cut_port.network.ib_ports.empty());
  EXPECT_EQ(BadLines(cut_port), (std::vector<uint64_t>{3}));
}

TEST(NetworkCorruptionTest, GarbledIbstatValuesAreCountedAndThePortKept) {
  TempDir dir;
  std::string text = kIbstatTwoPorts;
  text.replace(text.find("Rate: 10\n"), 9, "Rate: fast\n");
  text.replace(text.find("\t\tLMC: 0\n"), 8, "\t\tL#\x01C 0\n");
  text.replace(text.find("State: Initializing"), 19, "State: ???");
  text += "\t\tFuture field: 42\n";  // unknown keys are ignored
  laggard::Run run = IngestText(dir, "ibstat_garbled.txt", text);
  ASSERT_EQ(run.network.ib_ports.size(), 2u);
  const IbPort* p1 = FindPort(run, "mlx5_4", 1);
  EXPECT_FALSE(p1->rate_gbps.has_value());
  EXPECT_EQ(p1->state, "Down");
  EXPECT_FALSE(FindPort(run, "mlx5_4", 2)->state.has_value());  // "???": unknown, no error
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{11, 13}));
}

TEST(NetworkCorruptionTest, IbstatusBadValuesAndTextOutsideBlocks) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibstatus_bad.txt",
                                "garbage before\n"
                                "Infiniband device 'mlx5_0' port 1 status:\n"
                                "\tbase lid:\t 0xZZ\n"
                                "\tstate:\t\t 9: EXPLODED\n"
                                "\trate:\t\t fast\n"
                                "\tphys state:\t 5: LinkUp\n"
                                "\tno colon here\n"
                                "\n"
                                "Infiniband device 'mlx5_1' port 1 status:\n");
  ASSERT_EQ(run.network.ib_ports.size(), 1u);
  const IbPort& p = run.network.ib_ports[0];
  EXPECT_EQ(p.phys_state, "LinkUp");
  EXPECT_FALSE(p.state.has_value());
  EXPECT_FALSE(p.rate_gbps.has_value());
  EXPECT_FALSE(p.base_lid.has_value());
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 6u);
  EXPECT_EQ(BadLines(run),
            (std::vector<uint64_t>{1, 3, 4, 5, 7}));  // 5 examples kept; 9 is the 6th
}

TEST(NetworkCorruptionTest, IbvDevinfoCutAfterPortLineAndUnknownState) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ibv_bad.txt",
                                "hca_id:\tmlx5_0\n"
                                "\tnode_guid:\t\t\tnot-a-guid\n"
                                "\t\tport:\t1\n"
                                "\t\t\tstate:\t\t\tPORT_ON_FIRE (9)\n"
                                "\t\t\tactive_mtu:\t\tinvalid MTU (0)\n"
                                "\t\t\tsm_lid:\t\t\t-4\n"
                                "\n"
                                "\t\tport:\t2\n");
  ASSERT_EQ(run.network.ib_ports.size(), 1u);
  EXPECT_FALSE(run.network.ib_ports[0].state.has_value());
  EXPECT_FALSE(run.network.ib_ports[0].active_mtu_bytes.has_value());  // "invalid": unknown
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{2, 4, 6, 8}));
}

TEST(NetworkCorruptionTest, EthtoolBadSpeedCounterAndUnprintableBytes) {
  TempDir dir;
  laggard::Run run = IngestText(dir, "ethtool_bad.txt",
                                "Settings for eth3:\n"
                                "\tSpeed: 1x0Mb/s\n"
                                "\tDuplex: Sideways\n"
                                "\tLink detected: maybe\n"
                                "\t\x01\x02\x03\n"
                                "\tPort: Twisted Pair\n"
                                "NIC statistics:\n"
                                "     rx_packets: lots\n"
                                "     tx_packets: 12\n"
                                "Settings for eth4:\n");
  ASSERT_EQ(run.network.eth_links.size(), 1u);
  const EthLink& e = run.network.eth_links[0];
  EXPECT_EQ(e.iface, "eth3");
  EXPECT_FALSE(e.speed_mbps.has_value());
  EXPECT_FALSE(e.duplex.has_value());
  EXPECT_FALSE(e.link_detected.has_value());
  EXPECT_EQ(e.port, "Twisted Pair");
  EXPECT_EQ(e.counters.at("tx_packets"), 12);
  EXPECT_EQ(e.counters.count("rx_packets"), 0u);
  EXPECT_EQ(Count(run, DiagCode::kNetBadRecord), 6u);
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{2, 3, 4, 5, 8}));
}

TEST(NetworkCorruptionTest, EthtoolBlockExplainedByAMessageIsNoError) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "ethtool_missing.txt",
                 "Settings for eth9:\nCannot get device settings: No such device\n"
                 "Cannot get wake-on-lan settings: No such device\nNo data available\n");
  EXPECT_TRUE(run.network.eth_links.empty());
  EXPECT_EQ(run.files[0].format, "ethtool");
  EXPECT_EQ(run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
}

TEST(NetworkCorruptionTest, SwitchMapRowsWithoutSwitchAndConflicts) {
  TempDir dir;
  laggard::Run run =
      IngestText(dir, "switch_map.csv",
                 "host,switch\nn1,leaf-1\nn2,\nn1,leaf-2\nn1,leaf-1\n,leaf-9\nn3,leaf-3\n");
  EXPECT_EQ(run.network.switch_of.size(), 2u);
  EXPECT_EQ(run.network.switch_of.at("n1"), "leaf-1");
  EXPECT_EQ(run.network.switch_src.at("n1").line, 2u);
  EXPECT_EQ(BadLines(run), (std::vector<uint64_t>{3, 4, 6}));
}

TEST(NetworkCorruptionTest, EveryReaderSurvivesBinaryAndEmptyInput) {
  std::vector<std::unique_ptr<TextReader>> readers;
  readers.push_back(MakeIbstatReader());
  readers.push_back(MakeIbstatusReader());
  readers.push_back(MakeIbvDevinfoReader());
  readers.push_back(MakeEthtoolReader());
  readers.push_back(MakeSwitchMapReader());
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 131 + 7) % 256));
  for (const auto& r : readers) {
    EXPECT_EQ(r->Sniff(""), 0) << r->name();
    EXPECT_EQ(r->Sniff(junk), 0) << r->name();
  }
  TempDir dir;
  laggard::Run run = IngestText(dir, "junk.bin", junk);
  EXPECT_TRUE(run.network.empty());
}

}  // namespace
}  // namespace laggard
