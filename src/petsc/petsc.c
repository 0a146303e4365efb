/*
 * petsc/petsc.c — MPI and PETSc for a process of a distributed run
 * (defo/petsc.h): start and end, the run's processes as a defo_comm, and
 * PETSc's and MPI's errors as defo errors with their text.
 *
 * PETSc is process-wide (one options database, one world communicator), so
 * this file keeps the process's state in statics: whether it started PETSc,
 * the duplicated communicator defo's own messages use (its tags never meet
 * PETSc's), and the first line of PETSc's last error.  MPI errors return
 * codes (MPI_ERRORS_RETURN) instead of aborting, so each becomes a defo
 * error naming the call.  PETSc's signal handler stays off: the CLI's
 * SIGINT/SIGTERM handling keeps the frames a run completed.
 *
 * Built without PETSc every function reports that (DEFO_ERR_UNSUPPORTED)
 * and nothing else changes: defo runs on one process.
 */
#include "petsc/petsc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int defo_petsc_launched(void) {
    /* OpenMPI, MPICH/Hydra and PMIx launchers */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MPI_LOCALNRANKS", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

#ifndef DEFO_HAVE_PETSC

static defo_status unsupported(void) {
    return defo_error(DEFO_ERR_UNSUPPORTED,
                      "defo was built without PETSc: distributed runs and \"solver\": \"petsc\" "
                      "need it (apt-get install libpetsc-real-dev libopenmpi-dev, then build "
                      "again)");
}
int defo_petsc_available(void) {
    return 0;
}
defo_status defo_petsc_initialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return unsupported();
}
int defo_petsc_initialized(void) {
    return 0;
}
void defo_petsc_finalize(void) {}
const defo_comm *defo_petsc_comm(void) {
    return NULL;
}
const defo_linear_backend *defo_petsc_backend(void) {
    unsupported();
    return NULL;
}
void defo_petsc_abort(int code) {
    exit(code);
}

#else

static int g_started;     /* this module called PetscInitialize */
static int g_mpi_started; /* ... and MPI_Init through it */
static MPI_Comm g_comm = MPI_COMM_NULL;
static defo_comm g_defo_comm;
static char g_petsc_message[1024];

static defo_status mpi_error(int code, const char *call) {
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
    text[len] = '\0';
    return defo_error(DEFO_ERR_IO, "MPI: %s (%s)", len ? text : "unknown error", call);
}
#define MPI_CALL(call)                                                                             \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (e_ != MPI_SUCCESS) return mpi_error(e_, #call);                                        \
    } while (0)

/* PETSc's error handler: keep the first line of the message, return the
 * code (nothing printed, nothing aborted). */
static PetscErrorCode record_error(MPI_Comm comm, int line, const char *func, const char *file,
                                   PetscErrorCode n, PetscErrorType p, const char *mess,
                                   void *ctx) {
    (void)comm, (void)line, (void)file, (void)ctx;
    if (p == PETSC_ERROR_INITIAL) {
        const char *text = NULL;
        if (!mess || !*mess) PetscErrorMessage(n, &text, NULL);
        snprintf(g_petsc_message, sizeof g_petsc_message, "%s (in %s)",
                 mess && *mess ? mess
                 : text        ? text
                               : "error",
                 func ? func : "?");
        char *nl = strchr(g_petsc_message, '\n');
        if (nl) *nl = '\0';
    }
    return n;
}

defo_status defo_petsc_error(PetscErrorCode code, const char *call) {
    const char *text = NULL;
    if (!g_petsc_message[0]) PetscErrorMessage(code, &text, NULL);
    defo_status st = code == PETSC_ERR_MEM ? DEFO_ERR_OUT_OF_MEMORY
                     : code == PETSC_ERR_ARG_UNKNOWN_TYPE || code == PETSC_ERR_ARG_OUTOFRANGE ||
                             code == PETSC_ERR_ARG_WRONG || code == PETSC_ERR_USER_INPUT
                         ? DEFO_ERR_INVALID_ARGUMENT
                         : DEFO_ERR_NUMERICAL;
    defo_status r =
        defo_error(st, "PETSc: %s [%s]", g_petsc_message[0] ? g_petsc_message : text, call);
    g_petsc_message[0] = '\0';
    return r;
}

int defo_petsc_available(void) {
    return 1;
}

/* ------------------------------------------------------------ the comm */
static defo_status comm_allgather(void *ctx, const double *mine, int count, double *all) {
    (void)ctx;
    MPI_CALL(MPI_Allgather(mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, g_comm));
    return DEFO_OK;
}
static defo_status comm_allgatherv(void *ctx, const double *mine, int count, double *all,
                                   const int *counts, const int *displs) {
    (void)ctx;
    MPI_CALL(MPI_Allgatherv(mine, count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, g_comm));
    return DEFO_OK;
}
static defo_status comm_broadcast(void *ctx, void *buf, size_t bytes, int root) {
    (void)ctx;
    unsigned char *p = buf;
    while (bytes > 0) {
        const int chunk = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
        MPI_CALL(MPI_Bcast(p, chunk, MPI_BYTE, root, g_comm));
        p += chunk;
        bytes -= (size_t)chunk;
    }
    return DEFO_OK;
}

defo_status defo_petsc_initialize(int *argc, char ***argv) {
    PetscBool up = PETSC_FALSE;
    if (PetscInitialized(&up) == 0 && up && g_comm != MPI_COMM_NULL) return DEFO_OK;
    if (!up) {
        int mpi_up = 0;
        MPI_Initialized(&mpi_up);
        /* PETSc's signal handler would replace the CLI's (stop at a frame) */
        PetscOptionsSetValue(NULL, "-no_signal_handler", NULL);
        PetscOptionsSetValue(NULL, "-options_left", "no");
        PetscErrorCode e = PetscInitialize(argc, argv, NULL, NULL);
        if (e) return defo_error(DEFO_ERR_IO, "PETSc: PetscInitialize failed (error %d)", (int)e);
        g_started = 1;
        g_mpi_started = !mpi_up;
    }
    PetscPushErrorHandler(record_error, NULL);
    MPI_CALL(MPI_Comm_dup(PETSC_COMM_WORLD, &g_comm));
    MPI_CALL(MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN));
    MPI_Comm_set_errhandler(PETSC_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_CALL(MPI_Comm_rank(g_comm, &rank));
    MPI_CALL(MPI_Comm_size(g_comm, &size));
    memset(&g_defo_comm, 0, sizeof g_defo_comm);
    g_defo_comm.rank = rank;
    g_defo_comm.size = size;
    g_defo_comm.allgather = comm_allgather;
    g_defo_comm.allgatherv = comm_allgatherv;
    g_defo_comm.broadcast = comm_broadcast;
    return DEFO_OK;
}

int defo_petsc_initialized(void) {
    return g_comm != MPI_COMM_NULL;
}

void defo_petsc_finalize(void) {
    if (g_comm != MPI_COMM_NULL) MPI_Comm_free(&g_comm);
    g_comm = MPI_COMM_NULL;
    if (g_started) {
        PetscPopErrorHandler();
        PetscFinalize();
        (void)g_mpi_started; /* PetscFinalize ends MPI when it started it */
    }
    g_started = 0;
}

const defo_comm *defo_petsc_comm(void) {
    return g_comm != MPI_COMM_NULL ? &g_defo_comm : NULL;
}

void defo_petsc_abort(int code) {
    if (g_comm != MPI_COMM_NULL) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

#endif
