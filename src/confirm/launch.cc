#include "confirm/launch.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace laggard::confirm {
namespace {

bool IsPair(const PlannedTest& t) {
  return t.kind == TestKind::kCommunication && t.procs.size() == t.hosts.size() && !t.hosts.empty();
}

std::vector<std::string> Mpirun(const PlannedTest& t) {
  std::vector<std::string> slots;
  int np = 0;
  for (size_t i = 0; i < t.hosts.size(); ++i) {
    int n = IsPair(t) ? t.procs[i] : 1;
    slots.push_back(fmt::format("{}:{}", t.hosts[i], n));
    np += n;
  }
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(np), "-H",
                                   fmt::format("{}", fmt::join(slots, ","))};
  argv.insert(argv.end(), t.argv.begin(), t.argv.end());
  return argv;
}

std::vector<std::string> Srun(const PlannedTest& t) {
  int minutes = std::max(1, static_cast<int>(std::ceil(t.time_limit_s / 60)));
  std::vector<std::string> argv = {"srun", fmt::format("--nodes={}", t.hosts.size())};
  if (IsPair(t)) {
    // Slurm places the same count on each node; uneven counts (a node of 4
    // GPUs with one of 8) run the smaller on both, so no node gets a task
    // without a GPU.
    int per = *std::min_element(t.procs.begin(), t.procs.end());
    argv.push_back(fmt::format("--ntasks-per-node={}", per));
    argv.push_back(fmt::format("--gpus-per-node={}", per));
  } else {
    argv.push_back(fmt::format("--ntasks={}", t.hosts.size()));
    if (t.node_gpus > 0) {
      argv.push_back("--exclusive");
      argv.push_back(fmt::format("--gpus-per-node={}", t.node_gpus));
    }
  }
  argv.push_back(fmt::format("--nodelist={}", fmt::join(t.hosts, ",")));
  argv.push_back(fmt::format("--time={}", minutes));
  argv.insert(argv.end(), t.argv.begin(), t.argv.end());
  return argv;
}

// A word for the remote shell ssh hands its command to: as it is when it
// holds only characters no shell treats specially, else in single quotes.
std::string RemoteWord(const std::string& w) {
  bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./,:@%+-", c) != nullptr;
  });
  if (plain) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string RemoteCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& w : argv) out += (out.empty() ? "" : " ") + RemoteWord(w);
  return out;
}

}  // namespace

std::optional<Launcher> ParseLauncher(std::string_view name) {
  for (Launcher l :
       {Launcher::kPrint, Launcher::kLocal, Launcher::kMpirun, Launcher::kSrun, Launcher::kSsh}) {
    if (LauncherName(l) == name) return l;
  }
  return std::nullopt;
}

std::string_view LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kPrint: return "print";
    case Launcher::kLocal: return "local";
    case Launcher::kMpirun: return "mpirun";
    case Launcher::kSrun: return "srun";
    case Launcher::kSsh: return "ssh";
  }
  return "print";
}

std::vector<std::string> LaunchArgv(const PlannedTest& t, Launcher l) {
  if (t.hosts.empty()) return t.argv;
  switch (l) {
    case Launcher::kSrun: return Srun(t);
    case Launcher::kMpirun: return Mpirun(t);
    case Launcher::kSsh:
      if (IsPair(t) || t.hosts.size() != 1) return Mpirun(t);
      return {"ssh", "-o",       "BatchMode=yes",      "-o", "ConnectTimeout=10",
              "--",  t.hosts[0], RemoteCommand(t.argv)};
    case Launcher::kPrint:
    case Launcher::kLocal: return IsPair(t) ? Mpirun(t) : t.argv;
  }
  return t.argv;
}

bool Reaches(const PlannedTest& t, Launcher l, const std::string& here) {
  if (l != Launcher::kLocal) return l != Launcher::kPrint;
  for (const std::string& h : t.hosts) {
    if (h != here && h != "localhost" && h != "127.0.0.1") return false;
  }
  return true;
}

}  // namespace laggard::confirm
