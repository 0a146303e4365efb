"""defo runs loaded into Blender itself, checked there (tests/clients/run.sh).

    blender -b --factory-startup --python tests/clients/blender_check.py -- \
        [--still] RUNDIR MODE FORMAT FRAME...

MODE "clicks": what the README tells a person to do — import the body's rest
surface cache/NAME.obj (File > Import > Wavefront, Up Z, Forward Y: defo's
axes, so the object has no transform), add a Mesh Cache modifier, pick the
.pc2 (or .mdd) — for every body cached in RUNDIR (summary.json "caches").
MODE "addon": tools/blender/defo_import.py's import_run(RUNDIR) instead; it
also sets the frame rate and range and loads fractured bodies as frame
sequences, which are checked too.

At each FRAME the evaluated mesh of every cached body is compared vertex by
vertex with the body's object in defo's surface/frame_NNNN.obj (read here
line by line, not by Blender's importer).  Blender holds coordinates as
float32 and so do the caches: each vertex must be defo's double coordinate
rounded to float32, within 2 float32 units in the last place.  A sequence
body must show exactly its frame-k object at frame k, with frame k's
vertices.  Unless --still, some cached body must have moved more than 1 mm
from rest at a checked frame (else the comparison shows nothing).  Exit
status 0 when everything agrees, 1 otherwise.
"""
import json
import math
import os
import struct
import sys

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def obj_objects(path):
    """{object name: [(x, y, z), ...]} of an OBJ file, in file order."""
    objects, current = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("o "):
                current = objects.setdefault(line[2:].rstrip("\n"), [])
            elif line.startswith("v "):
                current.append(tuple(float(t) for t in line.split()[1:4]))
    return objects


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def ulps(a, b):
    """Distance of two float32 values in units in the last place."""
    if a == b:
        return 0.0
    scale = max(abs(a), abs(b), 1e-30)  # = m 2^e, m in [0.5, 1): float32 steps 2^(e-24) there
    return abs(a - b) / 2.0 ** (math.frexp(scale)[1] - 24)


def evaluated(obj):
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    mesh = ev.to_mesh()
    co = [tuple(v.co) for v in mesh.vertices]
    ev.to_mesh_clear()
    return co


def compare(what, got, want):
    """Number of coordinates off by more than 2 ulp (prints a line)."""
    if len(got) != len(want):
        print("blender_check: %s: %d vertices in Blender, %d in defo's OBJ" % (what, len(got), len(want)))
        return 1
    worst, bad = 0.0, 0
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            d = ulps(a, f32(b))
            worst = max(worst, d)
            bad += d > 2
    print("blender_check: %s: %d vertices, largest difference %.1f ulp%s"
          % (what, len(got), worst, "" if not bad else ", %d coordinates off" % bad))
    return bad


def main():
    argv = sys.argv[sys.argv.index("--") + 1:]
    still = argv[0] == "--still"
    argv = argv[1:] if still else argv
    run, mode, fmt, frames = os.path.abspath(argv[0]), argv[1], argv[2], [int(a) for a in argv[3:]]
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)
    caches = summary["outputs"].get("caches", [])
    failures = 0
    scene = bpy.context.scene
    objects = {}
    if mode == "clicks":
        for c in caches:
            bpy.ops.object.select_all(action="DESELECT")
            bpy.ops.wm.obj_import(filepath=os.path.join(run, c["obj"]), forward_axis="Y", up_axis="Z")
            (obj,) = bpy.context.selected_objects
            mod = obj.modifiers.new("defo", "MESH_CACHE")
            mod.cache_format = fmt.upper()
            mod.filepath = os.path.join(run, c[fmt])
            objects[c["body"]] = obj
    else:
        sys.path.insert(0, os.path.join(ROOT, "tools", "blender"))
        import defo_import

        made = defo_import.import_run(run, use_mdd=fmt == "mdd")
        objects = {c["body"]: made[c["body"]] for c in caches}
        fps = summary["fps"]
        rate = scene.render.fps / scene.render.fps_base
        if abs(rate - fps) > 1e-9 * fps or scene.frame_end != summary["frames_completed"]:
            print("blender_check: the add-on set %g fps, frames %d..%d; the run has %g fps, %d frames"
                  % (rate, scene.frame_start, scene.frame_end, fps, summary["frames_completed"]))
            failures += 1
        sequences = {b: made[b] for b in summary["outputs"].get("uncached", [])}
    if not objects:
        print("blender_check: no cached body in", run)
        return 1
    largest = 0.0
    for name, obj in objects.items():
        rest = obj_objects(os.path.join(run, "cache", os.path.basename(obj.modifiers[0].filepath)
                                        .rsplit(".", 1)[0] + ".obj"))[name]
        for k in frames:
            scene.frame_set(k)
            got = evaluated(obj)
            want = obj_objects(os.path.join(run, "surface", "frame_%04d.obj" % k))[name]
            failures += compare("%s (%s, %s) frame %d" % (name, mode, fmt, k), got, want) > 0
            moved = max(abs(a - b) for g, w in zip(got, rest) for a, b in zip(g, w))
            print("blender_check: %s frame %d: largest move from rest %.4g m" % (name, k, moved))
            largest = max(largest, moved)
    if not still and largest < 1e-3:
        print("blender_check: no cached body moved (largest %.3g m): the check shows nothing" % largest)
        failures += 1
    if mode == "addon":
        for body, coll in sequences.items():
            for k in frames:
                scene.frame_set(k)
                shown = [o for o in coll.objects if not o.hide_viewport]
                want = obj_objects(os.path.join(run, "surface", "frame_%04d.obj" % k))[body]
                if [o.name for o in shown] != ["%s.%04d" % (body, k)]:
                    print("blender_check: %s frame %d: shown %s" % (body, k, [o.name for o in shown]))
                    failures += 1
                    continue
                failures += compare("%s (sequence) frame %d" % (body, k), evaluated(shown[0]), want) > 0
    return 1 if failures else 0


if __name__ == "__main__":
    code = 1
    try:
        code = main()
    finally:
        sys.stdout.flush()
        os._exit(code)
