#!/usr/bin/env bash
# The install is proven, not assumed: install the build into a scratch prefix,
# then compile examples/hello.c against it through pkg-config (shared and
# static) and through CMake's find_package(defo), and run the programs.
set -euo pipefail
prefix="$DEFO_TMP/install-prefix"
work="$DEFO_TMP/install-work"
rm -rf "$prefix" "$work"
mkdir -p "$work"
cmake --install "$DEFO_BUILD" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig:${PKG_CONFIG_PATH:-}"
libdir=$(pkg-config --variable=libdir defo)
test -f "$prefix/include/defo/defo.h"
test -x "$prefix/bin/defo"
test -f "$libdir/libdefo.a"
ls "$libdir"/libdefo.so* >/dev/null

san=""
if [ "${DEFO_SANITIZE:-OFF}" = "ON" ]; then san="-fsanitize=address,undefined"; fi

# Shared library through pkg-config.
${CC:-cc} -std=c17 -Wall -Wextra -Werror $san "$DEFO_SRC/examples/hello.c" \
    $(pkg-config --cflags --libs defo) -o "$work/hello_shared"
LD_LIBRARY_PATH="$libdir" "$work/hello_shared"
# The program must really use the installed shared object.
# (ldd's output is captured first: with pipefail, `ldd | grep -q` fails when
# grep exits early and ldd gets SIGPIPE.)
deps=$(LD_LIBRARY_PATH="$libdir" ldd "$work/hello_shared")
grep -q "$libdir/libdefo.so" <<< "$deps"

# Static library through pkg-config --static.
${CC:-cc} -std=c17 -Wall -Wextra -Werror $san "$DEFO_SRC/examples/hello.c" \
    $(pkg-config --cflags defo) "$libdir/libdefo.a" $(pkg-config --libs --static defo | sed 's/-ldefo//') \
    -o "$work/hello_static"
"$work/hello_static"

# CMake package config.
mkdir -p "$work/cmake-src"
cp "$DEFO_SRC/examples/hello.c" "$work/cmake-src/"
cat > "$work/cmake-src/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(hello_defo C)
find_package(defo REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE defo::defo)
CM
extra=()
if [ -n "$san" ]; then extra=(-DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san"); fi
cmake -S "$work/cmake-src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="${CC:-cc}" "${extra[@]}" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/hello"
version=$("$prefix/bin/defo" --version)
echo "installed CLI: $version"
echo "install test: 3 passed, 0 failed"
