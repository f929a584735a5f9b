// A user's host -> switch map: a table with a header naming a host column
// and a switch column, e.g.
//
//   host,switch
//   node-01,leaf-3
//   node-02,leaf-3
//
// Host column: host, hostname, node, node_name, nodename (as for step CSVs,
// field_names.h). Switch column: switch, switch_name, leaf, leaf_switch,
// leaf_name, tor, tor_switch, edge_switch, ib_switch. Other columns (rack,
// port ...) are ignored. Delimiter: ',', tab or ';' (the one the header uses
// most), else runs of blanks; fields may be quoted; '#' lines and blank
// lines are skipped. A table that also has step and duration columns is a
// step CSV, not a map, and is left to the CSV reader.
//
// Fills NetworkData::switch_of / switch_src. A switch written "-", "N/A" or
// "unknown" leaves the host unmapped. Counted as network.bad_record: a row
// without a host or switch field, a host mapped again to another switch (the
// first mapping is kept).

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/field_names.h"
#include "ingest/network/net_streams.h"
#include "ingest/network/network_readers.h"

namespace laggard {
namespace {

bool IsSwitchName(std::string_view name) {
  std::string n = ToLower(Trim(name));
  for (std::string_view s : {"switch", "switch_name", "leaf", "leaf_switch", "leaf_name", "tor",
                             "tor_switch", "edge_switch", "ib_switch"}) {
    if (n == s) return true;
  }
  return false;
}

// GuessDelimiter(), or 0 for runs of blanks when the header holds no ',',
// tab or ';'.
char MapDelimiter(std::string_view header) {
  return header.find_first_of(",\t;") == std::string_view::npos ? 0 : GuessDelimiter(header);
}

void SplitFields(std::string_view line, char delim, std::vector<std::string_view>& fields) {
  fields.clear();
  if (delim != 0) {
    for (std::string_view f : Split(line, delim)) fields.push_back(TrimQuotes(f));
    return;
  }
  for (std::string_view word : SplitBlanks(line)) fields.push_back(TrimQuotes(word));
}

struct Columns {
  int host = -1, sw = -1;
  bool step_table = false;
};

Columns ColumnsOf(const std::vector<std::string_view>& names) {
  Columns c;
  for (size_t i = 0; i < names.size(); ++i) {
    if (c.host < 0 && ClassifyFieldName(names[i]).field == StepField::kHost) {
      c.host = static_cast<int>(i);
    } else if (c.sw < 0 && IsSwitchName(names[i])) {
      c.sw = static_cast<int>(i);
    }
  }
  FieldLayout layout = LayoutFromNames(names);
  c.step_table = layout.step >= 0 && layout.duration >= 0;
  return c;
}

bool IsUnknown(std::string_view v) {
  return v == "-" || EqualsIgnoreCase(v, "N/A") || EqualsIgnoreCase(v, "unknown") ||
         EqualsIgnoreCase(v, "none");
}

class SwitchMapReader final : public TextReader {
 public:
  std::string_view name() const override { return "switch-map"; }

  int Sniff(std::string_view head) const override {
    int score = kSniffNo;
    ForEachHeadLine(head, [&](std::string_view line) {
      std::string_view t = Trim(line);
      if (t.empty() || t.front() == '#') return true;
      std::vector<std::string_view> names;
      SplitFields(t, MapDelimiter(t), names);
      Columns c = ColumnsOf(names);
      // Above the CSV step reader's kSniffStrong, which would not take it
      // anyway, and the rank map's.
      if (c.host >= 0 && c.sw >= 0 && !c.step_table) score = kSniffStrong + 2;
      return false;
    });
    return score;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    NetworkData& net = ctx.out->network();
    std::vector<std::string_view> fields;
    Columns cols;
    char delim = ',';
    bool have_header = false;
    uint64_t taken = 0;
    std::string_view line;
    while (lines.Next(line)) {
      std::string_view t = Trim(line);
      if (t.empty() || t.front() == '#') continue;
      uint64_t n = lines.line_number();
      if (!have_header) {
        delim = MapDelimiter(t);
        SplitFields(t, delim, fields);
        cols = ColumnsOf(fields);
        if (cols.host < 0 || cols.sw < 0) {
          ctx.diag().Add(
              DiagCode::kNetBadRecord, ctx.path, n,
              fmt::format("header \"{}\" names no host and switch columns", Printable(t, 100)));
          return 0;
        }
        have_header = true;
        continue;
      }
      SplitFields(t, delim, fields);
      auto field = [&](int i) -> std::string_view {
        return static_cast<size_t>(i) < fields.size() ? fields[static_cast<size_t>(i)]
                                                      : std::string_view();
      };
      std::string_view host = field(cols.host), sw = field(cols.sw);
      if (host.empty() || sw.empty()) {
        ctx.diag().Add(DiagCode::kNetBadRecord, ctx.path, n,
                       fmt::format("row without a {}: \"{}\"", host.empty() ? "host" : "switch",
                                   Printable(t, 100)));
        continue;
      }
      if (IsUnknown(sw)) continue;
      auto [it, fresh] = net.switch_of.emplace(std::string(host), std::string(sw));
      if (!fresh) {
        if (it->second != sw) {
          ctx.diag().Add(
              DiagCode::kNetBadRecord, ctx.path, n,
              fmt::format("host '{}' mapped again, to '{}'; the first switch '{}' is kept",
                          Printable(host, 60), Printable(sw, 60), Printable(it->second, 60)));
        }
        continue;
      }
      net.switch_src[it->first] = ctx.Ref(n);
      ++taken;
    }
    return taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeSwitchMapReader() { return std::make_unique<SwitchMapReader>(); }

}  // namespace laggard
