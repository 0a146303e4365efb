/*
 * scene/demo.c — the built-in demo scene of `defo run` (no files needed).
 *
 * ITF04 Fig. 2, the torus puddle: a rubber torus with its stiffness almost
 * switched off (E = 10 Pa, where ρ g h ≈ 4 kPa) drops onto the ground,
 * collapses into a puddle with a large share of its elements
 * inverted, then at t = 1 s its stiffness is restored (E = 20 kPa) and the
 * invertible elements (ITF04 §6 inversion extension) push it back to its
 * rest shape: inverted elements > 0 during the puddle, 0 at the end.
 */
#include "defo/scene.h"

static const char demo_scene[] =
    "{\n"
    "  \"name\": \"defo demo: torus puddle (ITF04 Fig. 2)\",\n"
    "  \"gravity\": [0, 0, -9.81],\n"
    "  \"duration\": {\"frames\": 75, \"fps\": 30},\n"
    "  \"integrator\": {\"type\": \"newmark\", \"cfl\": 0.5, \"max_dt\": 0.004},\n"
    "  \"bodies\": [{\n"
    "    \"name\": \"torus\",\n"
    "    \"generator\": {\"type\": \"torus\", \"center\": [0, 0, 0.45], \"major_radius\": 0.5,\n"
    "                  \"minor_radius\": 0.2, \"cell_size\": 0.125},\n"
    "    \"transform\": {\"rotate\": {\"axis\": [1, 0, 0], \"angle_deg\": 12}},\n"
    "    \"material\": {\"model\": \"corotated\", \"youngs\": 10, \"poisson\": 0.3,\n"
    "                 \"density\": 1000, \"damping\": 0.02},\n"
    "    \"material_changes\": [{\"time\": 1.0, \"material\": {\"youngs\": 2e4, \"damping\": "
    "0.03}}]\n"
    "  }],\n"
    "  \"colliders\": [\n"
    "    {\"name\": \"ground\", \"type\": \"plane\", \"point\": [0, 0, 0], \"normal\": [0, 0, 1],\n"
    "     \"friction\": 0.3}\n"
    "  ],\n"
    "  \"outputs\": {\"png\": {\"width\": 480, \"height\": 360, \"color\": \"J\"}}\n"
    "}\n";

const char *defo_scene_demo_text(void) {
    return demo_scene;
}
