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
    # the console line instead of every input path (one line of ~58,000 characters)
    message:
        "combine: the run files into {output} (log: {log})"
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
            labels={"table": "convergence", "format": "CSV"},
        ),
        convergence_md="results/tables/convergence.md",
        kpis=report(
            "results/tables/async.csv",
            caption="../report/async_table.rst",
            category="Tables",
            labels={"table": "asynchronous KPIs", "format": "CSV"},
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
# chosen on the held-out tuning seeds, reported on the benchmark's seeds (rule
# tuned). The tuning seeds are replayed inside the sweep jobs (simulate.smk, extra
# rows of their replays); rule tuning_runs only gathers their losses into
# results/fishtest/tuning.nc, the dataset `spsa-bench tune` computes in one process.
# Runs only when the configuration has a tuning section (and a swept arm).


rule tuning_runs:
    input:
        parts=get_tuning_parts,
    output:
        nc="results/fishtest/tuning.nc",
    log:
        "results/logs/tuning_runs.log",
    benchmark:
        "results/benchmarks/tuning_runs.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.tuning_runs_mem_mb),
        runtime=per_job(res.tuning_runs_runtime),
    params:
        settings=get_tuning_settings(),
    # the console line instead of every input path
    message:
        "tuning_runs: the sweep jobs' tuning losses into {output.nc} (log: {log})"
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
            labels={"table": "tuned settings", "format": "CSV"},
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


# The tables as pages of the report (its panel shows an HTML result inline; a CSV or
# Markdown one only as a download): one job for every table of table_pages(), after
# the last of them (a study's, at the end of the run). Each page is the table's
# Markdown form, verdicts included, or its CSV when it has none.


rule table_pages:
    input:
        **{name: source for name, (source, _, _) in table_pages().items()},
    output:
        **{
            name: report(
                f"results/tables/{name}.html",
                caption=f"../report/{caption}",
                category="Tables",
                labels={"table": label, "format": "page"},
            )
            for name, (_, caption, label) in table_pages().items()
        },
    log:
        "results/logs/table_pages.log",
    benchmark:
        "results/benchmarks/table_pages.tsv"
    conda:
        ENV
    threads: 1
    # reads and writes a few small text files: the interpreter and the job's overhead
    resources:
        mem_mb=JOB_OVERHEAD_MB + 100,
        runtime=5,
    params:
        titles={name: label for name, (_, _, label) in table_pages().items()},
    script:
        "../scripts/table_pages.py"
