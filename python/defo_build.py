"""PEP 517 build backend of the Python package defo (standard library only).

`pip install ./python` builds the extension with CMake (python/CMakeLists.txt:
libdefo from the repository around python/, or an installed defo) and packs
the wheel itself.  It needs no package from an index — not even setuptools —
so it works offline, with pip's build isolation or without.

Hooks: build_wheel, build_editable (the extension built into python/defo/ and
a .pth file pointing there: `pip install -e ./python`), build_sdist and the
metadata hooks.  config_settings: {"cmake-args": "-DOPTION=VALUE ..."}.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
NAME = "defo"
SUMMARY = "Robust simulation of deformable solids (defo's C library, from Python)"
DEPENDS = ["numpy"]


def _version() -> str:
    header = HERE.parent / "include" / "defo" / "base.h"
    if header.exists():
        m = re.search(r'#define DEFO_VERSION_STRING "([^"]+)"', header.read_text())
        if m:
            return m.group(1)
    pkg_info = HERE / "PKG-INFO"  # an sdist
    if pkg_info.exists():
        m = re.search(r"^Version: (.+)$", pkg_info.read_text(), re.M)
        if m:
            return m.group(1).strip()
    raise RuntimeError("defo_build: cannot tell defo's version (no include/defo/base.h beside "
                       "python/, no PKG-INFO)")


def _metadata() -> str:
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + _version(),
             "Summary: " + SUMMARY, "License: MIT", "Requires-Python: >=3.9"]
    lines += ["Requires-Dist: " + d for d in DEPENDS]
    readme = HERE / "README.md"
    if readme.exists():
        lines += ["Description-Content-Type: text/markdown", "", readme.read_text()]
    return "\n".join(lines) + "\n"


def _tag() -> str:
    impl = "cp%d%d" % sys.version_info[:2]
    abi = "cp%d%d%s" % (sys.version_info[0], sys.version_info[1], getattr(sys, "abiflags", ""))
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (impl, abi, plat)


def _build_extension(config_settings) -> pathlib.Path:
    """Configure and build defo._defo; returns the built module's path."""
    build = HERE / "build" / ("cmake-" + _tag())
    args = ["cmake", "-S", str(HERE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            "-DPython3_EXECUTABLE=" + sys.executable, "-Wno-dev"]
    extra = (config_settings or {}).get("cmake-args", "")
    args += shlex.split(extra) if isinstance(extra, str) else list(extra)
    if shutil.which("cmake") is None:
        raise RuntimeError("defo_build: cmake is needed (Debian: apt-get install cmake)")
    subprocess.run(args, check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "defo_python", "-j",
                    str(os.cpu_count() or 2)], check=True)
    found = sorted((build / "defo").glob("_defo*.so"))
    if not found:
        raise RuntimeError("defo_build: the build made no defo/_defo*.so in %s" % build)
    return found[-1]


def _package_files():
    return sorted(p for p in (HERE / "defo").iterdir()
                  if p.suffix in (".py", ".pyi") or p.name == "py.typed")


class _Wheel:
    """A wheel being written: files, then the .dist-info with its RECORD."""

    def __init__(self, directory: str, tag: str):
        self.base = "%s-%s" % (NAME, _version())
        self.name = "%s-%s.whl" % (self.base, tag)
        self.tag = tag
        self.zip = zipfile.ZipFile(os.path.join(directory, self.name), "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname: str, data: bytes) -> None:
        self.zip.writestr(arcname, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self) -> str:
        info = self.base + ".dist-info"
        self.add(info + "/METADATA", _metadata().encode())
        self.add(info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: defo_build\n"
                                   "Root-Is-Purelib: false\nTag: %s\n" % self.tag).encode())
        self.record.append(info + "/RECORD,,")
        self.zip.writestr(info + "/RECORD", "\n".join(self.record) + "\n")
        self.zip.close()
        return self.name


# ------------------------------------------------------------------ hooks
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = "%s-%s.dist-info" % (NAME, _version())
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata())
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    module = _build_extension(config_settings)
    wheel = _Wheel(wheel_directory, _tag())
    for f in _package_files():
        wheel.add("defo/" + f.name, f.read_bytes())
    wheel.add("defo/" + module.name, module.read_bytes())
    return wheel.close()


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The extension built into python/defo/ (as `make python` does) and a
    .pth file putting python/ on sys.path: edits of the .py files show at
    once; a change of the C sources needs this again (or `make python`)."""
    module = _build_extension(config_settings)
    shutil.copy2(module, HERE / "defo" / module.name)
    wheel = _Wheel(wheel_directory, _tag())
    wheel.add("defo_editable.pth", (str(HERE) + "\n").encode())
    return wheel.close()


def build_sdist(sdist_directory, config_settings=None):
    """The package's own files (it then builds against an installed defo)."""
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "defo_build.py", "CMakeLists.txt", "README.md"]:
            if (HERE / rel).exists():
                tar.add(HERE / rel, base + "/" + rel)
        for sub in ("src", "defo", "tests"):
            for p in sorted((HERE / sub).rglob("*")):
                if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".so"):
                    tar.add(p, base + "/" + str(p.relative_to(HERE)))
        data = _metadata().encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))
    return name
