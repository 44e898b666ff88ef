"""The model's c2 for given parameters on a grid (homodyne::EvaluateC2)."""
from . import _core


def model_c2(mode, parameters, phi, *, q, dt, n_frames, contrast=1.0, offset=1.0,
             stator_rotor_gap=2.0e6, exact=False, threads=1):
    """c2 of every angle as an array (angles, N, N).

    mode: 'static', 'laminar_flow' or 'two_component'; parameters: the physical values
    (parameter_names(mode)); phi: angles [deg]; q [1/A]; dt [s]; n_frames N (times
    dt*[0..N-1], two_component dt*[1..N]); contrast, offset: one per angle or one for all;
    stator_rotor_gap [A] (laminar_flow). exact: the literal model's expressions
    (bit-identical to the library's reference), else the fast kernel (within a few 1e-15).
    The GIL is released during an evaluation of 32768 points or more, or with threads > 1.
    """
    # The keywords are taken here and passed on by position: the compiled function's own
    # keyword handling costs more than this Python call.
    return _core._model_c2(mode, parameters, phi, q, dt, n_frames, contrast, offset,
                           stator_rotor_gap, exact, threads)
