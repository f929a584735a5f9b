// nccl-tests output: what every *_perf binary (all_reduce_perf,
// all_gather_perf, alltoall_perf, sendrecv_perf, ...) prints, e.g.
//
//   # nThread 1 nGpus 1 minBytes 536870912 maxBytes 2147483648 step: 2(factor) warmup iters: 50
//   iters: 50 ... # Using devices #  Rank  0 Group  0 Pid   1164 on node-a device  0 [0x10] NVIDIA
//   A800-SXM4-80GB #       size         count      type   redop    root     time   algbw   busbw
//   #wrong     time   algbw   busbw #wrong
//      536870912     134217728     float     sum      -1    24942   21.52   41.26      0
//      24966   21.50   41.22      0
//   # Out of bounds values : 0 OK
//   # Avg bus bandwidth    : 41.6967
//
// One NcclTestRun per run: a run starts at "# nccl-tests version", "# Collective
// test starting:" or "# nThread" (whichever comes first of those a run prints),
// or at a size table that follows a finished one. Versions differ: rank lines
// without "Group" (before 2.11), bus ids as "[0000:1b:00]" (2.14+), an "error"
// column (max relative error, ignored) instead of "#wrong" and no "root"
// (before 2.11), no "redop" either (2.0), per-iteration and timestamp columns
// (newest); the table header names the columns, so rows are read by name.
// "N/A" in #wrong (validation off) and '-' in redop/root are unknown; root -1
// (a collective without a root) is unknown too.
//
// Lines may carry launcher prefixes (mpirun --tag-output "[1,0]<stdout>:",
// torchrun "[default0]:", srun -l "0: ", pdsh "node-a: ", an ISO timestamp).
// NCCL INFO/WARN lines inside the output go to NcclLogCollector
// (nccl_debug.h) and give NcclRankInfo entries as from an NCCL log.
//
// The collective: "# Collective test starting: all_reduce_perf" (newest
// versions), else the binary named on an earlier line (an mpirun or shell
// command line), else "# Collective test concluded:", else the file name
// (all_reduce_perf_8gpu.txt), else "unknown".

#include <array>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/nccl/nccl_debug.h"
#include "ingest/nccl/nccl_readers.h"

