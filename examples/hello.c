/*
 * hello.c — the smallest program using an installed defo.
 *
 *   cc hello.c $(pkg-config --cflags --libs defo) -o hello && ./hello
 *
 * It prints the library version and diagonalises an inverted deformation
 * gradient with defo's SVD (ITF04 §5): the smallest singular value comes out
 * negative and both rotations are proper.
 */
#include <defo/defo.h>
#include <stdio.h>

int main(void) {
    printf("defo %s (header %s)\n", defo_version(), DEFO_VERSION_STRING);
    /* A tetrahedron squashed through itself along z: det F < 0. */
    defo_mat3 F = {{{1.2, 0.1, 0.0}, {0.0, 0.9, 0.2}, {0.0, 0.0, -0.3}}};
    defo_mat3 U, V;
    defo_vec3 s;
    defo_svd3(&F, &U, &s, &V);
    printf("sigma = (%.6f, %.6f, %.6f), det U = %.3f, det V = %.3f\n", s.x, s.y, s.z,
           defo_m3_det(U), defo_m3_det(V));
    return (s.z < 0 && defo_m3_det(U) > 0.5 && defo_m3_det(V) > 0.5) ? 0 : 1;
}
