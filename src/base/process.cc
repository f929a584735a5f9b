#include "base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace laggard {

bool DescendsFrom(int64_t pid, const std::map<int64_t, int64_t>& parent,
                  const std::set<int64_t>& ancestors) {
  for (int depth = 0; depth < 64; ++depth) {
    auto it = parent.find(pid);
    if (it == parent.end() || it->second <= 0) return false;
    pid = it->second;
    if (ancestors.count(pid) > 0) return true;
  }
  return false;
}

std::string LocalHostName(const std::string& fallback) {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return fallback;
  return buf;
}

std::string ShellText(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`;&|<>()*?!#~") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    // KEY=VALUE keeps its key bare: Reason="laggard: ...".
    size_t eq = a.find('=');
    std::string key =
        eq != std::string::npos && a.find_first_of(" '\"", 0) > eq ? a.substr(0, eq + 1) : "";
    std::string value = a.substr(key.size());
    out += key + '\'';
    for (char ch : value) {
      if (ch == '\'') {
        out += "'\\''";
      } else {
        out += ch;
      }
    }
    out += '\'';
  }
  return out;
}

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         size_t output_limit) {
  CommandResult r;
  if (argv.empty()) {
    r.output = "no command";
    return r;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.output = "cannot create a pipe";
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Its own process group: at the time limit, or when it ends and leaves
  // children behind, the whole group is killed.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    r.output = fmt::format("cannot run {}: {}", argv[0], strerror(rc));
    return r;
  }
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  bool killed = false, cut = false, open = true, exited = false;
  int status = 0;
  char buf[4096];
  auto drain = [&]() {
    for (;;) {
      ssize_t got = read(fds[0], buf, sizeof(buf));
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) open = false;
      if (got <= 0) return;
      size_t room = output_limit - std::min(output_limit, r.output.size());
      if (static_cast<size_t>(got) > room) cut = true;
      r.output.append(buf, std::min(room, static_cast<size_t>(got)));
    }
  };
  // The command ends when its own process does, whatever it left running;
  // its output is what it wrote by then.
  while (!exited) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      killed = true;
      break;
    }
    if (open) {
      pollfd p{fds[0], POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      drain();
    } else {
      usleep(static_cast<useconds_t>(std::min<int64_t>(left, 20) * 1000));
    }
    pid_t w = waitpid(pid, &status, WNOHANG);
    exited = w == pid;
  }
  if (exited) drain();
  close(fds[0]);
  kill(-pid, SIGKILL);  // what is left of its group
  if (killed) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.output += fmt::format("\n(killed after {} s)", timeout_s);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.output += fmt::format("\n(killed by signal {})", WTERMSIG(status));
  }
  if (cut) r.output += fmt::format("\n(output cut at {} bytes)", output_limit);
  return r;
}

}  // namespace laggard
