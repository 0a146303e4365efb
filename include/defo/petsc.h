/*
 * defo/petsc.h — distributed runs on PETSc and MPI (docs/distributed.md).
 *
 * Two things, both optional at build time (CMake finds PETSc by pkg-config;
 * without it every function here says so and defo runs on one process):
 *   - the processes of the run as a defo_comm (defo/comm.h) on MPI, which
 *     the world uses to spread a body's elements (defo_world_distribute);
 *   - a linear solver backend (defo_linear_backend, defo/solver.h):
 *     PETSc's KSP on a distributed block matrix (block size 3, AIJ) — CG
 *     with GAMG and the rigid-body near-null space built from the node
 *     coordinates by default (defo's own two-level preconditioner and block
 *     product on one process, `-pc_type shell`), anything PETSc offers through the options
 *     string of the solver's definition (`petsc_options` in a scene), each
 *     solver under its own options prefix.  Matrix-free systems (Newmark's
 *     damping solve) become a shell matrix (default preconditioner: Jacobi).
 * Constraints are defo's (projections, defo/solver.h): a fixed node's rows
 * and columns are the identity, a node with a normal constraint gets
 * P A P + (I − P) with P = I − n nᵀ, so the backend solves exactly the
 * operator defo's own CG sees.
 *
 * PETSc and MPI errors become defo errors with their text ("PETSc: ...",
 * "MPI: ..."); PETSc's own signal handler is off (defo's CLI keeps its own).
 */
#ifndef DEFO_PETSC_H
#define DEFO_PETSC_H

#include "defo/base.h"
#include "defo/comm.h"
#include "defo/solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when defo was built with PETSc and MPI. */
DEFO_API int defo_petsc_available(void);
/* 1 when this process was started by an MPI launcher (mpirun, mpiexec:
 * its environment says so), so it should join the run's other processes. */
DEFO_API int defo_petsc_launched(void);
/* Start MPI and PETSc in this process (once; later calls do nothing).
 * argc/argv may be NULL.  Built without PETSc: DEFO_ERR_UNSUPPORTED. */
DEFO_API defo_status defo_petsc_initialize(int *argc, char ***argv);
DEFO_API int defo_petsc_initialized(void);
/* End PETSc and MPI (after every object using them is destroyed). */
DEFO_API void defo_petsc_finalize(void);
/* The run's processes (valid between initialize and finalize), or NULL. */
DEFO_API const defo_comm *defo_petsc_comm(void);
/* The backend table, or NULL (and the reason as the last error) when
 * defo was built without PETSc.  Its solvers start PETSc when needed. */
DEFO_API const defo_linear_backend *defo_petsc_backend(void);
/* End every process of the run with this exit code (a process that cannot
 * go on while the others wait in a collective call). */
DEFO_API void defo_petsc_abort(int code);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_PETSC_H */
