"""The JSON Schema of each optional section (provisional home: the schema module)."""

from spsa_bench.config.schema import BUDGET_STUDY, CEND_STUDY, TUNING, WORKERS_STUDY

__all__ = ["BUDGET_STUDY", "CEND_STUDY", "TUNING", "WORKERS_STUDY"]
