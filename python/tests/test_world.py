"""Worlds built body by body from Python, and edits between steps: fixed
sets, handles driven by a transform, dead loads, tractions, material
changes, checkpoints.  Each check has an independent answer (analytic or
conserved) or compares two runs that must agree bit for bit."""
import dataclasses

import numpy as np
import pytest

import defo


def bar(cells=(8, 2, 2), order=1):
    return defo.box(origin=(0, -0.05, -0.05), size=(0.8, 0.1, 0.1), cells=cells, order=order)


def test_fixed_set_and_handle_follow_their_motion():
    """Prescribed nodes are where their motion says after every step:
    fixed ones at rest, a handle at R X + T (set_transform) — exact."""
    w = defo.World()
    w.add_integrator("backward_euler", time_step=0.01)
    b = w.add_body(bar(), material=defo.Material(youngs_modulus=1e5))
    X = b.rest_positions.copy()
    left = X[:, 0] < 1e-9
    right = X[:, 0] > 0.8 - 1e-9
    assert b.prescribe(defo.Region.plane((0, 0, 0), (1, 0, 0))) == 0
    handle = b.prescribe(defo.Region.box((0.8, -1, -1), (1, 1, 1)))
    assert handle == 1
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    T = np.array([0.05, 0.02, 0.0])
    b.set_transform(handle, R, T)
    w.step(1 / 30, frames=2)
    x = b.positions
    assert np.array_equal(x[left], X[left])
    assert np.allclose(x[right], X[right] @ R.T + T, rtol=0, atol=1e-14)
    free = ~(left | right)
    assert np.abs(x[free] - X[free]).max() > 1e-3  # the rest of the bar moved
    b.release(handle)  # the handle's nodes are free from now on
    w.step(1 / 30)
    assert not np.allclose(b.positions[right], X[right] @ R.T + T, atol=1e-6)


def test_external_force_momentum():
    """No gravity, a constant dead load F on every node: the total momentum
    grows as (sum of F) t (Newton's second law, the elastic forces summing
    to zero), whatever the body does."""
    w = defo.World(gravity=(0, 0, 0))
    b = w.add_body(bar(), material=defo.Material(youngs_modulus=1e5))
    n = b.num_nodes
    f = np.zeros((n, 3))
    f[:, 2] = np.linspace(0.0, 2.0, n)  # uneven: the bar also turns and bends
    b.external_force = f
    assert np.array_equal(b.external_force, f)
    w.step(1 / 30, frames=3)
    p = (b.masses[:, None] * b.velocities).sum(axis=0)
    expected = f.sum(axis=0) * w.time
    assert w.time == pytest.approx(0.1)
    assert np.allclose(p, expected, rtol=1e-9, atol=1e-12), (p, expected)
    assert np.abs(b.loads - f).max() == 0  # the loads the steppers saw: f, no gravity


def test_traction_area_and_total():
    """A traction on the x = 0.8 face loads exactly its area, 0.1 x 0.1."""
    w = defo.World(gravity=(0, 0, 0))
    b = w.add_body(bar())
    area = b.add_traction(defo.Region.box((0.8, -1, -1), (1, 1, 1)), (100.0, 0, 0))
    assert area == pytest.approx(0.01, rel=1e-12)
    w.step(1 / 30)
    assert b.loads.sum(axis=0) == pytest.approx((1.0, 0, 0), abs=1e-12)  # 100 Pa x 0.01 m^2


def test_material_edit_between_steps():
    """Static sag of a clamped bar is inversely proportional to E for small
    sags (linear elasticity): doubling E between solves halves it."""
    w = defo.World()
    # a tight tolerance: the solve's reference force is (2 mu + lambda) h^2, which for this
    # stiff bar dwarfs its weight (at the default 1e-6 the rest state already passes)
    w.add_integrator("static", tolerance=1e-11)
    b = w.add_body(bar(order=2, cells=(8, 1, 1)), material=defo.Material(youngs_modulus=1e8))
    b.prescribe(defo.Region.plane((0, 0, 0), (1, 0, 0)))
    X = b.rest_positions.copy()
    tip = X[:, 0] > 0.8 - 1e-9
    w.step(1.0)
    sag1 = -(b.positions[tip, 2] - X[tip, 2]).mean()
    b.set_material(youngs_modulus=2e8)  # some fields...
    assert b.material.youngs_modulus == 2e8 and b.material.poisson == 0.3
    b.set_state(positions=X, velocities=np.zeros_like(X))
    w.step(1.0)
    sag2 = -(b.positions[tip, 2] - X[tip, 2]).mean()
    assert sag1 > 0 and sag2 / sag1 == pytest.approx(0.5, rel=1e-3)
    b.material = dataclasses.replace(b.material, youngs_modulus=1e8)  # ...or a whole Material
    b.set_state(positions=X)
    w.step(1.0)
    sag3 = -(b.positions[tip, 2] - X[tip, 2]).mean()
    assert sag3 == pytest.approx(sag1, rel=1e-9)


