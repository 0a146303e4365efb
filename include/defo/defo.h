/*
 * defo/defo.h — the whole public API of defo.
 *
 * defo simulates deformable solids robustly: invertible FEM (ITF04),
 * quasistatics (TSIF05), corotational FEM (MG04), quadratic elements (MTPS08)
 * and fracture of stiff materials (MMDJ01), in one engine.
 * Conventions (units, ownership, errors, threads): docs/conventions.md.
 */
#ifndef DEFO_DEFO_H
#define DEFO_DEFO_H

#include "defo/base.h"
#include "defo/math.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/element.h"
#include "defo/geometry.h"
#include "defo/force_model.h"
#include "defo/integrator.h"
#include "defo/solver.h"
#include "defo/world.h"
#include "defo/io.h"
#include "defo/collision.h"
#include "defo/mesher.h"
#include "defo/sparse.h"
#include "defo/cholesky.h"
#include "defo/plasticity.h"
#include "defo/fracture.h"
#include "defo/embed.h"
#include "defo/contact.h"
#include "defo/rigid.h"
#include "defo/scene.h"
/* defo/render.h belongs to the separate defo_render library (GL, PNG): include it yourself. */

#endif
