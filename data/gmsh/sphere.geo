// A unit sphere (radius 1 m) with one volume group and its boundary.  See README.md.
SetFactory("OpenCASCADE");
Sphere(1) = {0, 0, 0, 1};
Mesh.MeshSizeMin = 0.45;
Mesh.MeshSizeMax = 0.45;
Physical Volume("ball", 7) = {1};
Physical Surface("skin", 8) = {1};
