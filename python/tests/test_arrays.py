"""NumPy arrays at the boundary and misuse: views without copies where the
memory cannot move, copies where it can (fracture), strict checks of what
comes in (dtype, shape, C order), and closed or wrong objects raising."""
import gc
import json

import numpy as np
import pytest

import defo


def world_with_bar():
    w = defo.World(gravity=(0, 0, -9.81))
    b = w.add_body(defo.box(size=(0.4, 0.1, 0.1), cells=(4, 1, 1)))
    return w, b


def test_views_share_memory_and_follow_steps():
    w, b = world_with_bar()
    x = b.positions
    assert x.dtype == np.float64 and x.shape == (b.num_nodes, 3) and x.flags.c_contiguous
    assert not x.flags.writeable and not x.flags.owndata  # a view...
    assert np.shares_memory(x, b.positions)  # ...of the world's own array
    before = x.copy()
    w.step(1 / 30)
    assert not np.array_equal(x, before)  # it follows the simulation
    assert np.array_equal(x, b.positions)
    with pytest.raises(ValueError):
        x[0, 0] = 1.0  # read-only: change the state through set_state


@pytest.mark.parametrize("bad, exc, words", [
    (lambda n: np.zeros((n, 3), np.float32), TypeError, "expected a NumPy array of float64, got float32"),
    (lambda n: np.zeros((n, 3), np.int64), TypeError, "got int64"),
    (lambda n: np.zeros((n, 2)), ValueError, "expected shape ("),
    (lambda n: np.zeros(3 * n), ValueError, "expected shape (%d, 3), got ("),
    (lambda n: np.zeros((n + 1, 3)), ValueError, "expected shape ("),
    (lambda n: np.zeros((n, 6))[:, ::2], ValueError, "not C-contiguous"),
    (lambda n: np.asfortranarray(np.zeros((n, 3))), ValueError, "not C-contiguous"),
    (lambda n: np.zeros((3, n)).T, ValueError, "not C-contiguous"),
    (lambda n: np.zeros((n, 3)).astype(">f8"), TypeError, "big-endian"),
    (lambda n: [[0.0, 0.0, 0.0]] * n, TypeError, "got list"),
])
def test_wrong_arrays_raise(bad, exc, words):
    w, b = world_with_bar()
    n = b.num_nodes
    before = b.positions.copy()
    for call, name in ((lambda a: b.set_state(positions=a), "positions"),
                       (lambda a: b.set_state(velocities=a), "velocities"),
                       (lambda a: setattr(b, "external_force", a), "external_force")):
        with pytest.raises(exc) as e:
            call(bad(n))
        msg = str(e.value)
        assert msg.startswith(name + ": ") and (words % n if "%d" in words else words) in msg, msg
    assert np.array_equal(b.positions, before)  # nothing was written


def test_non_finite_state_refused():
    w, b = world_with_bar()
    x = b.rest_positions.copy()
    x[3, 1] = np.nan
    with pytest.raises(defo.InvalidArgumentError, match="node 3: non-finite position"):
        b.set_state(positions=x)
    f = np.zeros((b.num_nodes, 3))
    f[2, 0] = np.inf
    b.external_force = f
    with pytest.raises(defo.InvalidArgumentError, match="node 2"):
        w.step(1 / 30)
    assert w.time == 0 and w.frame == 0  # the world stayed at the frame's start


def test_fracturing_body_gets_copies(root):
    """A body with fracture gains nodes when it splits and its arrays move:
    positions() is a copy then, valid after the growth."""
    scene = json.loads((root / "examples/scenes/tear.json").read_text())
    scene["outputs"] = {"vtu": False, "surface_obj": False, "png": False}
    with defo.Scene.parse(json.dumps(scene)).build() as sim:
        (bar,) = sim.bodies
        assert bar.storage_moves
        x0 = bar.positions
        n0 = bar.num_nodes
        assert x0.flags.owndata  # a copy
        sim.step(8)
        assert bar.num_nodes > n0  # it split (the example tears in frame 7)
        assert x0.shape == (n0, 3) and np.isfinite(x0).all()  # the old copy is intact
        x1 = bar.positions
        assert x1.shape == (bar.num_nodes, 3)
        assert np.array_equal(bar.parents[:n0], np.arange(n0))  # original nodes are their own


