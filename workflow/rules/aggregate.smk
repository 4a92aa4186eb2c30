# Aggregation: the combined dataset and the tables.


rule combine:
    input:
        runs=get_run_files,
    output:
        "results/benchmark.nc",
    log:
        "results/logs/combine.log",
    benchmark:
        "results/benchmarks/combine.tsv"
    group:
        "aggregate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=combine_mem_mb,
        runtime=combine_runtime,
    params:
        order=grid_order(),
    script:
        "../scripts/combine.py"


rule tables:
    input:
        "results/benchmark.nc",
    output:
        convergence=report(
            "results/tables/convergence.csv",
            caption="../report/convergence_table.rst",
            category="Tables",
            labels={"table": "convergence"},
        ),
        convergence_md="results/tables/convergence.md",
        kpis=report(
            "results/tables/async.csv",
            caption="../report/async_table.rst",
            category="Tables",
            labels={"table": "asynchronous KPIs"},
        ),
        kpis_md="results/tables/async.md",
    log:
        "results/logs/tables.log",
    benchmark:
        "results/benchmarks/tables.tsv"
    group:
        "aggregate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=report_mem_mb,
        runtime=report_runtime,
    params:
        baseline=BENCH.baseline,
        targets=list(BENCH.targets),
    script:
        "../scripts/tables.py"
