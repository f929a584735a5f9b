#include "agent/step_intake.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "agent/host_procs.h"
#include "base/text.h"
#include "model/run.h"

namespace laggard::agent {
namespace {

inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

void SkipBlanks(std::string_view s, size_t& p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
}

// Skips blanks, at most one of `seps`, blanks.
void SkipSep(std::string_view s, size_t& p, std::string_view seps) {
  SkipBlanks(s, p);
  if (p < s.size() && seps.find(s[p]) != std::string_view::npos) ++p;
  SkipBlanks(s, p);
}

// `kw` (lower case) in any case, not followed by a letter.
bool Keyword(std::string_view s, size_t& p, std::string_view kw) {
  if (p + kw.size() > s.size() || !EqualsIgnoreCase(s.substr(p, kw.size()), kw)) return false;
  if (p + kw.size() < s.size() && IsAlpha(s[p + kw.size()])) return false;
  p += kw.size();
  return true;
}

std::string_view TakeWhile(std::string_view s, size_t& p, bool (*pred)(char)) {
  size_t start = p;
  while (p < s.size() && pred(s[p])) ++p;
  return s.substr(start, p - start);
}

bool IsNumberChar(char c) {
  return IsDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
}
bool IsUnitChar(char c) { return IsAlpha(c) || static_cast<unsigned char>(c) >= 0x80; }

// The article's line: "rank 3, step 120, time 0.8123s" anywhere in `line`.
LineKind ParseArticle(std::string_view line, StepReport& out, BadLine& bad, std::string& why) {
  size_t from = 0;
  bool candidate = false;
  while (true) {
    size_t at = FindIgnoreCase(line, "rank", from);
    if (at == std::string_view::npos) break;
    from = at + 4;
    if (at > 0 && IsAlpha(line[at - 1])) continue;  // "frank"
    size_t p = at;
    if (!Keyword(line, p, "rank")) continue;  // "ranking"
    SkipSep(line, p, "=:");
    auto rank = ParseInt<int64_t>(TakeWhile(line, p, IsDigit));
    if (!rank) continue;
    SkipSep(line, p, ",;|");
    if (!Keyword(line, p, "step")) continue;
    candidate = true;
    SkipSep(line, p, "=:");
    auto step = ParseInt<int64_t>(TakeWhile(line, p, IsDigit));
    if (!step) {
      why = "no step number after 'step'";
      continue;
    }
    SkipSep(line, p, ",;|");
    if (!Keyword(line, p, "time")) {
      why = "no 'time' after the step number";
      continue;
    }
    SkipSep(line, p, "=:");
    auto value = ParseDouble(TakeWhile(line, p, IsNumberChar));
    SkipBlanks(line, p);
    std::string_view unit_text = TakeWhile(line, p, IsUnitChar);
    std::optional<TimeUnit> unit =
        unit_text.empty() ? TimeUnit::kSeconds : ParseTimeUnit(unit_text);
    if (!value || !unit) {
      why = !value ? "no number after 'time'"
                   : fmt::format("unknown time unit '{}'", Printable(unit_text, 16));
      continue;
    }
    auto d = ToDurationNs(*value, *unit);
    if (!d || *d <= 0) {
      why = "step time is not positive";
      continue;
    }
    if (*rank > kMaxRank) {
      why = "rank out of range";
      continue;
    }
    out = StepReport{};
    out.rank = *rank;
    out.step = *step;
    out.duration_ns = *d;
    return LineKind::kStep;
  }
  if (!candidate) return LineKind::kNotStep;
  bad = BadLine::kBadValue;
  return LineKind::kBad;
}

bool IsNameChar(char c) { return (c >= 'a' && c <= 'z') || IsDigit(c) || c == '_'; }
bool IsHostChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '.' || c == '-' || c == '_'; }

// Splits "compute_ms" into ("compute", ms); false without a unit suffix.
bool SplitUnitKey(std::string_view key, std::string_view& name, TimeUnit& unit) {
  size_t us = key.rfind('_');
  if (us == std::string_view::npos || us == 0) return false;
  std::string_view suffix = key.substr(us + 1);
  if (suffix == "s") unit = TimeUnit::kSeconds;
  else if (suffix == "ms") unit = TimeUnit::kMilliseconds;
  else if (suffix == "us") unit = TimeUnit::kMicroseconds;
  else if (suffix == "ns") unit = TimeUnit::kNanoseconds;
  else return false;
  name = key.substr(0, us);
  return true;
}

LineKind ParseKeyValue(std::string_view rest, StepReport& out, BadLine& bad, std::string& why) {
  out = StepReport{};
  bool have_rank = false, have_step = false, have_time = false;
  auto fail = [&](BadLine b, std::string w) {
    bad = b;
    why = std::move(w);
    return LineKind::kBad;
  };
  size_t p = 0;
  while (true) {
    SkipBlanks(rest, p);
    if (p >= rest.size()) break;
    size_t end = p;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '\t') ++end;
    std::string_view token = rest.substr(p, end - p);
    p = end;
    size_t eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return fail(BadLine::kBadValue, fmt::format("'{}' is not key=value", Printable(token, 40)));
    }
    std::string_view key = token.substr(0, eq);
    std::string_view value = token.substr(eq + 1);
    auto bad_value = [&] {
      return fail(BadLine::kBadValue,
                  fmt::format("bad value for {}: '{}'", Printable(key, 40), Printable(value, 40)));
    };
    if (key == "rank" || key == "step") {
      auto v = ParseInt<int64_t>(value);
      if (!v || *v < 0) return bad_value();
      (key == "rank" ? out.rank : out.step) = *v;
      (key == "rank" ? have_rank : have_step) = true;
    } else if (key == "gpu") {
      auto v = ParseInt<int32_t>(value);
      if (!v || *v < 0 || *v > 1023) return bad_value();
      out.gpu = *v;
    } else if (key == "pid") {
      auto v = ParseInt<int64_t>(value);
      if (!v || *v <= 0 || *v > laggard::kMaxPid) return bad_value();
      out.pid = *v;
    } else if (key == "pidns") {
      auto v = ParseInt<uint64_t>(value);
      if (!v || *v == 0) return bad_value();
      out.pidns = *v;
    } else if (key == "host") {
      size_t q = 0;
      if (value.empty() || value.size() > 255 ||
          TakeWhile(value, q, IsHostChar).size() != value.size()) {
        return bad_value();
      }
      out.host = std::string(value);
    } else if (key == "ts") {
      auto t = ParseTimestamp(value);
      if (!t || *t < 0) return bad_value();  // before 1970: not a clock reading
      out.end_ns = *t;
    } else {
      std::string_view name;
      TimeUnit unit;
      if (!SplitUnitKey(key, name, unit)) continue;  // unknown key: ignored
      auto v = ParseDouble(value);
      auto d = v ? ToDurationNs(*v, unit) : std::nullopt;
      if (!d || *d < 0) return bad_value();
      if (name == "time") {
        if (*d == 0) return bad_value();
        out.duration_ns = *d;
        have_time = true;
        continue;
      }
      size_t q = 0;
      if (name.size() > 32 || TakeWhile(name, q, IsNameChar).size() != name.size()) {
        return fail(BadLine::kBadValue, fmt::format("bad phase name '{}'", Printable(name, 40)));
      }
      bool replaced = false;
      for (auto& [n, dur] : out.phases) {
        if (n == name) {
          dur = *d;
          replaced = true;
        }
      }
      if (!replaced) {
        if (out.phases.size() >= kMaxPhases) {
          return fail(BadLine::kBadValue, fmt::format("more than {} phases", kMaxPhases));
        }
        out.phases.emplace_back(std::string(name), *d);
      }
    }
  }
  if (!have_rank || !have_step || !have_time) {
    return fail(BadLine::kMissingField,
                fmt::format("missing {}", !have_rank ? "rank" : (!have_step ? "step" : "time_s")));
  }
  if (out.rank > kMaxRank) return fail(BadLine::kBadValue, "rank out of range");
  return LineKind::kStep;
}

