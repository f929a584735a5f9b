// The hardware log of `laggard agent` (agent/agent.h: <log-dir>/hardware.jsonl
// and its rotated hardware.N.jsonl), one JSON object per line, each naming its
// record kind first:
//
//   {"record":"gpu_info","time":"2024-05-01T12:00:00.000Z","host":"node-1","gpu":0,
//    "uuid":"GPU-5d6e...","bus_id":"00000000:18:00.0","name":"NVIDIA H100 80GB HBM3",
//    "max_sm_clock_mhz":1980,"max_mem_clock_mhz":2619,"default_power_limit_w":700,
//    "pcie_gen_max":5,"pcie_width_max":16,"nvlink_total":18}
//   {"record":"gpu_sample","time":...,"host":...,"gpu":0,"uuid":...,"temp_c":45,
//    "sm_clock_mhz":1980,"mem_clock_mhz":2619,"power_w":350.5,"power_limit_w":700,
//    "util_pct":97,"mem_util_pct":41,"pcie_gen":5,"pcie_width":16,"pcie_tx_mb_s":1.2,
//    "pcie_rx_mb_s":3.4,"clock_events":0,"ecc_uncorrected_volatile":0,"nvlink_up":18}
//   {"record":"gpu_xid","time":...,"host":...,"gpu":0,"uuid":...,"xid":79}
//   {"record":"gpu_lost","time":...,"host":...,"gpu":3,"uuid":...}
//   {"record":"ib_port","time":...,"host":...,"ca":"mlx5_0","port":1,"state":"Active",
//    "phys_state":"LinkUp","rate_gbps":400,"width":4,"link_layer":"InfiniBand","counters":{...}}
//   {"record":"net_link","time":...,"host":...,"iface":"eth0","speed_mbps":25000,"operstate":"up"}
//   {"record":"host_cpu","time":...,"host":...,"procs_running":2,"procs_blocked":0,
//    "cpu":[0,1],"busy":[0.02,1],"steal":[0,0],"probe_s":[9.2e-05,9.0e-05],"speed":[0.98,1]}
//   {"record":"host_proc","time":...,"host":...,"pid":4242,"ppid":1,"comm":"python3",
//    "cpu_share":0.98,"last_cpu":1,"cpus_allowed":"1","rank":3,"cmdline":"python3 train.py"}
//
// GPU records become one GpuRecord per (host, gpu) per file: samples from
// gpu_sample; facts from gpu_info, the most recent uuid/bus id, the largest
// volatile ECC count, every XID, and the earliest gpu_lost time. The
// enforced power limit and the active NVLink count become facts only when
// they stayed the same through the file (each sample keeps its own limit).
// Link records become one IbPort / EthLink per port or interface per file,
// holding its worst reading (a state other than Active / an interface not up
// first, then the lowest rate), the earliest of equal ones. Counters are not
// read into the model (the agent exports them as metrics). Host CPU records
// become one HostCpuLog per host per file (model/hardware.h): host_cpu's
// arrays are per core, aligned with "cpu", null where not measured; a
// host_proc names a busy process of a scan, or the job's process of "rank".
//
// A line that is not an object with a known record, a parseable time and the
// record's keys of the right types is counted (hardware.bad_record or
// network.bad_record) with its line; a line of an unknown record kind (a
// newer agent's) is noted as hardware.unknown_field, and so is each unknown
// key, once per file.

#include <simdjson.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/agent_log/agent_log_reader.h"
#include "ingest/common/json_line.h"
#include "ingest/common/sniff.h"

