// `nvidia-smi topo -m` (also `topo -mp`): the connection matrix between GPUs
// and NICs, e.g. (tab-separated as nvidia-smi prints it; copies in web pages
// and terminals often turn the tabs into spaces):
//
//   \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
//   GPU0\t X \tNV18\tPIX\t0-55,112-167\t0\t\tN/A
//   GPU1\tNV18\t X \tNODE\t0-55,112-167\t0\t\tN/A
//   NIC0\tPIX\tNODE\t X \t\t\t\t
//
//   NIC Legend:
//     NIC0: mlx5_0
//
// -> devices {"GPU0", "GPU1", "mlx5_0"}, link[0][2] = "PIX",
//    cpu_affinity["GPU0"] = "0-55,112-167", numa_affinity["GPU0"] = "0",
//    nic_names["NIC0"] = "mlx5_0".
//
// The header names the device columns (GPU<n>, NIC<n>, or NIC names such as
// mlx5_0 in older drivers), then the affinity columns. Cells are kept as
// printed ("X", "NV12", "PIX", "PXB", "PHB", "NODE", "SYS", ...). nvidia-smi
// puts two tabs before "GPU NUMA ID" in the rows but one in the header, and
// prints empty cells for unknown affinities: with tabs, surplus empty fields
// are dropped from the right so values meet their columns; without tabs
// (spaces), affinity values are taken in order. "N/A" and empty values are
// not recorded; "GPU NUMA ID" is not used. ANSI colour codes (the header is
// underlined on a terminal) are removed first. The legends are read for the
// NIC names only; after them, NIC columns are named by the legend.
//
// The output names no host: it comes from the path, else it stays unknown
// (network.no_host, once per file). Several matrices in one file (a header
// after a matrix starts a new one) give several TopologyMatrix entries.

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"

namespace laggard {
namespace {

// Removes "ESC [ ... letter" sequences.
std::string StripAnsi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      size_t j = i + 2;
      while (j < line.size() && !((line[j] >= '@' && line[j] <= '~'))) ++j;
      i = j;
      continue;
    }
    out.push_back(line[i]);
  }
  return out;
}

bool EndsWithDigits(std::string_view t, size_t from) {
  if (from >= t.size()) return false;
  for (size_t i = from; i < t.size(); ++i) {
    if (!IsDigit(t[i])) return false;
  }
  return true;
}

// "GPU3", "NIC0", or a NIC's own name in older drivers ("mlx5_0", "mlx5_bond_0").
bool IsDeviceName(std::string_view t) {
  if (StartsWith(t, "GPU") && EndsWithDigits(t, 3)) return true;
  if (StartsWith(t, "NIC") && EndsWithDigits(t, 3)) return true;
  if (t.size() < 3 || !(t[0] >= 'a' && t[0] <= 'z') || !IsDigit(t.back())) return false;
  bool underscore = false;
  for (char c : t) {
    if (c == '_') underscore = true;
    else if (!((c >= 'a' && c <= 'z') || IsDigit(c))) return false;
  }
  return underscore;
}

// A matrix cell: "X", "NV18", "PIX", "SYS", "OK", "CNS", ...
bool IsCell(std::string_view t) {
  if (t.empty()) return false;
  for (char c : t) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || IsDigit(c) || c == '#' || c == '_' ||
          c == '-' || c == '+')) {
      return false;
    }
  }
  return true;
}

std::vector<std::string_view> Fields(std::string_view line, bool tabs) {
  std::vector<std::string_view> out;
  if (tabs) {
    for (std::string_view f : Split(line, '\t')) out.push_back(Trim(f));
    return out;
  }
  return SplitBlanks(line);
}

struct Header {
  bool tabs = false;
  std::vector<std::string> devices;
  std::vector<std::string> columns;  // after the devices: "CPU Affinity", ...
};

