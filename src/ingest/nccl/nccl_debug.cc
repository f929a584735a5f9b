// NCCL_DEBUG=INFO logs: the line collector (nccl_debug.h) and the reader of
// whole NCCL logs. Worked example of what one process's lines give:
//
//   node-a:919:1150 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB
//   eth0:10.0.0.1<0> node-a:919:1150 [0] NCCL INFO Using network IB node-a:919:1150 [0] NCCL INFO
//   comm 0x5612 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9a - Init START
//   node-a:919:1150 [0] NCCL INFO Channel 00/0 : 8[0] -> 15[7] via P2P/IPC/read
//   node-a:919:1150 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [receive] via NET/IB/0/GDRDMA
//   node-a:919:1150 [0] NCCL INFO comm 0x5612 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000
//   commId 0x9a - Init COMPLETE
//
// -> host "node-a", pid 919, cudaDev 0, rank 8 of 16, bus id "1b000", net
//    "IB", nics {"mlx5_0:1/IB", "mlx5_1:1/IB"}, gdr true, two connections.

#include "ingest/nccl/nccl_debug.h"

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/hang_lines.h"
#include "ingest/common/host_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/nccl/nccl_readers.h"

namespace laggard {
namespace {

constexpr std::string_view kLevels[] = {"INFO", "WARN", "TRACE", "CALL"};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// Above this a "[N]" in NCCL's prefix is not a CUDA device: NCCL's proxy
// threads print an unset device there ("[959657526]", "[32707]").
constexpr int64_t kMaxCudaDevice = 1024;

// "[3]": the device slot of NCCL's line prefix, whatever number it holds.
bool IsDeviceSlot(std::string_view tok) {
  return tok.size() >= 3 && tok.front() == '[' && tok.back() == ']' &&
         AllDigits(tok.substr(1, tok.size() - 2));
}

// The CUDA device of a device slot; nullopt when the number cannot be one.
std::optional<int32_t> DeviceToken(std::string_view tok) {
  if (!IsDeviceSlot(tok)) return std::nullopt;
  std::string_view digits = tok.substr(1, tok.size() - 2);
  if (digits.size() > 6) return std::nullopt;
  auto dev = ParseInt<int64_t>(digits);
  if (!dev || *dev > kMaxCudaDevice) return std::nullopt;
  return static_cast<int32_t>(*dev);
}

struct HostPidTid {
  std::string_view host;
  int64_t pid = 0;
};

// "node-a:919:1150", also behind a launcher tag: "[default0]:node-a:919:1150".
std::optional<HostPidTid> HostPidTidToken(std::string_view tok) {
  size_t c2 = tok.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0 || !AllDigits(tok.substr(c2 + 1)))
    return std::nullopt;
  size_t c1 = tok.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || !AllDigits(tok.substr(c1 + 1, c2 - c1 - 1)))
    return std::nullopt;
  std::string_view host = tok.substr(0, c1);
  size_t tag = host.rfind(':');
  if (tag != std::string_view::npos) host = host.substr(tag + 1);
  host = TrimToHostName(host);
  if (host.empty()) return std::nullopt;
  auto pid = ParseInt<int64_t>(tok.substr(c1 + 1, c2 - c1 - 1));
  if (!pid) return std::nullopt;
  return HostPidTid{host, *pid};
}

struct Prefix {
  std::optional<std::string_view> host;
  std::optional<int64_t> pid;
  std::optional<int32_t> dev;
};

