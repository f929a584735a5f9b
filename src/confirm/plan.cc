#include "confirm/plan.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace laggard::confirm {
namespace {

using Json = nlohmann::json;

template <typename T>
std::optional<T> Get(const Json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return std::nullopt;
  } else {
    if (!it->is_number()) return std::nullopt;
  }
  return it->get<T>();
}

// "node-2" before "node-10".
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string_view x(a.data() + i, i2 - i), y(b.data() + j, j2 - j);
      while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
      while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::optional<std::string> HostOf(const ConfirmInput& in, const ReportCulprit& c) {
  if (c.host) return c.host;
  if (c.rank) {
    auto it = in.host_of_rank.find(*c.rank);
    if (it != in.host_of_rank.end()) return it->second;
  }
  // A group of ranks on one host.
  std::set<std::string> hosts;
  for (int32_t r : c.ranks) {
    auto it = in.host_of_rank.find(r);
    if (it == in.host_of_rank.end()) return std::nullopt;
    hosts.insert(it->second);
  }
  if (hosts.size() == 1) return *hosts.begin();
  return std::nullopt;
}

std::optional<std::string> SwitchOf(const ConfirmInput& in, const std::string& host) {
  auto it = in.switch_of.find(host);
  if (it == in.switch_of.end()) return std::nullopt;
  return it->second;
}

// Hosts no culprit names, those on another switch than `suspect` first.
std::vector<std::string> HealthyHosts(const ConfirmInput& in, const std::string& suspect,
                                      const std::set<std::string>& culprit_hosts) {
  std::vector<std::string> healthy;
  for (const std::string& h : in.hosts) {
    if (h != suspect && culprit_hosts.count(h) == 0) healthy.push_back(h);
  }
  std::optional<std::string> sw = SwitchOf(in, suspect);
  std::stable_sort(healthy.begin(), healthy.end(), [&](const std::string& a, const std::string& b) {
    bool a_other = sw && SwitchOf(in, a) != sw;
    bool b_other = sw && SwitchOf(in, b) != sw;
    return a_other && !b_other;
  });
  return healthy;
}

std::vector<std::string> AllReduce(const PlanOptions& o, const std::string& a,
                                   const std::string& b) {
  std::string bin =
      o.nccl_tests_dir.empty() ? "all_reduce_perf" : o.nccl_tests_dir + "/all_reduce_perf";
  return {"mpirun",
          "-np",
          std::to_string(2 * o.gpus_per_node),
          "-H",
          fmt::format("{}:{},{}:{}", a, o.gpus_per_node, b, o.gpus_per_node),
          bin,
          "-b",
          "8M",
          "-e",
          "1G",
          "-f",
          "2",
          "-g",
          "1"};
}

void PlanCommunication(const ConfirmInput& in, size_t i, const std::string& suspect,
                       const std::set<std::string>& culprit_hosts, const PlanOptions& o,
                       ConfirmPlan& plan) {
  std::vector<std::string> healthy = HealthyHosts(in, suspect, culprit_hosts);
  if (healthy.empty()) {
    plan.notes.push_back(fmt::format(
        "{}: no healthy host in the report to pair it with; run all_reduce_perf between {} and "
        "any host you trust",
        CulpritName(in.culprits[i]), suspect));
    return;
  }
  auto add = [&](const std::string& a, const std::string& b, bool control, std::string why) {
    PlannedTest t;
    t.kind = TestKind::kCommunication;
    t.culprit = i;
    t.control = control;
    t.hosts = {a, b};
    t.argv = AllReduce(o, a, b);
    t.time_limit_s = 300;
    t.why = std::move(why);
    plan.tests.push_back(std::move(t));
  };
  add(suspect, healthy[0], false,
      fmt::format("{} with {}: bus bandwidth against the control's", suspect, healthy[0]));
  if (healthy.size() < 2) {
    plan.notes.push_back(fmt::format(
        "{}: one healthy host only ({}): no second pair and no control pair; a slow pair cannot "
        "tell {} from the link between them",
        CulpritName(in.culprits[i]), healthy[0], suspect));
    return;
  }
  add(suspect, healthy[1], false,
      fmt::format("{} with {}: slow with both partners is the node", suspect, healthy[1]));
  add(healthy[0], healthy[1], true,
      fmt::format("control {} with {}: fast here and slow above is {}; slow here too is the "
                  "fabric",
                  healthy[0], healthy[1], suspect));
}

