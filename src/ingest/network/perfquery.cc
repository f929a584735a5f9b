// `perfquery` (infiniband-diags / rdma-core): a port's performance counters,
// one block per query, one IbPortCounters per (host, LID, port).
//
//   # Port counters: Lid 75 port 1 (CapMask: 0x5A00)
//   PortSelect:......................1
//   CounterSelect:...................0x0000
//   SymbolErrorCounter:..............0
//   ...
//   PortXmitData:....................4294967295
//   PortXmitWait:....................123456
//
//   # Port extended counters: Lid 75 port 1 (CapMask: 0x5A00 CapMask2: 0x0000002)
//   PortSelect:......................1
//   CounterSelect:...................0x0000
//   PortXmitData:....................160038479872
//   ...
//   PortXmitWait:....................1872365
//   QP1Dropped:......................0
//
// The first block is `perfquery` (PortCounters: 32-bit data and packet
// counters, 16/8-bit error counters), the second `perfquery -x`
// (PortCountersExtended: 64-bit; the error counters and PortXmitWait only
// when the device sets CapMask2 bit 1). Older versions print no "(CapMask:
// ...)" and spell some names short ("XmtData:", "XmtWait:"), which are read
// too. A file may hold both blocks of one port (a script running `perfquery`
// then `perfquery -x` per CA): they make one record, 64-bit values first.
// Data counters count 4-octet words: the model's bytes are 4x the value.
// A 32-bit counter at its maximum (4294967295, 65535, 255) has saturated
// and is kept out, named in IbPortCounters::saturated (by its PortCounters
// name) unless a later readable value of it follows. Outputs of many hosts
// in one file (pdsh / clush "host: " prefixes, dshbak blocks) are split per
// host (host_lines.h); the host is the prefix's, else the path's.
//
// Snapshots over time: a sampling loop (`while sleep 10; do date -u
// +%Y-%m-%dT%H:%M:%SZ; perfquery -x ...; done`) prints a timestamp line
// before its blocks: ISO 8601 (`date -u +%FT%TZ`, `date -Is`, fraction and
// offset optional), epoch seconds (`date +%s`, fraction optional) or plain
// `date` ("Sun Nov 29 21:58:41 UTC 2026"; a zone other than UTC / GMT is
// read as UTC, like the asctime times of nvidia-smi). A block takes the
// latest timestamp of its stream (IbPortCounters::time_ns), and each
// timestamp starts new records, so a file of N samples holds N records per
// port. Without timestamp lines repeated blocks of one port make one record
// (the later values win), as before.
//
// Ignored: PortSelect, CounterSelect(2), unicast / multicast packet counts,
// constraint, relay, VL15 and QP1 drop counters, ibwarn lines.
// Counted as network.bad_record: a counter whose value is not a number, a
// "Name:....value" line outside any block, a block without any counter (the
// output was cut), a data counter too large to hold in bytes, and each
// "perfquery: iberror: ..." line (a port that could not be queried, such as
// a port that is down), and a line that looks like a timestamp (starts
// with a digit or a weekday name) but is not one of the forms above.

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/network/net_streams.h"
#include "ingest/network/network_readers.h"
#include "model/time.h"