constexpr std::string_view kKeyValuePrefix = "laggard-step";

}  // namespace

std::string_view BadLineName(BadLine b) {
  switch (b) {
    case BadLine::kNotAStepLine: return "not_a_step_line";
    case BadLine::kMissingField: return "missing_field";
    case BadLine::kBadValue: return "bad_value";
    case BadLine::kTooLong: return "too_long";
    case BadLine::kTooManyRanks: return "too_many_ranks";
    case BadLine::kCount: break;
  }
  return "?";
}

std::string_view StepSourceName(StepSource s) {
  switch (s) {
    case StepSource::kUdp: return "udp";
    case StepSource::kUnix: return "unix";
    case StepSource::kTail: return "tail";
    case StepSource::kCount: break;
  }
  return "?";
}

LineKind ParseStepLine(std::string_view line, StepReport& out, BadLine& bad, std::string& why) {
  if (line.size() > kMaxStepLine) {
    bad = BadLine::kTooLong;
    why = fmt::format("line of {} bytes", line.size());
    return LineKind::kBad;
  }
  std::string_view t = Trim(line);
  if (StartsWith(t, kKeyValuePrefix) &&
      (t.size() == kKeyValuePrefix.size() || t[kKeyValuePrefix.size()] == ' ' ||
       t[kKeyValuePrefix.size()] == '\t')) {
    return ParseKeyValue(t.substr(kKeyValuePrefix.size()), out, bad, why);
  }
  return ParseArticle(t, out, bad, why);
}

