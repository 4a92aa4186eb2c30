"""A sourced corpus of real Stockfish SPSA tunes (issue 30): one YAML record per tune
under ``data/``, the tune's Fishtest parameter block beside it when known.

:mod:`~spsa_bench.corpus.records` holds the frozen record types, and
:mod:`~spsa_bench.corpus.load` reads and validates one record or the whole folder
(``spsa-bench tunes list|show``). Every number of a record names its source and says
whether it is quoted from it or inferred (and how); see ``data/README.md``.
"""