namespace laggard {
namespace {

struct Header {
  bool extended = false;
  std::optional<int64_t> lid;
  int32_t port = 1;
};

// "# Port counters: Lid 75 port 1 (CapMask: 0x5A00)" /
// "# Port extended counters: Lid 75 port 1 (...)".
std::optional<Header> ParseHeader(std::string_view line) {
  std::string_view t = Trim(line);
  Header h;
  if (StartsWith(t, "# Port counters:")) {
    t.remove_prefix(16);
  } else if (StartsWith(t, "# Port extended counters:")) {
    t.remove_prefix(25);
    h.extended = true;
  } else {
    return std::nullopt;
  }
  t = Trim(t.substr(0, t.find('(')));
  // "Lid 75 port 1"; other address forms ("DR path slid 0; ...") keep no LID.
  size_t port_at = t.rfind(" port ");
  if (port_at == std::string_view::npos) return std::nullopt;
  auto port = ParseInt<int32_t>(t.substr(port_at + 6));
  if (!port || *port < 0 || *port > 255) return std::nullopt;
  h.port = *port;
  std::string_view addr = Trim(t.substr(0, port_at));
  if (StartsWith(addr, "Lid ")) {
    auto lid = ParseInt<int64_t>(addr.substr(4));
    if (lid && *lid >= 0 && *lid <= 0xFFFF) h.lid = lid;
  }
  return h;
}

bool IsHeader(std::string_view line) { return ParseHeader(line).has_value(); }

// A sampling loop's `date` line (see the top of the file).
enum class StampKind : uint8_t { kNone, kTime, kMalformed };
struct Stamp {
  StampKind kind = StampKind::kNone;
  TimeNs time_ns = 0;
};

bool IsWeekday(std::string_view w) {
  static constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  for (std::string_view d : kDays) {
    if (EqualsIgnoreCase(w, d)) return true;
  }
  return false;
}

Stamp ParseStamp(std::string_view t) {
  Stamp out;
  if (t.empty()) return out;
  if (IsDigit(t.front())) {
    out.kind = StampKind::kMalformed;
    // Epoch seconds: digits with an optional fraction (ParseTimestamp would
    // also take ms / us / ns; `date +%s` prints seconds).
    bool epoch_like = t.find_first_not_of("0123456789.") == std::string_view::npos;
    if (epoch_like && t.substr(0, t.find('.')).size() > 11) return out;
    if (auto v = ParseTimestamp(t)) {
      out.kind = StampKind::kTime;
      out.time_ns = *v;
    }
    return out;
  }
  std::string_view first = t.substr(0, t.find(' '));
  if (first.size() != 3 || first.size() == t.size() || !IsWeekday(first)) return out;
  out.kind = StampKind::kMalformed;
  // "Sun Nov 29 21:58:41 UTC 2026": asctime with the zone before the year.
  std::vector<std::string_view> w;
  std::string_view rest = t;
  while (!rest.empty() && w.size() < 7) {
    size_t b = rest.find_first_not_of(' ');
    if (b == std::string_view::npos) break;
    rest.remove_prefix(b);
    size_t e = rest.find(' ');
    w.push_back(rest.substr(0, e));
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
  }
  if (w.size() == 6) {
    bool zone = !w[4].empty() && std::all_of(w[4].begin(), w[4].end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    });
    if (!zone) return out;
    std::string asctime = fmt::format("{} {} {} {} {}", w[0], w[1], w[2], w[3], w[5]);
    if (auto v = ParseCtime(asctime)) {
      out.kind = StampKind::kTime;
      out.time_ns = *v;
    }
  } else if (w.size() == 5) {
    if (auto v = ParseCtime(t)) {
      out.kind = StampKind::kTime;
      out.time_ns = *v;
    }
  }
  return out;
}

// "PortXmitData:....................123" -> ("PortXmitData", "123").
bool SplitDotted(std::string_view line, std::string_view& name, std::string_view& value) {
  std::string_view t = Trim(line);
  size_t colon = t.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  name = t.substr(0, colon);
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c))) return false;
  }
  value = t.substr(colon + 1);
  size_t dots = 0;
  while (dots < value.size() && value[dots] == '.') ++dots;
  if (dots == 0) return false;
  value = Trim(value.substr(dots));
  return true;
}

enum class Field : uint8_t {
  kXmitData,
  kRcvData,
  kXmitPkts,
  kRcvPkts,
  kXmitWait,
  kXmitDiscards,
  kSymbolErrors,
  kLinkRecoveries,
  kLinkDowned,
  kRcvErrors,
  kIgnored,
  kUnknown
};

struct FieldInfo {
  Field field;
  int bits;  // width in PortCounters (the 32-bit query)
};

FieldInfo Lookup(std::string_view name) {
  if (name == "PortXmitData" || name == "XmtData") return {Field::kXmitData, 32};
  if (name == "PortRcvData" || name == "RcvData") return {Field::kRcvData, 32};
  if (name == "PortXmitPkts" || name == "XmtPkts") return {Field::kXmitPkts, 32};
  if (name == "PortRcvPkts" || name == "RcvPkts") return {Field::kRcvPkts, 32};
  if (name == "PortXmitWait" || name == "XmtWait") return {Field::kXmitWait, 32};
  if (name == "PortXmitDiscards" || name == "XmtDiscards") return {Field::kXmitDiscards, 16};
  if (name == "SymbolErrorCounter" || name == "SymbolErrors") return {Field::kSymbolErrors, 16};
  if (name == "LinkErrorRecoveryCounter" || name == "LinkRecovers")
    return {Field::kLinkRecoveries, 8};
  if (name == "LinkDownedCounter" || name == "LinkDowned") return {Field::kLinkDowned, 8};
  if (name == "PortRcvErrors" || name == "RcvErrors") return {Field::kRcvErrors, 16};
  static constexpr std::string_view kIgnored[] = {"PortSelect",
                                                  "CounterSelect",
                                                  "CounterSelect2",
                                                  "PortUnicastXmitPkts",
                                                  "PortUnicastRcvPkts",
                                                  "PortMulticastXmitPkts",
                                                  "PortMulticastRcvPkts",
                                                  "PortRcvRemotePhysicalErrors",
                                                  "RcvRemotePhysErrors",
                                                  "PortRcvSwitchRelayErrors",
                                                  "RcvSwRelayErrors",
                                                  "PortXmitConstraintErrors",
                                                  "XmtConstraintErrors",
                                                  "PortRcvConstraintErrors",
                                                  "RcvConstraintErrors",
                                                  "LocalLinkIntegrityErrors",
                                                  "LinkIntegrityErrors",
                                                  "ExcessiveBufferOverrunErrors",
                                                  "ExcBufOverrunErrors",
                                                  "VL15Dropped",
                                                  "QP1Dropped"};
  for (std::string_view n : kIgnored) {
    if (name == n) return {Field::kIgnored, 0};
  }
  return {Field::kUnknown, 0};
}

