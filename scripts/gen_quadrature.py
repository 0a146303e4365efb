#!/usr/bin/python3
"""Conical-product (Stroud) quadrature rules on the reference tetrahedron and triangle.

Prints the C tables of src/element/rules.c: barycentric points and weights normalised to sum 1.
Gauss-Jacobi nodes by the Golub-Welsch eigenvalue method (numpy only).
  tet: x = u, y = (1-u) v, z = (1-u)(1-v) w, dV = (1-u)^2 (1-v) du dv dw
  tri: s = u, t = (1-u) v,                     dA = (1-u) du dv
With n points per direction the rules are exact for total degree 2n - 1.
Usage: scripts/gen_quadrature.py N_TET N_TRI
"""
import sys
import numpy as np


def gauss_jacobi01(n, alpha):
    """n-point Gauss rule on [0,1] for the weight (1-u)^alpha."""
    a, b = float(alpha), 0.0
    k = np.arange(n, dtype=float)
    # recurrence of the monic Jacobi polynomials on [-1,1], weight (1-x)^a (1+x)^b
    diag = np.empty(n)
    off = np.empty(max(n - 1, 0))
    for i in range(n):
        s = 2 * i + a + b
        diag[i] = (b * b - a * a) / (s * (s + 2)) if s * (s + 2) != 0 else (b - a) / (a + b + 2)
    for i in range(1, n):
        s = 2 * i + a + b
        off[i - 1] = np.sqrt(4 * i * (i + a) * (i + b) * (i + a + b) / (s * s * (s + 1) * (s - 1)))
    J = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
    x, V = np.linalg.eigh(J)
    from math import gamma
    mu0 = 2 ** (a + b + 1) * gamma(a + 1) * gamma(b + 1) / gamma(a + b + 2)
    w = mu0 * V[0, :] ** 2
    # map to [0,1]: (1-x)^a = 2^a (1-u)^a, dx = 2 du
    return (x + 1) / 2, w / 2 ** (a + 1)


def tet_rule(n):
    u, wu = gauss_jacobi01(n, 2)
    v, wv = gauss_jacobi01(n, 1)
    w, ww = gauss_jacobi01(n, 0)
    pts, wts = [], []
    for i in range(n):
        for j in range(n):
            for k in range(n):
                x = u[i]
                y = (1 - u[i]) * v[j]
                z = (1 - u[i]) * (1 - v[j]) * w[k]
                pts.append((1 - x - y - z, x, y, z))
                wts.append(wu[i] * wv[j] * ww[k] * 6.0)
    return np.array(pts), np.array(wts)


def tri_rule(n):
    u, wu = gauss_jacobi01(n, 1)
    v, wv = gauss_jacobi01(n, 0)
    pts, wts = [], []
    for i in range(n):
        for j in range(n):
            s = u[i]
            t = (1 - u[i]) * v[j]
            pts.append((1 - s - t, s, t))
            wts.append(wu[i] * wv[j] * 2.0)
    return np.array(pts), np.array(wts)


def emit(name, pts, wts):
    d = pts.shape[1]
    print(f"static const double {name}_point[{len(wts)}][{d}] = {{")
    for p in pts:
        print("    {" + ", ".join(f"{c:.17g}" for c in p) + "},")
    print("};")
    print(f"static const double {name}_weight[{len(wts)}] = {{")
    for q in wts:
        print(f"    {q:.17g},")
    print("};")


if __name__ == "__main__":
    nt = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    nf = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    p, w = tet_rule(nt)
    emit(f"tet_conical{nt}", p, w)
    p, w = tri_rule(nf)
    emit(f"tri_conical{nf}", p, w)