namespace laggard {
namespace {

struct Token {
  std::string_view text;
  size_t pos;  // offset in the tokenized string
};

std::vector<Token> TokensAt(std::string_view s) {
  std::vector<Token> out;
  for (std::string_view word : SplitBlanks(s)) {
    out.push_back(Token{word, static_cast<size_t>(word.data() - s.data())});
  }
  return out;
}

bool IsIsoTimestamp(std::string_view s) {
  return s.size() >= 11 && IsDigit(s[0]) && IsDigit(s[1]) && IsDigit(s[2]) && IsDigit(s[3]) &&
         s[4] == '-' && IsDigit(s[5]) && IsDigit(s[6]) && s[7] == '-' && IsDigit(s[8]) &&
         IsDigit(s[9]) && s[10] == 'T';
}

// Removes launcher prefixes: "[1,0]<stdout>:", "[default0]:", "0: ",
// "node-a: ", "2024-05-01T12:00:00.123Z ".
std::string_view StripLauncherPrefix(std::string_view line) {
  for (int round = 0; round < 4; ++round) {
    size_t b = 0;
    while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
    std::string_view s = line.substr(b);
    if (!s.empty() && s[0] == '[') {
      size_t close = s.find(']');
      if (close != std::string_view::npos) {
        size_t p = close + 1;
        for (std::string_view tag : {"<stdout>", "<stderr>"}) {
          if (s.substr(p).substr(0, tag.size()) == tag) p += tag.size();
        }
        if (p < s.size() && s[p] == ':') {
          line = s.substr(p + 1);
          continue;
        }
      }
      return line;
    }
    if (IsIsoTimestamp(s)) {
      size_t sp = s.find(' ');
      if (sp == std::string_view::npos) return line;
      line = s.substr(sp + 1);
      continue;
    }
    size_t sp = s.find(' ');
    if (sp != std::string_view::npos && sp > 1 && s[sp - 1] == ':' &&
        s.substr(0, sp).find('#') == std::string_view::npos &&
        s.substr(0, sp - 1).find(':') == std::string_view::npos) {
      std::string_view after = s.substr(sp + 1);
      size_t a = 0;
      while (a < after.size() && after[a] == ' ') ++a;
      if (a < after.size() && (after[a] == '#' || IsDigit(after[a]) || IsDigit(s[0]))) {
        line = after;
        continue;
      }
    }
    return line;
  }
  return line;
}

constexpr std::array<std::string_view, 12> kKnownBinaries = {
    "all_reduce",     "all_gather", "alltoall", "alltoallv", "broadcast", "reduce",
    "reduce_scatter", "gather",     "scatter",  "sendrecv",  "hypercube", "all_reduce_group"};

// "./build/all_reduce_perf" -> "all_reduce"; "alltoall_perf_mpi" -> "alltoall".
// With `known_only`, names outside the nccl-tests set are refused (for
// command lines found in free text).
std::optional<std::string> CollectiveFromName(std::string_view name, bool known_only) {
  while (!name.empty() && (name.back() == '"' || name.back() == '\'')) name.remove_suffix(1);
  size_t slash = name.find_last_of('/');
  if (slash != std::string_view::npos) name = name.substr(slash + 1);
  while (!name.empty() && (name.front() == '"' || name.front() == '\'')) name.remove_prefix(1);
  size_t at = name.find("_perf");
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  std::string_view after = name.substr(at + 5);
  if (!after.empty() && after.front() != '_' && after.front() != '.') return std::nullopt;
  std::string_view coll = name.substr(0, at);
  for (char c : coll) {
    if (!((c >= 'a' && c <= 'z') || IsDigit(c) || c == '_')) return std::nullopt;
  }
  if (known_only) {
    bool known = false;
    for (std::string_view k : kKnownBinaries) known = known || k == coll;
    if (!known || !(after.empty() || after == "_mpi")) return std::nullopt;
  }
  return std::string(coll);
}

// nccl-tests prints NCCL_VERSION_CODE: 22602 -> "2.26.2" (2.9+), 2708 -> "2.7.8".
std::optional<std::string> VersionFromCode(std::string_view text) {
  auto code = ParseInt<int64_t>(text);
  if (!code || *code <= 0) return std::nullopt;
  if (*code >= 10000) {
    return fmt::format("{}.{}.{}", *code / 10000, *code % 10000 / 100, *code % 100);
  }
  return fmt::format("{}.{}.{}", *code / 1000, *code % 1000 / 100, *code % 100);
}

bool IsErrorLine(std::string_view t) {
  static constexpr std::string_view kMarkers[] = {
      "Test NCCL failure",  "Test CUDA failure", "Test failure", "NCCL WARN", "FAILED",
      "Segmentation fault", "mpirun noticed",    "Aborted"};
  for (std::string_view m : kMarkers) {
    if (t.find(m) != std::string_view::npos) return true;
  }
  return false;
}

// Column positions of the size table, from its header line.
struct TableLayout {
  struct Block {
    int time = -1, algbw = -1, busbw = -1, wrong = -1;
  };
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  Block oop, ip;
  size_t min_tokens = 0;
};

std::optional<TableLayout> LayoutFromHeader(std::string_view header) {
  std::vector<Token> names = TokensAt(header);
  if (names.empty() || names[0].text != "size") return std::nullopt;
  TableLayout l;
  int block = -1;
  int last = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string_view n = names[i].text;
    int idx = static_cast<int>(i);
    TableLayout::Block* b = block == 0 ? &l.oop : block == 1 ? &l.ip : nullptr;
    int* slot = nullptr;
    if (n == "size") slot = &l.size;
    else if (n == "count") slot = &l.count;
    else if (n == "type") slot = &l.type;
    else if (n == "redop") slot = &l.redop;
    else if (n == "root") slot = &l.root;
    else if (n == "time" || n == "cputime") {
      if (++block > 1) break;
      b = block == 0 ? &l.oop : &l.ip;
      slot = &b->time;
    } else if (b != nullptr && n == "algbw") slot = &b->algbw;
    else if (b != nullptr && n == "busbw") slot = &b->busbw;
    else if (b != nullptr && n == "#wrong") slot = &b->wrong;
    if (slot != nullptr && *slot < 0) {
      *slot = idx;
      last = std::max(last, idx);
    }
  }
  if (l.size != 0 || l.oop.time < 0 || l.oop.algbw < 0 || l.oop.busbw < 0) return std::nullopt;
  l.min_tokens = static_cast<size_t>(last) + 1;
  return l;
}

// "N/A", "-" and an empty field are unknown.
bool Unknown(std::string_view v) { return v.empty() || v == "N/A" || v == "-"; }

// One row of the size table by `layout`; nullopt and `why` when a needed
// value cannot be read.
std::optional<NcclTestRow> ParseRow(std::string_view line, const TableLayout& l, std::string& why) {
  std::vector<Token> toks = TokensAt(line);
  if (toks.size() < l.min_tokens) {
    why = fmt::format("{} of {} columns", toks.size(), l.min_tokens);
    return std::nullopt;
  }
  auto at = [&](int i) { return i >= 0 ? toks[static_cast<size_t>(i)].text : std::string_view(); };
  NcclTestRow row;
  auto size = ParseInt<int64_t>(at(l.size));
  if (!size || *size < 0) {
    why = "size is not a byte count";
    return std::nullopt;
  }
  row.size_bytes = *size;
  if (l.count >= 0 && !Unknown(at(l.count))) {
    row.count = ParseInt<int64_t>(at(l.count));
    if (!row.count || *row.count < 0) {
      why = "count is not a number";
      return std::nullopt;
    }
  }
  if (l.type >= 0 && !Unknown(at(l.type))) row.type = std::string(at(l.type));
  if (l.redop >= 0 && !Unknown(at(l.redop))) row.redop = std::string(at(l.redop));
  if (l.root >= 0 && !Unknown(at(l.root))) {
    auto root = ParseInt<int64_t>(at(l.root));
    if (!root) {
      why = "root is not a number";
      return std::nullopt;
    }
    if (*root >= 0) row.root = root;
  }
  auto block = [&](const TableLayout::Block& b, std::optional<double>& time,
                   std::optional<double>& algbw, std::optional<double>& busbw,
                   std::optional<int64_t>& wrong, const char* which) {
    if (b.time < 0) return true;
    time = ParseDouble(at(b.time));
    algbw = b.algbw >= 0 ? ParseDouble(at(b.algbw)) : std::nullopt;
    busbw = b.busbw >= 0 ? ParseDouble(at(b.busbw)) : std::nullopt;
    if (!time || !algbw || !busbw || *time < 0 || *algbw < 0 || *busbw < 0) {
      why = fmt::format("{} time or bandwidth is not a number", which);
      return false;
    }
    if (b.wrong >= 0 && !Unknown(at(b.wrong))) {
      // Printed with %g: "0", "12", "1e+06".
      auto w = ParseDouble(at(b.wrong));
      if (!w || *w < 0 || *w > 9e18) {
        why = fmt::format("{} #wrong is not a count", which);
        return false;
      }
      wrong = static_cast<int64_t>(*w);
    }
    return true;
  };
  if (!block(l.oop, row.oop_time_us, row.oop_algbw_gbps, row.oop_busbw_gbps, row.oop_wrong,
             "out-of-place") ||
      !block(l.ip, row.ip_time_us, row.ip_algbw_gbps, row.ip_busbw_gbps, row.ip_wrong,
             "in-place")) {
    return std::nullopt;
  }
  return row;
}

// "Rank  3 Group  0 Pid     78 on node-b device  1 [0xc7] NVIDIA A800-SXM4-80GB"
// (the text after '#'); "Group" is absent before nccl-tests 2.11.
std::optional<NcclTestRank> ParseRank(std::string_view body) {
  std::vector<Token> toks = TokensAt(body);
  NcclTestRank r;
  size_t i = 0;
  auto expect = [&](std::string_view word) {
    if (i < toks.size() && toks[i].text == word) {
      ++i;
      return true;
    }
    return false;
  };
  auto next = [&]() { return i < toks.size() ? toks[i++].text : std::string_view(); };
  if (!expect("Rank")) return std::nullopt;
  auto rank = ParseInt<int32_t>(next());
  if (!rank || *rank < 0) return std::nullopt;
  r.rank = *rank;
  if (expect("Group")) {
    r.group = ParseInt<int32_t>(next());
    if (!r.group) return std::nullopt;
  }
  if (!expect("Pid")) return std::nullopt;
  r.pid = ParseInt<int64_t>(next());
  if (!r.pid || !expect("on")) return std::nullopt;
  std::string_view host = next();
  if (host.empty() || !expect("device")) return std::nullopt;
  r.host = std::string(host);
  r.device = ParseInt<int32_t>(next());
  if (!r.device) return std::nullopt;
  if (i < toks.size() && toks[i].text.front() == '[' && toks[i].text.back() == ']') {
    std::string_view bus = toks[i].text.substr(1, toks[i].text.size() - 2);
    if (!bus.empty()) r.bus_id = std::string(bus);
    ++i;
  }
  if (i < toks.size()) r.gpu_name = std::string(Trim(body.substr(toks[i].pos)));
  return r;
}

// "# nThread 1 nGpus 1 minBytes 8 maxBytes 128M step: 2(factor) warmup iters: 5 iters: 20 ..."
void ReadParameters(std::string_view body, NcclTestRun& run) {
  std::vector<Token> toks = TokensAt(body);
  for (size_t i = 0; i + 1 < toks.size(); ++i) {
    std::string_view k = toks[i].text, v = toks[i + 1].text;
    std::string_view before = i > 0 ? toks[i - 1].text : std::string_view();
    if (k == "nThread") run.threads = ParseInt<int32_t>(v);
    else if (k == "nGpus") run.gpus_per_thread = ParseInt<int32_t>(v);
    else if (k == "iters:" && before == "warmup") run.warmup_iters = ParseInt<int32_t>(v);
    else if (k == "iters:" && before != "agg") run.iters = ParseInt<int32_t>(v);
  }
}

// The value after " : " of a footer line: "Avg bus bandwidth    : 41.6967 OK".
std::string_view FooterValue(std::string_view body) {
  size_t colon = body.find(':');
  if (colon == std::string_view::npos) return {};
  std::vector<Token> toks = TokensAt(body.substr(colon + 1));
  return toks.empty() ? std::string_view() : toks[0].text;
}

enum Stage { kVersionLine = 0, kStartingLine = 1, kParameterLine = 2, kImplicit = 3 };

class NcclTestsReader final : public TextReader {
 public:
  std::string_view name() const override { return "nccl-tests"; }

