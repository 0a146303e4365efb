/*
 * cli/run_dist.c — `defo run` on several processes (`mpirun -n N defo run
 * SCENE.json`; docs/distributed.md).
 *
 * Every process runs the same command: it loads the scene and builds the
 * world, the world is spread over the processes (defo_world_distribute),
 * and each frame is stepped by all of them together.  Rank 0 alone writes
 * the run folder (the same files as a one-process run: the state is whole
 * on every process) and prints; the others keep quiet.  Whatever decides
 * what happens next — a bad scene, a build error, the folder's state, an
 * output error, a stop request — is agreed on by all processes (rank 0's
 * decision, or the first failing rank's error), so no process is left
 * waiting in a collective call for one that went another way.
 *
 * At start the processes compare their scenes (physics hash, frames, fps):
 * another scene file on one of them is refused before anything is built.
 */
#include "cli/cli.h"

#include "defo/petsc.h"

#include <stdlib.h>
#include <string.h>

int run_dist_start(run_dist *d) {
    memset(d, 0, sizeof *d);
    d->size = 1;
    if (!defo_petsc_launched()) return CLI_OK;
    /* under mpirun: join the other processes, or refuse to run N copies */
    const char *sz = getenv("OMPI_COMM_WORLD_SIZE");
    if (!sz) sz = getenv("PMI_SIZE");
    const int launched_size = sz ? atoi(sz) : 0;
    if (!defo_petsc_available()) {
        if (launched_size > 1) {
            fprintf(stderr,
                    "defo run: started on %d processes, but defo was built without PETSc and "
                    "MPI: a run on several processes needs them (apt-get install "
                    "libpetsc-real-dev libopenmpi-dev, then build again)\n",
                    launched_size);
            return CLI_BAD_INPUT;
        }
        return CLI_OK;
    }
    defo_status s = defo_petsc_initialize(NULL, NULL);
    if (s) return cli_fail("run", s);
    d->comm = defo_petsc_comm();
    d->rank = d->comm->rank;
    d->size = d->comm->size;
    if (d->size == 1) d->comm = NULL; /* one process: an ordinary run */
    return CLI_OK;
}

void run_dist_end(run_dist *d) {
    (void)d;
    defo_petsc_finalize();
}

int run_dist_agree(const run_dist *d, int code, defo_status *status) {
    if (!d->comm) return code;
    double v = code;
    if (defo_comm_max(d->comm, &v, 1)) return CLI_INTERNAL;
    const int all = (int)v;
    if (status && all != CLI_OK) *status = defo_comm_agree(d->comm, *status);
    return all;
}

defo_status run_dist_status(const run_dist *d, defo_status s) {
    return d->comm ? defo_comm_agree(d->comm, s) : s;
}

int run_dist_flag(const run_dist *d, int flag) {
    if (!d->comm) return flag;
    double v = flag;
    if (defo_comm_max(d->comm, &v, 1)) return 1;
    return v != 0.0;
}

int run_dist_same_scene(const run_dist *d, const defo_scene *scene, int total) {
    if (!d->comm) return CLI_OK;
    const uint64_t h = defo_scene_hash(scene);
    double mine[4] = {(double)(h >> 32), (double)(h & 0xffffffffu), (double)total,
                      defo_scene_fps(scene)};
    double lo[4], hi[4];
    memcpy(lo, mine, sizeof mine);
    memcpy(hi, mine, sizeof mine);
    defo_status s = defo_comm_min(d->comm, lo, 4);
    if (!s) s = defo_comm_max(d->comm, hi, 4);
    if (s) return cli_fail("run", s);
    for (int k = 0; k < 4; k++)
        if (lo[k] != hi[k]) {
            if (d->rank == 0)
                fprintf(stderr,
                        "defo run: the %d processes of this run read different scenes (their %s "
                        "differ): every process must run the same scene file\n",
                        d->size,
                        k < 2    ? "physics hashes"
                        : k == 2 ? "frame counts"
                                 : "frame rates");
            return CLI_BAD_INPUT;
        }
    return CLI_OK;
}

defo_status run_dist_world(const run_dist *d, defo_simulation *sim) {
    if (!d->comm) return DEFO_OK;
    defo_distribute_def dd = defo_default_distribute_def();
    return defo_world_distribute(defo_simulation_world(sim), d->comm, &dd);
}