namespace laggard {
namespace {

namespace od = simdjson::ondemand;

enum class Kind {
  kUnknown,
  kGpuInfo,
  kGpuSample,
  kGpuXid,
  kGpuLost,
  kIbPort,
  kNetLink,
  kHostCpu,
  kHostProc
};

Kind KindOf(std::string_view record) {
  if (record == "gpu_sample") return Kind::kGpuSample;
  if (record == "gpu_info") return Kind::kGpuInfo;
  if (record == "gpu_xid") return Kind::kGpuXid;
  if (record == "gpu_lost") return Kind::kGpuLost;
  if (record == "ib_port") return Kind::kIbPort;
  if (record == "net_link") return Kind::kNetLink;
  if (record == "host_cpu") return Kind::kHostCpu;
  if (record == "host_proc") return Kind::kHostProc;
  return Kind::kUnknown;
}

// Numeric keys this reader knows, by record family.
constexpr std::string_view kNumberKeys[] = {"gpu",
                                            "temp_c",
                                            "sm_clock_mhz",
                                            "mem_clock_mhz",
                                            "power_w",
                                            "power_limit_w",
                                            "util_pct",
                                            "mem_util_pct",
                                            "pcie_gen",
                                            "pcie_width",
                                            "pcie_tx_mb_s",
                                            "pcie_rx_mb_s",
                                            "clock_events",
                                            "ecc_uncorrected_volatile",
                                            "nvlink_up",
                                            "max_sm_clock_mhz",
                                            "max_mem_clock_mhz",
                                            "default_power_limit_w",
                                            "pcie_gen_max",
                                            "pcie_width_max",
                                            "nvlink_total",
                                            "xid",
                                            "port",
                                            "rate_gbps",
                                            "width",
                                            "speed_mbps",
                                            "procs_running",
                                            "procs_blocked",
                                            "pid",
                                            "ppid",
                                            "cpu_share",
                                            "last_cpu",
                                            "rank"};
constexpr std::string_view kStringKeys[] = {
    "record",     "time",       "host",  "uuid",      "bus_id", "name",    "ca",          "state",
    "phys_state", "link_layer", "iface", "operstate", "comm",   "cmdline", "cpus_allowed"};
// Arrays of numbers (or null: not measured), host_cpu's per-core values.
constexpr std::string_view kArrayKeys[] = {"cpu", "busy", "steal", "probe_s", "speed"};
constexpr size_t kMaxArray = 1 << 16;
constexpr std::string_view kIgnoredKeys[] = {"counters"};

template <size_t N>
int IndexOf(const std::string_view (&keys)[N], std::string_view k) {
  for (size_t i = 0; i < N; ++i) {
    if (keys[i] == k) return static_cast<int>(i);
  }
  return -1;
}

struct Line {
  std::optional<double> num[std::size(kNumberKeys)];
  std::optional<std::string> str[std::size(kStringKeys)];
  std::optional<std::vector<std::optional<double>>> arr[std::size(kArrayKeys)];
  std::vector<std::string> unknown_keys;