// The text before the level: "host:pid:tid [dev]" (WARN: then "file:line
// (func)"), or only "[dev]" in NCCL before 2.4, or nothing. A device slot
// with a number no device has leaves `dev` unset: the line is keyed by
// host and pid.
Prefix ParsePrefix(std::string_view before) {
  Prefix out;
  std::vector<std::string_view> toks = SplitBlanks(before);
  for (size_t i = 0; i + 1 < toks.size(); ++i) {
    auto hpt = HostPidTidToken(toks[i]);
    if (!hpt || !IsDeviceSlot(toks[i + 1])) continue;
    out.host = hpt->host;
    out.pid = hpt->pid;
    out.dev = DeviceToken(toks[i + 1]);
    return out;
  }
  for (size_t i = toks.size(); i-- > 0;) {
    if (auto dev = DeviceToken(toks[i])) {
      out.dev = dev;
      break;
    }
  }
  return out;
}

bool HasProcessPrefix(std::string_view line) {
  if (line.find(" [") == std::string_view::npos) return false;
  std::vector<std::string_view> toks = SplitBlanks(line);
  for (size_t i = 0; i + 1 < toks.size(); ++i) {
    if (HostPidTidToken(toks[i]) && IsDeviceSlot(toks[i + 1])) return true;
  }
  return false;
}

// Position of "NCCL <LEVEL>" in `line` and the level's length, or npos.
size_t FindLevel(std::string_view line, size_t& level_len) {
  size_t p = 0;
  while ((p = line.find("NCCL ", p)) != std::string_view::npos) {
    std::string_view rest = line.substr(p + 5);
    for (std::string_view lv : kLevels) {
      if (StartsWith(rest, lv) && (rest.size() == lv.size() || rest[lv.size()] == ' ')) {
        level_len = 5 + lv.size();
        return p;
      }
    }
    p += 5;
  }
  return std::string_view::npos;
}

// "2.19.3+cuda12.2" -> "2.19.3".
std::optional<std::string> VersionOf(std::string_view text) {
  std::vector<std::string_view> toks = SplitBlanks(text);
  if (toks.empty()) return std::nullopt;
  std::string_view v = toks[0];
  v = v.substr(0, v.find('+'));
  if (v.empty() || !IsDigit(v.front()) || v.find('.') == std::string_view::npos)
    return std::nullopt;
  for (char c : v) {
    if (!IsDigit(c) && c != '.') return std::nullopt;
  }
  return std::string(v);
}

