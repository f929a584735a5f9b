// A node-pair bandwidth table, as users paste it when they test every pair
// of nodes to tell a bad node from the fabric (nccl-tests #106):
//
//   se02gn644,se02gn699     49.36
//   se02gn632,se02gn641     88.36
//   se02gn284,se02gn678     49.28  # crossing TOR
//
// A row is two host names and a number, apart by commas, blanks, ';' or
// '|', optionally with a unit after the number ("GB/s", "Gb/s", "Gbps",
// "MB/s", joined or apart) and a "# ..." note.
//
// Or a table with a header naming its columns, as pairwise scripts write
// it (nccl-tests-cluster's summary.md):
//
//   | file | test | N | G | nodes | minBytes | maxBytes | AvgBusBW (GB/s) | PeakBusBW (GB/s) |
//   |---|---|---|---|---|---|---|---|---|
//   | nccl_N2_G1_cnode2-001_cnode2-004.log | alltoall_perf | 2 | 1 | cnode2-[001,004] | ... | 5.764
//   | 9.300 |
//
// Hosts: two columns (host1/host2, node1/node2, src/dst ...) or one
// (nodes, hosts, pair) holding both, also as a Slurm host list
// ("cnode2-[001-002]"). Bandwidth: the bus bandwidth column (busbw,
// AvgBusBW ...; the average before the peak), else one named bandwidth or
// bw; its unit from the header's "(GB/s)". Test columns (test, collective,
// G, N ...) set each row's group: pairs are compared within one test only.
//
// A number without a unit is GB/s (nccl-tests' bus bandwidth); Gb/s and
// MB/s are converted. Where rows disagree on their units, those without a
// unit could be either: they are skipped (pairs.bad_row), the others
// converted. markdown rules ("|---|") and '#' lines are skipped. A row that
// is not two hosts and a positive number (a truncated paste, one host
// twice, an empty cell where the test failed) is pairs.bad_row, skipped
// with its line.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/field_names.h"
#include "ingest/common/host_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/network/network_readers.h"

