#include "ingest/common/hang_lines.h"

#include <algorithm>
#include <array>

#include "base/text.h"
#include "ingest/common/hang_line_text.h"
#include "ingest/common/host_lines.h"
#include "model/time.h"

namespace laggard {

namespace hang_line_text {

RankPrefix FindRankPrefix(std::string_view line) {
  RankPrefix out;
  // Ray's "(Worker[rank=31] pid=..., ip=...) [rank31]:" has a "[rank"
  // that is not the prefix before the one that is.
  std::string_view head = line.substr(0, std::min<size_t>(line.size(), 200));
  for (size_t at = head.find("[rank"); at != npos; at = head.find("[rank", at + 5)) {
    size_t pos = at + 5;
    size_t digits = pos;
    while (pos < line.size() && IsDigit(line[pos])) ++pos;
    if (pos == digits || pos + 1 >= line.size() || line[pos] != ']' || line[pos + 1] != ':')
      continue;
    out.rank = Rank(ParseInt<int64_t>(line.substr(digits, pos - digits)));
    out.end = pos + 2;
    return out;
  }
  return out;
}

size_t SkipMpiTag(std::string_view line, std::optional<int32_t>& rank) {
  std::string_view head = line.substr(0, std::min<size_t>(line.size(), 120));
  size_t std_at = head.find("]<std");
  if (std_at == npos) return 0;
  size_t close = head.find(">:", std_at);
  size_t open = head.rfind('[', std_at);
  if (close == npos || open == npos) return 0;
  std::string_view stream = head.substr(std_at + 2, close - std_at - 2);
  if (stream != "stdout" && stream != "stderr" && stream != "stddiag") return 0;
  std::string_view ids = head.substr(open + 1, std_at - open - 1);
  size_t comma = ids.find(',');
  if (comma == npos || !ParseInt<int64_t>(ids.substr(0, comma))) return 0;
  auto r = Rank(ParseInt<int64_t>(ids.substr(comma + 1)));
  if (!r) return 0;
  rank = r;
  return close + 2;
}

}  // namespace hang_line_text

namespace {

using namespace hang_line_text;  // NOLINT: the line-text helpers both matcher files share

// Days before each month in a leap year, so that Feb 29 has a day of its own.
constexpr std::array<int, 12> kDaysBefore = {0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335};

// glog's "E1015 10:11:12.345678" after the severity: ns since Jan 1 00:00.
// c10's glog prints the month unpadded: "321 02:07:08" is March 21.
std::optional<int64_t> GlogYearlessTime(std::string_view s) {
  size_t sp = s.find(' ');
  if ((sp != 3 && sp != 4) || s.size() < sp + 9) return std::nullopt;
  std::string_view t = s.substr(sp + 1);
  if (t[2] != ':' || t[5] != ':') return std::nullopt;
  size_t mlen = sp - 2;
  auto month = ParseFixedDigits(s.substr(0, mlen), mlen, mlen);
  auto day = ParseFixedDigits(s.substr(mlen, 2), 2, 2);
  auto hh = ParseFixedDigits(t.substr(0, 2), 2, 2);
  auto mm = ParseFixedDigits(t.substr(3, 2), 2, 2);
  auto ss = ParseFixedDigits(t.substr(6, 2), 2, 2);
  if (!month || !day || !hh || !mm || !ss || *month < 1 || *month > 12 || *day < 1 || *day > 31 ||
      *hh > 23 || *mm > 59 || *ss > 60)
    return std::nullopt;
  int64_t ns = 0;
  size_t pos = 8;
  if (pos < t.size() && t[pos] == '.') {
    int64_t scale = 100'000'000;
    for (++pos; pos < t.size() && IsDigit(t[pos]); ++pos) {
      ns += (t[pos] - '0') * scale;
      scale /= 10;
    }
  }
  int64_t days = kDaysBefore[*month - 1] + *day - 1;
  int64_t secs = ((days * 24 + *hh) * 60 + *mm) * 60 + *ss;
  return secs * 1'000'000'000 + ns;
}

// glog's header "[E1015 10:11:12.345678 123 ProcessGroupNCCL.cpp:1664]" or
// torch 1.x's "[E ProcessGroupNCCL.cpp:737]" at `pos`. Returns the byte
// after it (pos when there is none) and its time when it has one.
size_t SkipGlogHeader(std::string_view line, size_t pos, std::optional<int64_t>& yearless) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  if (pos + 3 >= line.size() || line[pos] != '[') return pos;
  char sev = line[pos + 1];
  if (sev != 'E' && sev != 'W' && sev != 'I' && sev != 'F') return pos;
  size_t close = line.find(']', pos);
  if (close == npos) return pos;
  std::string_view inside = line.substr(pos + 2, close - pos - 2);
  if (inside.find(".cpp:") == npos && inside.find(".cc:") == npos && inside.find(".h:") == npos)
    return pos;
  if (!inside.empty() && IsDigit(inside[0])) yearless = GlogYearlessTime(inside);
  return close + 1;
}

// "[PG 1 Rank 0]", "[PG ID 0 PG GUID 0(default_pg) Rank 3]",
// "[PG 0 (default_pg) Rank 3]", "[Rank 3]" at `pos` (blanks skipped).
size_t ReadGroupBracket(std::string_view line, size_t pos, HangEvent& e) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  if (pos >= line.size() || line[pos] != '[') return pos;
  size_t close = line.find(']', pos);
  if (close == npos) return pos;
  std::string_view inside = line.substr(pos + 1, close - pos - 1);
  if (!StartsWith(inside, "PG ") && !StartsWith(inside, "Rank ")) return pos;
  std::vector<std::string_view> toks = SplitBlanks(inside);
  // A token may carry the description: "0(default_pg)".
  auto take_desc = [&](std::string_view& tok) {
    size_t paren = tok.find('(');
    if (paren == npos) return;
    std::string_view desc = tok.substr(paren + 1);
    if (!desc.empty() && desc.back() == ')') desc.remove_suffix(1);
    e.pg_desc = std::string(desc);
    tok = tok.substr(0, paren);
  };
  for (size_t i = 0; i < toks.size(); ++i) {
    std::string_view next = i + 1 < toks.size() ? toks[i + 1] : std::string_view();
    if (toks[i] == "PG" && (next == "ID" || next == "GUID") && i + 2 < toks.size()) {
      std::string_view v = toks[i + 2];
      take_desc(v);
      (next == "ID" ? e.pg_id : e.pg_guid) = std::string(v);
      i += 2;
    } else if (toks[i] == "PG" && !next.empty()) {
      std::string_view v = next;
      take_desc(v);
      e.pg_id = std::string(v);
      ++i;
    } else if (toks[i] == "Rank" && !next.empty()) {
      e.group_rank = Rank(ParseInt<int64_t>(next));
      ++i;
    } else if (StartsWith(toks[i], "(")) {
      std::string_view v = toks[i];
      take_desc(v);
    }
  }
  return close + 1;
}

