// How a planned test reaches its hosts: the command line each launcher runs
// (`laggard confirm --launcher`).
//
//   print   nothing runs; a communication test is shown in its mpirun form,
//           the others as they run on their host (the default);
//   local   this machine only: the tests whose hosts are this machine, or
//           that name none; communication tests through mpirun on it;
//   mpirun  Open MPI: `mpirun -np 1 -H HOST:1 CMD` for a host's test,
//           `mpirun -np a+b -H A:a,B:b CMD` for a pair;
//   srun    Slurm: `srun --nodes=1 --ntasks=1 --nodelist=HOST --time=M CMD`;
//           a pair with the smaller of its counts as tasks and GPUs per node;
//   ssh     `ssh -o BatchMode=yes -o ConnectTimeout=10 -- HOST 'CMD'` for a
//           host's test, each word quoted for the remote shell; a pair
//           through mpirun (which starts its remote processes over ssh).
//           A remote command past its limit dies with its ssh only if the
//           remote side hangs up: the limit ends the local ssh.
// A test that names no host runs here with every launcher.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_CONFIRM_LAUNCH_H_
#define LAGGARD_CONFIRM_LAUNCH_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confirm/plan.h"

namespace laggard::confirm {

enum class Launcher : uint8_t { kPrint, kLocal, kMpirun, kSrun, kSsh };

std::optional<Launcher> ParseLauncher(std::string_view name);  // "print", "local", ...
std::string_view LauncherName(Launcher l);

// The command line that runs `t` with launcher `l`.
std::vector<std::string> LaunchArgv(const PlannedTest& t, Launcher l);

// Whether `l` reaches every host of `t` from this machine (`here`): always,
// but for local, which reaches only this machine ("localhost" and
// 127.0.0.1 are this machine too). A test that names no host runs here.
bool Reaches(const PlannedTest& t, Launcher l, const std::string& here);

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_LAUNCH_H_