  const std::optional<double>& N(std::string_view k) const { return num[IndexOf(kNumberKeys, k)]; }
  const std::optional<std::string>& S(std::string_view k) const {
    return str[IndexOf(kStringKeys, k)];
  }
  const std::optional<std::vector<std::optional<double>>>& A(std::string_view k) const {
    return arr[IndexOf(kArrayKeys, k)];
  }
};

// An array of finite numbers and nulls; false (with `why`) otherwise.
bool ReadArray(od::value& value, std::string_view key, std::vector<std::optional<double>>& out,
               std::string& why) {
  od::array a;
  if (value.get_array().get(a)) {
    why = fmt::format("'{}' is not an array", key);
    return false;
  }
  for (auto item : a) {
    od::value v;
    if (item.get(v)) {
      why = "malformed JSON";
      return false;
    }
    bool null = false;
    if (!v.is_null().get(null) && null) {
      out.emplace_back();
    } else {
      double d;
      if (v.get_double().get(d) || !std::isfinite(d)) {
        why = fmt::format("'{}' holds a value that is not a number or null", key);
        return false;
      }
      out.emplace_back(d);
    }
    if (out.size() > kMaxArray) {
      why = fmt::format("'{}' holds over {} values", key, kMaxArray);
      return false;
    }
  }
  return true;
}

// Reads one object; false (with `why`) when it is not an object of known
// keys with values of the right type.
bool ReadLine(od::document& doc, Line& line, std::string& why) {
  od::object obj;
  if (doc.get_object().get(obj)) {
    why = "not a JSON object";
    return false;
  }
  for (auto field : obj) {
    std::string_view key;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) {
      why = "malformed JSON";
      return false;
    }
    if (int i = IndexOf(kNumberKeys, key); i >= 0) {
      double d;
      if (value.get_double().get(d) || !std::isfinite(d)) {
        why = fmt::format("'{}' is not a number", key);
        return false;
      }
      line.num[i] = d;
    } else if (int j = IndexOf(kStringKeys, key); j >= 0) {
      std::string_view s;
      if (value.get_string().get(s)) {
        why = fmt::format("'{}' is not a string", key);
        return false;
      }
      line.str[j] = std::string(s);
    } else if (int a = IndexOf(kArrayKeys, key); a >= 0) {
      std::vector<std::optional<double>> values;
      if (!ReadArray(value, key, values, why)) return false;
      line.arr[a] = std::move(values);
    } else if (IndexOf(kIgnoredKeys, key) < 0) {
      if (line.unknown_keys.size() < 16) line.unknown_keys.emplace_back(key);
    }
  }
  return true;
}

std::optional<int32_t> SmallInt(const std::optional<double>& v, double lo, double hi) {
  if (!v || *v != std::trunc(*v) || *v < lo || *v > hi) return std::nullopt;
  return static_cast<int32_t>(*v);
}

// Badness of a link reading for "worst reading" selection: down first, then
// the lowest rate.
std::tuple<int, double> IbBadness(const IbPort& p) {
  bool active = p.state && EqualsIgnoreCase(*p.state, "Active");
  return {active ? 0 : 1, -p.rate_gbps.value_or(0)};
}
std::tuple<int, double> EthBadness(const EthLink& e) {
  bool up = e.link_detected.value_or(true);
  return {up ? 0 : 1, -static_cast<double>(e.speed_mbps.value_or(0))};
}

// The reading of one file: each line's record goes to its accumulator
// (per GPU, per port, per interface), which Finish() hands to the run.
class AgentLogFile {
 public:
  explicit AgentLogFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    ForEachNonBlankLine(lines, [&](const TextLine& l) { ReadRecord(l.trimmed, l.number); });
    Finish();
    return taken_;
  }

 private:
  struct GpuAcc {
    GpuRecord rec;
    std::optional<double> limit, nvlink_up;
    bool limit_varies = false, nvlink_varies = false;
  };

  // One non-blank line.
  void ReadRecord(std::string_view t, uint64_t n) {
    Line l;
    std::string why;
    od::document doc;
    // On-demand parsing stops at the object's end: text after it is caught
    // by the last-character check.
    bool ok = t.front() == '{' && t.back() == '}' && parser_.Start(t, doc) && ReadLine(doc, l, why);
    Kind kind = ok && l.S("record") ? KindOf(*l.S("record")) : Kind::kUnknown;
    bool network = kind == Kind::kIbPort || kind == Kind::kNetLink;
    DiagCode bad = network ? DiagCode::kNetBadRecord : DiagCode::kHwBadRecord;
    auto fail = [&](std::string w) {
      ctx_.diag().Add(bad, ctx_.path, n, fmt::format("{}: {}", w, Printable(t, 100)));
    };
    if (!ok) {
      fail(why.empty() ? "malformed JSON" : why);
      return;
    }
    if (!l.S("record")) {
      fail("no \"record\" key");
      return;
    }
    if (kind == Kind::kUnknown) {  // a newer agent's record: noted, every line
      ctx_.diag().Add(
          DiagCode::kHwUnknownField, ctx_.path, n,
          fmt::format("agent log record kind '{}' is not read", Printable(*l.S("record"), 40)));
      return;
    }
    for (const std::string& k : l.unknown_keys) {
      if (noted_.insert("key:" + k).second) {
        ctx_.diag().Add(DiagCode::kHwUnknownField, ctx_.path, n,
                        fmt::format("agent log key '{}' is not read", Printable(k, 40)));
      }
    }
    std::optional<TimeNs> time = l.S("time") ? ParseTimestamp(*l.S("time")) : std::nullopt;
    if (!time) {
      fail(l.S("time") ? "\"time\" is not a timestamp" : "no \"time\"");
      return;
    }
    std::string problem = network                   ? AddLink(kind, l, n)
                          : kind == Kind::kHostCpu  ? AddHostCpu(l, *time, n)
                          : kind == Kind::kHostProc ? AddHostProc(l, *time, n)
                                                    : AddGpuRecord(kind, l, *time, n);
    if (!problem.empty()) {
      fail(std::move(problem));
      return;
    }
    ++taken_;
  }