  int Sniff(std::string_view head) const override {
    if (head.empty() || LooksBinary(head)) return kSniffNo;
    int best = kSniffNo;
    ForEachHeadLine(head, [&](std::string_view line) {
      std::string_view t = Trim(StripLauncherPrefix(line));
      if (t.empty() || t[0] != '#') return true;
      std::string_view body = Trim(t.substr(1));
      if ((StartsWith(body, "nThread ") && body.find("nGpus") != std::string_view::npos) ||
          StartsWith(body, "Collective test starting:") || StartsWith(body, "nccl-tests version") ||
          LayoutFromHeader(body)) {
        best = kSniffSure;
        return false;
      }
      if (ParseRank(body)) best = kSniffStrong;
      return true;
    });
    return best;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    State st{ctx};
    std::string_view line;
    while (lines.Next(line)) st.Line(line, lines.line_number());
    return st.Finish();
  }

 private:
  struct Current {
    NcclTestRun run;
    int stage = kImplicit;
    std::optional<TableLayout> layout;
    bool footer = false;
  };

  struct State {
    ReaderContext& ctx;
    NcclLogCollector nccl;
    std::optional<Current> cur;
    std::vector<NcclTestRun> done;
    std::optional<std::string> pending_collective;
    std::optional<std::string> pending_version;
    std::vector<std::string> pending_errors;
    uint64_t pending_errors_line = 0;
    uint64_t records = 0;

