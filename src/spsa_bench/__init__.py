"""spsa-bench: a reproducible, vectorized benchmark of SPSA-family optimizers.

The package is split the way data flows:

- ``oracle``       ground truth (true Elo bowl) and the developer's view of it
- ``pentanomial``  match-noise model of a game pair
- ``streams``      every random stream, keyed by (seed, purpose)
- ``schedule``     optimizer-independent job schedules (sync and async)
- ``optimizers``   pure init/update optimizers that only see the developer view
- ``replay``       runs one optimizer over a schedule for all seeds at once
- ``io``           NetCDF datasets, provenance, atomic writes, combination
"""

__version__ = "0.1.0"