// "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1,
// Timeout(ms)=600000) ran for 600013 milliseconds".
void ReadWorkNccl(std::string_view body, HangEvent& e) {
  e.seq = IntAfter(body, "SeqNum=");
  e.op = WordAfter(body, "OpType=");
  e.numel_in = IntAfter(body, "NumelIn=");
  e.numel_out = IntAfter(body, "NumelOut=");
  if (auto t = IntAfter(body, "Timeout(ms)=")) e.timeout_ms = static_cast<double>(*t);
  if (auto r = IntAfter(body, "ran for ")) e.ran_for_ms = static_cast<double>(*r);
}

// "10.0.0.2<42155>" after "from peer " / "from " / "remote peer ".
std::string PeerAfter(std::string_view s, std::string_view key) {
  size_t at = s.find(key);
  if (at == npos) return {};
  size_t pos = at + key.size();
  size_t end = pos;
  while (end < s.size() && s[end] != ' ' && s[end] != ',') ++end;
  return std::string(s.substr(pos, end - pos));
}

// gloo's "[10.0.0.2]:12345" -> "10.0.0.2:12345".
std::string GlooPeer(std::string_view s, size_t from) {
  size_t open = s.find('[', from);
  size_t close = open == npos ? npos : s.find("]:", open);
  if (close == npos) return {};
  size_t end = close + 2;
  while (end < s.size() && IsDigit(s[end])) ++end;
  return std::string(s.substr(open + 1, close - open - 1)) +
         std::string(s.substr(close + 1, end - close - 1));
}