namespace laggard {
namespace {

// GB per unit: 0 for a word that is no bandwidth unit.
double UnitGb(std::string_view u) {
  std::string s = ToLower(u);
  if (s == "gb/s" || s == "gb/sec" || s == "gbps" || s == "gbytes/s") {
    // "Gb/s" and "Gbps" (bits) lower to the same text as "GB/s" (bytes):
    // bits only as printed so, "Gb"; any other case ("gb/s") is bytes, the
    // unit of nccl-tests.
    return u.size() > 1 && u[0] == 'G' && u[1] == 'b' ? 0.125 : 1;
  }
  if (s == "gbit/s" || s == "gbits/s" || s == "gbit/sec") return 0.125;
  if (s == "mb/s" || s == "mb/sec" || s == "mbps")
    return u.size() > 1 && u[0] == 'M' && u[1] == 'b' ? 1.25e-4 : 1e-3;
  return 0;
}

// A host name that is not a number ("49.36" is a bandwidth).
bool IsHostName(std::string_view w) { return LooksLikeHostName(w) && !ParseDouble(w); }

// A markdown table's rule: "|---|:---:|".
bool IsRule(std::string_view t) {
  return t.find('-') != std::string_view::npos &&
         t.find_first_not_of("|-: ") == std::string_view::npos;
}

struct Row {
  std::string_view a, b;
  double value = 0;
  double unit = 0;  // GB per printed unit; 0 when none printed
  std::string_view note;
};

enum class RowKind { kRow, kHeader, kBad };

// Splits a line into its words and note, and reads it as a row or header.
RowKind ParseRow(std::string_view t, Row& row, std::vector<std::string_view>& words) {
  row = Row();
  size_t hash = t.find('#');
  if (hash != std::string_view::npos) {
    row.note = Trim(t.substr(hash + 1));
    t = t.substr(0, hash);
  }
  words.clear();
  size_t start = 0;
  auto sep = [](char c) { return c == ',' || c == ';' || c == '|' || c == ' ' || c == '\t'; };
  for (size_t i = 0; i <= t.size(); ++i) {
    if (i == t.size() || sep(t[i])) {
      if (i > start) words.push_back(t.substr(start, i - start));
      start = i + 1;
    }
  }
  // "a <-> b", "a -> b", "a b: 49.3"
  std::erase_if(words, [](std::string_view w) { return w == "<->" || w == "->" || w == "-"; });
  for (std::string_view& w : words) {
    w = TrimQuotes(w);
    if (w.size() > 1 && w.back() == ':') w.remove_suffix(1);
  }
  if (words.size() < 3 || words.size() > 4) {
    bool header = words.size() >= 3 && std::none_of(words.begin(), words.end(), [](auto w) {
                    return ParseDouble(w).has_value();
                  });
    return header ? RowKind::kHeader : RowKind::kBad;
  }
  if (!IsHostName(words[0]) || !IsHostName(words[1])) {
    return ParseDouble(words[2]) ? RowKind::kBad : RowKind::kHeader;
  }
  std::string_view v = words[2];
  std::string_view unit;
  if (words.size() == 4) {
    unit = words[3];
  } else {
    size_t end = v.find_first_not_of("0123456789.eE+-");
    if (end != std::string_view::npos && end > 0) {
      unit = v.substr(end);
      v = v.substr(0, end);
    }
  }
  std::optional<double> value = ParseDouble(v);
  if (!value) return ParseDouble(words[2]) ? RowKind::kBad : RowKind::kHeader;
  row.a = words[0];
  row.b = words[1];
  row.value = *value;
  if (!unit.empty()) {
    row.unit = UnitGb(unit);
    if (row.unit == 0) return RowKind::kBad;
  }
  return RowKind::kRow;
}

// A table with named columns (the header's layout).
struct Layout {
  char delim = 0;  // '|', ',', '\t', ';', or 0 for blanks
  int a = -1, b = -1, nodes = -1, bw = -1;
  double unit = 1;  // GB per the bandwidth column's unit
  std::vector<int> group;
  std::vector<std::string> names;  // as printed, for the group text
};

// Splits a line of a table with named columns; a markdown row's outer '|'s
// give no cells.
void Cells(std::string_view t, char delim, std::vector<std::string_view>& out) {
  out.clear();
  if (delim == 0) {
    SplitBlanks(t, out);
    return;
  }
  if (delim == '|') {
    if (!t.empty() && t.front() == '|') t.remove_prefix(1);
    if (!t.empty() && t.back() == '|') t.remove_suffix(1);
  }
  for (std::string_view c : Split(t, delim)) out.push_back(TrimQuotes(c));
}

// A column name lowered without blanks, '_' and '-', and its "(unit)".
std::string Key(std::string_view name, std::string_view* unit) {
  size_t paren = name.find('(');
  if (paren != std::string_view::npos) {
    size_t close = name.find(')', paren);
    if (unit != nullptr && close != std::string_view::npos) {
      *unit = Trim(name.substr(paren + 1, close - paren - 1));
    }
    name = name.substr(0, paren);
  }
  std::string k;
  for (char c : ToLower(Trim(name))) {
    if (c != ' ' && c != '_' && c != '-') k += c;
  }
  return k;
}

bool OneOf(const std::string& k, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), k) != names.end();
}

std::optional<Layout> HeaderLayout(std::string_view t) {
  Layout l;
  l.delim = t.find('|') != std::string_view::npos               ? '|'
            : t.find_first_of(",\t;") != std::string_view::npos ? GuessDelimiter(t)
                                                                : 0;
  std::vector<std::string_view> cells;
  Cells(t, l.delim, cells);
  int bus = -1, plain = -1;
  std::string_view bus_unit, plain_unit;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string_view unit;
    std::string k = Key(cells[i], &unit);
    const int c = static_cast<int>(i);
    l.names.emplace_back(cells[i]);
    if (OneOf(k, {"host1", "node1", "hosta", "nodea", "src", "source", "server", "sender"})) {
      if (l.a < 0) l.a = c;
    } else if (OneOf(k, {"host2", "node2", "hostb", "nodeb", "dst", "dest", "destination", "client",
                         "receiver"})) {
      if (l.b < 0) l.b = c;
    } else if (OneOf(k, {"nodes", "hosts", "pair", "nodepair", "hostpair"})) {
      if (l.nodes < 0) l.nodes = c;
    } else if (OneOf(k, {"busbw", "avgbusbw", "busbandwidth", "avgbusbandwidth", "avgbusbwgbps",
                         "busbwgbps"})) {
      if (bus < 0) bus = c, bus_unit = unit;
    } else if (OneOf(k, {"bandwidth", "bw", "avgbw", "avgbandwidth", "gb/s", "gbps"})) {
      if (plain < 0) plain = c, plain_unit = k == "gb/s" || k == "gbps" ? cells[i] : unit;
    } else if (OneOf(k, {"test", "collective", "op", "g", "gpus", "gpuspernode", "n"})) {
      l.group.push_back(c);
    }
  }
  l.bw = bus >= 0 ? bus : plain;
  std::string_view unit = bus >= 0 ? bus_unit : plain_unit;
  if (!unit.empty()) l.unit = UnitGb(unit);
  if (l.bw < 0 || l.unit == 0 || !((l.a >= 0 && l.b >= 0) || l.nodes >= 0)) return std::nullopt;
  return l;
}

