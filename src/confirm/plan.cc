#include "confirm/plan.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "confirm/bisect.h"
#include "confirm/json_fields.h"

namespace laggard::confirm {
namespace {

using Json = nlohmann::json;

// An object member, or an empty object/array when it is absent or of
// another type.
const Json& Member(const Json& j, const char* key, const Json& empty) {
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  if (it == j.end() || it->type() != empty.type()) return empty;
  return *it;
}

std::optional<std::string> HostOfRank(const ConfirmInput& in, int32_t rank) {
  auto it = in.host_of_rank.find(rank);
  if (it == in.host_of_rank.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> HostOf(const ConfirmInput& in, const ReportCulprit& c) {
  if (c.host) return c.host;
  if (c.rank) return HostOfRank(in, *c.rank);
  // A group of ranks on one host.
  std::set<std::string> hosts;
  for (int32_t r : c.ranks) {
    auto h = HostOfRank(in, r);
    if (!h) return std::nullopt;
    hosts.insert(*h);
  }
  if (hosts.size() == 1) return *hosts.begin();
  return std::nullopt;
}

// Everything the culprits name: hosts, GPUs (host, index), ranks.
struct Named {
  std::set<std::string> hosts;
  std::set<std::pair<std::string, int32_t>> gpus;
  std::set<int32_t> ranks;
};

Named NamedByCulprits(const ConfirmInput& in) {
  Named n;
  for (const ReportCulprit& c : in.culprits) {
    if (auto h = HostOf(in, c)) n.hosts.insert(*h);
    std::vector<int32_t> ranks = c.ranks;
    if (c.rank) ranks.push_back(*c.rank);
    for (int32_t r : ranks) {
      n.ranks.insert(r);
      auto h = HostOfRank(in, r);
      auto g = in.gpu_of_rank.find(r);
      if (h && g != in.gpu_of_rank.end()) n.gpus.insert({*h, g->second});
    }
    if (auto h = HostOf(in, c); h && c.gpu) n.gpus.insert({*h, *c.gpu});
    // A switch culprit names its hosts; a host's culprit carries its switch
    // only as where it sits.
    if (c.switch_name && (c.cause_class == "external" || !HostOf(in, c))) {
      for (const auto& [host, sw] : in.switch_of) {
        if (sw == *c.switch_name) n.hosts.insert(host);
      }
    }
  }
  return n;
}

}  // namespace

std::vector<std::pair<std::string, int32_t>> CulpritGpus(const ConfirmInput& in,
                                                         const ReportCulprit& c) {
  std::vector<std::pair<std::string, int32_t>> gpus;
  if (auto host = HostOf(in, c); host && c.gpu) gpus.push_back({*host, *c.gpu});
  std::vector<int32_t> ranks = c.ranks;
  if (c.rank && !c.gpu) ranks.push_back(*c.rank);
  for (int32_t r : ranks) {
    auto h = HostOfRank(in, r);
    auto g = in.gpu_of_rank.find(r);
    if (h && g != in.gpu_of_rank.end()) gpus.push_back({*h, g->second});
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  return gpus;
}

std::set<std::pair<std::string, int32_t>> NamedGpus(const ConfirmInput& in) {
  return NamedByCulprits(in).gpus;
}

namespace {

// Healthy hosts: in the job, named by no culprit; those on `same_switch`
// first when it is given, the rest after.
std::vector<std::string> HealthyHosts(const ConfirmInput& in, const Named& named,
                                      const std::optional<std::string>& same_switch,
                                      const std::set<std::string>& except = {}) {
  std::vector<std::string> healthy;
  for (const std::string& h : in.hosts) {
    if (named.hosts.count(h) == 0 && except.count(h) == 0) healthy.push_back(h);
  }
  std::stable_sort(healthy.begin(), healthy.end(), [&](const std::string& a, const std::string& b) {
    bool a_same = same_switch && SwitchOf(in, a) == same_switch;
    bool b_same = same_switch && SwitchOf(in, b) == same_switch;
    return a_same && !b_same;
  });
  return healthy;
}

// Processes per host for nccl-tests: the option, else the report's ranks
// (or GPUs) on `host`, else 8.
int PerHost(const ConfirmInput& in, const PlanOptions& o, const std::string& host) {
  if (o.gpus_per_node > 0) return o.gpus_per_node;
  int ranks = 0, gpus = 0;
  for (const auto& [rank, h] : in.host_of_rank) ranks += h == host;
  for (const ReportGpu& g : in.gpus) gpus += g.host == host;
  if (ranks > 0) return ranks;
  if (gpus > 0) return gpus;
  return 8;
}

std::vector<std::string> AllReduce(const PlanOptions& o) {
  std::string bin =
      o.nccl_tests_dir.empty() ? "all_reduce_perf" : o.nccl_tests_dir + "/all_reduce_perf";
  return {bin, "-b", "8M", "-e", "1G", "-f", "2", "-g", "1"};
}

PlannedTest PairTest(const ConfirmInput& in, const PlanOptions& o, size_t culprit,
                     const std::string& a, const std::string& b, PairRole role, std::string why) {
  PlannedTest t;
  t.kind = TestKind::kCommunication;
  t.role = role;
  t.culprit = culprit;
  t.control = role == PairRole::kControl;
  t.hosts = {a, b};
  t.procs = {PerHost(in, o, a), PerHost(in, o, b)};
  t.argv = AllReduce(o);
  t.time_limit_s = 300;
  t.why = std::move(why);
  return t;
}

}  // namespace

PlannedTest GroupTest(const ConfirmInput& in, const PlanOptions& o, size_t culprit,
                      std::vector<std::string> hosts, PairRole role, std::string why) {
  PlannedTest t;
  t.kind = TestKind::kCommunication;
  t.role = role;
  t.culprit = culprit;
  for (const std::string& h : hosts) t.procs.push_back(PerHost(in, o, h));
  t.hosts = std::move(hosts);
  t.argv = AllReduce(o);
  t.time_limit_s = 300;
  t.why = std::move(why);
  return t;
}

namespace {

void PlanNodeTriangle(const ConfirmInput& in, size_t i, const std::string& suspect,
                      const Named& named, const PlanOptions& o, ConfirmPlan& plan) {
  std::optional<std::string> sw = SwitchOf(in, suspect);
  std::vector<std::string> healthy = HealthyHosts(in, named, sw);
  const std::string name = CulpritName(in.culprits[i]);
  if (healthy.empty()) {
    plan.notes.push_back(fmt::format(
        "{}: no healthy host in the report to pair it with; run all_reduce_perf between {} and "
        "any host you trust",
        name, suspect));
    return;
  }
  // H1 on the suspect's own switch (that pair leaves every uplink out), H2
  // behind another switch when there is one: then a slow S is slow with
  // both, while the uplinks between the switches slow (S, H2) and the
  // control (H1, H2) but not (S, H1). Partners both elsewhere put S's
  // switch's uplink in both of S's pairs.
  std::string h1 = healthy[0];
  std::optional<std::string> sw1 = SwitchOf(in, h1);
  bool across = sw && sw1 != sw;
  std::string what =
      across ? fmt::format("{} or the uplink of its switch {}", suspect, *sw) : suspect;
  plan.tests.push_back(PairTest(
      in, o, i, suspect, h1, PairRole::kSuspect,
      across || !sw
          ? fmt::format("{} with {}: its bus bandwidth against the control's", suspect, h1)
          : fmt::format("{} with {} inside switch {}: no uplink in the path", suspect, h1, *sw)));
  if (healthy.size() < 2) {
    plan.notes.push_back(fmt::format(
        "{}: one healthy host only ({}): no second pair and no control pair; a slow pair cannot "
        "tell {} from the path between them",
        name, h1, suspect));
    return;
  }
  std::string h2 = healthy[1];
  if (sw && sw1 == sw) {
    for (const std::string& h : healthy) {
      auto other = SwitchOf(in, h);
      if (other && other != sw) {
        h2 = h;
        break;
      }
    }
  }
  std::optional<std::string> sw2 = SwitchOf(in, h2);
  bool spans = sw && sw1 == sw && sw2 && sw2 != sw;
  plan.tests.push_back(PairTest(
      in, o, i, suspect, h2, PairRole::kSuspect,
      spans ? fmt::format("{} with {} across to switch {}: slow with both partners is {}", suspect,
                          h2, *sw2, suspect)
            : fmt::format("{} with {}: slow with both partners is {}", suspect, h2, what)));
  plan.tests.push_back(PairTest(
      in, o, i, h1, h2, PairRole::kControl,
      spans ? fmt::format("control {} with {}: fast here and slow with {} is {}; slow here and "
                          "with {} across, fast inside, is the path between {} and {}",
                          h1, h2, suspect, suspect, suspect, *sw, *sw2)
            : fmt::format("control {} with {}: fast here and slow above is {}; slow here too is "
                          "the fabric",
                          h1, h2, what)));
}

// The suspect's own ports: one down or slower than its others is the NIC
// (the pairs say the node; this says which part of it).
void PlanIbstat(size_t i, const std::string& suspect, ConfirmPlan& plan) {
  PlannedTest ib;
  ib.kind = TestKind::kHealth;
  ib.culprit = i;
  ib.hosts = {suspect};
  ib.argv = {"ibstat"};
  ib.time_limit_s = 30;
  ib.why = fmt::format(
      "{}'s InfiniBand ports: a port down, or at a lower rate than its others, is "
      "the NIC",
      suspect);
  plan.tests.push_back(std::move(ib));
}

// A switch under suspicion: across its uplink, inside it, and elsewhere.
void PlanSwitch(const ConfirmInput& in, size_t i, const std::string& sw, const Named& named,
                const PlanOptions& o, ConfirmPlan& plan) {
  std::vector<std::string> under, elsewhere;
  for (const std::string& h : in.hosts) {
    (SwitchOf(in, h) == sw ? under : elsewhere).push_back(h);
  }
  std::vector<std::string> healthy_elsewhere;
  for (const std::string& h : elsewhere) {
    if (named.hosts.count(h) == 0) healthy_elsewhere.push_back(h);
  }
  if (under.empty() || healthy_elsewhere.empty()) {
    plan.notes.push_back(fmt::format(
        "switch {}: the report places no host under it and a healthy one elsewhere to pair", sw));
    return;
  }
  plan.tests.push_back(PairTest(
      in, o, i, under[0], healthy_elsewhere[0], PairRole::kAcross,
      fmt::format("across switch {}'s uplink: {} with {}", sw, under[0], healthy_elsewhere[0])));
  if (under.size() >= 2) {
    plan.tests.push_back(PairTest(
        in, o, i, under[0], under[1], PairRole::kInside,
        fmt::format("inside switch {}: {} with {}; fast here and slow across is the uplink or the "
                    "switch's other tenants, not a node",
                    sw, under[0], under[1])));
  }
  if (healthy_elsewhere.size() >= 2) {
    plan.tests.push_back(PairTest(
        in, o, i, healthy_elsewhere[0], healthy_elsewhere[1], PairRole::kControl,
        fmt::format("control elsewhere: {} with {}", healthy_elsewhere[0], healthy_elsewhere[1])));
  }
}

// A healthy GPU of the same model as `gpu` of `host`, on another host first.
std::optional<ReportGpu> ControlGpu(const ConfirmInput& in, const std::string& host, int32_t gpu,
                                    const Named& named) {
  std::optional<std::string> model;
  for (const ReportGpu& g : in.gpus) {
    if (g.host == host && g.gpu == gpu) model = g.model;
  }
  std::optional<ReportGpu> same_host;
  for (const ReportGpu& g : in.gpus) {
    if (named.gpus.count({g.host, g.gpu}) != 0 || g.model != model) continue;
    if (g.rank && named.ranks.count(*g.rank) != 0) continue;
    if (g.host != host) return g;
    if (!same_host) same_host = g;
  }
  return same_host;
}

double DcgmLimit(int level) {
  switch (level) {
    case 1: return 120;
    case 2: return 900;
    case 3: return 3600;
    default: return 7200;
  }
}

int GpusOf(const ConfirmInput& in, const std::string& host) {
  return static_cast<int>(std::count_if(in.gpus.begin(), in.gpus.end(),
                                        [&](const ReportGpu& g) { return g.host == host; }));
}

// The GEMM on every GPU of the suspect's host at once (its peers there of
// the same model are the first comparison), and on a healthy GPU of another
// host when the report has one: a host whose GPUs are all slow shows then.
void PlanGpuGemm(const ConfirmInput& in, size_t i, const std::string& host, int32_t gpu,
                 const std::optional<ReportGpu>& peer, const PlanOptions& o, ConfirmPlan& plan) {
  PlannedTest t;
  t.kind = TestKind::kCompute;
  t.culprit = i;
  t.hosts = {host};
  t.gpu = gpu;
  t.node_gpus = GpusOf(in, host);
  // Long enough for a poorly cooled GPU to heat up and throttle.
  t.argv = {o.laggard, "gemm", "--gpus", "all", "--seconds", "30"};
  t.time_limit_s = 180;
  t.why = fmt::format("GEMM on every GPU of {} at once: GPU {} against its peers of the same model",
                      host, gpu);
  auto planned = [&](const PlannedTest& x) {
    return std::any_of(plan.tests.begin(), plan.tests.end(), [&](const PlannedTest& have) {
      return have.culprit == i && have.control == x.control && have.argv == x.argv &&
             have.hosts == x.hosts;
    });
  };
  // A group's GPUs on one host share the host's run.
  if (!planned(t)) plan.tests.push_back(t);
  if (!peer || peer->host == host) return;
  // The control host loaded as the suspect's is: every GPU at once.
  PlannedTest ctl = t;
  ctl.control = true;
  ctl.hosts = {peer->host};
  ctl.gpu = peer->gpu;
  ctl.node_gpus = GpusOf(in, peer->host);
  ctl.why = fmt::format("the same GEMM on every GPU of {} (a healthy {}, GPU {}) as the control",
                        peer->host, peer->model.value_or("GPU"), peer->gpu);
  if (!planned(ctl)) plan.tests.push_back(std::move(ctl));
}

void PlanGpuCompute(const ConfirmInput& in, size_t i, const std::string& host, int32_t gpu,
                    const Named& named, const PlanOptions& o, ConfirmPlan& plan) {
  PlannedTest smi;
  smi.kind = TestKind::kHealth;
  smi.culprit = i;
  smi.hosts = {host};
  smi.gpu = gpu;
  smi.node_gpus = GpusOf(in, host);
  // The whole page: `-d` has no section with the PCIe link, which the
  // health read-back checks while the GPU is busy (gpu_health.h).
  smi.argv = {"nvidia-smi", "-q", "-i", std::to_string(gpu)};
  smi.time_limit_s = 60;
  smi.why = fmt::format("{} GPU {}: throttle reasons now and the time throttled, clocks, errors",
                        host, gpu);
  plan.tests.push_back(smi);
  PlannedTest diag;
  diag.kind = TestKind::kHealth;
  diag.culprit = i;
  diag.hosts = {host};
  diag.gpu = gpu;
  diag.node_gpus = smi.node_gpus;
  diag.argv = {"dcgmi", "diag", "-r", std::to_string(o.dcgm_level), "-i", std::to_string(gpu)};
  diag.time_limit_s = DcgmLimit(o.dcgm_level);
  diag.why = fmt::format("DCGM's level-{} diagnostic on {} GPU {}", o.dcgm_level, host, gpu);
  plan.tests.push_back(diag);
  std::optional<ReportGpu> peer = ControlGpu(in, host, gpu, named);
  if (peer) {
    PlannedTest ctl = diag;
    ctl.control = true;
    ctl.hosts = {peer->host};
    ctl.gpu = peer->gpu;
    ctl.node_gpus = GpusOf(in, peer->host);
    ctl.argv = {
        "dcgmi", "diag", "-r", std::to_string(o.dcgm_level), "-i", std::to_string(peer->gpu)};
    ctl.why = fmt::format("the same on a healthy {} ({} GPU {}) as the control",
                          peer->model.value_or("GPU"), peer->host, peer->gpu);
    plan.tests.push_back(ctl);
  } else {
    plan.notes.push_back(fmt::format(
        "{} GPU {}: no healthy GPU of the same model in the report for a control", host, gpu));
  }
  PlanGpuGemm(in, i, host, gpu, peer, o, plan);
}

void PlanCpuCompute(const ConfirmInput& in, size_t i, const std::optional<std::string>& host,
                    const Named& named, const PlanOptions& o, ConfirmPlan& plan) {
  const ReportCulprit& c = in.culprits[i];
  PlannedTest t;
  t.kind = TestKind::kCompute;
  t.culprit = i;
  if (host) t.hosts = {*host};
  t.argv = {o.laggard, "gemm"};
  std::optional<int> mine, peer;
  if (c.rank) {
    auto it = o.rank_cores.find(*c.rank);
    if (it != o.rank_cores.end()) mine = it->second;
    for (const auto& [rank, core] : o.rank_cores) {
      auto peer_host = HostOfRank(in, rank);
      bool same_host = !host || !peer_host || *peer_host == *host;
      if (named.ranks.count(rank) == 0 && core != mine && same_host) {
        peer = core;
        break;
      }
    }
  }
  if (mine && peer) {
    t.argv.push_back("--cores");
    t.argv.push_back(fmt::format("{},{}", *mine, *peer));
    t.time_limit_s = 120;
    t.why = fmt::format("GEMM on rank {}'s core {} against a healthy rank's core {}", *c.rank,
                        *mine, *peer);
  } else {
    // Every core, a quarter second each: a host of 256 cores in about 70 s.
    t.argv.insert(t.argv.end(), {"--seconds", "0.25"});
    t.time_limit_s = 600;
    t.why = "GEMM on every core: a slower or contended core shows as fewer GFLOP/s";
    plan.notes.push_back(
        fmt::format("{}: the core it ran on, or a healthy rank's, is not known (give --rank-cores "
                    "RANK:CORE,...), so the GEMM runs on every core",
                    CulpritName(c)));
  }
  for (const PlannedTest& have : plan.tests) {
    if (have.argv == t.argv && have.hosts == t.hosts) return;  // two culprits, one core
  }
  plan.tests.push_back(std::move(t));
}

}  // namespace

std::string_view PairRoleName(PairRole r) {
  switch (r) {
    case PairRole::kSuspect: return "suspect";
    case PairRole::kAcross: return "across";
    case PairRole::kInside: return "inside";
    case PairRole::kControl: return "control";
    case PairRole::kHalf: return "half";
    case PairRole::kNone: break;
  }
  return "";
}

std::string_view TestKindName(TestKind k) {
  switch (k) {
    case TestKind::kHealth: return "health";
    case TestKind::kCompute: return "compute";
    case TestKind::kCommunication: return "communication";
  }
  return "health";
}

size_t NestingDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<std::string> SwitchOf(const ConfirmInput& in, const std::string& host) {
  auto it = in.switch_of.find(host);
  if (it == in.switch_of.end()) return std::nullopt;
  return it->second;
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
  if (!c.ranks.empty()) {
    return fmt::format("ranks {}",
                       fmt::join(c.ranks.begin(),
                                 c.ranks.begin() + std::min<size_t>(c.ranks.size(), 8), ", ")) +
           (c.ranks.size() > 8 ? ", ..." : "");
  }
  return c.cause_class == "communication" ? "the job's network" : "the job";
}

StatusOr<ConfirmInput> ReadReport(std::string_view text, const std::string& where) {
  if (NestingDepth(text) > kMaxNesting) {
    return Status::Error(
        fmt::format("{}: nested deeper than {} levels: not a laggard report", where, kMaxNesting));
  }
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
  static const Json kObject = Json::object(), kArray = Json::array();
  // Host names go into command lines (mpirun -H, ssh, srun --nodelist):
  // only what a host name can be, never an option.
  auto host_ok = LooksLikeHost;
  ConfirmInput in;
  const Json& v = Member(j, "verdict", kObject);
  in.status = Get<std::string>(v, "status").value_or("");
  in.summary = Get<std::string>(v, "summary").value_or("");
  const Json& job = Member(j, "job", kObject);
  in.first_time = Get<std::string>(job, "first_time");
  in.last_time = Get<std::string>(job, "last_time");
  for (const Json& c : Member(v, "culprits", kArray)) {
    ReportCulprit rc;
    rc.rank = Get<int32_t>(c, "rank");
    rc.host = Get<std::string>(c, "host");
    if (rc.host && !host_ok(*rc.host)) rc.host.reset();
    rc.gpu = Get<int32_t>(c, "gpu");
    rc.nic = Get<std::string>(c, "nic");
    rc.switch_name = Get<std::string>(c, "switch");
    rc.cause_class = Get<std::string>(c, "cause_class").value_or("unknown");
    rc.cause = Get<std::string>(c, "cause");
    rc.confidence = Get<double>(c, "confidence").value_or(0);
    for (const Json& r : Member(c, "ranks", kArray)) {
      if (r.is_number_integer() && r.get<int64_t>() >= 0 &&
          r.get<int64_t>() <= std::numeric_limits<int32_t>::max()) {
        rc.ranks.push_back(r.get<int32_t>());
      }
    }
    in.culprits.push_back(std::move(rc));
  }
  std::set<std::string> hosts;
  for (const Json& r : Member(j, "ranks", kArray)) {
    auto rank = Get<int32_t>(r, "rank");
    if (!rank) continue;
    in.ranks.push_back(*rank);
    if (auto h = Get<std::string>(r, "host"); h && host_ok(*h)) {
      in.host_of_rank[*rank] = *h;
      hosts.insert(*h);
    }
    if (auto g = Get<int32_t>(r, "gpu")) in.gpu_of_rank[*rank] = *g;
  }
  for (const Json& g : Member(Member(j, "hardware", kObject), "gpus", kArray)) {
    auto host = Get<std::string>(g, "host");
    auto index = Get<int32_t>(g, "gpu");
    if (!host || !index || !host_ok(*host)) continue;
    auto rank = Get<int32_t>(g, "rank");
    in.gpus.push_back({*host, *index, rank, Get<std::string>(g, "model")});
    hosts.insert(*host);
    if (rank) {
      in.host_of_rank.emplace(*rank, *host);
      in.gpu_of_rank.emplace(*rank, *index);
    }
  }
  for (const auto& [h, sw] : Member(Member(j, "network", kObject), "switch_of", kObject).items()) {
    if (sw.is_string() && host_ok(h)) in.switch_of[h] = sw.get<std::string>();
  }
  // A CPU job: its traces ran on no device, and no GPU is anywhere.
  bool cpu_traces = false, device_traces = false;
  for (const Json& t : Member(Member(j, "traces", kObject), "ranks", kArray)) {
    if (!t.is_object() || !t.contains("cpu_only") || !t["cpu_only"].is_boolean()) continue;
    (t["cpu_only"].get<bool>() ? cpu_traces : device_traces) = true;
  }
  bool any_gpu = !in.gpus.empty() || !in.gpu_of_rank.empty() ||
                 std::any_of(in.culprits.begin(), in.culprits.end(),
                             [](const ReportCulprit& c) { return c.gpu.has_value(); });
  in.cpu_job = cpu_traces && !device_traces && !any_gpu;
  // A network slow as a whole names nobody: the job's network is the
  // suspect, bisected over its hosts.
  if (in.culprits.empty() && in.status == "communication_bound") {
    ReportCulprit c;
    c.cause_class = "communication";
    in.culprits.push_back(c);
  }
  in.hosts.assign(hosts.begin(), hosts.end());
  std::sort(in.hosts.begin(), in.hosts.end(), NaturalLess);
  std::sort(in.ranks.begin(), in.ranks.end());
  return in;
}

ConfirmPlan PlanConfirm(const ConfirmInput& in, const PlanOptions& o) {
  ConfirmPlan plan;
  Named named = NamedByCulprits(in);
  std::set<std::string> switches_planned;
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
    // A switch culprit (external, or naming no host); a host culprit's
    // switch is only where it sits.
    if (cls == "external" || (c.switch_name && !host)) {
      std::optional<std::string> sw = c.switch_name;
      if (!sw && host) sw = SwitchOf(in, *host);
      if (sw) {
        if (switches_planned.insert(*sw).second) PlanSwitch(in, i, *sw, named, o, plan);
      } else if (host) {
        PlanNodeTriangle(in, i, *host, named, o, plan);
      } else {
        plan.notes.push_back(
            fmt::format("{}: no host or switch named, nothing to pair", CulpritName(c)));
      }
      continue;
    }
    if (cls == "communication") {
      if (host) {
        PlanNodeTriangle(in, i, *host, named, o, plan);
        PlanIbstat(i, *host, plan);
      } else {
        if (Bisects(c) && in.hosts.size() >= 4) {
          plan.notes.push_back(fmt::format(
              "{}: no host named: bisection over {} hosts, a round at a time (each round's halves "
              "depend on the last), at most {} runs",
              CulpritName(c), in.hosts.size(), BisectBound(in.hosts.size())));
          BisectState b = BisectNext(in, plan, {}, i, o);
          for (PlannedTest& t : b.next) plan.tests.push_back(std::move(t));
        } else {
          plan.notes.push_back(
              Bisects(c) ? fmt::format("{}: no host named, and {} host{} too few to bisect: run "
                                       "all_reduce_perf between each pair",
                                       CulpritName(c), in.hosts.size(),
                                       in.hosts.size() == 1 ? " is" : "s are")
                         : fmt::format("{}: no host is known for it; tie ranks to hosts (step "
                                       "logs with host names) and diagnose again",
                                       CulpritName(c)));
        }
      }
      continue;
    }
    // compute_slow, host_stall, unknown.
    if (in.cpu_job) {
      PlanCpuCompute(in, i, host, named, o, plan);
      continue;
    }
    // Each GPU the culprit names: its own, or each of a group's ranks'.
    std::vector<std::pair<std::string, int32_t>> gpus = CulpritGpus(in, c);
    if (!gpus.empty()) {
      for (const auto& [h, g] : gpus) PlanGpuCompute(in, i, h, g, named, o, plan);
    } else if (host) {
      PlannedTest smi;
      smi.kind = TestKind::kHealth;
      smi.culprit = i;
      smi.hosts = {*host};
      smi.node_gpus = GpusOf(in, *host);
      smi.argv = {"nvidia-smi", "-q"};
      smi.time_limit_s = 60;
      smi.why = "every GPU of the host: throttle reasons, clocks, errors (its GPU is not known)";
      plan.tests.push_back(smi);
      PlannedTest diag = smi;
      diag.argv = {"dcgmi", "diag", "-r", std::to_string(o.dcgm_level)};
      diag.time_limit_s = DcgmLimit(o.dcgm_level);
      diag.why = fmt::format("DCGM's level-{} diagnostic on every GPU of the host", o.dcgm_level);
      plan.tests.push_back(diag);
    } else {
      plan.notes.push_back(fmt::format(
          "{}: no host or GPU is known for it; tie ranks to hosts (step logs with host names, "
          "--gpus-per-node) and diagnose again",
          CulpritName(c)));
    }
    if (cls == "host_stall") {
      plan.notes.push_back(fmt::format(
          "{}: a host stall is its CPU's or its input's: look at the host's other processes "
          "(top, the agent's CPU probe) and the data loader; the GPU checks rule the card out",
          CulpritName(c)));
    }
  }
  return plan;
}

}  // namespace laggard::confirm
