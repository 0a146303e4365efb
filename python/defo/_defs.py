"""Definitions: Material, Integrator, Motion, ... as dataclasses.

Each class is made from the C library's own table of the definition's
fields (``defo._defo.fields``) with defo's defaults (``defo._defo.defaults``,
i.e. ``defo_default_*()``), so a default lives in one place: the library.
The C side reads these objects (or plain dicts with the same keys) field by
field; a field that is None keeps defo's default.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional, Tuple

from . import _defo

_PY_TYPES = {
    "float": float,
    "int": int,
    "bool": bool,
    "str": str,
    "vec3": Tuple[float, float, float],
    "ivec3": Tuple[int, int, int],
    "mat3": Tuple[float, ...],
}


def _make(kind: str, name: str, doc: str, nested: dict, kind_defaults: bool = False) -> type:
    """A dataclass for definition `kind` (its fields in the C table's order)."""
    defaults = _defo.defaults(kind)
    spec = []
    lines = [doc, "", "Fields (defo's default in brackets):"]
    for field, typ, fdoc in _defo.fields(kind):
        if typ in nested:
            cls = nested[typ]
            spec.append((field, cls, dataclasses.field(default_factory=cls)))
            lines.append("    %s: %s — %s" % (field, cls.__name__, fdoc))
            continue
        value = defaults[field]
        if kind_defaults and field != "kind":
            spec.append((field, Optional[_PY_TYPES[typ]], dataclasses.field(default=None)))
            lines.append("    %s: %s — %s [the kind's default]" % (field, typ, fdoc))
        else:
            spec.append((field, _PY_TYPES[typ], dataclasses.field(default=value)))
            lines.append("    %s: %s — %s [%r]" % (field, typ, fdoc, value))
    cls = dataclasses.make_dataclass(name, spec, namespace={"__doc__": "\n".join(lines)})
    cls.__module__ = "defo"
    _defo._register(kind, cls)
    return cls


Inversion = _make("inversion", "Inversion", "The inversion extension of a material (ITF04 §6).", {})
Biphasic = _make("biphasic", "Biphasic", "The biphasic model's stress curve (ITF04 §6).", {})
Material = _make(
    "material",
    "Material",
    "An isotropic material written in the diagonal frame (ITF04 §5-6, TSIF05 §7-9).\n\n"
    "    defo.Material(model='neo_hookean', youngs_modulus=1e5, poisson=0.3)",
    {"inversion": Inversion, "biphasic": Biphasic},
)
ForceModel = _make(
    "force_model",
    "ForceModel",
    "A body's formulation: 'invertible' (ITF04) or 'corotated' (MG04 warped stiffness).",
    {},
)
Plasticity = _make("plasticity", "Plasticity", "MG04 §3 plastic flow (yield, creep, max).", {})
Fracture = _make("fracture", "Fracture", "MG04 §4 brittle fracture by vertex splitting.", {})
Integrator = _make(
    "integrator",
    "Integrator",
    "An integrator of a World (World.add_integrator): the fields not given (None) take the "
    "kind's defaults.",
    {},
    kind_defaults=True,
)
Motion = _make(
    "motion",
    "Motion",
    "Scripted rigid motion: x(t) = R(t)(X - pivot) + pivot + velocity t, R(t) the rotation "
    "about angular_axis by angular_speed t.",
    {},
)
MesherOptions = _make(
    "mesher",
    "MesherOptions",
    "Options of defo.mesh_surface (ITF04 §10 BCC lattice, snapping, optimisation).",
    {},
)
Shape = _make(
    "shape",
    "Shape",
    "One shape of a Collider, in the collider's frame: plane, sphere, box, cylinder or capsule.",
    {},
)
Contact = _make(
    "contact",
    "Contact",
    "Contact between a World's bodies (World.contact): penalty in the Newton solves, impulses "
    "in the explicit steppers (ITF04 §9-10, TSIF05 §10).",
    {},
)


@dataclasses.dataclass(frozen=True)
class Region:
    """A region of REST positions that selects nodes (fixed sets, handles, loads).

    Make one with Region.box, Region.sphere, Region.plane or Region.tag.
    tolerance (relative to the rest bounding-box diagonal; None: 1e-9) lets a
    box face or plane placed on a layer of nodes select that layer despite
    rounding.
    """

    kind: str
    lo: Optional[Tuple[float, float, float]] = None
    hi: Optional[Tuple[float, float, float]] = None
    center: Optional[Tuple[float, float, float]] = None
    radius: Optional[float] = None
    point: Optional[Tuple[float, float, float]] = None
    normal: Optional[Tuple[float, float, float]] = None
    element_tag: Optional[int] = None
    tolerance: Optional[float] = None

    @classmethod
    def box(cls, lo: Any, hi: Any, tolerance: Optional[float] = None) -> "Region":
        """Nodes with lo <= x <= hi (each axis; +-inf allowed)."""
        return cls("box", lo=tuple(lo), hi=tuple(hi), tolerance=tolerance)

    @classmethod
    def sphere(cls, center: Any, radius: float, tolerance: Optional[float] = None) -> "Region":
        """Nodes within radius of center."""
        return cls("sphere", center=tuple(center), radius=radius, tolerance=tolerance)

    @classmethod
    def plane(cls, point: Any, normal: Any, tolerance: Optional[float] = None) -> "Region":
        """Nodes on the side the normal points away from: (x - point) . n <= 0."""
        return cls("plane", point=tuple(point), normal=tuple(normal), tolerance=tolerance)

    @classmethod
    def tag(cls, tag: int) -> "Region":
        """The nodes of the elements with this physical tag."""
        return cls("tag", element_tag=tag)