// A healthy GPU of the same model as `gpu` of `host`, on another host first.
std::optional<ReportGpu> ControlGpu(const ConfirmInput& in, const std::string& host, int32_t gpu,
                                    const std::set<std::pair<std::string, int32_t>>& culprit_gpus) {
  std::optional<std::string> model;
  for (const ReportGpu& g : in.gpus) {
    if (g.host == host && g.gpu == gpu) model = g.model;
  }
  std::optional<ReportGpu> same_host;
  for (const ReportGpu& g : in.gpus) {
    if (culprit_gpus.count({g.host, g.gpu}) != 0 || g.model != model) continue;
    if (g.host != host) return g;
    if (!same_host) same_host = g;
  }
  return same_host;
}

void PlanGpuCompute(const ConfirmInput& in, size_t i, const std::string& host, int32_t gpu,
                    const std::set<std::pair<std::string, int32_t>>& culprit_gpus,
                    const PlanOptions& o, ConfirmPlan& plan) {
  PlannedTest smi;
  smi.kind = TestKind::kHealth;
  smi.culprit = i;
  smi.hosts = {host};
  smi.gpu = gpu;
  smi.argv = {"nvidia-smi",       "-q", "-d", "PERFORMANCE,CLOCK,TEMPERATURE,POWER,ERRORS", "-i",
              std::to_string(gpu)};
  smi.time_limit_s = 60;
  smi.why = "throttle reasons now and the cumulative time throttled, clocks, ECC errors";
  plan.tests.push_back(smi);
  PlannedTest diag;
  diag.kind = TestKind::kHealth;
  diag.culprit = i;
  diag.hosts = {host};
  diag.gpu = gpu;
  diag.argv = {"dcgmi", "diag", "-r", std::to_string(o.dcgm_level), "-i", std::to_string(gpu)};
  diag.time_limit_s = o.dcgm_level >= 2 ? 900 : 120;
  diag.why = fmt::format("DCGM's level-{} diagnostic on the suspect GPU", o.dcgm_level);
  plan.tests.push_back(diag);
  if (auto peer = ControlGpu(in, host, gpu, culprit_gpus)) {
    PlannedTest ctl = diag;
    ctl.control = true;
    ctl.hosts = {peer->host};
    ctl.gpu = peer->gpu;
    ctl.argv = {
        "dcgmi", "diag", "-r", std::to_string(o.dcgm_level), "-i", std::to_string(peer->gpu)};
    ctl.why = fmt::format("the same on a healthy {} ({} GPU {}) as the control",
                          peer->model.value_or("GPU"), peer->host, peer->gpu);
    plan.tests.push_back(ctl);
  } else {
    plan.notes.push_back(
        fmt::format("{}: no healthy GPU of the same model in the report for a control",
                    CulpritName(in.culprits[i])));
  }
}

void PlanCpuCompute(const ConfirmInput& in, size_t i, const std::optional<std::string>& host,
                    const PlanOptions& o, ConfirmPlan& plan) {
  const ReportCulprit& c = in.culprits[i];
  PlannedTest t;
  t.kind = TestKind::kCompute;
  t.culprit = i;
  if (host) t.hosts = {*host};
  t.argv = {o.laggard, "gemm"};
  t.time_limit_s = 120;
  std::optional<int> mine, peer;
  if (c.rank) {
    auto it = o.rank_cores.find(*c.rank);
    if (it != o.rank_cores.end()) mine = it->second;
    for (const auto& [rank, core] : o.rank_cores) {
      bool same_host =
          !host || in.host_of_rank.count(rank) == 0 || in.host_of_rank.at(rank) == *host;
      if (rank != *c.rank && core != mine && same_host) {
        peer = core;
        break;
      }
    }
  }
  if (mine && peer) {
    t.argv.push_back("--cores");
    t.argv.push_back(fmt::format("{},{}", *mine, *peer));
    t.why = fmt::format("GEMM on rank {}'s core {} against a healthy rank's core {}", *c.rank,
                        *mine, *peer);
  } else {
    t.why = "GEMM on every core: a slower or contended core shows as fewer GFLOP/s";
    plan.notes.push_back(fmt::format(
        "{}: which core each rank ran on is not known (give --rank-cores RANK:CORE,...), so the "
        "GEMM runs on every core",
        CulpritName(c)));
  }
  plan.tests.push_back(std::move(t));
}

}  // namespace