// A row of a table with named columns: its two hosts, bandwidth (GB/s) and
// group; the reason when it is not one.
struct NamedRow {
  std::string a, b, group;
  double gbps = 0;
};

std::optional<std::string> ParseNamedRow(std::string_view t, const Layout& l,
                                         std::vector<std::string_view>& cells, NamedRow& row) {
  Cells(t, l.delim, cells);
  auto cell = [&](int i) {
    return static_cast<size_t>(i) < cells.size() ? cells[static_cast<size_t>(i)]
                                                 : std::string_view();
  };
  row = NamedRow();
  if (l.nodes >= 0) {
    std::optional<std::vector<std::string>> hosts = ExpandHostList(cell(l.nodes), 3);
    if (!hosts || hosts->size() != 2) return "a nodes cell that is not two hosts";
    row.a = (*hosts)[0];
    row.b = (*hosts)[1];
  } else {
    row.a = std::string(cell(l.a));
    row.b = std::string(cell(l.b));
  }
  if (!IsHostName(row.a) || !IsHostName(row.b)) return "no two host names";
  if (row.a == row.b) return "a host paired with itself";
  std::string_view v = cell(l.bw);
  if (v.empty()) return "no bandwidth (the test failed?)";
  std::optional<double> gb = ParseDouble(v);
  if (!gb || !std::isfinite(*gb) || *gb <= 0) return "a bandwidth that is not a number above zero";
  row.gbps = *gb * l.unit;
  for (int g : l.group) {
    if (!row.group.empty()) row.group += ", ";
    row.group += fmt::format("{} {}", l.names[static_cast<size_t>(g)], cell(g));
  }
  return std::nullopt;
}

int Sniff(std::string_view head) {
  Row row;
  NamedRow named;
  std::vector<std::string_view> words;
  size_t rows = 0, lines = 0, bad = 0;
  std::set<std::string> hosts, firsts, seconds;
  std::optional<Layout> layout;
  bool ok = true;
  ForEachHeadLine(head, {}, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#' || IsRule(t)) return true;
    if (++lines == 1 && (layout = HeaderLayout(t))) return true;
    // A header naming no host and bandwidth columns: another table.
    if (lines == 1 && ParseRow(t, row, words) == RowKind::kHeader) {
      ok = false;
      return false;
    }
    if (layout) {
      if (!ParseNamedRow(t, *layout, words, named)) {
        hosts.insert(named.a);
        hosts.insert(named.b);
        ++rows;
      }
      return lines < 64;  // failed tests leave cells empty: judged by the rows that read
    }
    RowKind k = ParseRow(t, row, words);
    // Words before the first row: other text. Later, a few bad rows (a
    // truncated paste) among many good ones are still this table's.
    if (k != RowKind::kRow || row.a == row.b || !(row.value > 0)) {
      ok = rows > 0;
      ++bad;
      return ok;
    }
    hosts.emplace(row.a);
    hosts.emplace(row.b);
    firsts.emplace(row.a);
    seconds.emplace(row.b);
    return ++rows < 64;
  });
  // Both columns name hosts of one cluster: a name in both, or names alike
  // but for their digits ("se02gn644" / "se02gn699"). A step log
  // ("rank0 it1 1.02") or a host,gpu,time table has different words apart.
  auto skeleton = [](const std::string& h) {
    std::string s;
    for (char c : h) {
      if (!std::isdigit(static_cast<unsigned char>(c))) s += c;
    }
    return s;
  };
  bool alike = false;
  std::set<std::string> first_skeletons;
  for (const std::string& h : firsts) first_skeletons.insert(skeleton(h));
  for (const std::string& h : seconds)
    alike = alike || firsts.count(h) > 0 || first_skeletons.count(skeleton(h)) > 0;
  if (!layout && !alike) return kSniffNo;
  // A header naming host and bandwidth columns is this format's, even
  // above one pair; below the switch map and CSV step tables otherwise,
  // which need their own headers.
  if (layout && rows >= 1) return kSniffStrong;
  if (!ok || rows < 2 || hosts.size() < 3 || bad * 2 > rows) return kSniffNo;
  if (bad > 0) return rows >= 3 ? kSniffPlausible : kSniffNo;
  return rows >= 3 ? kSniffLikely : kSniffPlausible;
}

