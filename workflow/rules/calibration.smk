# The shipped calibration (docs/calibration.md): the coverage table and figure of the
# calibration the package ships as its calibrated truth prior (the planner's default),
# read from src/spsa_bench/model/data/calibration_shipped.nc. No simulation: rerunning the fit
# is `spsa-bench calibrate` (or a configuration with a calibration section).


rule calibration_shipped:
    output:
        nc="results/calibration/shipped.nc",
        csv=report(
            "results/tables/calibration_shipped.csv",
            caption="../report/calibration_table.rst",
            category="Calibration to real tunes",
            labels={"table": "shipped calibration coverage"},
        ),
        md="results/tables/calibration_shipped.md",
        png=report(
            "results/figures/calibration_shipped.png",
            caption="../report/calibration.rst",
            category="Calibration to real tunes",
            labels={"figure": "shipped calibration coverage"},
        ),
        svg="results/figures/calibration_shipped.svg",
    log:
        "results/logs/calibration_shipped.log",
    benchmark:
        "results/benchmarks/calibration_shipped.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=JOB_OVERHEAD_MB + 200,
        runtime=5,
    script:
        "../scripts/calibration_shipped.py"
