/*
 * mesh/mesh_internal.h — helpers shared by the mesh module's files.  Never
 * installed; other modules use include/defo/mesh.h.
 */
#ifndef DEFO_MESH_INTERNAL_H
#define DEFO_MESH_INTERNAL_H

#include "defo/mesh.h"
#include "defo/math.h"

/* Jacobian dX/dξ of a tet10 (VTK node order) at barycentric point l[4]. */
defo_mat3 defo_tet10_jacobian(const double *x, const defo_index *v, const double l[4]);

/* Shape measures of the tet with corners v[0..3] at positions x (see quality.c). */
void defo_tet_quality(const double *x, const defo_index *v, double *min_dihedral,
                      double *max_dihedral, double *aspect);

/* Shell meshes (shell.c): consistent orientation and zero-area check. */
defo_status defo_mesh_shell_orient(defo_mesh *mesh, defo_index *flipped);
/* Interior angles (degrees) and aspect ratio of triangle v (quality.c). */
void defo_tri_quality(const double *x, const defo_index *v, double *min_angle, double *max_angle,
                      double *aspect);

#endif
