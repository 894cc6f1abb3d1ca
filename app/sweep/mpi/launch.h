// Starting a distributed sweep under an MPI launcher (`mpirun -np N tpusim
// sweep …`). Detection reads only the launcher's environment, so a tpusim
// not started by mpirun never initializes MPI, and one built without MPI
// can still refuse clearly instead of running the whole sweep N times.
#pragma once

#include <memory>
#include <string>

#include "app/sweep/rank_link.h"

namespace tpusim::sweep {

struct MpiLaunch {
  bool launched = false;  // an MPI launcher started this process
  int rank = 0;           // from the environment; 0 if unknown
  int size = 1;           // from the environment; 0 if unknown (PMIx only)
  std::string launcher;   // the variable that told us, for messages
};

// Open MPI (OMPI_COMM_WORLD_SIZE/RANK), MPICH/Hydra and Slurm PMI
// (PMI_SIZE/RANK), PMIx (PMIX_RANK).
MpiLaunch detect_mpi_launch();

// True if this build has the MPI launcher (CMake option TPUSIM_MPI, on when
// an MPI implementation is found).
bool mpi_launcher_built();

// Initializes MPI and returns the link to the other ranks (MPI_Finalize
// when it is destroyed); nullptr with `error` set if this build has no MPI.
std::unique_ptr<RankLink> open_mpi_link(std::string& error);

}  // namespace tpusim::sweep