@pytest.mark.parametrize("kind", [
    "backward_euler",
    "quasistatic",
    "bdf2",
])
def test_checkpoint_round_trip(tmp_path, kind):
    """Serialize after 2 frames, step 3 more; restore into a new world, step
    3: the same bits (the integrator's history travels in the checkpoint)."""

    def make():
        w = defo.World()
        w.add_integrator(kind, **({"time_step": 0.01} if kind != "quasistatic" else {}))
        b = w.add_body(bar(), material=defo.Material(youngs_modulus=5e4))
        b.prescribe(defo.Region.plane((0, 0, 0), (1, 0, 0)))
        return w, b

    w, b = make()
    w.step(1 / 30, frames=2)
    data = w.serialize(tag=7)
    w.save(tmp_path / "ck.bin", tag=7)
    w.step(1 / 30, frames=3)
    want = b.positions.copy()
    w2, b2 = make()
    w2.deserialize(data, tag=7)
    assert w2.frame == 2
    w2.step(1 / 30, frames=3)
    assert np.array_equal(b2.positions, want)
    w3, b3 = make()
    w3.load(tmp_path / "ck.bin", tag=7)
    w3.step(1 / 30, frames=3)
    assert np.array_equal(b3.positions, want)
    with pytest.raises(defo.InvalidArgumentError):
        make()[0].deserialize(data, tag=8)  # another tag: refused


def test_energy_and_fields():
    w = defo.World()
    b = w.add_body(bar(), material=defo.Material(youngs_modulus=1e5, density=500))
    e = b.energy()
    assert e["kinetic"] == 0 and e["elastic"] == pytest.approx(0, abs=1e-12)
    assert b.masses.sum() == pytest.approx(500 * 0.8 * 0.01, rel=1e-12)  # rho V
    x = b.rest_positions * np.array([1.1, 1.0, 1.0])  # stretched 10 % along x
    b.set_state(positions=np.ascontiguousarray(x))
    f = b.fields()
    assert f["J"].shape == (b.num_elements,) and f["node_von_mises"].shape == (b.num_nodes,)
    assert np.allclose(f["J"], 1.1, rtol=1e-12)  # a uniform stretch: det F = 1.1 everywhere
    assert f["inverted"] == 0 and b.count_inverted() == 0 and b.components() == 1
    assert b.count_folded() == 0
    assert b.energy()["elastic"] > 0


def test_colliders_and_stats():
    w = defo.World()
    ground = defo.Collider([defo.Shape(type="plane", center=(0, 0, 0), normal=(0, 0, 1))],
                           friction=0.5)
    w.add_collider(ground)
    del ground  # the world keeps it
    b = w.add_body(defo.sphere(radius=0.1, center=(0, 0, 0.101), cell_size=0.05),
                   material=defo.Material(youngs_modulus=5e4))
    st = w.step(1 / 30, frames=10)
    assert b.positions[:, 2].min() > -1e-6  # resting on the ground, not through it
    assert st["steps"] >= 1 and st["collisions"] > 0
    # nothing fell back silently, no hybrid body here
    assert st["solver_recoveries"] == 0 and st["impacts"] == 0
    assert w.integrators[0].kind == "newmark"


@pytest.mark.parametrize("collide", [True, False])
def test_bodies_collide(collide):
    """A box thrown down onto a fixed box: with contact between bodies it
    stops on it (never deeper than the contact skin), with collide=False it
    falls through."""
    w = defo.World(gravity=(0, 0, 0))
    w.contact = {"thickness": 0.1}
    lower = w.add_body(defo.box(origin=(-0.1, -0.1, 0), size=(0.2, 0.2, 0.1), cells=2), name="lower",
                       material=defo.Material(youngs_modulus=1e6))
    lower.prescribe(defo.Region.box((-1, -1, -1), (1, 1, 1)))
    upper = w.add_body(defo.box(origin=(-0.05, -0.05, 0.15), size=(0.1, 0.1, 0.1), cells=2),
                       name="upper", material=defo.Material(youngs_modulus=1e5),
                       velocity=(0, 0, -1.0), collide=collide)
    lowest, depth = [], 0.0
    for _ in range(18):  # 0.3 s at 1 m/s: 0.3 m down, the gap is 0.05 m
        depth = max(depth, w.step(1 / 60)["contact_depth"])
        lowest.append(upper.positions[:, 2].min())
    skin = 0.1 * 0.05  # thickness x the mean surface edge, about
    if collide:
        assert 0.1 - 2 * skin < min(lowest) < 0.1 + 0.02, lowest  # reached it, did not enter
        assert depth < 2 * skin
        assert lowest[-1] > min(lowest)  # and came back up
    else:
        assert lowest[-1] < 0.0, lowest  # passed through the lower box
