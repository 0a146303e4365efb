"""defo — robust simulation of deformable solids, from Python.

The package drives defo's C library through its public API: scenes (the
JSON files of ``defo run``), worlds built from them or body by body, steps,
the state as NumPy arrays, handles, fixed sets, loads and material edits
between steps, the mesher, mesh files and checkpoints.

    import defo
    sim = defo.load_scene("examples/scenes/torus_puddle.json").build()
    sim.step(30)                               # one second at 30 fps
    body = sim.bodies[0]
    print(body.positions[:, 2].min())          # lowest point [m]

Units are SI.  Errors are exceptions (defo.Error and subclasses) carrying
defo's message; a scene's errors come all at once in defo.SceneError.issues,
each with its JSON path.  Arrays handed to defo must have the documented
dtype, shape and C order: anything else raises instead of being converted.
"""
from __future__ import annotations

import os
from typing import List, Union

from ._defo import (  # noqa: F401  (re-exported)
    Body,
    ClosedError,
    Collider,
    DefoWarning,
    Error,
    FileError,
    InternalError,
    Interrupted,
    InvalidArgumentError,
    Mesh,
    MeshError,
    NumericalError,
    OutOfMemoryError,
    ParseError,
    Scene,
    SceneError,
    SceneIssue,
    Simulation,
    UnsupportedError,
    World,
    box,
    cylinder,
    get_threads,
    mesh_surface,
    read_mesh,
    set_threads,
    sphere,
    torus,
    version,
)
from ._defs import (  # noqa: F401
    Biphasic,
    Contact,
    ForceModel,
    Fracture,
    Integrator,
    Inversion,
    Material,
    MesherOptions,
    Motion,
    Plasticity,
    Region,
    Shape,
)
from ._cache import MddCache, PointCache, read_mdd, read_pc2  # noqa: F401

__version__ = version()

__all__ = [
    "Biphasic", "Body", "ClosedError", "Collider", "Contact", "DefoWarning", "Error", "FileError",
    "ForceModel", "Fracture", "Integrator", "InternalError", "Interrupted",
    "InvalidArgumentError", "Inversion", "Material", "MddCache", "Mesh", "MeshError",
    "MesherOptions", "Motion", "NumericalError", "OutOfMemoryError", "ParseError", "Plasticity",
    "PointCache", "Region", "Scene", "SceneError", "SceneIssue", "Shape", "Simulation",
    "UnsupportedError", "World", "box", "cylinder", "get_threads", "load_scene", "mesh_surface",
    "read_mdd", "read_mesh", "read_pc2", "set_threads", "sphere", "torus", "validate", "version",
]


def load_scene(path: Union[str, os.PathLike]) -> Scene:
    """Read and validate a scene file (docs/scene-format.md).

    Raises SceneError (every problem in .issues, each with its JSON path) or
    FileError when the file cannot be read.
    """
    return Scene.load(path)


def validate(scene: Union[str, os.PathLike, dict]) -> List[SceneIssue]:
    """Every problem of a scene, as `defo validate` lists them ([] when valid).

    scene: a file path, or a dict (a scene as JSON data; relative file names
    resolve against the current folder).
    """
    try:
        if isinstance(scene, dict):
            import json

            Scene.parse(json.dumps(scene), name="scene")
        else:
            Scene.load(scene)
    except SceneError as e:
        return list(e.issues)
    return []