// The host of NCCL's "host:pid:tid [dev] ... NCCL WARN" prefix, if any,
// and the pid into `pid_out` when given.
std::string NcclHost(std::string_view line, std::optional<int64_t>* pid_out = nullptr) {
  size_t level = line.find(" NCCL ");
  if (level == npos) return {};
  for (std::string_view tok : SplitBlanks(line.substr(0, level))) {
    size_t c2 = tok.rfind(':');
    if (c2 == npos || c2 == 0) continue;
    size_t c1 = tok.rfind(':', c2 - 1);
    if (c1 == npos || c1 == 0) continue;
    auto pid = ParseInt<int64_t>(tok.substr(c1 + 1, c2 - c1 - 1));
    auto tid = ParseInt<int64_t>(tok.substr(c2 + 1));
    if (!pid || !tid) continue;
    std::string_view host = tok.substr(0, c1);
    size_t tag = host.rfind(':');
    if (tag != npos) host = host.substr(tag + 1);
    host = TrimToHostName(host);
    if (host.empty()) continue;
    if (pid_out != nullptr) *pid_out = pid;
    return std::string(host);
  }
  // No "host:pid:tid": the host right before the "[dev]" slot, as some
  // container loggers print it ("gpu-server320 [5] misc/socket.cc:46
  // NCCL WARN ...").
  std::vector<std::string_view> toks = SplitBlanks(line.substr(0, level));
  for (size_t i = 1; i + 1 < toks.size(); ++i) {
    std::string_view dev = toks[i];
    if (dev.size() < 3 || dev.front() != '[' || dev.back() != ']' ||
        !ParseInt<int64_t>(dev.substr(1, dev.size() - 2)))
      continue;
    std::string_view host = TrimToHostName(toks[i - 1]);
    if (host.empty() || host.find(':') != npos || IsDigit(host.front())) return {};
    return std::string(host);
  }
  return {};
}

// Full dates some launchers and loggers put before the line:
// "[2024-02-09 09:09:15,164] torch.distributed..." / "2025-02-18 12:54 [rank13]:".
std::optional<TimeNs> DatedPrefix(std::string_view line) {
  size_t pos = line.size() > 0 && line[0] == '[' ? 1 : 0;
  if (line.size() < pos + 16 || !IsDigit(line[pos]) || line[pos + 4] != '-') return std::nullopt;
  size_t end = pos;
  while (end < line.size() && end - pos < 26 && line[end] != ']' &&
         (IsDigit(line[end]) || line[end] == '-' || line[end] == ':' || line[end] == ' ' ||
          line[end] == '.' || line[end] == ','))
    ++end;
  std::string text(Trim(line.substr(pos, end - pos)));
  std::replace(text.begin(), text.end(), ',', '.');
  return ParseTimestamp(text);
}

// Markdown autolinks "[X](http://X/)" whose text X is the link's host (and
// port), as GitHub renders an address or a file:line pasted in an issue:
// `line` with each unwrapped to X, into `buf`. False (buf unusable) when
// the line has none.
bool UnwrapAutolinks(std::string_view line, std::string& buf) {
  constexpr std::string_view kLink = "](http";
  size_t link = line.find(kLink);
  if (link == npos) return false;
  buf.clear();
  bool any = false;
  size_t copied = 0;  // line[0, copied) is in buf
  for (; link != npos; link = line.find(kLink, link + 1)) {
    size_t open = line.rfind('[', link);
    size_t close = line.find(')', link);
    if (open == npos || open < copied || close == npos) continue;
    std::string_view text = line.substr(open + 1, link - open - 1);
    std::string_view url = line.substr(link + 2, close - link - 2);
    size_t scheme = url.find("://");
    if (scheme == npos) continue;
    std::string_view host = url.substr(scheme + 3);
    host = host.substr(0, host.find('/'));
    if (text.empty() || text != host) continue;
    buf.append(line.substr(copied, open - copied));
    buf.append(text);
    copied = close + 1;
    any = true;
  }
  if (any) buf.append(line.substr(copied));
  return any;
}