// Where a counter goes in the record; nullptr for none.
std::optional<int64_t>* Slot(IbPortCounters& c, Field field) {
  switch (field) {
    case Field::kXmitData: return &c.xmit_data_bytes;
    case Field::kRcvData: return &c.rcv_data_bytes;
    case Field::kXmitPkts: return &c.xmit_pkts;
    case Field::kRcvPkts: return &c.rcv_pkts;
    case Field::kXmitWait: return &c.xmit_wait_ticks;
    case Field::kXmitDiscards: return &c.xmit_discards;
    case Field::kSymbolErrors: return &c.symbol_errors;
    case Field::kLinkRecoveries: return &c.link_error_recoveries;
    case Field::kLinkDowned: return &c.link_downed;
    case Field::kRcvErrors: return &c.rcv_errors;
    default: return nullptr;
  }
}

struct Stream {
  std::string stream;
  bool in_block = false;
  bool extended = false;
  bool block_has_field = false;
  uint64_t block_line = 0;
  std::optional<size_t> record;   // index into Reader's records
  std::optional<TimeNs> time_ns;  // the latest timestamp line
  int64_t snapshot = 0;           // timestamp lines seen
};

// A record being built, keyed by stream, LID and port.
struct Pending {
  std::string stream;
  IbPortCounters c;
  bool from_extended[10] = {};  // per Field: value came from a 64-bit block
};

// The reading of one file.
class PerfqueryFile : public NetFileReader<PerfqueryFile, Stream> {
 public:
  explicit PerfqueryFile(ReaderContext& ctx) : NetFileReader(IsHeader, BlankLines::kSkip, ctx) {}

  void Line(Stream& s, const TextLine& l) {
    std::string_view t = l.trimmed;
    uint64_t n = l.number;
    if (auto h = ParseHeader(t)) {
      StartBlock(s, *h, n);
      return;
    }
    if (t.find("iberror:") != std::string_view::npos) {
      Close(s);
      Bad(n, fmt::format("perfquery could not query a port: \"{}\"", Printable(t, 100)));
      return;
    }
    if (StartsWith(t, "ibwarn:")) return;  // the iberror line that follows says what failed
    if (Stamp stamp = ParseStamp(t); stamp.kind != StampKind::kNone) {
      Close(s);
      // A sample of unknown time is still a sample of its own.
      ++s.snapshot;
      s.time_ns.reset();
      if (stamp.kind == StampKind::kMalformed) {
        Bad(n, fmt::format("not a timestamp line perfquery snapshots are read with: \"{}\"",
                           Printable(t, 80)));
        return;
      }
      s.time_ns = stamp.time_ns;
      return;
    }
    std::string_view fname, value;
    if (!SplitDotted(t, fname, value)) {
      Bad(n, fmt::format("not a perfquery \"Name:....value\" line: \"{}\"", Printable(t, 80)));
      return;
    }
    if (!s.in_block || !s.record) {
      Bad(n, fmt::format("counter outside any perfquery block: \"{}\"", Printable(t, 80)));
      return;
    }
    Counter(s, fname, value, n);
  }

  void Close(Stream& s) {
    if (s.in_block && !s.block_has_field) {
      Bad(s.block_line, "perfquery block without any counter (output cut?)");
    }
    s.in_block = false;
  }

