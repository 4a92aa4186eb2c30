"""Results on disk: run and schedule datasets, provenance, atomic NetCDF writes
and the combined benchmark dataset."""
