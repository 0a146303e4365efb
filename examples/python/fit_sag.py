# %% [markdown]
# # Fitting a material to a measured sag
#
# A 1 m bar of square section (10 cm) is clamped at one end and sags under
# its own weight.  Someone measured the tip's sag on the real part; which
# Young's modulus makes defo's bar sag the same?  One World is built once;
# each trial changes the body's material between solves (defo's `static`
# integrator: the equilibrium of the current loads, MMDJ01 §2.3) and SciPy's
# bounded scalar minimiser searches log10(E).
#
# The bar is ten tet10 cubes (MTPS08 quadratic elements: they bend without
# the shear locking of coarse tet4 bars) and sags within a few percent of
# the Euler-Bernoulli beam's q L^4 / (8 E I), which ignores shear.
#
# Run it as a script (`python3 examples/python/fit_sag.py`) or cell by cell
# in an editor that knows `# %%` cells.  The measurement here is made by
# defo itself at a known modulus, so the fit can be checked.

# %%
import dataclasses
import sys

import numpy as np
from scipy.optimize import minimize_scalar

import defo

E_TRUE = 5e7  # [Pa] the modulus behind the "measurement"

world = defo.World()  # gravity -9.81 z
# a tight tolerance: the equilibrium solve measures its residual against the
# bar's stiffness scale (2 mu + lambda) h^2, which dwarfs the weight of a stiff bar
world.add_integrator("static", tolerance=1e-11)
bar = world.add_body(
    defo.box(origin=(0, -0.05, -0.05), size=(1.0, 0.1, 0.1), cells=(10, 1, 1), order=2),
    material=defo.Material(model="neo_hookean", youngs_modulus=1e6, poisson=0.3, density=1000),
    name="bar",
)
bar.prescribe(defo.Region.plane(point=(0, 0, 0), normal=(1, 0, 0)))  # x <= 0: clamped
rest = bar.rest_positions.copy()
tip = rest[:, 0] > 1 - 1e-9  # the nodes of the free end


def tip_sag(youngs_modulus: float) -> float:
    """Mean downward displacement of the free end at equilibrium [m]."""
    bar.material = dataclasses.replace(bar.material, youngs_modulus=youngs_modulus)
    bar.set_state(positions=rest, velocities=np.zeros_like(rest))  # every solve from rest
    world.step(1.0)
    return float(-(bar.positions[tip, 2] - rest[tip, 2]).mean())


# %% the measurement
target = tip_sag(E_TRUE)
section = 0.1 * 0.1
euler_bernoulli = 1000 * 9.81 * section * 1.0**4 / (8 * E_TRUE * 0.1**4 / 12)
print(f"measured sag {target * 1000:.3f} mm (Euler-Bernoulli beam: {euler_bernoulli * 1000:.3f} mm)")

# %% the fit: least squares in the sag, searched over log10(E)
trials = []


def misfit(log10_e: float) -> float:
    s = tip_sag(10.0**log10_e)
    trials.append((10.0**log10_e, s))
    return (s - target) ** 2


fit = minimize_scalar(misfit, bounds=(6.0, 9.0), method="bounded", options={"xatol": 1e-7})
e_fit = 10.0**fit.x
print(f"fitted E = {e_fit:.6g} Pa after {len(trials)} solves (true {E_TRUE:.6g} Pa, "
      f"relative error {abs(e_fit / E_TRUE - 1):.2e})")

# %% check (the example is also a test: tests/test_example.py runs it)
if abs(e_fit / E_TRUE - 1) > 1e-4 or abs(tip_sag(e_fit) - target) > 1e-6 * target:
    sys.exit("fit_sag: the fit did not recover the modulus")
