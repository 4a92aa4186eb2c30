"""Configuration: the YAML loader with schema and semantic checks, the schema
builder, and the packaged schema and default configuration (``data/``)."""

from spsa_bench.config.loader import (
    BatchMode,
    Config,
    ConfigError,
    OptimizerArm,
    load_config,
    resolve,
    resolve_core,
)

__all__ = [
    "BatchMode",
    "Config",
    "ConfigError",
    "OptimizerArm",
    "load_config",
    "resolve",
    "resolve_core",
]