std::optional<Header> ParseHeader(std::string_view line) {
  Header h;
  h.tabs = line.find('\t') != std::string_view::npos;
  std::vector<std::string_view> fields = Fields(line, h.tabs);
  size_t i = 0;
  while (i < fields.size() && fields[i].empty()) ++i;
  while (i < fields.size() && IsDeviceName(fields[i])) h.devices.emplace_back(fields[i++]);
  if (h.devices.empty()) return std::nullopt;
  std::vector<std::string_view> rest;
  for (; i < fields.size(); ++i) {
    if (!fields[i].empty()) rest.push_back(fields[i]);
  }
  if (!rest.empty() && !StartsWith(rest[0], "CPU") && !StartsWith(rest[0], "NUMA")) {
    return std::nullopt;  // a row: "GPU0  X  PHB ..."
  }
  if (rest.empty() && h.devices.size() < 2) return std::nullopt;
  if (h.tabs) {
    for (std::string_view r : rest) h.columns.emplace_back(r);
    return h;
  }
  static constexpr std::string_view kNames[][3] = {
      {"CPU", "Affinity", ""}, {"NUMA", "Affinity", ""}, {"GPU", "NUMA", "ID"}};
  for (size_t k = 0; k < rest.size();) {
    size_t used = 0;
    for (const auto& name : kNames) {
      size_t words = name[2].empty() ? 2 : 3;
      bool match = k + words <= rest.size();
      for (size_t w = 0; match && w < words; ++w) match = rest[k + w] == name[w];
      if (match) {
        h.columns.push_back(
            fmt::format("{} {}{}{}", name[0], name[1], name[2].empty() ? "" : " ", name[2]));
        used = words;
        break;
      }
    }
    if (used == 0) {
      h.columns.emplace_back(rest[k]);
      used = 1;
    }
    k += used;
  }
  return h;
}

bool Unknown(std::string_view v) { return v.empty() || v == "N/A" || v == "-"; }

// The values after a row's cells, by the header's `columns` ("CPU
// Affinity", "NUMA Affinity", ...), into `m` for `device`; how many values
// had no column (ignored).
size_t TakeAffinities(std::vector<std::string_view> values, const std::vector<std::string>& columns,
                      const std::string& device, TopologyMatrix& m) {
  // Tabs: drop surplus empty fields, right to left, before the last one.
  for (size_t k = values.size() >= 2 ? values.size() - 1 : 0;
       values.size() > columns.size() && k-- > 0;) {
    if (values[k].empty()) values.erase(values.begin() + static_cast<std::ptrdiff_t>(k));
  }
  while (values.size() > columns.size() && values.back().empty()) values.pop_back();
  for (size_t k = 0; k < values.size() && k < columns.size(); ++k) {
    if (Unknown(values[k])) continue;
    if (columns[k] == "CPU Affinity") m.cpu_affinity[device] = std::string(values[k]);
    if (columns[k] == "NUMA Affinity") m.numa_affinity[device] = std::string(values[k]);
  }
  return values.size() > columns.size() ? values.size() - columns.size() : 0;
}

class NvidiaSmiTopoReader final : public TextReader {
 public:
  std::string_view name() const override { return "nvidia-smi-topo"; }

