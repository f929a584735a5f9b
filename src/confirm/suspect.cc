#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "base/text.h"
#include "confirm/plan.h"

namespace laggard::confirm {

bool LooksLikeHost(const std::string& h) {
  return !h.empty() && h.size() <= 253 && h[0] != '-' &&
         std::all_of(h.begin(), h.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
         });
}

StatusOr<ConfirmInput> SuspectInput(std::string_view suspect, std::string_view hosts_text,
                                    const std::string& where, int gpus_per_node) {
  ConfirmInput in;
  std::string host(suspect);
  std::optional<int32_t> gpu;
  if (size_t colon = host.rfind(':'); colon != std::string::npos) {
    int32_t g = -1;
    std::string tail = host.substr(colon + 1);
    auto [p, e] = std::from_chars(tail.data(), tail.data() + tail.size(), g);
    // A host has at most a few dozen GPUs: an index past kMaxGpuIndex is a
    // typo, and the plan lists every GPU below it for each host.
    if (e != std::errc() || p != tail.data() + tail.size() || g < 0 || g > kMaxGpuIndex) {
      return Status::Error(fmt::format(
          "--suspect '{}': give HOST or HOST:GPU (a GPU index, 0 to {})", suspect, kMaxGpuIndex));
    }
    gpu = g;
    host.resize(colon);
  }
  bool all = host == "all";
  if (!all && !LooksLikeHost(host)) {
    return Status::Error(fmt::format("--suspect '{}': '{}' is not a host name", suspect, host));
  }
  std::set<std::string> hosts;
  if (!all) hosts.insert(host);
  std::istringstream lines{std::string(hosts_text)};
  size_t number = 0;
  bool first = true;  // the first line that is not blank or a comment
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (char& ch : line) {
      if (ch == ',' || ch == '\t' || ch == '\r') ch = ' ';
    }
    std::istringstream words(line);
    std::string h, sw, extra;
    if (!(words >> h)) continue;
    words >> sw >> extra;
    bool header = first && (h == "host" || h == "Host" || h == "HOST");
    first = false;
    if (header) continue;
    if (!LooksLikeHost(h) || !extra.empty()) {
      return Status::Error(
          fmt::format("{}:{}: '{}': give one host per line, optionally its switch (HOST [SWITCH])",
                      where, number, Trim(line)));
    }
    hosts.insert(h);
    if (!sw.empty()) in.switch_of[h] = sw;
  }
  in.hosts.assign(hosts.begin(), hosts.end());
  std::sort(in.hosts.begin(), in.hosts.end(), NaturalLess);
  if (all && gpu) return Status::Error("--suspect all takes no GPU");
  ReportCulprit c;
  if (!all) c.host = host;
  c.gpu = gpu;
  c.cause_class = gpu ? "compute_slow" : "communication";
  in.culprits.push_back(c);
  in.status = "suspect";
  in.summary = fmt::format("a suspect named by hand: {}", suspect);
  if (gpu) {
    // Every host's GPUs, of one unknown model: a control on another host.
    for (const std::string& h : in.hosts) {
      for (int32_t g = 0; g < std::max(gpus_per_node, *gpu + 1); ++g) in.gpus.push_back({h, g});
    }
  }
  return in;
}

}  // namespace laggard::confirm
