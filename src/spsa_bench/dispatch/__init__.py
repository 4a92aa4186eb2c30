"""Optimizer-independent job schedules: who plays how many pairs when, for the
synchronous and asynchronous batch modes; their KPIs and their NetCDF storage."""