  std::optional<std::string> HostFor(const Line& l, bool network, uint64_t n) {
    if (l.S("host") && !l.S("host")->empty()) return l.S("host");
    if (ctx_.host_from_path) return ctx_.host_from_path;
    bool& noted_flag = network ? net_no_host_noted_ : gpu_no_host_noted_;
    if (!noted_flag) {
      noted_flag = true;
      ctx_.diag().Add(network ? DiagCode::kNetNoHost : DiagCode::kHwNoHost, ctx_.path, n,
                      "agent log line names no host, nor does the file's path");
    }
    return std::nullopt;
  }

  // An ib_port or net_link record; returns what makes it unusable, or "".
  std::string AddLink(Kind kind, const Line& l, uint64_t n) {
    std::optional<std::string> host = HostFor(l, true, n);
    if (kind == Kind::kIbPort) {
      auto port = SmallInt(l.N("port"), 0, 255);
      if (!l.S("ca") || l.S("ca")->empty() || !port) {
        return "ib_port needs \"ca\" and an integer \"port\"";
      }
      IbPort p;
      p.host = host;
      p.ca = *l.S("ca");
      p.port = *port;
      p.state = l.S("state");
      p.phys_state = l.S("phys_state");
      p.rate_gbps = l.N("rate_gbps");
      p.width = SmallInt(l.N("width"), 1, 64);
      p.link_layer = l.S("link_layer");
      p.src = ctx_.Ref(n);
      auto key = std::make_tuple(host.value_or(""), p.ca, p.port);
      auto it = ib_.find(key);
      if (it == ib_.end()) ib_.emplace(key, std::move(p));
      else if (IbBadness(p) > IbBadness(it->second)) it->second = std::move(p);
      return "";
    }
    if (!l.S("iface") || l.S("iface")->empty()) return "net_link needs \"iface\"";
    EthLink e;
    e.host = host;
    e.iface = *l.S("iface");
    if (auto s = l.N("speed_mbps"); s && *s > 0 && *s < 1e9) {
      e.speed_mbps = static_cast<int64_t>(*s);
    }
    if (auto& op = l.S("operstate")) {
      if (*op == "up") e.link_detected = true;
      else if (*op == "down" || *op == "lowerlayerdown") e.link_detected = false;
    }
    e.src = ctx_.Ref(n);
    auto key = std::make_pair(host.value_or(""), e.iface);
    auto it = eth_.find(key);
    if (it == eth_.end()) eth_.emplace(key, std::move(e));
    else if (EthBadness(e) > EthBadness(it->second)) it->second = std::move(e);
    return "";
  }

  // A gpu_* record; returns what makes it unusable, or "".
  std::string AddGpuRecord(Kind kind, const Line& l, TimeNs time, uint64_t n) {
    auto index = SmallInt(l.N("gpu"), 0, 1023);
    if (!index) return "no integer \"gpu\" index";
    if (kind == Kind::kGpuXid && !SmallInt(l.N("xid"), 0, 1e9)) {
      return "gpu_xid needs an integer \"xid\"";
    }
    std::optional<std::string> host = HostFor(l, false, n);
    GpuAcc& acc = gpus_[{host.value_or(""), *index}];
    GpuRecord& g = acc.rec;
    if (g.files.empty()) {
      g.host = host;
      g.index = *index;
      g.files.push_back(ctx_.file_index);
    }
    if (l.S("uuid")) g.uuid = l.S("uuid");
    if (l.S("bus_id")) g.bus_id = l.S("bus_id");
    GpuFacts& f = g.facts;
    switch (kind) {
      case Kind::kGpuInfo: AddGpuInfo(l, f, n); break;
      case Kind::kGpuSample: AddGpuSample(l, time, acc, n); break;
      case Kind::kGpuXid: f.xids.push_back(static_cast<int64_t>(*l.N("xid"))); break;
      case Kind::kGpuLost:
        if (!f.lost_at_ns || time < *f.lost_at_ns) f.lost_at_ns = time;
        break;
      default: break;
    }
    return "";
  }

