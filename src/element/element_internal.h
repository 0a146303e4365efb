/*
 * element/element_internal.h — shared by the element module's files only
 * (other modules use include/defo/element.h).
 */
#ifndef DEFO_ELEMENT_INTERNAL_H
#define DEFO_ELEMENT_INTERNAL_H

#include "defo/element.h"
#include "defo/math.h"

#include "base/base.h"

extern const double defo_rule_centroid_point[1][4];
extern const double defo_rule_centroid_weight[1];
extern const double defo_rule_stroud4_point[4][4];
extern const double defo_rule_stroud4_weight[4];
extern const double defo_rule_tet64_point[64][4];
extern const double defo_rule_tet64_weight[64];
extern const double defo_rule_tri16_point[16][3];
extern const double defo_rule_tri16_weight[16];

/* Quadratic 6-node triangle shape functions at barycentric (l0, l1, l2):
 * corners l_i(2l_i − 1), edges (0,1) (1,2) (2,0): 4 l_a l_b. */
void defo_tri6_shape(const double l[3], double N[6]);

/* det of a row-major 3×3 */
static inline double defo_det9(const double *m) {
    return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
           m[2] * (m[3] * m[7] - m[4] * m[6]);
}

/* Element v's lumped masses m[a] (nodes values) at density rho: tet4
 * ρ|V|/4, tet10 HRZ (mass.c); their sum over the elements of a node is its
 * lumped mass. */
void defo_element_lumped_shares(const defo_element_ops *ops, const double *x, const defo_index *v,
                                double rho, double *m);

/* Longest corner edge of element v at positions x (a tet; _n: 4 corners or,
 * a triangle, 3: its edges (0,1) (1,2) (0,2) are the first three of
 * defo_tet_edges). */
double defo_element_corner_length(const double *x, const defo_index *v);
double defo_element_corner_length_n(const double *x, const defo_index *v, int corners);
/* Measure of the reference element: 1/6 (tetrahedron), 1/2 (triangle), so
 * an element's measure is ω det J times it. */
double defo_element_ref_measure(const defo_element_ops *ops);

#endif