  // kSniffStrong when a matrix header followed by its first row starts the
  // file (within its first ten non-blank lines), kSniffPart when it sits
  // further down (a system report that includes `topo -m`), else kSniffNo.
  int Sniff(std::string_view head) const override {
    if (head.empty() || LooksBinary(head)) return kSniffNo;
    size_t nonblank = 0, header_at = 0;
    std::optional<Header> header;
    std::string buf;
    int score = kSniffNo;
    ForEachHeadLine(head, [&](std::string_view line) {
      if (line.find('\x1b') != std::string_view::npos) {
        buf = StripAnsi(line);
        line = buf;
      }
      if (Trim(line).empty()) return true;
      ++nonblank;
      if (header) {
        std::vector<std::string_view> f = Fields(line, header->tabs);
        bool self = false;
        for (std::string_view c : f) self = self || c == "X";
        if (!f.empty() && f[0] == header->devices[0] && self) {
          score = header_at <= 10 ? kSniffStrong : kSniffPart;
          return false;
        }
      }
      if (auto h = ParseHeader(line)) {
        header = std::move(h);
        header_at = nonblank;
      } else {
        header.reset();
      }
      return true;
    });
    return score;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    uint64_t rows_taken = 0;
    bool no_host = false;
    struct Matrix {
      Header header;
      TopologyMatrix m;
      std::vector<bool> seen;
      uint64_t header_line = 0;
    };
    std::optional<Matrix> cur;
    auto finish = [&] {
      if (!cur) return;
      size_t seen = 0;
      for (bool s : cur->seen) seen += s;
      if (seen < cur->seen.size()) {
        ctx.diag().Add(
            DiagCode::kNetBadRecord, ctx.path, cur->header_line,
            fmt::format("topology matrix has {} of its {} rows (cut?)", seen, cur->seen.size()));
      }
      for (std::string& d : cur->m.devices) {
        auto it = cur->m.nic_names.find(d);
        if (it != cur->m.nic_names.end()) d = it->second;
      }
      cur->m.host = ctx.host_from_path;
      no_host = no_host || !cur->m.host;
      ctx.out->network().topologies.push_back(std::move(cur->m));
      cur.reset();
    };
    auto bad = [&](uint64_t n, std::string_view what, std::string_view line) {
      ctx.diag().Add(DiagCode::kNetBadRecord, ctx.path, n,
                     fmt::format("{}: \"{}\"", what, Printable(line, 100)));
    };
    std::string_view raw;
    std::string buf;
    while (lines.Next(raw)) {
      std::string_view line = raw;
      if (line.find('\x1b') != std::string_view::npos) {
        buf = StripAnsi(line);
        line = buf;
      }
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      uint64_t n = lines.line_number();
      if (auto h = ParseHeader(line)) {
        finish();
        cur.emplace();
        cur->header = std::move(*h);
        cur->header_line = n;
        cur->m.devices = cur->header.devices;
        size_t nd = cur->m.devices.size();
        cur->m.link.assign(nd, std::vector<std::string>(nd));
        cur->seen.assign(nd, false);
        cur->m.src = ctx.Ref(n);
        continue;
      }
      if (!cur) continue;
      // "  NIC0: mlx5_0" under "NIC Legend:".
      size_t colon = t.find(':');
      if (StartsWith(t, "NIC") && colon != std::string_view::npos &&
          IsDeviceName(t.substr(0, colon))) {
        std::string_view nic = Trim(t.substr(colon + 1));
        if (nic.empty() || nic.find_first_of(" \t") != std::string_view::npos) {
          bad(n, "NIC legend entry without a name", t);
        } else {
          cur->m.nic_names[std::string(t.substr(0, colon))] = std::string(nic);
        }
        continue;
      }
      // A row re-spaced by a copy (no tab left) is split at blanks.
      bool tabs = cur->header.tabs && line.find('\t') != std::string_view::npos;
      std::vector<std::string_view> f = Fields(line, tabs);
      while (!f.empty() && f.front().empty()) f.erase(f.begin());
      if (f.empty()) continue;
      const std::vector<std::string>& devices = cur->header.devices;
      size_t row = 0;
      while (row < devices.size() && devices[row] != f[0]) ++row;
      if (row == devices.size()) {
        if (IsDeviceName(f[0])) bad(n, "topology row of a device the header does not name", t);
        continue;  // legend and other text
      }
      size_t nd = devices.size();
      if (f.size() < 1 + nd) {
        bad(n, fmt::format("topology row with {} of {} cells", f.size() - 1, nd), t);
        continue;
      }
      bool cells_ok = true;
      for (size_t j = 0; j < nd; ++j) cells_ok = cells_ok && IsCell(f[1 + j]);
      if (!cells_ok) {
        bad(n, "topology row with an unreadable cell", t);
        continue;
      }
      if (cur->seen[row]) {
        bad(n, "topology row repeated; the first was kept", t);
        continue;
      }
      cur->seen[row] = true;
      for (size_t j = 0; j < nd; ++j) cur->m.link[row][j] = std::string(f[1 + j]);
      size_t surplus = TakeAffinities({f.begin() + static_cast<std::ptrdiff_t>(1 + nd), f.end()},
                                      cur->header.columns, devices[row], cur->m);
      if (surplus > 0) {
        bad(n,
            fmt::format("topology row with {} values beyond the header's columns; they were "
                        "ignored",
                        surplus),
            t);
      }
      ++rows_taken;
    }
    finish();
    if (no_host) {
      ctx.diag().Add(DiagCode::kNetNoHost, ctx.path, 0,
                     "`nvidia-smi topo -m` names no host and the path names none");
    }
    return rows_taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeNvidiaSmiTopoReader() {
  return std::make_unique<NvidiaSmiTopoReader>();
}

}  // namespace laggard
