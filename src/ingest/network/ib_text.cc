#include "ingest/network/ib_text.h"

#include <span>

#include "base/text.h"

namespace laggard {
namespace {

bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool IsUnknownWord(std::string_view t) {
  std::string lower = ToLower(t);
  return lower == "???" || lower == "unknown" || lower == "n/a" || StartsWith(lower, "invalid") ||
         lower == "no state change";
}

// Splits "4: ACTIVE" or "PORT_ACTIVE (4)" into the name and the numeric code.
void SplitCode(std::string_view t, std::string_view& name, std::optional<int>& code) {
  name = t;
  code.reset();
  size_t colon = t.find(':');
  if (colon != std::string_view::npos) {
    if (auto c = ParseInt<int>(t.substr(0, colon))) {
      code = c;
      name = Trim(t.substr(colon + 1));
      return;
    }
  }
  if (!t.empty() && t.back() == ')') {
    size_t open = t.rfind('(');
    if (open != std::string_view::npos) {
      if (auto c = ParseInt<int>(t.substr(open + 1, t.size() - open - 2))) {
        code = c;
        name = Trim(t.substr(0, open));
      }
    }
  }
}

// Upper case without '_', ' ' and '-': "LINK_UP", "LinkUp", "Link Up" -> "LINKUP".
std::string Squash(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == ' ' || c == '-') continue;
    out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
  }
  return out;
}

// A state as the tools print it ("4: ACTIVE", "PORT_ACTIVE (4)", "LinkUp"):
// its name, the name squashed (Squash()), and its numeric code.
struct CodedState {
  std::string_view name;
  std::optional<int> code;
  std::string squashed;
};

// nullopt for blank text.
std::optional<CodedState> SplitState(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty()) return std::nullopt;
  CodedState s;
  SplitCode(t, s.name, s.code);
  s.squashed = Squash(s.name);
  return s;
}

// A state whose name matched none: unknown when the tool says so, else the
// name its bare code has in `by_code` (indexed by code, from 1), else not
// readable.
IbValue StateByCode(const CodedState& s, std::span<const std::string_view> by_code) {
  if (IsUnknownWord(s.name)) return {std::nullopt, true};
  if (s.code && *s.code >= 1 && static_cast<size_t>(*s.code) < by_code.size() && s.name.empty()) {
    return {std::string(by_code[static_cast<size_t>(*s.code)]), true};
  }
  return {std::nullopt, false};
}

}  // namespace

IbValue ParseIbPortState(std::string_view text) {
  static constexpr std::string_view kByCode[] = {"",      "Down",   "Init",
                                                 "Armed", "Active", "ActiveDefer"};
  std::optional<CodedState> state = SplitState(text);
  if (!state) return {std::nullopt, false};
  std::string s = state->squashed;
  if (StartsWith(s, "PORT")) s.erase(0, 4);
  if (s == "DOWN") return {"Down", true};
  if (s == "INIT" || s == "INITIALIZING" || s == "INITIALIZE") return {"Init", true};
  if (s == "ARMED") return {"Armed", true};
  if (s == "ACTIVE") return {"Active", true};
  if (s == "ACTIVEDEFER") return {"ActiveDefer", true};
  return StateByCode(*state, kByCode);
}

IbValue ParseIbPhysState(std::string_view text) {
  static constexpr std::string_view kNames[] = {"",
                                                "Sleep",
                                                "Polling",
                                                "Disabled",
                                                "PortConfigurationTraining",
                                                "LinkUp",
                                                "LinkErrorRecovery",
                                                "PhyTest"};
  std::optional<CodedState> state = SplitState(text);
  if (!state) return {std::nullopt, false};
  std::string& s = state->squashed;
  // rdma-core's ibv_devinfo spells it "PORT_CONFIGURATION TRAINNING".
  if (s == "PORTCONFIGURATIONTRAINNING") s = "PORTCONFIGURATIONTRAINING";
  for (size_t i = 1; i < std::size(kNames); ++i) {
    if (s == Squash(kNames[i])) return {std::string(kNames[i]), true};
  }
  return StateByCode(*state, kNames);
}

