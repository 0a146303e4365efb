"""Scenes from Python: loading, every error with its JSON path, and a run
from Python that equals `defo run` bit for bit (checkpoint bytes and the
frames' displacement), resumed or not."""
import json

import numpy as np
import pytest

import defo

DROP = {
    "name": "python drop",
    "duration": {"fps": 24, "frames": 3},
    "bodies": [
        {"name": "ball", "generator": {"type": "sphere", "radius": 0.2, "center": [0, 0, 0.22],
                                        "cell_size": 0.1},
         "material": {"youngs": 2e4}},
    ],
    "colliders": [{"name": "ground", "type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}],
    "outputs": {"surface_obj": False},
}


def write(path, scene):
    path.write_text(json.dumps(scene))
    return path


def test_load_example(root):
    s = defo.load_scene(root / "examples/scenes/torus_puddle.json")
    assert s.frames > 0 and s.fps > 0 and isinstance(s.hash, int)
    again = defo.Scene.parse(s.dump(), name="copy")  # the canonical copy re-parses...
    assert again.hash == s.hash and again.dump() == s.dump()  # ...to the same scene
    assert s.outputs["vtu"] is True and "J" in s.outputs["fields"]
    # every cell field by default, the compression and the activation too
    assert {"min_principal_stress", "activation", "plastic_bending"} <= set(s.outputs["fields"])


def test_errors_carry_json_paths(tmp_path):
    bad = dict(DROP, bodies=[dict(DROP["bodies"][0], material={"youngs": 2e4, "poisson": 0.52,
                                                                 "densty": 3})])
    bad["outputs"] = {"pngg": True}
    path = write(tmp_path / "bad.json", bad)
    with pytest.raises(defo.SceneError) as e:
        defo.load_scene(path)
    got = {(i.path, i.message) for i in e.value.issues}
    assert ("bodies[0].material.poisson", "0.52 is not in [0, 0.5)") in got
    assert ("bodies[0].material.densty", "unknown key (did you mean 'density'?)") in got
    assert ("outputs.pngg", "unknown key (did you mean 'png'?)") in got
    assert len(e.value.issues) == 3
    assert isinstance(e.value, ValueError)  # a SceneError is a ValueError too
    assert str(e.value).startswith(str(path) + ": ")
    assert [i.path for i in defo.validate(path)] == [i.path for i in e.value.issues]
    assert defo.validate(DROP) == []


def test_syntax_error_line_column(tmp_path):
    path = tmp_path / "syntax.json"
    path.write_text('{"bodies": [\n  {,}]}')
    with pytest.raises(defo.SceneError) as e:
        defo.load_scene(path)
    (issue,) = e.value.issues
    assert (issue.line, issue.column, issue.path) == (2, 4, "")


def test_missing_file(tmp_path):
    with pytest.raises(defo.FileError) as e:
        defo.load_scene(tmp_path / "nope.json")
    assert isinstance(e.value, OSError) and "nope.json" in str(e.value)


def test_equals_defo_run(tmp_path, run_cli):
    """A scene stepped from Python ends in the very state `defo run` ends in:
    the checkpoints are the same bytes and every frame's displacement is the
    same doubles (1 and 2 threads; and resumed from `defo run`'s checkpoint
    of frame 1)."""
    path = write(tmp_path / "drop.json", DROP)
    run_cli("run", path, "-o", tmp_path / "cli", "--quiet", "--threads", "2")
    scene = defo.load_scene(path)
    for threads in (1, 2):
        defo.set_threads(threads)
        with scene.build() as sim:
            (ball,) = sim.bodies
            for k in range(1, scene.frames + 1):
                sim.step()
                frame = defo.read_mesh(tmp_path / "cli" / "frames" / ("frame_%04d.vtu" % k))
                assert np.array_equal(ball.positions - ball.rest_positions,
                                      frame.point_fields["displacement"]), (threads, k)
            assert sim.frame == scene.frames and sim.time == pytest.approx(scene.frames / 24)
            sim.save_checkpoint(tmp_path / "py.bin")
        assert (tmp_path / "py.bin").read_bytes() == (tmp_path / "cli" / "checkpoint.bin").read_bytes()
    defo.set_threads(0)
    # resumed: defo run to frame 1, then Python from that checkpoint
    run_cli("run", path, "-o", tmp_path / "cli1", "--quiet", "--frames", "1")
    with scene.build() as sim:
        sim.load_checkpoint(tmp_path / "cli1" / "checkpoint.bin")
        assert sim.frame == 1
        sim.step(scene.frames - 1)
        sim.save_checkpoint(tmp_path / "resumed.bin")
    assert (tmp_path / "resumed.bin").read_bytes() == (tmp_path / "cli" / "checkpoint.bin").read_bytes()


def test_checkpoint_of_another_scene(tmp_path, run_cli):
    path = write(tmp_path / "drop.json", DROP)
    run_cli("run", path, "-o", tmp_path / "cli", "--quiet", "--frames", "1")
    other = dict(DROP, gravity=[0, 0, -1])
    with defo.Scene.parse(json.dumps(other)).build() as sim:
        with pytest.raises(defo.InvalidArgumentError):
            sim.load_checkpoint(tmp_path / "cli" / "checkpoint.bin")
        assert sim.frame == 0  # refused before anything changed
        (tmp_path / "junk.bin").write_bytes(b"not a checkpoint at all")
        with pytest.raises(defo.ParseError):
            sim.load_checkpoint(tmp_path / "junk.bin")


def test_demo_and_embedded_surface(root):
    scene = defo.Scene.demo()
    assert scene.name and scene.frames > 0
    surf = root / "data/meshes/eight.off"
    s = {"bodies": [{"name": "eight", "generator": {"type": "box", "size": [0.6, 0.3, 1.1],
                                                     "cells": [2, 1, 4]},
                     "embedded": {"file": str(surf)}}], "gravity": [0, 0, 0]}
    with defo.Scene.parse(json.dumps(s)).build() as sim:
        mesh, pos = sim.embedded_surface(0)
        assert mesh.num_triangles == 634 and pos.shape == (315, 3)
        assert np.allclose(pos, mesh.points, atol=1e-12)  # at rest: the surface as read


def test_ctrl_c_stops_a_step():
    """SIGINT during a long step (what Ctrl-C sends) stops it at defo's next
    safe point: KeyboardInterrupt, the world at the last complete frame, and
    stepping again goes on from there.  Python's own handler is back after."""
    import os
    import signal
    import threading

    with defo.Scene.demo().build() as sim:
        sim.step()
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            sim.step(10000)  # minutes of work
        timer.join()
        done = sim.frame
        assert 1 <= done < 10000
        assert sim.time == pytest.approx(done / sim.scene.fps, rel=1e-12)
        sim.step()
        assert sim.frame == done + 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