// A followed log file. Starts at the file's end; a smaller size or another
// inode means it was truncated or rotated: read the new file from its start.
struct StepIntake::Tail {
  std::string path;
  uint64_t offset = 0;
  ino_t inode = 0;
  bool seen = false;
  std::string partial;    // an unfinished last line
  bool skipping = false;  // inside an over-long line, until its newline
};

StepIntake::StepIntake(StepSink& sink) : sink_(sink) {}

StepIntake::~StepIntake() {
  Stop();
  for (int fd : {udp_fd_, unix_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

Status StepIntake::Open(const IntakeOptions& options) {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  if (options.udp) {
    std::string host;
    int port = 0;
    if (!ParseHostPort(*options.udp, host, port)) {
      return Status::Error(fmt::format("--udp: expected HOST:PORT, got '{}'", *options.udp));
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    std::string port_text = std::to_string(port);
    if (int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
        rc != 0 || res == nullptr) {
      return Status::Error(
          fmt::format("--udp: '{}' is not a numeric address ({})", host, gai_strerror(rc)));
    }
    udp_fd_ = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int err = udp_fd_ < 0 ? errno : 0;
    if (udp_fd_ >= 0 && bind(udp_fd_, res->ai_addr, res->ai_addrlen) != 0) err = errno;
    freeaddrinfo(res);
    if (err != 0)
      return Status::Error(fmt::format("--udp {}: {}", *options.udp, std::strerror(err)));
    int rcvbuf = 4 << 20;  // bursts of step reports from many ranks
    setsockopt(udp_fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (getsockname(udp_fd_, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      udp_port_ = bound.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
  }
  if (options.unix_path) {
    const std::string& path = *options.unix_path;
    sockaddr_un addr{};
    if (path.empty() || path.size() >= sizeof addr.sun_path) {
      return Status::Error(
          fmt::format("--unix: path must be 1..{} bytes", sizeof addr.sun_path - 1));
    }
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return Status::Error(fmt::format("--unix {}: exists and is not a socket", path));
      }
      unlink(path.c_str());  // a stale socket of an earlier run
    }
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    unix_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (unix_fd_ < 0 || bind(unix_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      return Status::Error(fmt::format("--unix {}: {}", path, std::strerror(errno)));
    }
    chmod(path.c_str(), 0666);  // training processes may run as other users
    int on = 1;                 // the sender's credentials with each datagram
    if (setsockopt(unix_fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) == 0)
      own_pidns_ = ProcPidNamespace("/");
    unix_path_ = path;
  }
  for (const std::string& f : options.tail_files) {
    auto t = std::make_unique<Tail>();
    t->path = f;
    struct stat st {};
    if (stat(f.c_str(), &st) == 0) {
      t->offset = static_cast<uint64_t>(st.st_size);
      t->inode = st.st_ino;
      t->seen = true;
    }
    tails_.push_back(std::move(t));
  }
  return Status::Ok();
}

void StepIntake::Start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { Loop(); });
}

void StepIntake::Stop() {
  if (running_.exchange(false)) {
    char c = 1;
    ssize_t ignored = write(wake_[1], &c, 1);
    (void)ignored;
    if (thread_.joinable()) thread_.join();
  }
  if (!unix_path_.empty()) {
    unlink(unix_path_.c_str());
    unix_path_.clear();
  }
}

void StepIntake::HandleDatagram(std::string_view data, StepSource source,
                                std::optional<int64_t> sender) {
  sink_.OnDatagram(source);
  size_t pos = 0;
  while (pos <= data.size()) {
    size_t nl = data.find('\n', pos);
    std::string_view line =
        data.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? data.size() + 1 : nl + 1;
    if (Trim(line).empty()) continue;
    StepReport r;
    BadLine bad = BadLine::kNotAStepLine;
    std::string why;
    switch (ParseStepLine(line, r, bad, why)) {
      case LineKind::kStep:
        if (sender) {
          r.pid = *sender;
          r.pidns = own_pidns_;
        }
        sink_.OnStep(r, source);
        break;
      case LineKind::kNotStep:
        sink_.OnBadLine(BadLine::kNotAStepLine, source, Printable(line, 80));
        break;
      case LineKind::kBad: sink_.OnBadLine(bad, source, why); break;
    }
  }
}

void StepIntake::PollTails() {
  for (auto& tp : tails_) {
    Tail& t = *tp;
    struct stat st {};
    if (stat(t.path.c_str(), &st) != 0) continue;  // not there (yet, or rotated away)
    if (!t.seen || st.st_ino != t.inode || static_cast<uint64_t>(st.st_size) < t.offset) {
      t.offset = 0;  // a new file (rotation) or a truncated one
      t.partial.clear();
      t.skipping = false;
    }
    t.seen = true;
    t.inode = st.st_ino;
    if (static_cast<uint64_t>(st.st_size) == t.offset) continue;
    std::ifstream in(t.path, std::ios::binary);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(t.offset));
    std::string buf(std::min<uint64_t>(static_cast<uint64_t>(st.st_size) - t.offset, 1 << 20),
                    '\0');
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.resize(static_cast<size_t>(in.gcount()));
    t.offset += buf.size();
    size_t pos = 0;
    while (pos < buf.size()) {
      size_t nl = buf.find('\n', pos);
      if (nl == std::string::npos) {
        if (!t.skipping) t.partial.append(buf, pos);
        if (t.partial.size() > kMaxStepLine) {
          t.partial.clear();
          t.skipping = true;
        }
        break;
      }
      if (t.skipping) {
        t.skipping = false;
        pos = nl + 1;
        continue;
      }
      t.partial.append(buf, pos, nl - pos);
      pos = nl + 1;
      StepReport r;
      BadLine bad = BadLine::kNotAStepLine;
      std::string why;
      std::string_view line = t.partial;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      LineKind kind =
          line.size() > kMaxStepLine ? LineKind::kNotStep : ParseStepLine(line, r, bad, why);
      if (kind == LineKind::kStep) sink_.OnStep(r, StepSource::kTail);
      else if (kind == LineKind::kBad) sink_.OnBadLine(bad, StepSource::kTail, why);
      t.partial.clear();
    }
  }
}

void StepIntake::Loop() {
  std::string buf(65536, '\0');
  while (running_.load()) {
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = pollfd{wake_[0], POLLIN, 0};
    if (udp_fd_ >= 0) fds[n++] = pollfd{udp_fd_, POLLIN, 0};
    if (unix_fd_ >= 0) fds[n++] = pollfd{unix_fd_, POLLIN, 0};
    int rc = poll(fds, n, tails_.empty() ? 1000 : 250);
    if (rc < 0 && errno != EINTR) break;
    if (rc > 0 && (fds[0].revents & POLLIN) != 0) break;
    for (nfds_t i = 1; i < n; ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      StepSource source = fds[i].fd == udp_fd_ ? StepSource::kUdp : StepSource::kUnix;
      // Drain what is queued, bounded so one busy socket cannot starve the other.
      for (int k = 0; k < 1024; ++k) {
        iovec iov{buf.data(), buf.size()};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        ssize_t got = recvmsg(fds[i].fd, &msg, MSG_TRUNC);
        if (got < 0) break;
        std::optional<int64_t> sender;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
          if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
              c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
            ucred cred;
            std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
            if (cred.pid > 0) sender = cred.pid;  // 0: not in our namespace
          }
        }
        if (static_cast<size_t>(got) > buf.size()) {
          sink_.OnDatagram(source);
          sink_.OnBadLine(BadLine::kTooLong, source, fmt::format("datagram of {} bytes", got));
          continue;
        }
        HandleDatagram(std::string_view(buf.data(), static_cast<size_t>(got)), source, sender);
      }
    }
    if (!tails_.empty()) PollTails();
  }
}

}  // namespace laggard::agent
