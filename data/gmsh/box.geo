// A 2 x 1 x 1 box (metres) split into two volumes so the mesh carries two
// volume physical groups plus named boundary surfaces.  See README.md.
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 1, 1};
Box(2) = {1, 0, 0, 1, 1, 1};
Coherence;
Mesh.MeshSizeMin = 0.5;
Mesh.MeshSizeMax = 0.5;
Physical Volume("left", 1) = {1};
Physical Volume("right", 2) = {2};
// x = 0 face of the left box and x = 2 face of the right box
Physical Surface("clamp", 11) = {Surface In BoundingBox{-0.01, -0.01, -0.01, 0.01, 1.01, 1.01}};
Physical Surface("load", 12) = {Surface In BoundingBox{1.99, -0.01, -0.01, 2.01, 1.01, 1.01}};
Physical Curve("edge", 21) = {Curve In BoundingBox{-0.01, -0.01, -0.01, 0.01, 0.01, 1.01}};
