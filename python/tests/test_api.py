"""The package's shape: type stubs that match the runtime, definitions
made from the library's own defaults, docstrings, the point-cache
readers, and the example fitting a material with SciPy."""
import ast
import dataclasses
import json
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import defo

STUB = pathlib.Path(__file__).resolve().parents[1] / "defo" / "__init__.pyi"


def stub_tree():
    return ast.parse(STUB.read_text())


def test_stubs_cover_the_api():
    tree = stub_tree()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    missing = set(defo.__all__) - names
    assert not missing, "not in defo/__init__.pyi: %s" % sorted(missing)


def test_stub_fields_match_definitions():
    classes = {n.name: n for n in stub_tree().body if isinstance(n, ast.ClassDef)}
    for cls in (defo.Material, defo.Inversion, defo.Biphasic, defo.ForceModel, defo.Plasticity,
                defo.Fracture, defo.Integrator, defo.Motion, defo.MesherOptions, defo.Shape,
                defo.Region, defo.Contact):
        stub = [s.target.id for s in classes[cls.__name__].body if isinstance(s, ast.AnnAssign)]
        assert stub == [f.name for f in dataclasses.fields(cls)], cls.__name__


def test_definitions_use_the_library_defaults():
    m = defo.Material()
    assert m == defo.Material(**{k: v for k, v in defo._defo.defaults("material").items()
                                 if k not in ("inversion", "biphasic")})
    assert (m.model, m.youngs_modulus, m.poisson, m.inversion.mode) == ("neo_hookean", 1e5, 0.3, "c1")
    assert defo.Integrator().time_step is None  # the kind's own default
    assert "youngs_modulus" in defo.Material.__doc__
    for f in (defo.read_mesh, defo.mesh_surface, defo.World.step, defo.Body.prescribe,
              defo.Simulation.step, defo.Scene.load):
        assert f.__doc__ and len(f.__doc__) > 40


def test_point_cache_readers(tmp_path, run_cli):
    scene = {"duration": {"fps": 25, "frames": 2},
             "bodies": [{"name": "cube", "generator": {"type": "box", "cells": 1,
                                                       "center": [0, 0, 2]}}],
             "outputs": {"pc2": True, "mdd": True, "vtu": False}}
    (tmp_path / "s.json").write_text(json.dumps(scene))
    run_cli("run", tmp_path / "s.json", "-o", tmp_path / "run", "--quiet")
    pc2 = defo.read_pc2(tmp_path / "run/cache/cube.pc2")
    mdd = defo.read_mdd(tmp_path / "run/cache/cube.mdd")
    assert pc2.positions.shape == (3, 8, 3) and (pc2.start, pc2.sampling) == (0, 1)
    assert np.array_equal(pc2.positions, mdd.positions)
    assert np.array_equal(mdd.times, np.array([0, 0.04, 0.08], np.float32))
    # free fall under gravity, exact in the cache to float32: z(t) = 2 - g t^2 / 2 is
    # what Newmark integrates for a body that does not deform
    fall = pc2.positions[2, :, 2] - pc2.positions[0, :, 2]
    assert np.allclose(fall, -9.81 * 0.08**2 / 2, rtol=0, atol=2e-6)
    (tmp_path / "bad.pc2").write_bytes(b"POINTCACHE2\0" + b"\0" * 4)
    with pytest.raises(ValueError):
        defo.read_pc2(tmp_path / "bad.pc2")


def test_example_fits_the_modulus(root):
    """examples/python/fit_sag.py recovers the modulus behind its measurement."""
    p = subprocess.run([sys.executable, str(root / "examples/python/fit_sag.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "fitted E = 5e+07 Pa" in p.stdout
