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
        mem_mb=per_job(res.combine_mem_mb),
        runtime=per_job(res.combine_runtime),
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
        mem_mb=per_job(res.report_mem_mb),
        runtime=per_job(res.report_runtime),
    params:
        baseline=BENCH.baseline,
        targets=list(BENCH.targets),
    script:
        "../scripts/tables.py"


# The tuning protocol (docs/benchmark.md, "Tuning protocol"): each sweep's setting
# chosen on the held-out tuning seeds (rule tuning_runs, which needs no benchmark
# seed and so runs beside the simulations), reported on the benchmark's seeds (rule
# tuned). Runs only when the configuration has a tuning section (and a swept arm).


rule tuning_runs:
    output:
        nc="results/fishtest/tuning.nc",
    log:
        "results/logs/tuning_runs.log",
    benchmark:
        "results/benchmarks/tuning_runs.tsv"
    priority: 10
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.tuning_runs_mem_mb),
        runtime=per_job(res.tuning_runs_runtime),
    params:
        settings=get_tuning_settings(),
    script:
        "../scripts/tuning_runs.py"


rule tuned:
    input:
        benchmark="results/benchmark.nc",
        tuning="results/fishtest/tuning.nc",
    output:
        csv=report(
            "results/tables/tuned.csv",
            caption="../report/tuned.rst",
            category="Tables",
            labels={"table": "tuned settings"},
        ),
        md="results/tables/tuned.md",
    log:
        "results/logs/tuned.log",
    benchmark:
        "results/benchmarks/tuned.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.tuned_mem_mb),
        runtime=per_job(res.report_runtime),
    script:
        "../scripts/tuned.py"
