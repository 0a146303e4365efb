/*
 * petsc/petsc_internal.h — what the PETSc module's two files share: PETSc
 * errors turned into defo errors with their text.  Never installed.
 */
#ifndef DEFO_PETSC_INTERNAL_H
#define DEFO_PETSC_INTERNAL_H

#include "defo/petsc.h"

#include "base/base.h"

#ifdef DEFO_HAVE_PETSC
#include <petscksp.h>

/* A PETSc error code as a defo error: the message PETSc raised (its first
 * line, recorded by defo's error handler) and the call that failed. */
defo_status defo_petsc_error(PetscErrorCode code, const char *call);
#define DEFO_PETSC_CALL(call)                                                                      \
    do {                                                                                           \
        PetscErrorCode e_ = (call);                                                                \
        if (e_) return defo_petsc_error(e_, #call);                                                \
    } while (0)
#endif

#endif