IbValue ParseIbLinkLayer(std::string_view text) {
  std::string_view t = Trim(text);
  if (EqualsIgnoreCase(t, "InfiniBand") || EqualsIgnoreCase(t, "IB")) return {"InfiniBand", true};
  if (EqualsIgnoreCase(t, "Ethernet") || EqualsIgnoreCase(t, "ETH")) return {"Ethernet", true};
  if (!t.empty() && IsUnknownWord(t)) return {std::nullopt, true};
  bool word = !t.empty() && t.size() <= 32;
  for (char c : t) word = word && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
  if (word) return {std::string(t), true};  // a link layer newer than this reader
  return {std::nullopt, false};
}

std::optional<std::string> NormalizeGuid(std::string_view text) {
  std::string_view t = Trim(text);
  if (StartsWith(t, "0x") || StartsWith(t, "0X")) t.remove_prefix(2);
  std::string hex;
  size_t group = 0;
  for (char c : t) {
    if (c == ':') {
      if (group == 0 || group > 4) return std::nullopt;
      group = 0;
      continue;
    }
    if (!IsHex(c)) return std::nullopt;
    hex.push_back(ToLowerAscii(c));
    ++group;
  }
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  return "0x" + std::string(16 - hex.size(), '0') + hex;
}

std::optional<std::string> GuidOfGid(std::string_view gid) {
  auto groups = Split(Trim(gid), ':');
  if (groups.size() != 8) return std::nullopt;
  std::string hex;
  for (size_t i = 0; i < 8; ++i) {
    if (groups[i].empty() || groups[i].size() > 4) return std::nullopt;
    for (char c : groups[i]) {
      if (!IsHex(c)) return std::nullopt;
    }
    if (i >= 4) hex += std::string(4 - groups[i].size(), '0') + ToLower(groups[i]);
  }
  return "0x" + hex;
}

std::optional<int64_t> ParseLid(std::string_view text) {
  std::string_view t = Trim(text);
  std::optional<int64_t> v;
  if (StartsWith(t, "0x") || StartsWith(t, "0X")) {
    t.remove_prefix(2);
    if (t.empty() || t.size() > 15) return std::nullopt;
    int64_t x = 0;
    for (char c : t) {
      if (!IsHex(c)) return std::nullopt;
      x = x * 16 + (IsDigit(c) ? c - '0' : ToLowerAscii(c) - 'a' + 10);
    }
    v = x;
  } else {
    v = ParseInt<int64_t>(t);
  }
  if (!v || *v < 0) return std::nullopt;
  return v;
}

std::optional<double> LeadingNumber(std::string_view text) {
  std::string_view t = Trim(text);
  size_t end = 0;
  while (end < t.size() && (IsDigit(t[end]) || t[end] == '.')) ++end;
  if (end == 0) return std::nullopt;
  return ParseDouble(t.substr(0, end));
}

std::optional<int32_t> ParseIbWidth(std::string_view text) {
  std::string_view t = Trim(text);
  size_t end = 0;
  while (end < t.size() && IsDigit(t[end])) ++end;
  if (end == 0 || end > 3 || end >= t.size() || (t[end] != 'X' && t[end] != 'x')) {
    return std::nullopt;
  }
  auto w = ParseInt<int32_t>(t.substr(0, end));
  if (!w || *w <= 0) return std::nullopt;
  return w;
}

std::optional<IbRate> ParseIbSysfsRate(std::string_view text) {
  std::string_view t = Trim(text);
  auto rate = LeadingNumber(t);
  size_t unit = FindIgnoreCase(t, "Gb/sec");
  if (!rate || unit == std::string_view::npos) return std::nullopt;
  std::string_view between = Trim(t.substr(0, unit));
  if (!LeadingNumber(between) || between.find(' ') != std::string_view::npos) return std::nullopt;
  IbRate r;
  r.rate_gbps = *rate;
  std::string_view rest = Trim(t.substr(unit + 6));
  if (StartsWith(rest, "(")) r.width = ParseIbWidth(rest.substr(1));
  return r;
}

}  // namespace laggard
