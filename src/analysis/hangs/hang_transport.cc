#include "analysis/hangs/hang_transport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "analysis/hangs/hang_rules.h"

namespace laggard {
namespace {

using hang_internal::kConfidenceLines;  // a finding from log lines only

constexpr size_t kHostsSpelled = 4;
constexpr size_t kEvidenceLines = 4;

enum class Side { kLocal, kRemote, kFollowOn, kDropped };

bool IsTransport(HangEventKind k) {
  return k == HangEventKind::kTransportError || k == HangEventKind::kRemoteError ||
         k == HangEventKind::kNicEvent || k == HangEventKind::kVerbsError ||
         k == HangEventKind::kCudaError;
}

// "10.0.0.2<34567>" -> "10.0.0.2"; "gpu004.example.com" -> "gpu004".
std::string_view PeerAddress(std::string_view peer) { return peer.substr(0, peer.find('<')); }
std::string_view FirstLabel(std::string_view host) { return host.substr(0, host.find('.')); }

bool PeerIsSelf(const HangEvent& e) {
  if (e.host.empty() || e.peer.empty()) return false;
  std::string_view peer = PeerAddress(e.peer);
  return peer == e.host || FirstLabel(peer) == FirstLabel(e.host);
}

Side SideOf(const HangEvent& e) {
  switch (e.kind) {
    case HangEventKind::kNicEvent:
    case HangEventKind::kVerbsError: return Side::kLocal;
    case HangEventKind::kCudaError:
      return e.detail.find("driver shutting down") != std::string::npos ? Side::kDropped
                                                                        : Side::kLocal;
    default: break;
  }
  if (PeerIsSelf(e)) return Side::kDropped;
  if (e.kind == HangEventKind::kTransportError && e.error_code) {
    switch (*e.error_code) {
      case 1:
      case 2:
      case 3:
      case 4:
      case 6:
      case 8: return Side::kLocal;
      case 5: return Side::kFollowOn;
      default: return Side::kRemote;
    }
  }
  return Side::kRemote;
}

// The rank of an NCCL line's process: its own, or the one NCCL_DEBUG=INFO's
// comm init lines of the same host and pid gave (model/network.h), when
// that communicator is the largest seen (a rank of a smaller one is not
// the global rank).
std::optional<int32_t> NcclLineRank(const Run& run, const HangEvent& e) {
  if (e.rank) return e.rank;
  if (!e.pid || e.host.empty()) return std::nullopt;
  int32_t largest = 0;
  for (const NcclRankInfo& r : run.network.nccl_ranks)
    largest = std::max(largest, r.nranks.value_or(0));
  for (const NcclRankInfo& r : run.network.nccl_ranks) {
    if (r.rank && r.pid == e.pid && r.host == e.host && r.nranks == largest) return r.rank;
  }
  return std::nullopt;
}

std::string Ranks(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + RankListText(ranks);
}

// "ibv_wc_status 12 (retry exceeded)": what the code means.
std::string CodeText(int32_t code) {
  switch (code) {
    case 4: return "error 4 (local protection error)";
    case 5: return "error 5 (work request flushed)";
    case 8: return "error 8 (local access error)";
    case 9: return "error 9 (remote invalid request)";
    case 10: return "error 10 (remote access error)";
    case 11: return "error 11 (remote operation error)";
    case 12: return "error 12 (retry exceeded)";
    case 13: return "error 13 (RNR retry exceeded)";
    default: return fmt::format("error {}", code);
  }
}

// What one line says, in words: "HCA event on mlx5_0:1 (local access
// violation work queue error)", "error 12 (retry exceeded) from peer P".
std::string WhatText(const HangEvent& e) {
  switch (e.kind) {
    case HangEventKind::kNicEvent:
      return fmt::format("HCA event{}{}", e.peer.empty() ? "" : " on " + e.peer,
                         e.detail.empty() ? "" : " (" + e.detail + ")");
    case HangEventKind::kVerbsError:
      return fmt::format("verbs call failed{}", e.detail.empty() ? "" : " (" + e.detail + ")");
    case HangEventKind::kCudaError:
      return fmt::format("CUDA error in NCCL{}", e.detail.empty() ? "" : " '" + e.detail + "'");
    default: break;
  }
  std::string s = e.error_code ? CodeText(*e.error_code) : std::string("connection error");
  if (!e.peer.empty()) s += " with peer " + e.peer;
  return s;
}

std::string NextStep(const HangEvent& e, const std::string& host) {
  const std::string on = host.empty() ? std::string() : " on " + host;
  switch (e.kind) {
    case HangEventKind::kNicEvent:
      return fmt::format(
          "check the HCA {}{}: `ibv_devinfo`, `dmesg | grep -i mlx5`, its firmware and driver; a "
          "local access or protection error often means memory registration (GPUDirect RDMA: is "
          "nvidia-peermem loaded?)",
          e.peer.empty() ? "" : e.peer, on);
    case HangEventKind::kVerbsError:
      return fmt::format(
          "the process could not create IB resources{}: raise the locked-memory limit (`ulimit "
          "-l unlimited`, in the container too), check access to /dev/infiniband and "
          "`ibv_devinfo`",
          on);
    case HangEventKind::kCudaError:
      return fmt::format(
          "NCCL hit a CUDA error while setting up{}: check the GPUs the process sees "
          "(CUDA_VISIBLE_DEVICES), `nvidia-smi`, the driver and `dmesg | grep -i xid`",
          on);
    default: break;
  }
  if (e.error_code && (*e.error_code == 4 || *e.error_code == 8)) {
    return fmt::format(
        "a local protection / access error{}: memory registration failed (GPUDirect RDMA: "
        "nvidia-peermem, ACS / IOMMU settings); check `dmesg | grep -i mlx5`",
        on);
  }
  return fmt::format(
      "check the NIC and link{}{}: ibstat, port counters (symbol errors, link downed), `dmesg | "
      "grep -i mlx5`{}",
      host.empty() ? "" : " of " + host, e.peer.empty() ? "" : " towards " + e.peer,
      e.error_code && (*e.error_code == 12 || *e.error_code == 13)
          ? "; retry exceeded means the peer stopped answering: check the peer host too"
          : "");
}

}  // namespace

std::optional<Finding> DecideTransport(const Run& run, const std::vector<HangEvent>& events) {
  std::vector<std::pair<const HangEvent*, Side>> lines;
  for (const HangEvent& e : events) {
    if (!IsTransport(e.kind)) continue;
    Side side = SideOf(e);
    if (side != Side::kDropped) lines.emplace_back(&e, side);
  }
  if (lines.empty()) return std::nullopt;
  // The first line of the most telling side: local, then remote, then a
  // flush.
  const HangEvent* first = nullptr;
  for (Side want : {Side::kLocal, Side::kRemote, Side::kFollowOn}) {
    for (const auto& [e, side] : lines) {
      if (side == want && first == nullptr) first = e;
    }
  }
  std::set<int32_t> ranks, local_ranks;
  std::vector<std::pair<std::string, size_t>> hosts;  // reporters, in order of first line
  std::set<std::string> local_hosts, peers;
  size_t follow_on = 0;
  for (const auto& [e, side] : lines) {
    if (auto r = NcclLineRank(run, *e)) {
      ranks.insert(*r);
      if (side == Side::kLocal) local_ranks.insert(*r);
    }
    if (side == Side::kFollowOn) ++follow_on;
    if (side == Side::kLocal && !e->host.empty()) local_hosts.insert(e->host);
    if (side != Side::kLocal && !e->peer.empty()) peers.insert(std::string(PeerAddress(e->peer)));
    if (e->host.empty()) continue;
    auto it =
        std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == e->host; });
    if (it == hosts.end()) {
      hosts.emplace_back(e->host, 1);
    } else {
      ++it->second;
    }
  }
  Finding f = MakeFinding(FindingCode::kHangTransportError);
  // The peers that the other hosts' errors name: one host's local error
  // explains them only when they name one peer (it, as far as an address
  // can say), not several unrelated links.
  std::set<std::string> others_peers;
  for (const auto& [e, side] : lines) {
    if (side != Side::kLocal && !e->peer.empty() && !local_hosts.count(e->host))
      others_peers.insert(std::string(PeerAddress(e->peer)));
  }
  std::string where;
  if (local_hosts.size() == 1 && others_peers.size() <= 1) {
    where = *local_hosts.begin();
  } else if (local_hosts.empty() && hosts.size() == 1) {
    where = hosts.front().first;
  }
  if (!where.empty()) f.entity.host = where;
  // The ranks whose own side erred, else those of the one host the errors
  // place it on; a remote error seen from nowhere in particular names its
  // reporter only in the message (the peer, or the link, failed).
  const std::set<int32_t>& placed = !local_ranks.empty() ? local_ranks
                                    : where.empty()      ? std::set<int32_t>()
                                                         : ranks;
  f.ranks.assign(placed.begin(), placed.end());
  if (first->kind == HangEventKind::kNicEvent && !first->peer.empty()) {
    f.entity.nic = first->peer;
  } else if (local_hosts.empty() && peers.size() == 1 && !first->peer.empty()) {
    f.entity.nic = first->peer;
  }
  const size_t n = lines.size();
  std::string message = fmt::format("{} transport error{}", n, n == 1 ? "" : "s");
  if (!where.empty()) {
    message += fmt::format(" on {}: {}", where, WhatText(*first));
    if (first->host != where && !first->host.empty()) message += " reported by " + first->host;
  } else {
    message += fmt::format("; among them {}{}", WhatText(*first),
                           first->host.empty() ? "" : " on " + first->host);
  }
  if (hosts.size() > 1) {
    std::vector<std::string> each;
    for (const auto& [host, count] : hosts) {
      if (each.size() == kHostsSpelled) {
        each.push_back(fmt::format("{} more", hosts.size() - kHostsSpelled));
        break;
      }
      each.push_back(fmt::format("{} ({})", host, count));
    }
    message += fmt::format("; on {} hosts: {}", hosts.size(), fmt::join(each, ", "));
  }
  if (peers.size() > 1) {
    message +=
        fmt::format("; with {} peers, so no one link: {}", peers.size(), fmt::join(peers, ", "));
  }
  if (local_hosts.size() > 1) {
    message += fmt::format("; local-side errors on {} hosts: {}", local_hosts.size(),
                           fmt::join(local_hosts, ", "));
  }
  if (follow_on > 0 && first->error_code != 5) {
    message += fmt::format("; {} flush error{} (5) follow a connection already in error", follow_on,
                           follow_on == 1 ? "" : "s");
  }
  if (!ranks.empty()) {
    message += fmt::format(", reported by {}", Ranks({ranks.begin(), ranks.end()}));
  }
  f.message = std::move(message);
  if (f.ranks.size() == 1) f.entity.rank = f.ranks.front();
  if (!f.entity.host && !f.entity.rank) f.entity.job = true;
  f.confidence = kConfidenceLines;
  f.evidence.push_back({first->text, first->src});
  for (size_t i = 0; i < lines.size() && f.evidence.size() < kEvidenceLines; ++i) {
    if (lines[i].first != first) f.evidence.push_back({lines[i].first->text, lines[i].first->src});
  }
  f.next_steps.push_back(NextStep(*first, where));
  return f;
}

}  // namespace laggard