  // A host_cpu record; returns what makes it unusable, or "".
  std::string AddHostCpu(const Line& l, TimeNs time, uint64_t n) {
    HostCpuRound r;
    r.time_ns = time;
    for (auto [key, out] : {std::pair{"procs_running", &r.procs_running},
                            std::pair{"procs_blocked", &r.procs_blocked}}) {
      if (const auto& v = l.N(key); v && *v < 0) return fmt::format("\"{}\" is negative", key);
      *out = l.N(key);
    }
    if (const auto& cpus = l.A("cpu")) {
      for (std::string_view key : kArrayKeys) {
        if (l.A(key) && l.A(key)->size() != cpus->size())
          return fmt::format("\"{}\" holds {} values for {} CPUs", key, l.A(key)->size(),
                             cpus->size());
      }
      auto at = [&](std::string_view key, size_t i) {
        return l.A(key) ? (*l.A(key))[i] : std::nullopt;
      };
      for (size_t i = 0; i < cpus->size(); ++i) {
        auto cpu = SmallInt((*cpus)[i], 0, kMaxCpuNumber);
        if (!cpu) return "\"cpu\" holds a value that is not a CPU number";
        CoreReading c{.cpu = *cpu,
                      .busy = at("busy", i),
                      .steal = at("steal", i),
                      .probe_s = at("probe_s", i),
                      .speed = at("speed", i)};
        if (std::string problem = CoreReadingProblem(c); !problem.empty()) return problem;
        r.cores.push_back(c);
      }
    }
    HostLog(l, n).rounds.push_back(std::move(r));
    return "";
  }

  // A host_proc record; returns what makes it unusable, or "".
  std::string AddHostProc(const Line& l, TimeNs time, uint64_t n) {
    auto pid = SmallInt(l.N("pid"), 1, kMaxPid);
    if (!pid) return "host_proc needs an integer \"pid\"";
    if (!l.N("cpu_share")) return "host_proc needs a \"cpu_share\"";
    // An integer key that is not one reads as out of range.
    auto integer = [&](std::string_view key) -> std::optional<int32_t> {
      return l.N(key) ? SmallInt(l.N(key), 0, INT32_MAX).value_or(-1) : std::optional<int32_t>();
    };
    HostProcReading p{.time_ns = time,
                      .pid = *pid,
                      .ppid = integer("ppid"),
                      .comm = l.S("comm").value_or(""),
                      .cmdline = l.S("cmdline").value_or(""),
                      .cpu_share = *l.N("cpu_share"),
                      .last_cpu = integer("last_cpu"),
                      .rank = integer("rank"),
                      .src = ctx_.Ref(n)};
    if (const auto& cpus = l.S("cpus_allowed")) {
      std::optional<std::vector<int32_t>> list = ParseCpuList(*cpus, 4096, kMaxCpuNumber);
      if (!list) return "\"cpus_allowed\" is not a CPU list";
      p.cpus_allowed = std::move(*list);
    }
    if (std::string problem = HostProcReadingProblem(p); !problem.empty()) return problem;
    HostLog(l, n).procs.push_back(std::move(p));
    return "";
  }

  HostCpuLog& HostLog(const Line& l, uint64_t n) {
    std::string host = HostFor(l, false, n).value_or("");
    HostCpuLog& log = host_cpu_[host];
    log.host = std::move(host);
    return log;
  }

  void AddGpuInfo(const Line& l, GpuFacts& f, uint64_t n) {
    if (l.S("name")) f.name = l.S("name");
    if (l.N("max_sm_clock_mhz")) f.max_sm_clock_mhz = l.N("max_sm_clock_mhz");
    if (l.N("max_mem_clock_mhz")) f.max_mem_clock_mhz = l.N("max_mem_clock_mhz");
    if (l.N("default_power_limit_w")) f.default_power_limit_w = l.N("default_power_limit_w");
    if (auto v = SmallInt(l.N("pcie_gen_max"), 1, 16)) f.pcie_gen_max = v;
    if (auto v = SmallInt(l.N("pcie_width_max"), 1, 64)) f.pcie_width_max = v;
    if (auto v = SmallInt(l.N("nvlink_total"), 0, 64)) f.nvlink_total = v;
    if (!f.src) f.src = ctx_.Ref(n);
  }

