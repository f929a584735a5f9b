#include "ingest/common/python_traceback.h"

#include <algorithm>
#include <span>

#include "base/text.h"
#include "ingest/common/hang_line_text.h"
#include "ingest/common/hang_lines.h"

namespace laggard {
namespace {

using namespace hang_line_text;  // NOLINT: the line-text helpers the matcher files share

constexpr std::string_view kTraceback = "Traceback (most recent call last)";
constexpr uint32_t kMaxFrameLines = 20'000;  // a traceback longer than this is not one
constexpr uint32_t kMaxMessageLines = 400;   // C++ frames of a c10::Error included

bool HasAnyOf(std::string_view t, std::span<const std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return Has(t, w); });
}

bool StartsChain(std::string_view t) {
  return StartsWith(t, "During handling of the above exception") ||
         StartsWith(t, "The above exception was the direct cause");
}

// "RuntimeError: ...", "torch.OutOfMemoryError: ...", "KeyboardInterrupt":
// a dotted name at the start, then ':' or the end.
bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || IsDigit(c);
}
bool LooksLikeException(std::string_view t) {
  if (t.empty() || !NameChar(t[0]) || IsDigit(t[0])) return false;
  size_t i = 0;
  while (i < t.size() && (NameChar(t[i]) || t[i] == '.')) ++i;
  if (t[i - 1] == '.') return false;
  return i == t.size() || t[i] == ':';
}

// What the launcher and the process's own exit print after its exception.
bool LauncherLine(std::string_view t) {
  static constexpr std::string_view kWords[] = {"torch.distributed.elastic",
                                                "torch/distributed/elastic",
                                                "torchrun",
                                                "ChildFailedError",
                                                "<NO_OTHER_FAILURES>",
                                                "Root Cause",
                                                "Failures:",
                                                "error_file",
                                                "To enable traceback",
                                                "exitcode"};
  if (HasAnyOf(t, kWords)) return true;
  if (StartsWith(t, "===") || StartsWith(t, "---")) return true;
  // The failure table: "time      : ...", "host      : ...", "rank      : ...".
  for (std::string_view f : {"time ", "host ", "rank ", "traceback "}) {
    if (StartsWith(t, f) && Has(t, " : ")) return true;
  }
  // glog, torch 1.x "[W ProcessGroupNCCL.cpp:..]" and 2.x "[W1205 10:11:12..]"
  // or "W1205 10:11:12...": warnings at shutdown.
  if (t.size() >= 3 && t[0] == '[' && (t[1] == 'W' || t[1] == 'E' || t[1] == 'I') &&
      (t[2] == ' ' || IsDigit(t[2])))
    return true;
  return t.size() >= 6 && (t[0] == 'W' || t[0] == 'E' || t[0] == 'I') && IsDigit(t[1]) &&
         IsDigit(t[2]) && IsDigit(t[3]) && IsDigit(t[4]) && t[5] == ' ';
}

// A frame of torch.distributed's own code: an exception raised there (an
// EOFError unpickling a broadcast that broke off) came out of a collective.
bool IsDistributedFrame(std::string_view t) {
  std::string_view file = t.substr(0, t.find("\", line "));
  return Has(file, "torch/distributed/") || Has(file, "torch\\distributed\\");
}

}  // namespace

bool IsCommunicationException(std::string_view exception) {
  static constexpr std::string_view kWords[] = {"gloo",
                                                "NCCL",
                                                "nccl",
                                                "Dist",
                                                "SignalException",
                                                "ChildFailed",
                                                "KeyboardInterrupt",
                                                "SystemExit",
                                                "onnection",
                                                "imed out",
                                                "imeout",
                                                "TimeoutError",
                                                "roken pipe",
                                                "BrokenPipe",
                                                "ocket",
                                                "Store",
                                                " store",
                                                "endezvous",
                                                "ProcessGroup",
                                                "process group",
                                                "atchdog",
                                                "ollective",
                                                "peer",
                                                "arrier",
                                                "c10d",
                                                "distributed",
                                                "ECONNRESET",
                                                "emote"};
  if (HasAnyOf(exception, kWords)) return true;
  return MaybeHangLine(exception) && ParseHangLine(exception).has_value();
}

PythonTracebacks::Routed PythonTracebacks::Route(std::string_view line) {
  Routed r;
  std::string_view s = line;
  if (!s.empty() && s[0] == '>' && (s.size() == 1 || s[1] == ' '))
    s = s.substr(s.size() > 1 ? 2 : 1);
  std::optional<int32_t> mpi;
  s = s.substr(SkipMpiTag(s, mpi));
  RankPrefix prefix = FindRankPrefix(s);
  if (prefix.end != 0) {
    r.key = prefix.rank;
    s = s.substr(prefix.end);
    if (!s.empty() && s[0] == ' ') s = s.substr(1);  // torch's "[rank3]: " adds one blank
  } else {
    r.key = mpi;
  }
  r.body = s;
  return r;
}