// gloo's lines: a closed or reset connection, a timeout, the full-mesh
// connect timeout, and its enforce when a message is larger than the
// receive posted for it ("[enforce fail at ./gloo/transport/tcp/pair.cc:510]
// op.preamble.length <= op.nbytes. 99976 vs 4": the peer sent another
// collective's data, a rank skipped or added one). False for other lines.
bool ReadGlooForm(std::string_view body, HangEvent& e) {
  if (Has(body, "gloo") && Has(body, "op.preamble.length <= op.nbytes")) {
    e.kind = HangEventKind::kNetSizeMismatch;
    std::string_view rest = body.substr(body.find("op.preamble.length <= op.nbytes"));
    auto sent = IntAfter(rest, "op.nbytes. ");
    auto posted = IntAfter(rest, " vs ");
    e.detail = sent && posted
                   ? "gloo received " + std::to_string(*sent) +
                         " bytes where its collective expected " + std::to_string(*posted)
                   : std::string("gloo received more bytes than its collective expected");
  } else if (Has(body, "gloo") &&
             (Has(body, "Connection closed by peer") || Has(body, "Connection reset by peer"))) {
    e.kind = HangEventKind::kGlooTimeout;
    e.peer = GlooPeer(body, body.find("] "));
  } else if (Has(body, "Timed out waiting ") &&
             (Has(body, "operation to complete") || Has(body, "gloo"))) {
    e.kind = HangEventKind::kGlooTimeout;
    if (auto t = IntAfter(body, "Timed out waiting ")) e.timeout_ms = static_cast<double>(*t);
  } else if (Has(body, " is connected to ") && Has(body, " peer ranks")) {
    // gloo's full-mesh connect timeout: "Rank 1 is connected to 0 peer
    // ranks. Expected number of connected peer ranks is : 1".
    e.kind = HangEventKind::kGlooTimeout;
    size_t r = body.find("Rank ");
    if (r != npos) e.group_rank = Rank(IntAt(body, r + 5));
  } else {
    return false;
  }
  return true;
}

// gloo's monitored barrier. On rank 0: "Ranks 1, 3 failed to pass
// monitoredBarrier in 30000 ms": rank 0 waited for them, they never
// entered it. On another rank: "Rank 3 successfully reached
// monitoredBarrier, but received errors while waiting for send/recv from
// rank 0": who is at fault depends on the exception that follows (the
// collector reads it).
bool ReadMonitoredBarrier(std::string_view body, HangEvent& e) {
  if (Has(body, "failed to pass monitoredBarrier")) {
    e.kind = HangEventKind::kDesyncReport;
    size_t end = body.find(" failed to pass monitoredBarrier");
    size_t start = body.rfind("Rank", end);
    if (start != npos) {
      start = body.find(' ', start);
      for (std::string_view tok : Split(body.substr(start, end - start), ',')) {
        if (auto r = Rank(ParseInt<int64_t>(Trim(tok)))) e.ranks_named.push_back(*r);
      }
    }
    e.detail = "monitoredBarrier";
    if (auto t = IntAfter(body, "monitoredBarrier in ")) e.timeout_ms = static_cast<double>(*t);
    return true;
  }
  if (Has(body, "successfully reached monitoredBarrier")) {
    e.kind = HangEventKind::kGlooTimeout;
    e.detail = "monitoredBarrier";
    return true;
  }
  return false;
}

