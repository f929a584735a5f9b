// Plumbing shared by the network link readers (ibstat.cc, ibstatus.cc,
// ibv_devinfo.cc, ethtool.cc): one parser state per output stream of a
// multi-host file (host_lines.h), and the host rule for every record they
// add: the host the content names (a pdsh prefix, a dshbak or ansible
// header), else the host of the file's path, else unknown, with one
// network.no_host note per file.

#ifndef LAGGARD_INGEST_NETWORK_NET_STREAMS_H_
#define LAGGARD_INGEST_NETWORK_NET_STREAMS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ingest/common/host_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/common/text_reader.h"

namespace laggard {

// Per-stream parser states, in order of first appearance (so records come
// out in a deterministic order).
template <typename State>
class StreamStates {
 public:
  State& Get(std::string_view stream) {
    auto it = index_.find(stream);
    if (it != index_.end()) return states_[it->second];
    index_.emplace(std::string(stream), states_.size());
    states_.emplace_back();
    states_.back().stream = std::string(stream);
    return states_.back();
  }
  std::vector<State>& all() { return states_; }

 private:
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<State> states_;
};

// Hands out the hosts of records and counts network.no_host once per file.
class RecordHosts {
 public:
  RecordHosts(HostLines& lines, ReaderContext& ctx) : lines_(lines), ctx_(ctx) {}

  // Calls fn(host) once per host the stream stands for (several for a
  // dshbak -c host list), or once with the path's host or nullopt.
  template <typename Fn>
  void ForEach(std::string_view stream, uint64_t line, Fn&& fn) {
    const std::vector<std::string>& hosts = lines_.HostsOf(stream);
    if (!hosts.empty()) {
      for (const std::string& h : hosts) fn(std::optional<std::string>(h));
      return;
    }
    if (!ctx_.host_from_path && !noted_) {
      noted_ = true;
      ctx_.diag().Add(DiagCode::kNetNoHost, ctx_.path, line,
                      "the output names no host and neither does the file's path");
    }
    fn(ctx_.host_from_path);
  }

 private:
  HostLines& lines_;
  ReaderContext& ctx_;
  bool noted_ = false;
};

// "key: value" split at the first ':' (values may hold more: GUIDs, "4: ACTIVE").
inline bool SplitKeyValue(std::string_view line, std::string_view& key, std::string_view& value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  key = line.substr(0, colon);
  value = line.substr(colon + 1);
  while (!key.empty() && (key.front() == ' ' || key.front() == '\t')) key.remove_prefix(1);
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) {
    value.remove_suffix(1);
  }
  return !key.empty();
}

}  // namespace laggard

#endif  // LAGGARD_INGEST_NETWORK_NET_STREAMS_H_