    void Close() {
      if (!cur) return;
      done.push_back(std::move(cur->run));
      cur.reset();
    }

    Current& Start(uint64_t n, int stage) {
      Close();
      cur.emplace();
      cur->stage = stage;
      cur->run.src = ctx.Ref(n);
      if (pending_collective) cur->run.collective = std::move(*pending_collective);
      pending_collective.reset();
      cur->run.nccl_version = std::move(pending_version);
      pending_version.reset();
      cur->run.errors = std::move(pending_errors);
      pending_errors.clear();
      return *cur;
    }

    // A run-opening line of `stage`: it continues the current run when that
    // run has printed only earlier-stage lines so far.
    Current& Open(uint64_t n, int stage) {
      if (!cur || cur->stage >= stage || cur->layout || !cur->run.ranks.empty()) {
        return Start(n, stage);
      }
      cur->stage = stage;
      return *cur;
    }

    Current& Need(uint64_t n) { return cur ? *cur : Start(n, kImplicit); }

    void Error(std::string_view t, uint64_t n) {
      if (cur) {
        cur->run.errors.emplace_back(t);
        return;
      }
      if (pending_errors.empty()) pending_errors_line = n;
      pending_errors.emplace_back(t);
    }

    void Bad(uint64_t n, std::string_view what, std::string_view line) {
      ctx.diag().Add(DiagCode::kNetBadRecord, ctx.path, n,
                     fmt::format("{}: \"{}\"", what, Printable(line, 100)));
    }

    void Header(const TableLayout& layout, uint64_t n) {
      if (!cur || cur->footer || !cur->run.rows.empty()) Start(n, kImplicit);
      cur->layout = layout;
    }