  void AddGpuSample(const Line& l, TimeNs time, GpuAcc& acc, uint64_t n) {
    GpuFacts& f = acc.rec.facts;
    GpuSample s;
    s.time_ns = time;
    s.temp_c = l.N("temp_c");
    s.sm_clock_mhz = l.N("sm_clock_mhz");
    s.mem_clock_mhz = l.N("mem_clock_mhz");
    s.power_w = l.N("power_w");
    s.power_limit_w = l.N("power_limit_w");
    s.util_pct = l.N("util_pct");
    s.mem_util_pct = l.N("mem_util_pct");
    s.pcie_tx_mb_s = l.N("pcie_tx_mb_s");
    s.pcie_rx_mb_s = l.N("pcie_rx_mb_s");
    s.pcie_gen = SmallInt(l.N("pcie_gen"), 1, 16);
    s.pcie_width = SmallInt(l.N("pcie_width"), 1, 64);
    if (auto& ce = l.N("clock_events"); ce && *ce >= 0 && *ce < 1.8e19 && *ce == std::trunc(*ce)) {
      s.clock_events = static_cast<uint64_t>(*ce);
    }
    s.src = ctx_.Ref(n);
    acc.rec.samples.push_back(s);
    if (!f.pcie_gen_current) f.pcie_gen_current = s.pcie_gen;
    if (!f.pcie_width_current) f.pcie_width_current = s.pcie_width;
    if (auto& ecc = l.N("ecc_uncorrected_volatile"); ecc && *ecc >= 0 && *ecc < 9e18) {
      int64_t v = static_cast<int64_t>(*ecc);
      if (!f.ecc_uncorrected_volatile || v > *f.ecc_uncorrected_volatile) {
        f.ecc_uncorrected_volatile = v;
      }
    }
    auto track = [](std::optional<double>& seen, bool& varies, const std::optional<double>& v) {
      if (!v) return;
      if (!seen) seen = v;
      else if (*seen != *v) varies = true;
    };
    track(acc.limit, acc.limit_varies, s.power_limit_w);
    track(acc.nvlink_up, acc.nvlink_varies, l.N("nvlink_up"));
  }

  void Finish() {
    for (auto& [key, acc] : gpus_) {
      if (acc.limit && !acc.limit_varies) acc.rec.facts.enforced_power_limit_w = acc.limit;
      if (acc.nvlink_up && !acc.nvlink_varies) {
        acc.rec.facts.nvlink_up = SmallInt(acc.nvlink_up, 0, 64);
      }
      ctx_.out->AddGpu(std::move(acc.rec));
    }
    for (auto& [key, p] : ib_) ctx_.out->network().ib_ports.push_back(std::move(p));
    for (auto& [key, e] : eth_) ctx_.out->network().eth_links.push_back(std::move(e));
    for (auto& [host, log] : host_cpu_) ctx_.out->AddHostCpu(std::move(log));
  }

  ReaderContext& ctx_;
  JsonLineParser parser_;
  uint64_t taken_ = 0;
  std::set<std::string> noted_;  // unknown keys, noted once per file
  bool gpu_no_host_noted_ = false, net_no_host_noted_ = false;
  std::map<std::pair<std::string, int32_t>, GpuAcc> gpus_;
  std::map<std::tuple<std::string, std::string, int32_t>, IbPort> ib_;
  std::map<std::pair<std::string, std::string>, EthLink> eth_;
  std::map<std::string, HostCpuLog> host_cpu_;
};

int SniffAgentLog(std::string_view head) {
  // The first non-blank line decides. The agent writes "record" first; a
  // line cut by the head's end is judged by that prefix.
  std::string_view line = FirstNonBlankHeadLine(head);
  if (!StartsWith(line, "{\"record\":\"")) return kSniffNo;
  std::string_view rest = line.substr(11);
  std::string_view kind = rest.substr(0, rest.find('"'));
  return KindOf(kind) != Kind::kUnknown && kind.size() < rest.size() ? kSniffCertain : kSniffNo;
}

}  // namespace

std::unique_ptr<TextReader> MakeAgentLogReader() {
  return MakeFileReader<AgentLogFile>("agent_log", SniffAgentLog);
}

}  // namespace laggard