def test_close_defers_free_while_views_live():
    gc.collect()
    start = defo._defo.allocated_bytes()
    w, b = world_with_bar()
    w.step(1 / 30)
    x = b.positions
    kept = x.copy()
    grown = defo._defo.allocated_bytes()
    assert grown > start
    w.close()
    assert w.closed and not b.is_valid
    for call in (lambda: b.positions, lambda: w.step(1 / 30), lambda: b.set_state(),
                 lambda: w.bodies, lambda: b.energy(), lambda: w.add_body(defo.box())):
        with pytest.raises(defo.ClosedError):
            call()
    assert np.array_equal(x, kept)  # still readable: the memory waits for the view
    assert defo._defo.allocated_bytes() == grown
    del x
    gc.collect()
    assert defo._defo.allocated_bytes() == start  # freed with the last view
    w.close()  # closing twice is harmless


def test_simulation_close():
    s = {"bodies": [{"generator": {"type": "box", "cells": 1}}]}
    sim = defo.Scene.parse(json.dumps(s)).build()
    world = sim.world
    body = sim.bodies[0]
    with pytest.raises(defo.Error, match="belongs to a Simulation"):
        world.close()
    with pytest.raises(defo.Error, match="belongs to a Simulation"):
        world.add_body(defo.box())
    with pytest.raises(defo.Error, match="belongs to a Simulation"):
        world.add_integrator("static")
    sim.close()
    for call in (lambda: sim.step(), lambda: sim.world, lambda: body.positions,
                 lambda: world.step(0.1), lambda: sim.frame):
        with pytest.raises(defo.ClosedError):
            call()


def test_wrong_ids_and_arguments():
    w, b = world_with_bar()
    with pytest.raises(IndexError):
        w.body(1)
    with pytest.raises(IndexError):
        w.body(-1)
    with pytest.raises(KeyError):
        w.body("nobody")
    assert w.body(0) == b and w.body("body0") == b
    with pytest.raises(defo.InvalidArgumentError):
        b.release(5)  # no such set
    with pytest.raises(defo.InvalidArgumentError):
        b.prescribe(defo.Region.sphere((10, 10, 10), 0.1))  # selects no node
    with pytest.raises(ValueError, match="region.kind"):
        b.prescribe({"kind": "cone"})
    with pytest.raises(TypeError, match="region"):
        b.prescribe("left end")
    with pytest.raises(TypeError, match="unknown field 'youngs'"):
        b.set_material({"youngs": 1e5})
    with pytest.raises(defo.InvalidArgumentError, match="poisson"):
        b.set_material(poisson=0.6)
    assert b.material.poisson == 0.3  # unchanged
    with pytest.raises(ValueError, match="'newmrk' is not one of"):
        w.add_integrator("newmrk")
    with pytest.raises(TypeError, match="time_step"):
        w.add_integrator("bdf2", time_step="fast")
    with pytest.raises(defo.InvalidArgumentError):
        w.add_integrator("bdf2", time_step=-1.0)
    with pytest.raises(IndexError):
        w.steps_per_frame(3, 0.1)
    with pytest.raises(TypeError):
        w.add_collider("ground")
    with pytest.raises(defo.InvalidArgumentError):
        defo.Collider([defo.Shape(type="sphere", radius=-1.0)])
    with pytest.raises(TypeError):
        defo.Body()  # bodies come from worlds


def test_mesh_arrays():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    m = defo.Mesh(pts, elements=np.array([[0, 1, 2, 3]]))  # int64 indices are fine
    assert m.num_elements == 1 and m.elements.dtype == np.int32
    assert m.volume() == pytest.approx(1 / 6)
    with pytest.warns(defo.DefoWarning, match="1 element reoriented"):
        flipped = defo.Mesh(pts, elements=np.array([[0, 2, 1, 3]], np.int32))
    assert flipped.volume() == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="out of range"):
        defo.Mesh(pts, elements=np.array([[0, 1, 2, -1]]))
    with pytest.raises(defo.MeshError):
        defo.Mesh(pts, elements=np.array([[0, 1, 2, 4]]))  # node 4 does not exist
    with pytest.raises(ValueError, match="4 \\(tet4\\) or 10"):
        defo.Mesh(pts, elements=np.array([[0, 1, 2]]))
    with pytest.raises(TypeError, match="float64"):
        defo.Mesh(pts.astype(np.float32), elements=np.array([[0, 1, 2, 3]]))
    with pytest.raises(TypeError, match="int32 or int64"):
        defo.Mesh(pts, elements=np.array([[0, 1, 2, 3]], np.float64))
    p = m.points
    del m
    gc.collect()
    assert p[1, 0] == 1.0  # the view keeps its mesh alive
