from spsa_bench.cli import run

run()
