"""Blender add-on: import a `defo run` output folder as animated objects.

File > Import > defo run folder (summary.json): every body becomes one
object.  A body with a point cache (the scene's "outputs": {"pc2": true} or
"mdd": true) is its rest surface cache/NAME.obj with a Mesh Cache modifier
reading cache/NAME.pc2 (or .mdd): Blender frame k shows defo frame k.  A
body with fracture has no cache (its vertex count changes as it splits):
its surface is imported from every surface/frame_NNNN.obj, one object per
frame in a collection of its own, each shown only on its frame.  The scene's
frame rate and range are set to the run's.

Install: Edit > Preferences > Add-ons > Install... > this file, then enable
"Import: defo run".  Or from a script (e.g. `blender -b --python`):

    import sys; sys.path.insert(0, "tools/blender")
    import defo_import; defo_import.import_run("/path/to/run")

Coordinates are defo's (z up): OBJ files are read with Up Z, Forward Y, so
the objects carry no rotation and the cache's coordinates apply as they are.
"""
import json
import os

import bpy

bl_info = {
    "name": "Import: defo run",
    "description": "A defo run folder as animated objects (point caches, fracture sequences)",
    "blender": (3, 2, 0),
    "category": "Import-Export",
    "location": "File > Import > defo run folder",
}


def _import_obj(path):
    """Import an OBJ in defo's axes; returns the new objects."""
    before = set(bpy.data.objects)
    if hasattr(bpy.ops.wm, "obj_import"):  # Blender 3.2+
        bpy.ops.wm.obj_import(filepath=path, forward_axis="Y", up_axis="Z")
    else:
        bpy.ops.import_scene.obj(filepath=path, axis_forward="Y", axis_up="Z", split_mode="ON")
    return [o for o in bpy.data.objects if o not in before]


def _show_only_on(obj, frame):
    """Key obj's visibility: shown on `frame`, hidden before and after."""
    for f, hidden in ((frame - 1, True), (frame, False), (frame + 1, True)):
        obj.hide_viewport = hidden
        obj.hide_render = hidden
        obj.keyframe_insert("hide_viewport", frame=f)
        obj.keyframe_insert("hide_render", frame=f)
    for curve in (obj.animation_data.action.fcurves if obj.animation_data else []):
        for k in curve.keyframe_points:
            k.interpolation = "CONSTANT"


def import_run(folder, use_mdd=False):
    """Import the run in `folder` into the current scene; returns {body: object or collection}."""
    folder = os.path.abspath(folder)
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    outputs = summary["outputs"]
    frames = summary["frames_completed"]
    scene = bpy.context.scene
    fps = summary["fps"]
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    scene.frame_start = 0
    scene.frame_end = frames
    made = {}
    for c in outputs.get("caches", []):
        fmt = "mdd" if use_mdd and "mdd" in c else "pc2"
        (obj,) = _import_obj(os.path.join(folder, c["obj"]))
        obj.name = c["body"]
        mod = obj.modifiers.new("defo", "MESH_CACHE")
        mod.cache_format = fmt.upper()
        mod.filepath = os.path.join(folder, c[fmt])
        made[c["body"]] = obj
    for body in outputs.get("uncached", []):
        coll = bpy.data.collections.new(body + " (frames)")
        scene.collection.children.link(coll)
        for k in range(frames + 1):
            objs = _import_obj(os.path.join(folder, "surface", "frame_%04d.obj" % k))
            for o in objs:
                if o.name.split(".")[0] != body:  # the frame OBJ holds every body
                    bpy.data.objects.remove(o, do_unlink=True)
                    continue
                for u in list(o.users_collection):
                    u.objects.unlink(o)
                coll.objects.link(o)
                o.name = "%s.%04d" % (body, k)
                _show_only_on(o, k)
        made[body] = coll
    scene.frame_set(scene.frame_start)
    return made


try:  # the operator and menu entry (absent when bpy_extras is not there)
    from bpy_extras.io_utils import ImportHelper

    class ImportDefoRun(bpy.types.Operator, ImportHelper):
        """Import a defo run folder (pick its summary.json)"""

        bl_idname = "import_scene.defo_run"
        bl_label = "Import defo run"
        filename_ext = ".json"
        filter_glob: bpy.props.StringProperty(default="summary.json", options={"HIDDEN"})
        use_mdd: bpy.props.BoolProperty(name="Use MDD", description="Read the .mdd caches",
                                        default=False)

        def execute(self, context):
            made = import_run(os.path.dirname(self.filepath), self.use_mdd)
            self.report({"INFO"}, "defo: %d bodies imported" % len(made))
            return {"FINISHED"}

    def _menu(self, context):
        self.layout.operator(ImportDefoRun.bl_idname, text="defo run folder (summary.json)")

    def register():
        bpy.utils.register_class(ImportDefoRun)
        bpy.types.TOPBAR_MT_file_import.append(_menu)

    def unregister():
        bpy.types.TOPBAR_MT_file_import.remove(_menu)
        bpy.utils.unregister_class(ImportDefoRun)

except ImportError:  # pragma: no cover

    def register():
        pass

    def unregister():
        pass
