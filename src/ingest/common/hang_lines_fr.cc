// torch's reports beside the watchdog's, for the hang-line matcher
// (ingest/common/hang_lines.h): its dump-signal lines, its desync and
// collective-mismatch reports, its fr_trace analyser's output (the line
// forms, and the collector's reading of an fr_trace block's fields).

#include <algorithm>

#include "ingest/common/hang_line_text.h"
#include "ingest/common/hang_lines.h"

namespace laggard {

using namespace hang_line_text;  // NOLINT: the line-text helpers both matcher files share

namespace {

// fr_trace's "error msg: Culprit rank 22; Error type: T, ..., Culprit rank
// 110; ...": every culprit rank followed by its ';' (a cut number is not
// taken), sorted and unique.
std::vector<int32_t> CulpritRanks(std::string_view s) {
  constexpr std::string_view kKey = "Culprit rank ";
  std::vector<int32_t> out;
  for (size_t at = s.find(kKey); at != npos; at = s.find(kKey, at + kKey.size())) {
    size_t pos = at + kKey.size();
    size_t end = pos;
    while (end < s.size() && IsDigit(s[end])) ++end;
    if (end == pos || end >= s.size() || s[end] != ';') continue;
    if (auto r = Rank(ParseInt<int64_t>(s.substr(pos, end - pos)))) out.push_back(*r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The first finding of fr_trace's error msg, from its error type:
// "SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: '[[1025]]' does not match
// found input sizes: '[[262144]]'", then how many findings follow it.
std::string FrTraceDetail(std::string_view msg) {
  constexpr std::string_view kType = "Error type: ";
  constexpr std::string_view kNext = ", Culprit rank ";
  size_t at = msg.find(kType);
  std::string_view first = at == npos ? msg : msg.substr(at + kType.size());
  size_t next = first.find(kNext);
  std::string out = CutText(Trim(first.substr(0, next)), kDetailBytes);
  size_t more = 0;
  for (; next != npos; next = first.find(kNext, next + kNext.size())) ++more;
  if (more > 0) out += " (and " + std::to_string(more) + " more)";
  return out;
}

// fr_trace's "0:default_pg": its pg_config name (a watchdog line's PG
// GUID; the id too, as fr_trace gives no other), then its description.
void ReadFrGroup(std::string_view s, HangEvent& e) {
  s = Trim(s);
  size_t colon = s.find(':');
  std::string_view name = Trim(s.substr(0, colon));
  e.pg_id = std::string(name);
  e.pg_guid = std::string(name);
  if (colon != npos) e.pg_desc = std::string(Trim(s.substr(colon + 1)));
}

// "[7] finished ..." / "[0, 1, 2] started ..." / "Rank 3 is running":
// the ranks a desync or mismatch report names.
void ReadRankList(std::string_view s, std::vector<int32_t>& out) {
  size_t open = s.find('[');
  size_t close = open == npos ? npos : s.find(']', open);
  if (open == npos || close == npos) return;
  for (std::string_view tok : Split(s.substr(open + 1, close - open - 1), ',')) {
    if (auto r = Rank(ParseInt<int64_t>(Trim(tok)))) out.push_back(*r);
  }
}

}  // namespace

// Python's "{0, 1, 2}" (fr_trace's rank sets): the ranks, sorted and
// unique. `closed` tells whether the '}' is there; without it the last
// number may be cut and is not taken.
std::vector<int32_t> hang_line_text::RankSet(std::string_view s, bool& closed) {
  std::vector<int32_t> out;
  size_t open = s.find('{');
  size_t close = open == npos ? npos : s.find('}', open);
  closed = close != npos;
  if (open == npos) return out;
  std::string_view inside = s.substr(open + 1, closed ? close - open - 1 : npos);
  std::vector<std::string_view> toks = Split(inside, ',');
  for (size_t i = 0; i < toks.size(); ++i) {
    if (!closed && i + 1 == toks.size()) break;
    if (auto r = Rank(ParseInt<int64_t>(Trim(toks[i])))) out.push_back(*r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// torch's reports beside the watchdog's: the dump-signal lines and the
// one-line forms and block headers of fr_trace (the collector reads a
// block's fields).
bool hang_line_text::ReadDumpOrFrTrace(std::string_view body, HangEvent& e, bool& ended) {
  if (Has(body, "Received a dump signal")) {
    // "... due to a collective timeout from  rank 6 and we will try our
    // best to dump the debug info. Last enqueued NCCL work: 460631, last
    // completed NCCL work: 460630."
    e.kind = HangEventKind::kDumpSignal;
    e.last_enqueued = IntAfterIgnoreCase(body, "last enqueued NCCL work: ");
    e.last_completed = IntAfterIgnoreCase(body, "last completed NCCL work: ");
    size_t from = body.find("timeout from ");
    if (from != npos) {
      size_t pos = from + 13;
      while (pos < body.size() && body[pos] == ' ') ++pos;
      if (StartsWith(body.substr(pos), "rank ")) {
        if (auto r = Rank(IntAt(body, pos + 5))) e.ranks_named.push_back(*r);
      }
    }
    ended = e.last_completed.has_value();
    return true;
  }
  if (Has(body, "flight recorder dump signal")) {
    e.kind = HangEventKind::kDumpSignal;
    return true;
  }
  if (Has(body, "Not all ranks joining collective")) {
    e.kind = HangEventKind::kFrTraceNotJoined;
    size_t group = body.find(" for group ");
    if (group == npos) {
      // Block headers: "... collective 5 at entry 4", "..., sequence number: 4".
      e.seq = IntAfter(body, "joining collective ");
      if (!e.seq) e.seq = IntAfter(body, "sequence number: ");
      return true;
    }
    // torch 2.5, one line: "... for group 0:default_pg collective
    // nccl:all_reduce  Missing ranks are {1}".
    size_t op = body.find(" collective ", group);
    size_t missing = body.find("Missing ranks are ");
    ReadFrGroup(body.substr(group + 11, op == npos ? npos : op - group - 11), e);
    if (op != npos) e.op = WordAfter(body.substr(op), " collective ");
    bool closed = false;
    if (missing != npos) e.ranks_named = RankSet(body.substr(missing), closed);
    ended = closed;
    return true;
  }
  // "Collective 39 at entry 38 errors": a block header.
  size_t entry = body.find(" at entry ");
  if (entry == npos || !Has(body.substr(entry), " errors")) return false;
  size_t c = body.rfind("Collective ", entry);
  if (c == npos) return false;
  size_t digits = c + 11;
  while (digits < entry && IsDigit(body[digits])) ++digits;
  auto seq = IntAt(body, c + 11);
  if (digits != entry || !seq) return false;
  e.kind = HangEventKind::kFrTraceMismatch;
  e.seq = seq;
  return true;
}

// "group info: 0:default_pg", "collective: nccl:all_reduce", "missing
// ranks: {1}", "expected ranks: {0, 1}" (older: a count), "world size: 2",
// "error msg: Culprit rank 1; ...", the sizes and state, and the stack
// trace's lines. A field that ends before its closing '}', ']' or quote
// marks the line cut.
bool hang_line_text::ReadCollectiveMismatch(std::string_view body, HangEvent& e) {
  if (!Has(body, "Detected mismatch between collectives")) return false;
  e.kind = HangEventKind::kCollectiveMismatch;
  e.seq = IntAfter(body, "SequenceNumber=");
  if (!e.seq) e.seq = IntAfter(body, "The sequence number is: ");
  e.op = WordAfter(body, "OpType=");
  for (size_t at = 0; (at = body.find("Rank ", at)) != npos; at += 5) {
    size_t after = at + 5;
    auto r = Rank(IntAt(body, after));
    if (!r) continue;
    size_t p = after;
    while (p < body.size() && IsDigit(body[p])) ++p;
    if (StartsWith(body.substr(p), " is running")) e.ranks_named.push_back(*r);
  }
  return true;
}

bool hang_line_text::ReadDesyncReport(std::string_view body, HangEvent& e) {
  if (!(Has(body, "didn't join collective #") || Has(body, "didn't finish collective #") ||
        Has(body, "Timeout at collective: ") || Has(body, "has not joined"))) {
    return false;
  }
  e.kind = HangEventKind::kDesyncReport;
  // "[7] finished collective #182, but didn't join collective #183 (count from 1)".
  ReadRankList(body, e.ranks_named);
  if (Has(body, "Timeout at collective: ")) {
    // "- [0] Timeout at collective: ALLREDUCE, #315": the reporting
    // rank's own timeout, not a rank the report blames.
    if (!e.rank && e.ranks_named.size() == 1) e.rank = e.ranks_named.front();
    e.ranks_named.clear();
  }
  if (Has(body, "didn't join collective #")) {
    e.seq = IntAfter(body, "didn't join collective #");
  } else if (Has(body, "didn't finish collective #")) {
    e.seq = IntAfter(body, "didn't finish collective #");
  } else if (Has(body, "Timeout at collective: ")) {
    e.op = WordAfter(body, "Timeout at collective: ");
    e.seq = IntAfter(body, ", #");
  } else {
    e.seq = IntAfter(body, "#");
  }
  return true;
}

bool HangLineCollector::FrField(std::string_view line, std::string_view t, uint64_t line_number) {
  HangEvent& e = fr_.event;
  if (fr_.in_stack) {
    // "    all_reduce at /path/distributed_c10d.py:2696"
    size_t at = t.find(" at ");
    size_t colon = t.rfind(':');
    if (line[0] == ' ' || line[0] == '\t' ||
        (at != npos && colon != npos && colon > at && IntAt(t, colon + 1))) {
      return true;
    }
    fr_.in_stack = false;
  }
  size_t colon = t.find(':');
  if (colon == npos) return false;
  std::string_view key = t.substr(0, colon);
  std::string_view value = Trim(t.substr(colon + 1));
  bool complete = true;
  if (key == "group info") {
    ReadFrGroup(value, e);
  } else if (key == "collective") {
    e.op = std::string(value);
  } else if (key == "missing ranks") {
    std::vector<int32_t> missing = RankSet(value, complete);
    if (e.kind == HangEventKind::kFrTraceNotJoined) e.ranks_named = std::move(missing);
  } else if (key == "expected ranks") {
    if (value.find('{') != npos) {
      fr_.ranks = RankSet(value, complete);
    } else if (auto n = Int32(IntAt(value, 0)); n && *n > 0 && !fr_.world_size) {
      fr_.world_size = n;
    }
  } else if (key == "world size") {
    if (auto n = Int32(IntAt(value, 0)); n && *n > 0) fr_.world_size = n;
  } else if (key == "input sizes" || key == "output sizes") {
    complete = EndsWith(value, "]");
  } else if (key == "error msg") {
    if (e.kind == HangEventKind::kFrTraceMismatch) e.ranks_named = CulpritRanks(value);
    e.detail = FrTraceDetail(value);
    complete = EndsWith(value, "'");
  } else if (key == "collective stack trace") {
    fr_.in_stack = true;
  } else if (key != "collective state" && key != "internal record id" &&
             key != "total input numel" && key != "total output numel" && key != "input dtypes" &&
             key != "output dtypes") {
    return false;
  }
  if (!complete) cut_line_ = line_number;
  return true;
}

void HangLineCollector::CloseFrBlock(ReaderContext& ctx) {
  if (!fr_.open) return;
  HangEvent e = std::move(fr_.event);
  e.src = ctx.Ref(fr_.line);
  std::optional<int32_t> size = fr_.world_size;
  if (!size && !fr_.ranks.empty()) size = static_cast<int32_t>(fr_.ranks.size());
  if (!e.pg_id.empty() || !e.pg_guid.empty()) AddGroup(e, fr_.line, ctx, fr_.ranks, size);
  ctx.out->hang().events.push_back(std::move(e));
  ++events_;
  fr_ = FrBlock();
}

}  // namespace laggard
