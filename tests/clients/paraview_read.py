"""What ParaView reads of a defo run (run with pvpython by tests/clients/run.sh).

    pvpython tests/clients/paraview_read.py RUNDIR OUT.npz

Opens RUNDIR/scene.pvd with ParaView's PVD reader and, at every time step,
updates the pipeline and fetches the data set: its class, point and cell
counts, cell types, point and cell array names; at the last step also the
points and the "displacement" array.  Everything goes to OUT.npz, which
tests/clients/compare_meshio.py checks against meshio's reading of the
.vtu files (an independent reader).
"""
import json
import sys

import numpy as np
from paraview import servermanager
from paraview.simple import PVDReader
from vtk.numpy_interface import dataset_adapter as dsa

run, out = sys.argv[1], sys.argv[2]
reader = PVDReader(FileName=run + "/scene.pvd")
times = list(reader.TimestepValues)
steps = []
last = None
for t in times:
    reader.UpdatePipeline(t)
    data = servermanager.Fetch(reader)
    w = dsa.WrapDataObject(data)
    types, counts = np.unique(np.asarray(w.CellTypes), return_counts=True)
    steps.append({"time": t, "class": data.GetClassName(), "points": data.GetNumberOfPoints(),
                  "cells": data.GetNumberOfCells(),
                  "cell_types": {str(int(a)): int(b) for a, b in zip(types, counts)},
                  "point_arrays": sorted(w.PointData.keys()),
                  "cell_arrays": sorted(w.CellData.keys())})
    last = (np.array(w.Points), np.array(w.PointData["displacement"]))
np.savez(out, steps=json.dumps(steps), points=last[0], displacement=last[1])
print("paraview_read: %d time steps, last %.6g s: %d points" % (len(times), times[-1], steps[-1]["points"]))
