// `ethtool IFACE` and `ethtool -S IFACE`: one EthLink per interface.
//
//   Settings for eth0:
//   	Supported ports: [ FIBRE ]
//   	Supported link modes:   25000baseCR/Full
//   	                        100000baseCR4/Full
//   	Advertised link modes:  100000baseCR4/Full
//   	Speed: 100000Mb/s
//   	Duplex: Full
//   	Auto-negotiation: on
//   	Port: Direct Attach Copper
//   	Link detected: yes
//
//   NIC statistics:
//        rx_packets: 1234
//        tx_packets: 5678
//
// Kept: speed ("Unknown!" stays unknown), duplex, port, auto-negotiation,
// link detected, the supported and advertised link modes (continuation lines
// included; "Not reported" is none) and every counter of -S. A bond reports
// the sum of its active members' speeds. Other fields (PHYAD, Wake-on,
// message level, FEC ...) and ethtool's own messages ("Cannot get wake-on-lan
// settings: Operation not permitted") are ignored.
//
// `ethtool -S` does not name its interface: statistics that follow a
// "Settings for IFACE:" of the same host go to that interface's EthLink;
// otherwise the interface is the one the file name names (ethtool-S-eth0.txt,
// node01_ib0_stats.log), else "" (unknown), and the statistics make a record
// of their own, which RunBuilder::Finalize() folds into the settings record of
// the same host (or directory) and interface read from another file.
// Many hosts in one file: host_lines.h.
//
// Counted as network.bad_record: a value that cannot be read (the link is
// kept without it), a counter line that is no "name: integer", a block
// without any field and without an ethtool message saying why (output cut),
// unprintable bytes.

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/network/net_streams.h"
#include "ingest/network/network_readers.h"

