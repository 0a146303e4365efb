#!/bin/sh
# Install the Debian packages defo needs, only those that are missing.
# Usage: scripts/deps.sh build|python|test|fuzz|clients
# "build":   compile the library, the CLI and the demo.
# "python":  also the Python package (python/): headers and NumPy.
# "test":    also the real tools the interoperability tests run (Gmsh, meshio,
#            ffmpeg for `defo render --video`, Xvfb for `defo play`'s window),
#            clang for the fuzzers, the Python package's tests (pytest;
#            SciPy for examples/python/), and PETSc with OpenMPI for the
#            distributed runs (`mpirun -n 2 defo run`, tests/mpi/).
# "clients": Blender and ParaView (pvpython) for `make test-clients`.
set -eu
profile=${1:-build}
pkgs="cmake make gcc libc6-dev pkg-config libpng-dev zlib1g-dev libjansson-dev"
# sparse Cholesky (CHOLMOD; optional: configure with -DDEFO_CHOLMOD=OFF without it)
pkgs="$pkgs libsuitesparse-dev"
# an optimised BLAS/LAPACK under CHOLMOD (Debian makes it the system's libblas.so.3 by
# its alternatives; serial, so it never competes with defo's own threads): the
# supernodal factorisations of the implicit solves run about twice as fast as on
# the reference BLAS
pkgs="$pkgs libopenblas0-serial"
# render: OpenGL ES through EGL on Mesa's software renderer (llvmpipe), no display needed
pkgs="$pkgs libegl-dev libgles-dev libegl-mesa0 libgl1-mesa-dri"
# defo play: a window (GLFW) with a desktop OpenGL context (GLX on Mesa)
pkgs="$pkgs libglfw3-dev libgl-dev libglx-mesa0"
# the element partition of distributed runs (METIS; optional: bisection without it)
pkgs="$pkgs libmetis-dev"
# distributed runs: PETSc on OpenMPI (optional: defo builds and runs on one process without)
petsc="libpetsc-real-dev libopenmpi-dev openmpi-bin"
python="python3-dev python3-numpy"
case "$profile" in
  build) ;;
  python) pkgs="$pkgs $python" ;;
  test|fuzz) pkgs="$pkgs gmsh python3-meshio python3-numpy clang libclang-rt-14-dev ffmpeg xvfb xauth"
             pkgs="$pkgs $python python3-pytest python3-scipy $petsc" ;;
  clients) pkgs="$pkgs python3-meshio python3-numpy blender paraview python3-paraview" ;;
  *) echo "deps.sh: unknown profile '$profile' (build, python, test, fuzz or clients)" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
echo "defo: installing missing Debian packages:$missing"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "defo: installed:$missing"
