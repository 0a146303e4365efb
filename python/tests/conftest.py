"""Shared fixtures of the Python package's tests (run by ctest as `python`,
and by `make test`): where the repository and the `defo` program are."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(os.environ.get("DEFO_SRC", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def defo_cli() -> str:
    exe = os.environ.get("DEFO", str(ROOT / "build" / "defo"))
    if not os.access(exe, os.X_OK):
        pytest.skip("the defo program is not built (%s)" % exe)
    return exe


@pytest.fixture
def run_cli(defo_cli):
    """Run `defo ARGS...`, asserting it exits 0; returns its stderr."""

    def run(*args):
        p = subprocess.run([defo_cli, *map(str, args)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stderr

    return run