  // Takes every record that holds a counter; one that holds none was
  // counted when read (no counter, or none readable).
  void Finish() {
    for (Pending& p : records_) {
      bool any = p.c.xmit_data_bytes || p.c.rcv_data_bytes || p.c.xmit_pkts || p.c.rcv_pkts ||
                 p.c.xmit_wait_ticks || p.c.xmit_discards || p.c.symbol_errors ||
                 p.c.link_error_recoveries || p.c.link_downed || p.c.rcv_errors ||
                 !p.c.saturated.empty();
      if (any) Take(p.stream, p.c.src.line, p.c, ctx_.out->network().port_counters);
    }
  }

 private:
  void StartBlock(Stream& s, const Header& h, uint64_t n) {
    Close(s);
    s.in_block = true;
    s.extended = h.extended;
    s.block_has_field = false;
    s.block_line = n;
    // A block whose address names no LID stands alone.
    std::tuple<std::string, int64_t, int64_t, int32_t> key{
        s.stream, s.snapshot, h.lid.value_or(-1 - static_cast<int64_t>(n)), h.port};
    auto it = index_.find(key);
    if (it == index_.end()) {
      it = index_.emplace(key, records_.size()).first;
      records_.emplace_back();
      records_.back().stream = s.stream;
      records_.back().c.lid = h.lid;
      records_.back().c.port = h.port;
      records_.back().c.src = ctx_.Ref(n);
      records_.back().c.time_ns = s.time_ns;
    }
    s.record = it->second;
    records_[it->second].c.extended = records_[it->second].c.extended || h.extended;
  }

  // A "Name:....value" line inside a block.
  void Counter(Stream& s, std::string_view fname, std::string_view value, uint64_t n) {
    FieldInfo info = Lookup(fname);
    s.block_has_field = true;  // also a counter of the tool's the model does not keep
    if (info.field == Field::kUnknown || info.field == Field::kIgnored) return;
    auto v = ParseInt<uint64_t>(value);
    if (!v) {
      Bad(n, fmt::format("{} is not a number: \"{}\"", fname, Printable(value, 40)));
      return;
    }
    Pending& p = records_[*s.record];
    size_t fi = static_cast<size_t>(info.field);
    if (!s.extended && p.from_extended[fi]) return;  // the 64-bit value wins
    bool data = info.field == Field::kXmitData || info.field == Field::kRcvData;
    std::optional<int64_t>* slot = Slot(p.c, info.field);
    if (slot == nullptr) return;
    static constexpr const char* kCanonical[] = {
        "PortXmitData",      "PortRcvData",      "PortXmitPkts",       "PortRcvPkts",
        "PortXmitWait",      "PortXmitDiscards", "SymbolErrorCounter", "LinkErrorRecoveryCounter",
        "LinkDownedCounter", "PortRcvErrors"};
    std::string canonical = kCanonical[fi];
    if (!s.extended && *v == (info.bits >= 64 ? UINT64_MAX : (uint64_t{1} << info.bits) - 1)) {
      if (std::find(p.c.saturated.begin(), p.c.saturated.end(), canonical) == p.c.saturated.end()) {
        p.c.saturated.push_back(std::move(canonical));
      }
      slot->reset();
      return;
    }
    uint64_t limit = data ? static_cast<uint64_t>(INT64_MAX) / 4 : static_cast<uint64_t>(INT64_MAX);
    if (*v > limit) {
      Bad(n, fmt::format("{} is out of range: {}", fname, *v));
      return;
    }
    *slot = static_cast<int64_t>(data ? *v * 4 : *v);
    p.from_extended[fi] = s.extended;
    std::erase(p.c.saturated, canonical);  // a later, readable value replaces it
  }

  std::vector<Pending> records_;
  // (stream, snapshot, lid or -1, port)
  std::map<std::tuple<std::string, int64_t, int64_t, int32_t>, size_t> index_;
};

int SniffPerfquery(std::string_view head) {
  bool header = false, confirmed = false;
  int lines = 0;
  ForEachHeadLine(head, {.split_hosts = IsHeader}, [&](std::string_view text) {
    if (Trim(text).empty()) return true;
    ++lines;
    if (IsHeader(text)) {
      header = true;
      return true;
    }
    std::string_view name, value;
    if (header && SplitDotted(text, name, value) && Lookup(name).field != Field::kUnknown) {
      confirmed = true;
      return false;
    }
    // perfquery's own failure lines may come before the first block.
    return lines < 50;
  });
  if (confirmed) return kSniffSure;
  if (header) return kSniffPlausible;  // a header only perfquery prints, no counter yet
  return kSniffNo;
}

}  // namespace

std::unique_ptr<TextReader> MakePerfqueryReader() {
  return MakeFileReader<PerfqueryFile>("perfquery", SniffPerfquery);
}

}  // namespace laggard
