// Open MPI's C API, opened with dlopen when `diagnose --mpi` runs, so that
// no other command loads Open MPI's five libraries at start-up (each
// `laggard` start paid ~5 ms for them; docs/performance.md, "Start-up").
//
// Only the calls mpi_ingest.cc makes, typed by mpi.h (built against Open
// MPI's header, never linked to it). The predefined handles
// (MPI_COMM_WORLD, MPI_BYTE, MPI_UINT64_T) are addresses of Open MPI's
// global objects, looked up by their names in the opened library.
//
// libmpi is opened RTLD_GLOBAL: Open MPI's own components, which it opens
// with dlopen, resolve their symbols against it.

#ifndef LAGGARD_MPI_MPI_LIBRARY_H_
#define LAGGARD_MPI_MPI_LIBRARY_H_

#include <mpi.h>

#include "base/status.h"

namespace laggard {

struct MpiLibrary {
  decltype(&::MPI_Initialized) initialized = nullptr;
  decltype(&::MPI_Init_thread) init_thread = nullptr;
  decltype(&::MPI_Finalize) finalize = nullptr;
  decltype(&::MPI_Comm_rank) comm_rank = nullptr;
  decltype(&::MPI_Comm_size) comm_size = nullptr;
  decltype(&::MPI_Abort) abort = nullptr;
  decltype(&::MPI_Isend) isend = nullptr;
  decltype(&::MPI_Irecv) irecv = nullptr;
  decltype(&::MPI_Recv) recv = nullptr;
  decltype(&::MPI_Iprobe) iprobe = nullptr;
  decltype(&::MPI_Test) test = nullptr;
  MPI_Comm comm_world = nullptr;
  MPI_Datatype byte = nullptr;
  MPI_Datatype uint64 = nullptr;
};

// Opens the library once (later calls return the same table, or the same
// error): the name Open MPI's own libmpi.so carries (its SONAME, found at
// build time), then the path CMake found. The error names both and says
// how to install Open MPI.
StatusOr<const MpiLibrary*> OpenMpiLibrary();

}  // namespace laggard

#endif  // LAGGARD_MPI_MPI_LIBRARY_H_
