"""Calibration of the tune-scenario truth prior to the corpus of real tunes by
simulation (issue 30 item 3, docs/calibration.md): :mod:`.stats` (a tune's summary
statistics, observed and simulated), :mod:`.prior` (the prior family and its
hyper-prior), :mod:`.simulate` (a record replayed on many prior draws at once),
:mod:`.fit` (rejection ABC and coverage), :mod:`.run` (the time-split calibration).
"""
