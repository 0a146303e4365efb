/*
 * geometry/geometry_internal.h — helpers shared by the geometry module's
 * files.  Never installed; other modules use include/defo/geometry.h.
 */
#ifndef DEFO_GEOMETRY_INTERNAL_H
#define DEFO_GEOMETRY_INTERNAL_H

#include "defo/math.h"

/* Closest point to p on the triangle (a, b, c) (Ericson §5.1.5); a
 * zero-area triangle gives the closest point of its edges. */
defo_vec3 defo_closest_on_triangle(defo_vec3 p, defo_vec3 a, defo_vec3 b, defo_vec3 c);

#endif
