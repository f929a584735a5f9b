#include "ingest/common/host_lines.h"

#include <algorithm>

#include "base/text.h"

namespace laggard {
namespace {

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-' || c == '.' ||
         c == '_';
}

bool IsRule(std::string_view line) {
  std::string_view t = Trim(line);
  return t.size() >= 4 && t.find_first_not_of('-') == std::string_view::npos;
}

// "node-01 | CHANGED | rc=0 >>" (also SUCCESS, FAILED, and "UNREACHABLE!").
std::optional<std::string_view> AnsibleHeader(std::string_view line) {
  size_t bar = line.find(" | ");
  if (bar == std::string_view::npos || bar == 0) return std::nullopt;
  std::string_view host = line.substr(0, bar);
  if (!LooksLikeHostName(host)) return std::nullopt;
  std::string_view rest = line.substr(bar + 3);
  for (std::string_view status : {"CHANGED", "SUCCESS", "FAILED", "UNREACHABLE!"}) {
    if (StartsWith(rest, status)) {
      rest.remove_prefix(status.size());
      if (EndsWith(Trim(rest), ">>")) return host;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

// Expands the bracket groups of `item` (a host name when `whole`, else the
// tail after a group) into `out`.
bool ExpandItem(std::string_view item, bool whole, size_t max_hosts,
                std::vector<std::string>& out) {
  size_t open = item.find('[');
  if (open == std::string_view::npos) {
    bool ok = whole ? LooksLikeHostName(item) : std::all_of(item.begin(), item.end(), IsHostChar);
    if (!ok || out.size() >= max_hosts) return false;
    out.emplace_back(item);
    return true;
  }
  size_t close = item.find(']', open);
  if (close == std::string_view::npos) return false;
  std::string_view prefix = item.substr(0, open);
  std::string_view ranges = item.substr(open + 1, close - open - 1);
  if (!std::all_of(prefix.begin(), prefix.end(), IsHostChar)) return false;
  if (whole && !prefix.empty() && !LooksLikeHostName(prefix.substr(0, 1))) return false;
  std::vector<std::string> tails;
  if (!ExpandItem(item.substr(close + 1), false, max_hosts, tails)) return false;
  for (std::string_view range : Split(ranges, ',')) {
    size_t dash = range.find('-');
    std::string_view lo_text = range.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
    if (!AllDigits(lo_text) || !AllDigits(hi_text) || lo_text.size() > 9 || hi_text.size() > 9) {
      return false;
    }
    uint64_t lo = *ParseInt<uint64_t>(lo_text), hi = *ParseInt<uint64_t>(hi_text);
    if (hi < lo || hi - lo >= max_hosts) return false;
    for (uint64_t n = lo; n <= hi; ++n) {
      std::string digits = std::to_string(n);
      if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
      for (const std::string& tail : tails) {
        if (out.size() >= max_hosts) return false;
        std::string host;
        host.reserve(prefix.size() + digits.size() + tail.size());
        host.append(prefix).append(digits).append(tail);
        out.push_back(std::move(host));
      }
    }
  }
  return true;
}

}  // namespace

bool LooksLikeHostName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  char first = s.front();
  if (!IsDigit(first) && !((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z'))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), IsHostChar);
}

std::optional<std::vector<std::string>> ExpandHostList(std::string_view list, size_t max_hosts) {
  std::vector<std::string> hosts;
  size_t depth = 0, start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') {
      if (depth == 0) return std::nullopt;
      --depth;
    }
    if (c == ',' && depth == 0) {
      if (!ExpandItem(Trim(list.substr(start, i - start)), true, max_hosts, hosts)) {
        return std::nullopt;
      }
      start = i + 1;
    }
  }
  if (depth != 0 || hosts.empty()) return std::nullopt;
  return hosts;
}

bool HostLines::Split(std::string_view raw, HostLine& out) {
  // dshbak: rule, host (list), rule.
  if (dshbak_ == Dshbak::kAfterRule) {
    std::string_view t = Trim(raw);
    if (!t.empty() && t.find(' ') == std::string_view::npos && ExpandHostList(t)) {
      pending_ = std::string(t);
      dshbak_ = Dshbak::kAfterHost;
      return false;
    }
    dshbak_ = Dshbak::kNone;  // a lone rule: not dshbak, go on with the line
  } else if (dshbak_ == Dshbak::kAfterHost) {
    dshbak_ = Dshbak::kNone;
    if (IsRule(raw)) {
      block_ = pending_;
      return false;
    }
  }
  if (IsRule(raw)) {
    dshbak_ = Dshbak::kAfterRule;
    return false;
  }
  if (auto host = AnsibleHeader(raw)) {
    block_ = std::string(*host);
    return false;
  }

  if (StartsWith(raw, "pdsh@") || StartsWith(raw, "clush: ")) return false;

  // "HOST: line" / "HOST:" / "N: line".
  size_t colon = raw.find(':');
  if (colon != std::string_view::npos && colon > 0 && colon <= 253 &&
      (colon + 1 == raw.size() || raw[colon + 1] == ' ')) {
    std::string_view word = raw.substr(0, colon);
    std::string_view text = colon + 1 == raw.size() ? std::string_view() : raw.substr(colon + 2);
    bool known = prefixes_.find(word) != prefixes_.end();
    if (!known && LooksLikeHostName(word) && is_header_(text)) {
      prefixes_.emplace(word);
      known = true;
    }
    if (known) {
      out.stream = word;
      if (AllDigits(word)) {  // a task label "3: " is stream "#3", of no known host
        label_.clear();
        label_.push_back('#');
        label_.append(word);
        out.stream = label_;
      }
      out.text = text;
      return true;
    }
  }
  out.stream = block_;
  out.text = raw;
  return true;
}

const std::vector<std::string>& HostLines::HostsOf(std::string_view stream) {
  if (stream.empty() || stream.front() == '#') return no_hosts_;
  if (stream == last_stream_) return last_hosts_;
  last_stream_ = std::string(stream);
  auto hosts = ExpandHostList(stream);
  last_hosts_ = hosts ? std::move(*hosts) : std::vector<std::string>{std::string(stream)};
  return last_hosts_;
}

bool IsHostNameChar(char c) {
  char lower = ToLowerAscii(c);
  return IsDigit(c) || (lower >= 'a' && lower <= 'z') || c == '.' || c == '-' || c == '_';
}

std::string_view TrimToHostName(std::string_view s) {
  while (!s.empty() && !IsHostNameChar(s.front())) s.remove_prefix(1);
  while (!s.empty() && !IsHostNameChar(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace laggard