namespace laggard {
namespace {

// "Settings for eth0:" -> eth0.
std::optional<std::string_view> SettingsHeader(std::string_view line) {
  constexpr std::string_view kStart = "Settings for ";
  if (!StartsWith(line, kStart) || !EndsWith(line, ":")) return std::nullopt;
  std::string_view iface = line.substr(kStart.size(), line.size() - kStart.size() - 1);
  if (iface.empty() || iface.size() > 64 || iface.find(' ') != std::string_view::npos) {
    return std::nullopt;
  }
  return iface;
}

bool IsStatisticsHeader(std::string_view line) { return Trim(line) == "NIC statistics:"; }

bool IsHeader(std::string_view line) {
  return SettingsHeader(line).has_value() || IsStatisticsHeader(line);
}

bool AllPrintable(std::string_view s) {
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

bool IsIndented(std::string_view s) { return !s.empty() && (s[0] == ' ' || s[0] == '\t'); }

// ethtool's explanations of missing data, flush-left.
bool IsToolMessage(std::string_view t) {
  return StartsWith(t, "Cannot ") || StartsWith(t, "netlink error") ||
         StartsWith(t, "No data available") || StartsWith(t, "no stats available") ||
         StartsWith(t, "Operation not supported");
}

// The interface a file name names: a word of the name (split at - _ . and
// blanks) that starts like a Linux interface and holds a digit.
std::string IfaceFromPath(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  size_t start = 0;
  for (size_t i = 0; i <= stem.size(); ++i) {
    if (i < stem.size() && stem[i] != '-' && stem[i] != '_' && stem[i] != '.' && stem[i] != ' ') {
      continue;
    }
    std::string_view word(stem.data() + start, i - start);
    start = i + 1;
    bool digit = false, word_chars = !word.empty();
    for (char c : word) {
      digit = digit || IsDigit(c);
      word_chars = word_chars && (IsDigit(c) || (c >= 'a' && c <= 'z'));
    }
    if (!digit || !word_chars) continue;
    for (std::string_view prefix : {"eth", "en", "ib", "bond", "em", "team", "hsn"}) {
      if (StartsWith(word, prefix) && word.size() > prefix.size()) return std::string(word);
    }
  }
  return "";
}

enum class Block { kNone, kSettings, kStatistics };
enum class Modes { kNone, kSupported, kAdvertised };

struct Stream {
  std::string stream;
  Block block = Block::kNone;
  uint64_t line = 0;
  bool has_field = false;
  bool explained = false;      // an ethtool message says why fields are missing
  Modes modes = Modes::kNone;  // the list continuation lines extend
  EthLink link;
  // Records of the last settings block, which following statistics join.
  std::string last_iface;
  std::vector<size_t> last_records;
};

void AddModes(std::string_view text, std::vector<std::string>& modes) {
  std::string_view t = Trim(text);
  if (EqualsIgnoreCase(t, "Not reported")) return;
  for (std::string_view word : Split(t, ' ')) {
    word = Trim(word);
    if (!word.empty()) modes.emplace_back(word);
  }
}

// The reading of one file.
class EthtoolFile : public NetFileReader<EthtoolFile, Stream> {
 public:
  explicit EthtoolFile(ReaderContext& ctx)
      : NetFileReader(IsHeader, BlankLines::kToStream, ctx),
        out_(ctx.out->network().eth_links),
        path_iface_(IfaceFromPath(ctx.path)) {}

  void Line(Stream& s, const TextLine& l) {
    uint64_t n = l.number;
    std::string_view text = l.text;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    std::string_view t = l.trimmed;
    if (t.empty()) return;
    if (!AllPrintable(text)) {
      Bad(n, fmt::format("unprintable bytes: \"{}\"", Printable(t, 80)));
      return;
    }
    if (auto iface = SettingsHeader(t)) {
      Start(s, Block::kSettings, std::string(*iface), n);
      return;
    }
    if (IsStatisticsHeader(t)) {
      Close(s);  // settings printed just before name the interface
      std::string iface = !s.last_records.empty() ? s.last_iface : path_iface_;
      Start(s, Block::kStatistics, std::move(iface), n);
      return;
    }
    if (!IsIndented(text)) {
      // ethtool's messages, or other output between blocks.
      if (IsToolMessage(t)) s.explained = true;
      if (s.block == Block::kStatistics) Close(s);
      return;
    }
    if (s.block == Block::kNone) return;  // indented text outside any block
    if (s.block == Block::kStatistics) {
      Counter(s, t, n);
    } else {
      Setting(s, t, n);
    }
  }

  void Close(Stream& s) {
    Block block = s.block;
    s.block = Block::kNone;
    s.modes = Modes::kNone;
    if (block == Block::kNone) return;
    if (!s.has_field) {
      if (!s.explained) {
        Bad(s.line,
            fmt::format("{} of '{}' without any field (output cut?)",
                        block == Block::kSettings ? "settings" : "statistics", s.link.iface));
      }
      return;
    }
    if (block == Block::kStatistics && !s.last_records.empty() && s.link.iface == s.last_iface) {
      for (size_t i : s.last_records) out_[i].counters = s.link.counters;
      s.last_records.clear();  // statistics printed again make a record of their own
      return;
    }
    size_t first = out_.size();
    Take(s.stream, s.line, s.link, out_);
    if (block == Block::kSettings) {
      s.last_iface = s.link.iface;
      s.last_records.clear();
      for (size_t i = first; i < out_.size(); ++i) s.last_records.push_back(i);
    } else {
      s.last_records.clear();
    }
  }

 private:
  // A line of `ethtool -S`: "name: integer".
  void Counter(Stream& s, std::string_view t, uint64_t n) {
    size_t colon = t.rfind(':');
    auto v =
        colon == std::string_view::npos ? std::nullopt : ParseInt<int64_t>(t.substr(colon + 1));
    std::string_view name = colon == std::string_view::npos ? t : Trim(t.substr(0, colon));
    if (!v || *v < 0 || name.empty()) {
      Bad(n, fmt::format("counter is not \"name: integer\": \"{}\"", Printable(t, 80)));
      return;
    }
    s.link.counters.emplace(std::string(name), *v);
    s.has_field = true;
  }

  // A line of the settings block.
  void Setting(Stream& s, std::string_view t, uint64_t n) {
    std::string_view key, value;
    if (!SplitKeyValue(t, key, value)) {
      // Continuation of a multi-line value: more link modes, or the
      // message level's names.
      if (s.modes == Modes::kSupported) AddModes(t, s.link.supported_link_modes);
      if (s.modes == Modes::kAdvertised) AddModes(t, s.link.advertised_link_modes);
      return;
    }
    s.modes = Modes::kNone;
    s.has_field = true;
    EthLink& e = s.link;
    auto bad_value = [&] {
      Bad(n,
          fmt::format("'{}' of '{}' is not readable: \"{}\"", key, e.iface, Printable(value, 60)));
    };
    bool unknown = StartsWith(value, "Unknown");
    if (key == "Speed") {
      if (!unknown) {
        std::string_view num = value;
        if (EndsWith(num, "Mb/s")) num.remove_suffix(4);
        auto mbps = ParseInt<int64_t>(num);
        if (mbps && *mbps >= 0 && num.size() < value.size()) e.speed_mbps = mbps;
        else bad_value();
      }
    } else if (key == "Duplex") {
      if (value == "Full" || value == "Half") e.duplex = std::string(value);
      else if (!unknown) bad_value();
    } else if (key == "Port") {
      if (!value.empty() && !unknown) e.port = std::string(value);
      else if (value.empty()) bad_value();
    } else if (key == "Link detected") {
      if (value == "yes") e.link_detected = true;
      else if (value == "no") e.link_detected = false;
      else bad_value();
    } else if (key == "Auto-negotiation") {
      if (value == "on") e.auto_negotiation = true;
      else if (value == "off") e.auto_negotiation = false;
      else bad_value();
    } else if (key == "Supported link modes") {
      s.modes = Modes::kSupported;
      AddModes(value, e.supported_link_modes);
    } else if (key == "Advertised link modes") {
      s.modes = Modes::kAdvertised;
      AddModes(value, e.advertised_link_modes);
    }
    // Other fields (PHYAD, MDI-X ...) count as fields but are not kept.
  }

  void Start(Stream& s, Block block, std::string iface, uint64_t n) {
    Close(s);
    s.block = block;
    s.line = n;
    s.has_field = false;
    s.explained = false;
    s.link = EthLink();
    s.link.iface = std::move(iface);
    s.link.src = ctx_.Ref(n);
    if (block == Block::kSettings) s.last_records.clear();
  }

  std::vector<EthLink>& out_;
  const std::string path_iface_;
};

int SniffEthtool(std::string_view head) {
  Block block = Block::kNone;
  auto fields = [&](std::string_view text) -> std::optional<int> {
    if (SettingsHeader(text)) {
      block = Block::kSettings;
    } else if (IsStatisticsHeader(text)) {
      block = Block::kStatistics;
    } else if (block != Block::kNone && IsIndented(text)) {
      std::string_view key, value;
      if (SplitKeyValue(text, key, value) &&
          (block == Block::kSettings
               ? key == "Speed" || key == "Supported ports" || key == "Link detected" ||
                     key == "Duplex" || key == "Supported link modes"
               : ParseInt<int64_t>(value).has_value())) {
        return kSniffSure;
      }
    }
    return std::nullopt;
  };
  std::optional<int> score = JudgeHeadLines(head, {.split_hosts = IsHeader}, 200, fields);
  // A header alone is weak evidence ("Settings for run:" in a training
  // log): it beats only the text-log reader's guess for logs without step
  // lines. The fields under it confirm it.
  return score.value_or(block != Block::kNone ? kSniffWeak : kSniffNo);
}

}  // namespace

std::unique_ptr<TextReader> MakeEthtoolReader() {
  return MakeFileReader<EthtoolFile>("ethtool", SniffEthtool);
}

}  // namespace laggard
