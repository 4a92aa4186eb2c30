# Figures: PNG (shown in the report) and SVG of every figure under results/figures/.
# Three jobs, each paying the plotting libraries' start-up once: the asynchronous
# diagnostics need only the schedules, so they are drawn while the simulations
# run; the other two share the cores once the combined dataset exists.


rule convergence_figures:
    input:
        benchmark="results/benchmark.nc",
        tuning=get_tuning_file,
    output:
        convergence=report(
            "results/figures/convergence.png",
            caption="../report/convergence.rst",
            category="Convergence",
            labels={"figure": "convergence curves"},
        ),
        convergence_svg="results/figures/convergence.svg",
        ecdf=report(
            "results/figures/ecdf_pairs_to_target.png",
            caption="../report/ecdf_pairs_to_target.rst",
            category="Convergence",
            labels={"figure": "runtime ECDF"},
        ),
        ecdf_svg="results/figures/ecdf_pairs_to_target.svg",
    log:
        "results/logs/convergence_figures.log",
    benchmark:
        "results/benchmarks/convergence_figures.tsv"
    group:
        "aggregate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.figures_mem_mb),
        runtime=per_job(res.report_runtime),
    params:
        targets=list(BENCH.targets),
    script:
        "../scripts/figures.py"


rule comparison_figures:
    input:
        benchmark="results/benchmark.nc",
        tuning=get_tuning_file,
        convergence="results/tables/convergence.csv",
    output:
        final_loss=report(
            "results/figures/final_loss.png",
            caption="../report/final_loss.rst",
            category="Convergence",
            labels={"figure": "final Elo loss"},
        ),
        final_loss_svg="results/figures/final_loss.svg",
        paired_difference=report(
            "results/figures/paired_difference.png",
            caption="../report/paired_difference.rst",
            category="Convergence",
            labels={"figure": "paired difference"},
        ),
        paired_difference_svg="results/figures/paired_difference.svg",
    log:
        "results/logs/comparison_figures.log",
    benchmark:
        "results/benchmarks/comparison_figures.tsv"
    group:
        "aggregate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.figures_mem_mb),
        runtime=per_job(res.report_runtime),
    params:
        baseline=BENCH.baseline,
    script:
        "../scripts/figures.py"


rule async_figures:
    input:
        schedules=get_schedule_files,
    output:
        async_staleness=report(
            "results/figures/async_staleness.png",
            caption="../report/async_staleness.rst",
            category="Asynchronous batch modes",
            labels={"figure": "staleness"},
        ),
        async_staleness_svg="results/figures/async_staleness.svg",
        async_workers=report(
            "results/figures/async_workers.png",
            caption="../report/async_workers.rst",
            category="Asynchronous batch modes",
            labels={"figure": "worker pool"},
        ),
        async_workers_svg="results/figures/async_workers.svg",
    log:
        "results/logs/async_figures.log",
    benchmark:
        "results/benchmarks/async_figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.async_figures_mem_mb),
        runtime=per_job(res.async_figures_runtime),
    params:
        modes=ASYNC_MODES,
    script:
        "../scripts/figures.py"


# Comparisons over all problems (scenario x batch mode): the Dolan-More performance
# profile, the runtime ECDF aggregated over problems (COCO) and the rank table.


rule ranking:
    input:
        benchmark="results/benchmark.nc",
        tuning=get_tuning_file,
    output:
        performance_profile=report(
            "results/figures/performance_profile.png",
            caption="../report/performance_profile.rst",
            category="Comparisons",
            labels={"figure": "performance profile"},
        ),
        performance_profile_svg="results/figures/performance_profile.svg",
        aggregated_ecdf=report(
            "results/figures/aggregated_ecdf.png",
            caption="../report/aggregated_ecdf.rst",
            category="Comparisons",
            labels={"figure": "aggregated runtime ECDF"},
        ),
        aggregated_ecdf_svg="results/figures/aggregated_ecdf.svg",
        ranks=report(
            "results/tables/ranks.csv",
            caption="../report/rank_table.rst",
            category="Tables",
            labels={"table": "ranks", "format": "CSV"},
        ),
        ranks_md="results/tables/ranks.md",
        profile_csv="results/tables/performance_profile.csv",
    log:
        "results/logs/ranking.log",
    benchmark:
        "results/benchmarks/ranking.tsv"
    group:
        "aggregate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.ranking_mem_mb),
        runtime=per_job(res.report_runtime),
    params:
        targets=list(BENCH.targets),
        baseline=BENCH.baseline,
    script:
        "../scripts/ranking.py"


# The sensitivity figure (DeepOBS's tuneability view): only when an arm is swept.


rule sensitivity:
    input:
        benchmark="results/benchmark.nc",
    output:
        sensitivity=report(
            "results/figures/sensitivity.png",
            caption="../report/sensitivity.rst",
            category="Comparisons",
            labels={"figure": "sensitivity"},
        ),
        sensitivity_svg="results/figures/sensitivity.svg",
        table="results/tables/sensitivity.csv",
    log:
        "results/logs/sensitivity.log",
    benchmark:
        "results/benchmarks/sensitivity.tsv"
    group:
        "aggregate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_job(res.report_mem_mb),
        runtime=per_job(res.report_runtime),
    params:
        sweeps=SWEEPS,
    script:
        "../scripts/sensitivity.py"
