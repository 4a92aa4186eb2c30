"""Literal, loop-based reference implementations used by the tests."""