PythonTracebacks::Process* PythonTracebacks::Find(std::optional<int32_t> key) {
  if (!key) return &unranked_;
  auto it = ranked_.find(*key);
  return it == ranked_.end() ? nullptr : &it->second;
}

void PythonTracebacks::Cancel(Process& p) {
  p.pending.reset();
  p.before.reset();
  p.state = State::kIdle;
  p.chain_communication = false;
}

void PythonTracebacks::Offer(std::string_view line, uint64_t line_number) {
  if (!any_ && line.find(kTraceback) == npos) return;
  Routed r = Route(line);
  Process* p = Find(r.key);
  if (p == nullptr) {
    if (!StartsWith(r.body, kTraceback)) return;
    p = &ranked_[*r.key];
  }
  any_ = true;
  Step(*p, r.key, line, r.body, line_number);
}

void PythonTracebacks::WentOn(std::string_view line) {
  Routed r = Route(line);
  Process* p = Find(r.key);
  if (p != nullptr && p->state != State::kIdle) Cancel(*p);
}

void PythonTracebacks::Step(Process& p, std::optional<int32_t> key, std::string_view raw,
                            std::string_view body, uint64_t line_number) {
  std::string_view t = Trim(body);
  if (StartsWith(body, kTraceback)) {
    if (p.state != State::kChained) {
      // A new traceback of the same process: the one before did not end
      // it, unless this one is the launcher's own (kept in `before`).
      p.before = std::move(p.pending);
      p.pending.reset();
      p.chain_communication = false;
    }
    p.state = State::kFrames;
    p.lines = 0;
    p.in_distributed = false;
    return;
  }
  switch (p.state) {
    case State::kIdle: return;
    case State::kFrames: {
      if (!body.empty() && (body[0] == ' ' || body[0] == '\t')) {
        // The innermost frame is the last "File" line.
        if (StartsWith(t, "File \"")) p.in_distributed = IsDistributedFrame(t);
        if (++p.lines > kMaxFrameLines) Cancel(p);
        return;
      }
      std::optional<UncaughtException> before = std::move(p.before);
      p.before.reset();
      if (!LooksLikeException(t)) {
        Cancel(p);
        return;
      }
      UncaughtException e;
      e.rank = key;
      e.line = std::string(raw);
      e.exception = std::string(t);
      e.line_number = line_number;
      const bool launcher = Has(t, "ChildFailedError") || Has(t, "SignalException");
      e.communication = p.chain_communication || p.in_distributed || IsCommunicationException(t);
      if (launcher && before) {
        p.pending = std::move(before);  // torchrun's traceback after its worker's
        p.state = State::kAfter;
      } else {
        p.pending = std::move(e);
        p.state = State::kMessage;
      }
      p.lines = 0;
      return;
    }
    case State::kMessage:
      if (t.empty()) {
        p.state = State::kAfter;
        return;
      }
      if (StartsChain(t)) break;
      if (++p.lines <= kMaxMessageLines) {
        if (p.pending && IsCommunicationException(t)) p.pending->communication = true;
        return;
      }
      p.state = State::kAfter;
      break;
    case State::kAfter:
    case State::kChained: break;
  }
  if (t.empty()) return;
  if (StartsChain(t)) {
    p.chain_communication = p.chain_communication || (p.pending && p.pending->communication);
    p.state = State::kChained;
    return;
  }
  if (p.state == State::kChained ||
      !(LauncherLine(t) || (MaybeHangLine(raw) && ParseHangLine(raw))))
    Cancel(p);
}

std::vector<UncaughtException> PythonTracebacks::Finish() {
  std::vector<UncaughtException> out;
  auto take = [&](Process& p) {
    // A chain cut before its next traceback, or a traceback cut in its
    // frames: what ended the process is not there.
    if (p.pending && (p.state == State::kMessage || p.state == State::kAfter)) {
      out.push_back(std::move(*p.pending));
    }
  };
  take(unranked_);
  for (auto& [rank, p] : ranked_) take(p);
  std::sort(out.begin(), out.end(), [](const UncaughtException& a, const UncaughtException& b) {
    return a.line_number < b.line_number;
  });
  *this = PythonTracebacks();
  return out;
}

}  // namespace laggard