// NCCL's own lines: transport and remote errors, and the WARN forms of an
// HCA event, a NET size mismatch, a CUDA failure and a failed verbs call.
// Host and pid come from NCCL's "host:pid:tid" prefix.
bool ReadNcclForm(std::string_view line, std::string_view body, HangEvent& e, bool& ended) {
  if (Has(body, "ncclRemoteError") ||
      Has(body, "remote process exited or there was a network error") ||
      Has(body, "Connection closed by remote peer")) {
    e.kind = HangEventKind::kRemoteError;
    if (Has(body, "from peer ")) e.peer = PeerAfter(body, "from peer ");
    if (e.peer.empty() && Has(body, "remote peer ")) e.peer = PeerAfter(body, "remote peer ");
    e.error_code = Int32(IntAfter(body, "with error "));
  } else if ((Has(body, "NET/IB") && Has(body, "Got completion")) ||
             (Has(body, "NET/OFI") && Has(body, "completed with error")) ||
             Has(body, "ibv_poll_cq") ||
             (Has(body, "NCCL WARN") &&
              (Has(body, "Call to recv from ") || Has(body, "Call to send to ")))) {
    e.kind = HangEventKind::kTransportError;
    e.peer = PeerAfter(body, "from peer ");
    if (e.peer.empty()) e.peer = PeerAfter(body, "Call to recv from ");
    if (e.peer.empty()) e.peer = PeerAfter(body, "Call to send to ");
    e.error_code = Int32(IntAfter(body, "with error "));
    if (!e.error_code) e.error_code = Int32(IntAfter(body, "status="));
    // "Got completion from peer P wi": cut before its status.
    if (Has(body, "Got completion") && !e.error_code) ended = false;
  } else if (Has(body, "NET/") && Has(body, "Got async event")) {
    // "NET/IB : mlx5_0:1 Got async event : local access violation work queue error".
    e.kind = HangEventKind::kNicEvent;
    size_t at = body.find("Got async event");
    std::vector<std::string_view> before = SplitBlanks(body.substr(0, at));
    if (!before.empty() && before.back() != ":" && before.back() != "WARN" &&
        before.back().find('/') == npos) {
      e.peer = std::string(before.back());
    }
    std::string_view what = body.substr(at + 15);
    while (!what.empty() && (what.front() == ' ' || what.front() == ':')) what.remove_prefix(1);
    e.detail = CutText(Trim(what), kDetailBytes);
  } else if (Has(body, "NET/") && Has(body, "collective mismatch error")) {
    // "NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch
    // error, local size 496640 remote size 65536".
    e.kind = HangEventKind::kNetSizeMismatch;
    e.peer = PeerAfter(body, " peer ");
    size_t local = body.find("local size ");
    if (local != npos) e.detail = CutText(Trim(body.substr(local)), kDetailBytes);
    ended = IntAfter(body, "remote size ").has_value();
  } else if (Has(body, "Cuda failure ")) {
    // "Cuda failure 'invalid argument'" (NCCL 2.x), "Cuda failure 1 'invalid argument'".
    size_t at = body.find("Cuda failure ");
    size_t q1 = body.find('\'', at);
    if (q1 == npos || q1 - at > 24) return false;
    size_t q2 = body.find('\'', q1 + 1);
    e.kind = HangEventKind::kCudaError;
    e.detail = CutText(body.substr(q1 + 1, q2 == npos ? npos : q2 - q1 - 1), kDetailBytes);
    ended = q2 != npos;
  } else if (Has(body, "Call to ibv_") && Has(body, " failed")) {
    // "Call to ibv_create_qp failed", "Call to ibv_modify_qp failed with
    // error Connection timed out" (ibv_poll_cq's is a transport error).
    e.kind = HangEventKind::kVerbsError;
    size_t fn = body.find("Call to ibv_") + 8;
    size_t end = fn;
    while (end < body.size() &&
           (IsHostNameChar(body[end]) && body[end] != '.' && body[end] != '-')) {
      ++end;
    }
    e.detail = std::string(body.substr(fn, end - fn));
    size_t with = body.find("with error ", end);
    if (with != npos) e.detail += ' ' + CutText(Trim(body.substr(with)), kDetailBytes);
  } else {
    return false;
  }
  e.host = NcclHost(line, &e.pid);
  return true;
}

bool IsFrTrace(HangEventKind k) {
  return k == HangEventKind::kFrTraceNotJoined || k == HangEventKind::kFrTraceMismatch;
}

// NCCL's own error kinds: a line without NCCL's prefix that repeats an
// earlier prefixed one is the same error.
bool IsNcclKind(HangEventKind k) {
  return k == HangEventKind::kTransportError || k == HangEventKind::kRemoteError ||
         k == HangEventKind::kNicEvent || k == HangEventKind::kNetSizeMismatch ||
         k == HangEventKind::kCudaError || k == HangEventKind::kVerbsError;
}

}  // namespace

bool IsPagerPrompt(std::string_view line) {
  std::string_view t = Trim(line);
  return t == "(END)" || t == ":" || StartsWith(t, "--More--") || StartsWith(t, "--更多--");
}

bool MaybeHangLine(std::string_view line) {
  if (line.size() < 12) return line.find(':') != npos || line.find("(END)") != npos;
  // Words at least one form of each kind holds; the usual log line holds none.
  static constexpr std::string_view kWords[] = {
      "atchdog",
      "NCCL",
      "nccl",
      "imed out",
      "imeout",
      "ismatch",
      "didn't",
      "join",
      "gloo",
      "NET/",
      "ibv_",
      "exitcode",
      "Signal ",
      "ChildFailed",
      "--More--",
      "peer ranks",
      "host ",
      "rank ",
      // Every phrase ParseHangLine() keys on that holds none of the above
      // (the fuzzer checks that a parsed line always passes).
      "onnection",
      "ompletion",
      "monitoredBarrier",
      "ompleted with error",
      "from peer",
      "remote peer",
      "received by PID",
      "Call to recv",
      "is connected to",
      "traceback",
      "operation to complete",
      "dump signal",
      "at entry",
      "Cuda failure",
  };
  for (std::string_view w : kWords) {
    if (line.find(w) != npos) return true;
  }
  return false;
}