std::string_view TestKindName(TestKind k) {
  switch (k) {
    case TestKind::kHealth: return "health";
    case TestKind::kCompute: return "compute";
    case TestKind::kCommunication: return "communication";
  }
  return "health";
}

std::string CulpritName(const ReportCulprit& c) {
  if (c.rank && c.host && c.gpu)
    return fmt::format("rank {} ({} GPU {})", *c.rank, *c.host, *c.gpu);
  if (c.rank && c.host) return fmt::format("rank {} ({})", *c.rank, *c.host);
  if (c.rank) return fmt::format("rank {}", *c.rank);
  if (c.host && c.gpu) return fmt::format("{} GPU {}", *c.host, *c.gpu);
  if (c.host && c.nic) return fmt::format("{} {}", *c.host, *c.nic);
  if (c.host) return fmt::format("host {}", *c.host);
  if (c.switch_name) return fmt::format("switch {}", *c.switch_name);
  if (!c.ranks.empty()) return fmt::format("ranks {}..{}", c.ranks.front(), c.ranks.back());
  return "the job";
}

StatusOr<ConfirmInput> ReadReport(std::string_view text, const std::string& where) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Error(
        fmt::format("{}: not JSON (a report of `laggard diagnose --json`?)", where));
  }
  auto schema = Get<std::string>(j, "schema");
  if (!schema || schema->rfind("laggard.report/", 0) != 0) {
    return Status::Error(fmt::format(
        "{}: not a laggard report (schema '{}'); give the file `laggard diagnose --json` wrote",
        where, schema.value_or("")));
  }
  ConfirmInput in;
  const Json& v = j.value("verdict", Json::object());
  in.status = Get<std::string>(v, "status").value_or("");
  in.summary = Get<std::string>(v, "summary").value_or("");
  for (const Json& c : v.value("culprits", Json::array())) {
    ReportCulprit rc;
    rc.rank = Get<int32_t>(c, "rank");
    rc.host = Get<std::string>(c, "host");
    rc.gpu = Get<int32_t>(c, "gpu");
    rc.nic = Get<std::string>(c, "nic");
    rc.switch_name = Get<std::string>(c, "switch");
    rc.cause_class = Get<std::string>(c, "cause_class").value_or("unknown");
    rc.cause = Get<std::string>(c, "cause");
    rc.confidence = Get<double>(c, "confidence").value_or(0);
    if (c.contains("ranks") && c["ranks"].is_array()) {
      for (const Json& r : c["ranks"]) {
        if (r.is_number_integer()) rc.ranks.push_back(r.get<int32_t>());
      }
    }
    in.culprits.push_back(std::move(rc));
  }
  std::set<std::string> hosts;
  const Json& ranks = j.value("ranks", Json::array());
  for (const Json& r : ranks.is_array() ? ranks : Json::array()) {
    auto rank = Get<int32_t>(r, "rank");
    if (!rank) continue;
    in.ranks.push_back(*rank);
    if (auto h = Get<std::string>(r, "host")) {
      in.host_of_rank[*rank] = *h;
      hosts.insert(*h);
    }
  }
  const Json& hw = j.value("hardware", Json::object());
  const Json& gpus = hw.is_object() ? hw.value("gpus", Json::array()) : Json::array();
  for (const Json& g : gpus.is_array() ? gpus : Json::array()) {
    auto host = Get<std::string>(g, "host");
    auto index = Get<int32_t>(g, "gpu");
    if (!host || !index) continue;
    in.gpus.push_back({*host, *index, Get<int32_t>(g, "rank"), Get<std::string>(g, "model")});
    hosts.insert(*host);
    if (auto rank = Get<int32_t>(g, "rank")) in.host_of_rank.emplace(*rank, *host);
  }
  const Json& net = j.value("network", Json::object());
  const Json& sw = net.is_object() ? net.value("switch_of", Json::object()) : Json::object();
  if (sw.is_object()) {
    for (const auto& [h, s] : sw.items()) {
      if (s.is_string()) in.switch_of[h] = s.get<std::string>();
    }
  }
  in.hosts.assign(hosts.begin(), hosts.end());
  std::sort(in.hosts.begin(), in.hosts.end(), NaturalLess);
  std::sort(in.ranks.begin(), in.ranks.end());
  return in;
}

