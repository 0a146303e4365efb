"""ParaView's reading of a defo run against meshio's (tests/clients/run.sh).

    /usr/bin/python3 tests/clients/compare_meshio.py RUNDIR PARAVIEW.npz [--tet10] [--grows]

PARAVIEW.npz is paraview_read.py's.  Checks: one time step per frame of the
run (summary.json's frames_completed + 1), step k at k / fps (the run's
frame rate, to 1e-9 of a frame); at every step ParaView's point and cell
counts equal meshio's for frames/frame_NNNN.vtu, and ParaView sees every
field meshio sees; at the last step ParaView's points and displacement
equal meshio's bit for bit (the same doubles through two readers).
--tet10: the run has tet10 bodies: ParaView sees quadratic tetrahedra
(VTK type 24), as many as meshio's "tetra10" cells.  --grows: a fracture
run: the point count grows from the first step to the last.
"""
import json
import sys

import meshio
import numpy as np

run, npz = sys.argv[1], sys.argv[2]
flags = set(sys.argv[3:])
pv = np.load(npz)
steps = json.loads(str(pv["steps"]))
summary = json.load(open(run + "/summary.json"))
fps, frames = summary["fps"], summary["frames_completed"]
fail = []
if len(steps) != frames + 1:
    fail.append("%d time steps in ParaView, the run has frames 0..%d" % (len(steps), frames))
for k, s in enumerate(steps):
    if abs(s["time"] - k / fps) > 1e-9 / fps:
        fail.append("step %d at %.17g s, not %d/%g" % (k, s["time"], k, fps))
    m = meshio.read("%s/frames/frame_%04d.vtu" % (run, k))
    cells = sum(len(c.data) for c in m.cells)
    if (s["points"], s["cells"]) != (len(m.points), cells):
        fail.append("frame %d: ParaView %d points %d cells, meshio %d points %d cells"
                    % (k, s["points"], s["cells"], len(m.points), cells))
    missing = (set(m.point_data) - set(s["point_arrays"])) | (set(m.cell_data) - set(s["cell_arrays"]))
    if missing:
        fail.append("frame %d: ParaView does not see %s" % (k, sorted(missing)))
    if "--tet10" in flags:
        tet10 = sum(len(c.data) for c in m.cells if c.type == "tetra10")
        if tet10 == 0 or s["cell_types"].get("24", 0) != tet10:
            fail.append("frame %d: %d quadratic tetrahedra in ParaView, %d tetra10 in meshio"
                        % (k, s["cell_types"].get("24", 0), tet10))
last = meshio.read("%s/frames/frame_%04d.vtu" % (run, frames))
if not (np.array_equal(pv["points"], last.points)
        and np.array_equal(pv["displacement"], last.point_data["displacement"])):
    diff = np.abs(pv["displacement"] - last.point_data["displacement"]).max() \
        if pv["displacement"].shape == last.point_data["displacement"].shape else "shape"
    fail.append("last frame: ParaView's displacement differs from meshio's (%s)" % diff)
moved = np.abs(last.point_data["displacement"]).max()
if moved <= 0:
    fail.append("last frame: nothing moved")
if "--grows" in flags and not steps[-1]["points"] > steps[0]["points"]:
    fail.append("points %d -> %d: the fracture run did not grow" % (steps[0]["points"], steps[-1]["points"]))
for f in fail:
    print("compare_meshio: FAIL:", f)
print("compare_meshio: %s: %d steps at %g fps, points %d -> %d, largest displacement %.4g m: %s"
      % (run.rsplit("/", 1)[-1], len(steps), fps, steps[0]["points"], steps[-1]["points"], moved,
         "ok" if not fail else "%d failures" % len(fail)))
sys.exit(1 if fail else 0)