std::optional<HangEvent> ParseHangLine(std::string_view raw, bool* cut) {
  if (cut != nullptr) *cut = false;
  std::string unwrapped;
  std::string_view line = raw;
  if (UnwrapAutolinks(raw, unwrapped)) {
    if (!MaybeHangLine(raw)) return std::nullopt;  // unwrapping joined words the pre-check keys on
    line = unwrapped;
  }
  if (!line.empty() && line[0] == '>' && (line.size() == 1 || line[1] == ' ')) {
    line = Trim(line.substr(1));  // a Markdown quote
  }
  std::optional<int32_t> mpi_rank;
  line = line.substr(SkipMpiTag(line, mpi_rank));
  HangEvent e;
  RankPrefix prefix = FindRankPrefix(line);
  e.rank = prefix.rank;
  size_t pos = SkipGlogHeader(line, prefix.end, e.yearless_time_ns);
  pos = ReadGroupBracket(line, pos, e);
  std::string_view body = line.substr(pos);
  bool ended = true;  // the form's last words are there
  auto is = [&](HangEventKind k) {
    e.kind = k;
    return true;
  };

  bool found = false;
  if (ReadDumpOrFrTrace(body, e, ended)) {
    found = true;
  } else if (Has(body, "terminated with exception")) {
    found = is(HangEventKind::kWatchdogTerminated);
    ReadWorkNccl(body, e);
  } else if (Has(body, "Watchdog caught collective operation timeout")) {
    found = is(HangEventKind::kWatchdogTimeout);
    ReadWorkNccl(body, e);
    ended = Has(body, "before timing out");
  } else if (Has(body, "timed out in blocking wait") || Has(body, "Operation timed out!")) {
    found = is(HangEventKind::kBlockingWaitTimeout);
    ReadWorkNccl(body, e);
  } else if (Has(body, "detected by watchdog at work: ") || Has(body, "Timeout at NCCL work: ")) {
    found = is(HangEventKind::kWatchdogException);
    e.seq = Has(body, "at work: ") ? IntAfter(body, "at work: ") : IntAfter(body, "NCCL work: ");
    e.last_enqueued = IntAfter(body, "last enqueued NCCL work: ");
    e.last_completed = IntAfter(body, "last completed NCCL work: ");
    ended = e.last_completed.has_value();
  } else if (Has(body, "detected by watchdog at work sequence id: ")) {
    // torch 2.7+: "failure detected by watchdog at work sequence id: 241 PG
    // status: last enqueued work: 315, last completed work: 183".
    found = is(HangEventKind::kWatchdogException);
    e.seq = IntAfter(body, "work sequence id: ");
    e.last_enqueued = IntAfter(body, "last enqueued work: ");
    e.last_completed = IntAfter(body, "last completed work: ");
    ended = e.last_completed.has_value();
  } else if (Has(body, "Some NCCL operations have failed or timed out")) {
    found = is(HangEventKind::kWatchdogTerminated);
  } else if (ReadCollectiveMismatch(body, e) || ReadDesyncReport(body, e)) {
    found = true;
  } else if (ReadMonitoredBarrier(body, e)) {
    found = true;
  } else if (ReadNcclForm(line, body, e, ended)) {
    found = true;
  } else if (ReadGlooForm(body, e)) {
    found = true;
  } else if (Has(body, "exitcode")) {
    // torchrun: "exitcode  : -6 (pid: 1234)" (failure table) or
    // "failed (exitcode: -6) local_rank: 0 (pid: 1234) of binary: ...".
    auto code = Int32(IntAfter(body, "exitcode: "));
    if (!code) {
      size_t at = body.find("exitcode");
      size_t colon = body.find(':', at);
      if (colon != npos && Trim(body.substr(at + 8, colon - at - 8)).empty()) {
        code = Int32(IntAfter(body.substr(colon), ":"));
      }
    }
    if (code) {
      found = is(HangEventKind::kProcessExited);
      e.exit_code = code;
      e.local_rank = Rank(IntAfter(body, "local_rank: "));
    }
  } else if (Has(body, "Signal ") && Has(body, " received by PID") && !Has(body, "traceback")) {
    auto sig = Int32(IntAfter(body, "Signal "));
    if (sig && *sig > 0) {
      found = is(HangEventKind::kProcessExited);
      e.exit_code = -*sig;
    }
  } else if (Has(body, "ChildFailedError:")) {
    found = is(HangEventKind::kProcessExited);
  }
  if (!found) return std::nullopt;
  // The default group numbers its ranks globally.
  if (!e.rank && e.group_rank && (e.pg_id == "0" || e.pg_desc == "default_pg")) {
    e.rank = e.group_rank;
  }
  if (!e.rank) e.rank = mpi_rank;
  if (!e.yearless_time_ns) e.time_ns = DatedPrefix(line);
  e.text = CutText(raw, kHangTextBytes);
  if (cut != nullptr) *cut = !ended;
  return e;
}

