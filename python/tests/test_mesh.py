"""Meshes: files in and out, the generators and defo.mesh_surface."""
import numpy as np
import pytest

import defo


@pytest.mark.parametrize("ext", ["vtu", "msh", "node", "vtk"])
def test_write_read_round_trip(tmp_path, ext):
    m = defo.box(size=(1, 0.5, 0.25), cells=(3, 2, 1), order=2)
    path = tmp_path / ("box." + ext)
    m.write(path)
    r = defo.read_mesh(path)
    assert r.order == 2 and np.array_equal(r.points, m.points)
    assert np.array_equal(r.elements, m.elements)


def test_write_deformed_and_bad_paths(tmp_path):
    m = defo.box(cells=1)
    x = m.points * 2
    m.write(tmp_path / "big.vtu", positions=x)
    assert np.array_equal(defo.read_mesh(tmp_path / "big.vtu").points, x)
    with pytest.raises(defo.FileError):
        m.write(tmp_path / "no" / "such" / "folder.vtu")
    with pytest.raises(ValueError, match="positions"):
        m.write(tmp_path / "x.vtu", positions=x[:-1])
    with pytest.raises(defo.FileError):
        defo.read_mesh(tmp_path / "missing.vtu")


def test_broken_files_raise(root):
    for name, exc in (("obj_nan.obj", defo.ParseError), ("off_truncated.off", defo.ParseError),
                      ("gmsh_node_out_of_range.msh", defo.ParseError)):
        with pytest.raises(defo.Error) as e:
            defo.read_mesh(root / "data/broken" / name)
        assert name in str(e.value)


def test_mesh_surface(root):
    surface = defo.read_mesh(root / "data/meshes/eight.off")
    assert surface.order == 0 and surface.num_triangles == 634
    mesh, report = defo.mesh_surface(surface, cells=12)
    assert mesh.order == 1 and mesh.num_elements > 100
    assert report["quality"]["min_dihedral"] >= 20.0 - 1e-9  # the mesher's target
    assert abs(report["volume_error"]) < 0.02
    assert mesh.volume() == pytest.approx(report["volume"], rel=1e-12)
    quadratic, _ = defo.mesh_surface(surface, defo.MesherOptions(cells=8, order=2))
    assert quadratic.order == 2 and quadratic.elements.shape[1] == 10
    with pytest.raises(TypeError, match="surface"):
        defo.mesh_surface("eight.off")
    with pytest.raises(defo.Error):
        defo.mesh_surface(defo.box(cells=1))  # a volume mesh has no triangles


def test_generators():
    s = defo.sphere(radius=0.5, cell_size=0.125)
    assert s.volume() == pytest.approx(4 / 3 * np.pi * 0.125, rel=0.05)
    t = defo.torus(major_radius=1, minor_radius=0.3)
    assert t.volume() == pytest.approx(2 * np.pi**2 * 1 * 0.09, rel=0.05)
    c = defo.cylinder(defo._defo.defaults("cylinder"))
    assert c.count_inverted() == 0 and c.boundary().shape[1] == 3
    with pytest.raises(defo.InvalidArgumentError):
        defo.box(size=(1, -1, 1))
    with pytest.raises(TypeError, match="cells"):
        defo.box(cells=2.5)
