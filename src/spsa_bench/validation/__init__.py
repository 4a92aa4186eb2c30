"""Macro-versus-micro validation gates: every block optimizer against its
literal per-pair reference on a shared report sequence."""
