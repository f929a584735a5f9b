#include "mpi/mpi_library.h"

#include <dlfcn.h>

#include <string>

#include <fmt/format.h>

#ifndef LAGGARD_MPI_SONAME
#error "LAGGARD_MPI_SONAME: libmpi's SONAME, set by src/CMakeLists.txt"
#endif
#ifndef LAGGARD_MPI_PATH
#error "LAGGARD_MPI_PATH: the libmpi CMake found, set by src/CMakeLists.txt"
#endif

namespace laggard {
namespace {

StatusOr<const MpiLibrary*> Open() {
  void* handle = nullptr;
  std::string errors;
  for (const char* name : {LAGGARD_MPI_SONAME, LAGGARD_MPI_PATH}) {
    handle = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (handle != nullptr) break;
    const char* why = dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", why != nullptr ? why : name);
  }
  if (handle == nullptr) {
    return Status::Error(
        fmt::format("--mpi: cannot open Open MPI's library ({}). Install Open MPI (apt-get install "
                    "openmpi-bin libopenmpi3) and run under mpirun or srun",
                    errors));
  }
  static MpiLibrary lib;
  std::string missing;
  auto find = [&](auto& slot, const char* symbol) {
    void* p = dlsym(handle, symbol);
    if (p == nullptr) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", symbol);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
  };
  find(lib.initialized, "MPI_Initialized");
  find(lib.init_thread, "MPI_Init_thread");
  find(lib.finalize, "MPI_Finalize");
  find(lib.comm_rank, "MPI_Comm_rank");
  find(lib.comm_size, "MPI_Comm_size");
  find(lib.abort, "MPI_Abort");
  find(lib.isend, "MPI_Isend");
  find(lib.irecv, "MPI_Irecv");
  find(lib.recv, "MPI_Recv");
  find(lib.iprobe, "MPI_Iprobe");
  find(lib.test, "MPI_Test");
  find(lib.comm_world, "ompi_mpi_comm_world");
  find(lib.byte, "ompi_mpi_byte");
  find(lib.uint64, "ompi_mpi_uint64_t");
  if (!missing.empty()) {
    return Status::Error(fmt::format(
        "--mpi: the MPI library opened lacks {} (laggard needs Open MPI, built against {})",
        missing, LAGGARD_MPI_SONAME));
  }
  return static_cast<const MpiLibrary*>(&lib);
}

}  // namespace

StatusOr<const MpiLibrary*> OpenMpiLibrary() {
  static const StatusOr<const MpiLibrary*> opened = Open();
  return opened;
}

}  // namespace laggard