bool HangLineCollector::Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx) {
  tracebacks_.Offer(line, line_number);
  std::string_view t = Trim(line);
  if (fr_.open) {
    if (!t.empty() && FrField(line, t, line_number)) {
      last_line_ = line_number;
      return true;
    }
    CloseFrBlock(ctx);
  }
  if (!MaybeHangLine(line)) {
    if (!t.empty()) last_line_ = line_number;
    return false;
  }
  if (t.empty()) return false;
  last_line_ = line_number;
  if (IsPagerPrompt(t)) {
    pager_line_ = line_number;
    return false;
  }
  // torchrun's failure table: "[1]:" starts an entry, "host : h" and
  // "rank : 3 (local_rank: 3)" come before its "exitcode : -6 (pid: N)".
  auto field = [&](std::string_view name) -> std::optional<std::string_view> {
    if (!StartsWith(t, name)) return std::nullopt;
    std::string_view rest = Trim(t.substr(name.size()));
    if (rest.empty() || rest[0] != ':') return std::nullopt;
    return Trim(rest.substr(1));
  };
  if (t.size() >= 3 && t[0] == '[' && t.back() == ':' && IsDigit(t[1])) {
    table_ = TableEntry();
    return false;
  }
  if (auto host = field("host")) {
    table_.host = std::string(*host);
    return false;
  }
  if (auto rank = field("rank")) {
    table_.rank = Rank(IntAt(*rank, 0));
    table_.local_rank = Rank(IntAfter(*rank, "local_rank: "));
    return false;
  }
  bool cut = false;
  std::optional<HangEvent> e = ParseHangLine(line, &cut);
  if (!e) return false;
  if (cut) cut_line_ = line_number;
  // NCCL's line cut before what it reports (the status, the sizes): the
  // cut is counted, the half line is no evidence.
  if (cut && IsNcclKind(e->kind)) return true;
  // An fr_trace block header: its fields follow.
  if (IsFrTrace(e->kind) && !Has(t, " for group ")) {
    fr_ = FrBlock();
    fr_.open = true;
    fr_.line = line_number;
    fr_.event = std::move(*e);
    return true;
  }
  if (IsNcclKind(e->kind)) {
    if (e->pid) {
      prefixed_.emplace_back(t);
      if (prefixed_.size() > 16) prefixed_.erase(prefixed_.begin());
    } else if (e->host.empty() && RepeatsPrefixedLine(t)) {
      return true;  // torch's "Last error:" repeating NCCL's own WARN line
    }
  }
  if (e->kind == HangEventKind::kProcessExited && field("exitcode")) {
    e->rank = table_.rank;
    if (!e->local_rank) e->local_rank = table_.local_rank;
    e->host = table_.host;
    table_ = TableEntry();
  } else if (!e->rank && e->kind != HangEventKind::kProcessExited && !IsFrTrace(e->kind) &&
             ctx.rank_from_path) {
    e->rank = ctx.rank_from_path;
  }
  if (e->host.empty() && ctx.host_from_path && e->kind != HangEventKind::kProcessExited &&
      !IsFrTrace(e->kind)) {
    e->host = *ctx.host_from_path;
  }
  e->src = ctx.Ref(line_number);
  if (!e->pg_id.empty() || !e->pg_guid.empty()) AddGroup(*e, line_number, ctx);
  std::vector<HangEvent>& events = ctx.out->hang().events;
  MonitoredBarrier(t, line_number, *e, events);
  events.push_back(std::move(*e));
  ++events_;
  return true;
}

