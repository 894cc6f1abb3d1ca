#include "app/sweep/mpi/launch.h"

#include <cstdlib>
#include <string_view>

namespace tpusim::sweep {
namespace {

bool env_int(const char* name, int& out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 24) return false;
  out = static_cast<int>(n);
  return true;
}

}  // namespace

MpiLaunch detect_mpi_launch() {
  MpiLaunch l;
  struct Vars {
    const char* size;
    const char* rank;
  };
  for (const Vars v : {Vars{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, Vars{"PMI_SIZE", "PMI_RANK"}}) {
    int size = 0;
    if (env_int(v.size, size) && size >= 1) {
      l.launched = true;
      l.size = size;
      l.launcher = v.size;
      if (!env_int(v.rank, l.rank)) l.rank = 0;
      return l;
    }
  }
  int rank = 0;
  if (env_int("PMIX_RANK", rank)) {
    l.launched = true;
    l.rank = rank;
    l.size = 0;
    l.launcher = "PMIX_RANK";
  }
  return l;
}

#ifndef TPUSIM_HAVE_MPI
bool mpi_launcher_built() { return false; }

std::unique_ptr<RankLink> open_mpi_link(std::string& error) {
  error = "this tpusim was built without MPI (CMake option TPUSIM_MPI, needs libopenmpi-dev)";
  return nullptr;
}
#endif

}  // namespace tpusim::sweep