ConfirmPlan PlanConfirm(const ConfirmInput& in, const PlanOptions& o) {
  ConfirmPlan plan;
  std::set<std::string> culprit_hosts;
  std::set<std::pair<std::string, int32_t>> culprit_gpus;
  for (const ReportCulprit& c : in.culprits) {
    if (auto h = HostOf(in, c)) {
      culprit_hosts.insert(*h);
      if (c.gpu) culprit_gpus.insert({*h, *c.gpu});
    }
  }
  bool cpu_job = in.gpus.empty();
  for (size_t i = 0; i < in.culprits.size(); ++i) {
    const ReportCulprit& c = in.culprits[i];
    std::optional<std::string> host = HostOf(in, c);
    const std::string& cls = c.cause_class;
    if (cls == "imbalance") {
      plan.notes.push_back(fmt::format(
          "{}: it does more work per step (the job's own split); no hardware test confirms "
          "that: compare its share of the data, sequence lengths or pipeline stage",
          CulpritName(c)));
      continue;
    }
    if (cls == "communication" || cls == "external") {
      if (host) {
        PlanCommunication(in, i, *host, culprit_hosts, o, plan);
      } else if (c.switch_name) {
        // A host under the switch against one elsewhere, and a control.
        std::vector<std::string> under, elsewhere;
        for (const std::string& h : in.hosts) {
          (SwitchOf(in, h) == c.switch_name ? under : elsewhere).push_back(h);
        }
        if (under.empty() || elsewhere.empty()) {
          plan.notes.push_back(
              fmt::format("{}: the report places no host on both sides of it", CulpritName(c)));
        } else {
          PlanCommunication(in, i, under.front(), culprit_hosts, o, plan);
        }
      } else {
        plan.notes.push_back(fmt::format("{}: no host named, nothing to pair", CulpritName(c)));
      }
      continue;
    }
    // compute_slow, host_stall, unknown.
    if (cpu_job) {
      PlanCpuCompute(in, i, host, o, plan);
    } else if (host && c.gpu) {
      PlanGpuCompute(in, i, *host, *c.gpu, culprit_gpus, o, plan);
    } else if (host) {
      PlannedTest smi;
      smi.kind = TestKind::kHealth;
      smi.culprit = i;
      smi.hosts = {*host};
      smi.argv = {"nvidia-smi", "-q", "-d", "PERFORMANCE,CLOCK,TEMPERATURE,POWER,ERRORS"};
      smi.time_limit_s = 60;
      smi.why = "every GPU of the host: throttle reasons, clocks, errors (its GPU is not known)";
      plan.tests.push_back(smi);
      PlannedTest diag = smi;
      diag.argv = {"dcgmi", "diag", "-r", std::to_string(o.dcgm_level)};
      diag.time_limit_s = o.dcgm_level >= 2 ? 900 : 120;
      diag.why = fmt::format("DCGM's level-{} diagnostic on every GPU of the host", o.dcgm_level);
      plan.tests.push_back(diag);
    } else {
      plan.notes.push_back(fmt::format(
          "{}: no host or GPU is known for it; tie ranks to hosts (step logs with host names, "
          "--gpus-per-node) and diagnose again",
          CulpritName(c)));
    }
  }
  return plan;
}

}  // namespace laggard::confirm