class PairTable {
 public:
  explicit PairTable(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    std::vector<std::string_view> words;
    Row row;
    NamedRow named;
    bool first = true;
    std::optional<Layout> layout;
    ForEachNonBlankLine(lines, [&](const TextLine& line) {
      std::string_view t = line.trimmed;
      if (t.front() == '#' || IsRule(t)) return;
      if (first) {
        first = false;
        if ((layout = HeaderLayout(t))) return;
        if (ParseRow(t, row, words) == RowKind::kHeader) return;
      }
      if (layout) {
        if (std::optional<std::string> why = ParseNamedRow(t, *layout, words, named)) {
          return Bad(line.number, fmt::format("\"{}\": {}", Printable(t, 80), *why));
        }
        Kept k;
        k.pair.host_a = std::move(named.a);
        k.pair.host_b = std::move(named.b);
        k.pair.gbps = named.gbps;
        k.pair.group = std::move(named.group);
        k.pair.src = ctx_.Ref(line.number);
        k.unit = 1;  // converted already
        kept_.push_back(std::move(k));
        return;
      }
      if (ParseRow(t, row, words) != RowKind::kRow) {
        return Bad(line.number,
                   fmt::format("\"{}\" is not two hosts and a bandwidth", Printable(t, 80)));
      }
      if (row.a == row.b) {
        return Bad(line.number, fmt::format("\"{}\" pairs a host with itself", Printable(t, 80)));
      }
      if (!std::isfinite(row.value) || row.value <= 0) {
        return Bad(line.number,
                   fmt::format("\"{}\": bandwidth is not above zero", Printable(t, 80)));
      }
      Kept k;
      k.pair.host_a = std::string(row.a);
      k.pair.host_b = std::string(row.b);
      k.pair.gbps = row.value;
      if (!row.note.empty()) k.pair.note = std::string(row.note);
      k.pair.src = ctx_.Ref(line.number);
      k.unit = row.unit;
      kept_.push_back(std::move(k));
      if (row.unit > 0) units_.insert(row.unit);
    });
    return Finish();
  }

 private:
  struct Kept {
    PairBandwidth pair;
    double unit = 0;
  };

  void Bad(uint64_t number, std::string why) {
    ctx_.diag().Add(DiagCode::kPairBadRow, ctx_.path, number,
                    "node-pair table: " + std::move(why) + "; skipped");
  }

  // Converts every row to GB/s; rows without a unit take the table's one
  // unit, and are skipped where the table has several.
  uint64_t Finish() {
    const double table_unit = units_.size() == 1 ? *units_.begin() : 1;
    if (units_.size() > 1) {
      ctx_.diag().Add(DiagCode::kPairMixedUnits, ctx_.path, kept_.front().pair.src.line,
                      "node-pair table: rows print different bandwidth units; converted to GB/s");
    }
    uint64_t taken = 0;
    std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> tests;
    for (Kept& k : kept_) {
      if (k.unit == 0 && units_.size() > 1) {
        Bad(k.pair.src.line,
            "a bandwidth without a unit in a table whose rows print different units");
        continue;
      }
      k.pair.gbps *= k.unit > 0 ? k.unit : table_unit;
      auto& [hosts, pairs] = tests[k.pair.group];
      hosts.insert(k.pair.host_a);
      hosts.insert(k.pair.host_b);
      pairs.insert(std::min(k.pair.host_a, k.pair.host_b) + " " +
                   std::max(k.pair.host_a, k.pair.host_b));
      ctx_.out->network().pair_bandwidths.push_back(std::move(k.pair));
      ++taken;
    }
    for (const auto& [group, hp] : tests) {
      if (hp.first.size() >= 3 && hp.second.size() >= 3) continue;
      ctx_.diag().Add(
          DiagCode::kPairTooFew, ctx_.path, 0,
          fmt::format("node-pair table{}: {} pairs of {} hosts, too few to tell a bad node from "
                      "the fabric (3 hosts in 3 pairs needed)",
                      group.empty() ? "" : " (" + group + ")", hp.second.size(), hp.first.size()));
    }
    return taken;
  }

  ReaderContext& ctx_;
  std::vector<Kept> kept_;
  std::set<double> units_;
};

}  // namespace

std::unique_ptr<TextReader> MakePairTableReader() {
  return MakeFileReader<PairTable>("node-pairs", Sniff);
}

}  // namespace laggard