// "15[41000]" or "15": the rank before the bracket (a CUDA device or a bus
// id, depending on the NCCL version).
std::optional<int32_t> PeerRank(std::string_view tok) {
  size_t b = tok.find('[');
  std::string_view digits = tok.substr(0, b);
  if (b != std::string_view::npos) {
    if (tok.back() != ']') return std::nullopt;
    for (char c : tok.substr(b + 1, tok.size() - b - 2)) {
      if (!IsDigit(c) && !((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return std::nullopt;
    }
  }
  if (!AllDigits(digits)) return std::nullopt;
  return ParseInt<int32_t>(digits);
}

}  // namespace

bool IsNcclLogLine(std::string_view line) {
  size_t len = 0;
  return FindLevel(line, len) != std::string_view::npos ||
         line.find("NCCL version ") != std::string_view::npos;
}

NcclLogCollector::Process& NcclLogCollector::ProcessFor(const std::optional<std::string>& host,
                                                        std::optional<int64_t> pid,
                                                        std::optional<int32_t> dev,
                                                        uint64_t line_number,
                                                        const ReaderContext& ctx) {
  Key key{host.value_or(""), pid.value_or(-1), dev.value_or(-1)};
  auto [it, inserted] = index_.emplace(key, processes_.size());
  if (inserted) {
    Process p;
    p.info.host = host;
    p.info.pid = pid;
    p.info.cuda_device = dev;
    p.info.src = ctx.Ref(line_number);
    processes_.push_back(std::move(p));
  }
  return processes_[it->second];
}

bool NcclLogCollector::Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx) {
  size_t level_len = 0;
  size_t at = FindLevel(line, level_len);
  if (at == std::string_view::npos) {
    size_t v = line.find("NCCL version ");
    if (v != std::string_view::npos) {
      auto version = VersionOf(line.substr(v + 13));
      if (!version) {
        ctx.diag().Add(
            DiagCode::kNetBadRecord, ctx.path, line_number,
            fmt::format("NCCL version line without a version: \"{}\"", Printable(line, 100)));
      } else if (!banner_version_) {
        banner_version_ = std::move(version);
      }
      return true;
    }
    if (HasProcessPrefix(line)) {
      ctx.diag().Add(
          DiagCode::kNetBadRecord, ctx.path, line_number,
          fmt::format("NCCL log line without INFO/WARN (cut?): \"{}\"", Printable(line, 100)));
      return true;
    }
    return false;
  }
  std::string_view level = line.substr(at + 5, level_len - 5);
  if (level == "TRACE" || level == "CALL") return true;
  Prefix prefix = ParsePrefix(line.substr(0, at));
  std::optional<std::string> host;
  if (prefix.host) host = std::string(*prefix.host);
  Process& p = ProcessFor(host, prefix.pid, prefix.dev, line_number, ctx);
  std::string_view msg = Trim(line.substr(at + level_len));
  if (level == "WARN") {
    p.info.warnings.emplace_back(msg);
    return true;
  }
  ReadInfo(p, msg, line_number, ctx);
  return true;
}

void NcclLogCollector::ReadInfo(Process& p, std::string_view msg, uint64_t line_number,
                                ReaderContext& ctx) {
  auto bad = [&](std::string_view what) {
    ctx.diag().Add(DiagCode::kNetBadRecord, ctx.path, line_number,
                   fmt::format("{}: \"{}\"", what, Printable(msg, 100)));
  };
  if (StartsWith(msg, "NCCL version ")) {
    auto v = VersionOf(msg.substr(13));
    if (!v) return bad("NCCL version line without a version");
    if (!p.info.nccl_version) p.info.nccl_version = std::move(v);
    return;
  }
  if (msg.find("comm 0x") != std::string_view::npos) {
    if (!ReadComm(p, msg)) bad("communicator line with unreadable rank or size");
    return;
  }
  // A "Channel"/"Ring" line with an arrow or a "rank[dev]" is a connection
  // (the ring listing "Channel 00/02 :  0 1 2 3" has neither); a cut one
  // lacks its " via ".
  bool arrow = msg.find("->") != std::string_view::npos;
  bool via = msg.find(" via ") != std::string_view::npos;
  if (((StartsWith(msg, "Channel ") || StartsWith(msg, "Ring ")) &&
       (arrow || msg.find('[') != std::string_view::npos)) ||
      (StartsWith(msg, "Tree ") && arrow && via)) {
    if (!ReadConnection(p, msg)) bad("connection line with unreadable ranks");
    return;
  }
  if (StartsWith(msg, "NET/") && msg.find("Using [") != std::string_view::npos) {
    if (!ReadNics(p, msg)) bad("network device line without devices");
    return;
  }
  if (StartsWith(msg, "Using network ")) {
    std::string_view net = Trim(msg.substr(14));
    if (net.empty()) return bad("\"Using network\" without a network");
    p.net_named = std::string(net);
    return;
  }
  if (FindIgnoreCase(msg, "GPU Direct RDMA") != std::string::npos) {
    if (FindIgnoreCase(msg, "Disabled") != std::string::npos) {
      p.no_gdr_seen = true;
    } else if (FindIgnoreCase(msg, "Enabled") != std::string::npos) {
      p.gdr_seen = true;
    }
    return;
  }
  if (StartsWith(msg, "Connected all rings")) {
    // NCCL 2.12+: "Connected all rings, use ring PXN 0 GDR 1".
    size_t g = msg.find(" GDR ");
    if (g != std::string_view::npos) {
      std::string_view v = Trim(msg.substr(g + 5));
      if (v == "1") p.gdr_seen = true;
      if (v == "0") p.no_gdr_seen = true;
    }
  }
}

// "comm 0x7f rank 3 nranks 16 cudaDev 3 busId 1a000 - Init COMPLETE" and its
// relatives (ncclCommInitRank..., "nRanks 16 nNodes 2 ...", "- Init START").
// Returns false when a rank or size is printed but unreadable.
bool NcclLogCollector::ReadComm(Process& p, std::string_view msg) {
  std::vector<std::string_view> toks = SplitBlanks(msg.substr(msg.find("comm 0x")));
  std::optional<int32_t> rank, nranks;
  std::optional<std::string> bus_id;
  bool has_rank = false, has_nranks = false, nnodes = false;
  for (size_t i = 0; i < toks.size(); ++i) {
    std::string_view next = i + 1 < toks.size() ? toks[i + 1] : std::string_view();
    if (toks[i] == "rank") {
      has_rank = true;
      rank = ParseInt<int32_t>(next);
    } else if (toks[i] == "nranks" || toks[i] == "nRanks") {
      has_nranks = true;
      nranks = ParseInt<int32_t>(next);
    } else if (toks[i] == "busId" && !next.empty()) {
      bus_id = std::string(next);
    } else if (toks[i] == "nNodes") {
      nnodes = true;
    }
  }
  if (!has_rank && !has_nranks) return true;  // "NVLS comm 0x... headRank 0": not about ranks
  if ((has_rank && (!rank || *rank < 0)) || (has_nranks && (!nranks || *nranks <= 0)) ||
      (rank && nranks && *rank >= *nranks)) {
    return false;
  }
  bool start = msg.find("Init START") != std::string_view::npos || nnodes;
  bool complete = msg.find("Init COMPLETE") != std::string_view::npos;
  if (start) p.setup_nranks = nranks;
  if (complete) {
    for (Connection& c : p.connections) {
      if (!c.pending) continue;
      c.pending = false;
      c.comm_nranks = nranks;
    }
    p.any_complete = true;
    p.setup_nranks.reset();
  }
  if (rank && (!p.have_comm || (nranks && (!p.best_nranks || *nranks > *p.best_nranks)))) {
    p.have_comm = true;
    p.best_rank = rank;
    p.best_nranks = nranks;
    p.best_bus_id = std::move(bus_id);
  } else if (rank == p.best_rank && nranks == p.best_nranks && !p.best_bus_id) {
    p.best_bus_id = std::move(bus_id);  // "nRanks 16 nNodes 2" names no bus id; COMPLETE does
  }
  return true;
}

// "Channel 00/0 : 3[3] -> 4[0] [send] via NET/IB/0/GDRDMA",
// "Ring 00 : 15[41000] -> 0[1b000] [receive] via NET/IB/0",
// "Ring 00 : 0[1b000] -> 7[41000] via direct shared memory".
bool NcclLogCollector::ReadConnection(Process& p, std::string_view msg) {
  size_t sp = msg.find(' ');
  std::string_view word = msg.substr(0, sp);
  std::string_view rest = Trim(msg.substr(sp + 1));
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view chan = Trim(rest.substr(0, colon));
  chan = chan.substr(0, chan.find('/'));
  std::string_view body = rest.substr(colon + 1);
  size_t via_at = body.find(" via ");
  if (via_at == std::string_view::npos) return false;
  std::string_view via = Trim(body.substr(via_at + 5));
  std::string_view ends = body.substr(0, via_at);
  size_t arrow = ends.find("->");
  if (via.empty() || arrow == std::string_view::npos) return false;
  std::vector<std::string_view> right = SplitBlanks(ends.substr(arrow + 2));
  std::vector<std::string_view> left = SplitBlanks(ends.substr(0, arrow));
  if (left.size() != 1 || right.empty() || right.size() > 2) return false;
  auto from = PeerRank(left[0]);
  auto to = PeerRank(right[0]);
  if (!from || !to || *from < 0 || *to < 0) return false;
  Connection c;
  c.conn.from_rank = *from;
  c.conn.to_rank = *to;
  c.conn.via = std::string(via);
  if (AllDigits(chan)) c.conn.channel = ParseInt<int32_t>(chan);
  if (right.size() == 2) {
    if (right[1] == "[send]") {
      c.conn.kind = "send";
    } else if (right[1] == "[receive]" || right[1] == "[recv]") {
      c.conn.kind = "recv";
      c.self_is_to = true;
    } else {
      return false;
    }
  } else if (word == "Ring") {
    c.conn.kind = "ring";
  } else if (word == "Tree") {
    c.conn.kind = "tree";
  }
  c.comm_nranks = p.setup_nranks;
  c.pending = !p.setup_nranks.has_value();
  if (via.find("/GDRDMA") != std::string_view::npos) p.gdr_seen = true;
  if (StartsWith(via, "NET/") && !p.net_from_via) {
    std::string_view net = via.substr(4);
    net = net.substr(0, net.find('/'));
    if (!net.empty()) p.net_from_via = std::string(net);
  }
  p.connections.push_back(std::move(c));
  return true;
}

// "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>",
// "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>".
bool NcclLogCollector::ReadNics(Process& p, std::string_view msg) {
  size_t colon = msg.find(':');
  size_t using_at = msg.find("Using [");
  if (colon == std::string_view::npos || colon > using_at) return false;
  std::string net(Trim(msg.substr(4, colon - 4)));
  std::vector<std::string> nics;
  for (std::string_view tok : SplitBlanks(msg.substr(using_at + 6))) {
    if (tok.front() == ';' || tok == "OOB") break;
    bool last = tok.back() == ';';
    if (last) tok.remove_suffix(1);
    size_t close = tok.find(']');
    if (tok.size() > 0 && tok.front() == '[' && close != std::string_view::npos &&
        AllDigits(tok.substr(1, close - 1)) && close + 1 < tok.size()) {
      nics.emplace_back(tok.substr(close + 1));
    }
    if (last) break;
  }
  if (nics.empty() || net.empty()) return false;
  p.nics_by_net[net] = std::move(nics);
  p.last_nic_net = net;
  return true;
}

uint64_t NcclLogCollector::Finish(ReaderContext& ctx, bool* hostless) {
  bool no_host = false;
  NetworkData& net = ctx.out->network();
  for (Process& p : processes_) {
    NcclRankInfo info = std::move(p.info);
    if (!info.host) info.host = ctx.host_from_path;
    if (!info.host) no_host = true;
    info.rank = p.best_rank;
    info.nranks = p.best_nranks;
    info.bus_id = std::move(p.best_bus_id);
    bool net_connection = false;
    for (Connection& c : p.connections) {
      bool keep = c.pending ? !p.any_complete : c.comm_nranks == p.best_nranks;
      if (!keep) continue;
      if (!info.rank) info.rank = c.self_is_to ? c.conn.to_rank : c.conn.from_rank;
      net_connection = net_connection || StartsWith(c.conn.via, "NET/");
      info.connections.push_back(std::move(c.conn));
    }
    if (p.net_named) {
      info.net = p.net_named;
    } else if (p.net_from_via) {
      info.net = p.net_from_via;
    } else if (!p.last_nic_net.empty()) {
      info.net = p.last_nic_net;
    }
    auto nics = info.net ? p.nics_by_net.find(*info.net) : p.nics_by_net.end();
    if (nics == p.nics_by_net.end()) nics = p.nics_by_net.find(p.last_nic_net);
    if (nics != p.nics_by_net.end()) info.nics = std::move(nics->second);
    if (p.gdr_seen) {
      info.gdr = true;
    } else if (p.no_gdr_seen || net_connection) {
      info.gdr = false;
    }
    if (!info.nccl_version) info.nccl_version = banner_version_;
    net.nccl_ranks.push_back(std::move(info));
  }
  if (hostless != nullptr) {
    *hostless = no_host;
  } else if (no_host) {
    ctx.diag().Add(DiagCode::kNetNoHost, ctx.path, 0,
                   "NCCL log lines without a \"host:pid:tid\" prefix and no host in the path");
  }
  uint64_t n = processes_.size();
  processes_.clear();
  index_.clear();
  return n;
}

namespace {

class NcclDebugReader final : public TextReader {
 public:
  explicit NcclDebugReader(std::unique_ptr<TextReader> step_lines)
      : step_lines_(std::move(step_lines)) {}

  std::string_view name() const override { return "nccl-debug"; }

  // kSniffLikely + 5 when NCCL lines are at least half of the head's
  // non-blank lines: above the text-log reader's kSniffLikely for a head
  // with a step line, because this reader hands the file to `step_lines_` as
  // well (see Read()). kSniffPart when the head holds fewer, but at least
  // three lines with a level: above the text-log reader's kSniffAnyText for
  // text without step lines (an NCCL benchmark's output), below its
  // kSniffLikely, so a training log with a few NCCL lines and step lines in
  // its head stays the text-log reader's. kSniffNo without a line with a
  // level (a README quoting the "NCCL version" banner).
  int Sniff(std::string_view head) const override {
    if (head.empty() || LooksBinary(head)) return kSniffNo;
    size_t lines = 0, nccl = 0, levelled = 0;
    ForEachHeadLine(head, {.keep_cr = true}, [&](std::string_view line) {
      if (Trim(line).empty()) return true;
      ++lines;
      size_t len = 0;
      bool level = FindLevel(line, len) != std::string_view::npos;
      levelled += level;
      nccl += level || line.find("NCCL version ") != std::string_view::npos;
      return true;
    });
    if (levelled == 0) return kSniffNo;
    if (nccl * 2 >= lines) return kSniffLikely + 5;
    return levelled >= 3 ? kSniffPart : kSniffNo;
  }

  // NCCL lines go to the collector; when other lines were seen too (a
  // training log run with NCCL_DEBUG=INFO), the file is read a second time
  // by `step_lines_`, so that step records after the NCCL start-up are kept.
  // Hang lines (NCCL WARN transport errors, ncclRemoteError, the watchdog
  // lines among the other lines) are read in the first pass, so the second
  // skips them.
  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    NcclLogCollector collector;
    HangLineCollector hangs;
    uint64_t other = 0;
    std::string_view line;
    while (lines.Next(line)) {
      if (Trim(line).empty()) continue;
      bool nccl = collector.Offer(line, lines.line_number(), ctx);
      if (!nccl) ++other;
      // Every line: NCCL's own lines carry transport errors, and a line the
      // collector takes for its "NCCL version" can be an ncclRemoteError.
      hangs.Offer(line, lines.line_number(), ctx);
    }
    uint64_t taken = collector.Finish(ctx) + hangs.Finish(lines.line_number(), ctx);
    if (step_lines_ == nullptr || other == 0) return taken;
    auto source = OpenByteSource(ctx.path);
    if (!source.ok()) {
      ctx.diag().Add(DiagCode::kFileUnreadable, ctx.path, 0,
                     fmt::format("reopening for step lines: {}", source.status().message()));
      return taken;
    }
    LineReader again(**source);
    bool hang_lines_read = ctx.hang_lines_read;
    ctx.hang_lines_read = true;
    uint64_t steps = step_lines_->Read(again, ctx);
    ctx.hang_lines_read = hang_lines_read;
    return taken + steps;
  }

 private:
  std::unique_ptr<TextReader> step_lines_;
};

}  // namespace

std::unique_ptr<TextReader> MakeNcclDebugReader(std::unique_ptr<TextReader> step_lines) {
  return std::make_unique<NcclDebugReader>(std::move(step_lines));
}

}  // namespace laggard