    void Comment(std::string_view t, uint64_t n) {
      std::string_view body = Trim(t.substr(1));
      if (StartsWith(body, "nccl-tests version")) {
        Current& c = Open(n, kVersionLine);
        size_t lib = body.find("nccl-library=");
        if (lib != std::string_view::npos && !c.run.nccl_version) {
          std::vector<Token> v = TokensAt(body.substr(lib + 13));
          if (!v.empty()) c.run.nccl_version = VersionFromCode(v[0].text);
        }
      } else if (StartsWith(body, "Collective test starting:")) {
        Current& c = Open(n, kStartingLine);
        if (auto coll = CollectiveFromName(Trim(body.substr(25)), false)) c.run.collective = *coll;
      } else if (StartsWith(body, "Collective test concluded:")) {
        if (cur && cur->run.collective.empty()) {
          if (auto coll = CollectiveFromName(Trim(body.substr(26)), false)) {
            cur->run.collective = *coll;
          }
        }
      } else if (StartsWith(body, "nThread")) {
        ReadParameters(body, Open(n, kParameterLine).run);
      } else if (StartsWith(body, "Rank ")) {
        if (auto r = ParseRank(body)) {
          Need(n).run.ranks.push_back(std::move(*r));
          ++records;
        } else {
          Bad(n, "nccl-tests rank line that could not be read", t);
        }
      } else if (auto layout = LayoutFromHeader(body)) {
        Header(*layout, n);
      } else if (StartsWith(body, "Out of bounds values")) {
        Current& c = Need(n);
        auto v = ParseInt<int64_t>(FooterValue(body));
        if (v && *v >= 0) c.run.out_of_bounds = v;
        else Bad(n, "nccl-tests out-of-bounds count that could not be read", t);
        if (body.find("FAILED") != std::string_view::npos) Error(t, n);
      } else if (StartsWith(body, "Avg bus bandwidth")) {
        Current& c = Need(n);
        auto v = ParseDouble(FooterValue(body));
        if (v && *v >= 0) c.run.avg_busbw_gbps = v;
        else Bad(n, "nccl-tests average bus bandwidth that could not be read", t);
        c.footer = true;
        if (body.find("FAILED") != std::string_view::npos) Error(t, n);
      } else if (StartsWith(body, "Errors") || StartsWith(body, "error") ||
                 body.find("FAILED") != std::string_view::npos) {
        Error(t, n);
      }
    }

    void Line(std::string_view line, uint64_t n) {
      std::string_view t = Trim(StripLauncherPrefix(line));
      if (t.empty()) return;
      if (t[0] == '#') return Comment(t, n);
      if (StartsWith(t, "NCCL version ")) {
        std::vector<Token> v = TokensAt(t.substr(13));
        if (!v.empty()) {
          std::string version(v[0].text.substr(0, v[0].text.find('+')));
          if (cur && !cur->footer) {
            cur->run.nccl_version = version;
          } else {
            pending_version = version;
          }
        }
        nccl.Offer(line, n, ctx);
        return;
      }
      if (nccl.Offer(line, n, ctx)) {
        if (t.find("NCCL WARN") != std::string_view::npos) Error(t, n);
        return;
      }
      if (cur && cur->layout && !cur->footer && IsDigit(t[0])) {
        std::string why;
        if (auto row = ParseRow(t, *cur->layout, why)) {
          row->src = ctx.Ref(n);
          cur->run.rows.push_back(std::move(*row));
          ++records;
        } else {
          Bad(n, fmt::format("nccl-tests row with {}", why), t);
        }
        return;
      }
      if (auto layout = LayoutFromHeader(t)) return Header(*layout, n);
      if (IsErrorLine(t)) return Error(t, n);
      for (const Token& tok : TokensAt(t)) {
        if (auto coll = CollectiveFromName(tok.text, true)) {
          pending_collective = std::move(coll);
          break;
        }
      }
    }

    uint64_t Finish() {
      Close();
      if (done.empty() && !pending_errors.empty()) {
        Start(pending_errors_line, kImplicit);
        Close();
      }
      std::optional<std::string> from_file = CollectiveFromName(ctx.path, false);
      bool no_host = false;
      uint64_t processes = nccl.Finish(ctx, &no_host);
      for (NcclTestRun& run : done) {
        if (run.collective.empty()) run.collective = from_file.value_or("unknown");
        if (run.ranks.empty()) {
          run.host_from_path = ctx.host_from_path;
          no_host = no_host || !run.host_from_path;
        }
        ctx.out->network().nccl_tests.push_back(std::move(run));
      }
      if (no_host) {
        ctx.diag().Add(DiagCode::kNetNoHost, ctx.path, 0,
                       "nccl-tests output (or its NCCL lines) without a host, and no host in "
                       "the path");
      }
      return records + done.size() + processes;
    }
  };
};

}  // namespace

std::unique_ptr<TextReader> MakeNcclTestsReader() { return std::make_unique<NcclTestsReader>(); }

}  // namespace laggard