// gloo's monitored barrier on a rank other than 0: "Rank 3 successfully
// reached monitoredBarrier, but received errors while waiting for
// send/recv from rank 0", then the exception it got. A *send* that timed
// out: gloo's send waits for the receiver, so rank 0 never entered the
// barrier (the report becomes a desync report naming it). A recv that
// timed out or a closed connection: rank 0 was there, waiting on others.
void HangLineCollector::MonitoredBarrier(std::string_view t, uint64_t line_number,
                                         const HangEvent& e, std::vector<HangEvent>& events) {
  constexpr uint64_t kExceptionWithin = 3;  // lines: "Original exception:", then it
  if (e.kind == HangEventKind::kGlooTimeout && e.detail == "monitoredBarrier") {
    auto from = Rank(IntAfter(t, "from rank "));
    barrier_ = from ? std::optional<PendingBarrier>(
                          PendingBarrier{line_number, events.size(), *from, e.rank})
                    : std::nullopt;
    return;
  }
  if (!barrier_ || line_number > barrier_->line + kExceptionWithin) {
    barrier_.reset();
    return;
  }
  if (e.kind != HangEventKind::kGlooTimeout || !Has(t, "for send operation") ||
      e.rank != barrier_->rank || barrier_->index >= events.size())
    return;
  HangEvent& report = events[barrier_->index];
  report.kind = HangEventKind::kDesyncReport;
  report.ranks_named = {barrier_->from};
  barrier_.reset();
}

bool HangLineCollector::RepeatsPrefixedLine(std::string_view t) const {
  if (t.size() < 16) return false;
  for (const std::string& p : prefixed_) {
    if (p.size() > t.size() && EndsWith(p, t)) return true;
  }
  return false;
}

void HangLineCollector::AddGroup(const HangEvent& e, uint64_t line_number, ReaderContext& ctx,
                                 const std::vector<int32_t>& ranks, std::optional<int32_t> size) {
  std::vector<ProcessGroupInfo>& groups = ctx.out->hang().groups;
  std::string key = e.pg_id + '\x1f' + e.pg_guid + '\x1f' + e.pg_desc;
  auto seen = std::find_if(groups_seen_.begin(), groups_seen_.end(),
                           [&](const std::pair<std::string, size_t>& s) { return s.first == key; });
  size_t index = 0;
  if (seen != groups_seen_.end()) {
    index = seen->second;
  } else {
    ProcessGroupInfo g;
    g.id = e.pg_guid.empty() ? e.pg_id : e.pg_guid;
    g.desc = e.pg_desc;
    g.whole_world = e.pg_id == "0" || e.pg_desc == "default_pg";
    g.src = ctx.Ref(line_number);
    index = groups.size();
    groups_seen_.emplace_back(std::move(key), index);
    groups.push_back(std::move(g));
  }
  if (index >= groups.size()) return;
  ProcessGroupInfo& g = groups[index];
  if (g.ranks.empty() && !ranks.empty()) {
    g.ranks = ranks;
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
  }
  if (!g.size && size) g.size = size;
}

uint64_t HangLineCollector::Finish(uint64_t lines_read, ReaderContext& ctx) {
  CloseFrBlock(ctx);
  for (UncaughtException& u : tracebacks_.Finish()) {
    if (u.communication) continue;  // the peer's exit or the launcher's: not a cause
    HangEvent e;
    e.kind = HangEventKind::kProcessExited;
    e.rank = u.rank ? u.rank : ctx.rank_from_path;
    if (ctx.host_from_path) e.host = *ctx.host_from_path;
    e.detail = CutText(u.exception, 200);
    e.text = CutText(u.line, kHangTextBytes);
    e.src = ctx.Ref(u.line_number);
    ctx.out->hang().events.push_back(std::move(e));
    ++events_;
  }
  uint64_t n = events_;
  if (n > 0) {
    HangLogInfo info;
    info.file = ctx.file_index;
    info.events = n;
    info.lines = lines_read;
    if (pager_line_ != 0 && pager_line_ == last_line_) {
      info.truncated = true;
      info.truncation = "ends in a pager prompt: the lines after the page shown are missing";
    } else if (cut_line_ != 0 && cut_line_ == last_line_) {
      info.truncated = true;
      info.truncation = "ends inside a hang line";
    }
    ctx.out->hang().logs.push_back(std::move(info));
  }
  *this = HangLineCollector();
  return n;
}

}  // namespace laggard
