// Experimental geometry entering the homodyne model prefactors.
#pragma once

namespace homodyne::model {

struct Geometry {
  double q = 0.0;   // scattering wavevector magnitude [1/Å]
  double L = 0.0;   // stator-rotor gap [Å] (only used by laminar_flow)
  double dt = 0.0;  // frame interval [s] (only used in the two prefactors)

  // Throws a bad-input Error unless q > 0, dt > 0 and L > 0 (all finite).
  void Validate() const;

  // 0.5·q²·dt: multiplies the diffusion integral (in steps) in log g1_diff.
  double DiffusionPrefactor() const { return 0.5 * q * q * dt; }
  // 0.5/π·q·L·dt: multiplies cos(φ0−φ)·(shear integral in steps).
  double SincPrefactor() const;
};

}  // namespace homodyne::model
