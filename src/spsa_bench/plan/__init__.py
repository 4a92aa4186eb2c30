"""The tune planner (``spsa-bench plan``): a Fishtest parameter block in, the tune's
predicted outcome and better settings out, before any game is played.

A client of the engine and the analysis, not a second engine:

- :mod:`spsa_bench.plan.spec` holds what is asked (``PlanSpec``), the search's
  settings, the constants and the recommendation rule; the other modules import it and
  it imports none of them (no import circle);
- :mod:`spsa_bench.plan.run` builds an in-memory configuration (the block as a tune
  scenario, a batch mode of the packaged default configuration, the time control's
  noise, Fishtest's SPSA and Autoselect as arms), replays every setting of the search
  with :mod:`spsa_bench.engine.simulate` on shared instances and random numbers, and
  returns one dataset (``plan.nc``);
- :mod:`spsa_bench.plan.summary` reads that dataset into the statistics and the text
  of ``plan.md`` (with :mod:`spsa_bench.analysis.stats`);
- :mod:`spsa_bench.plan.figure` draws ``plan.png``.

docs/plan.md explains every line of the output and the assumptions behind it.
"""
