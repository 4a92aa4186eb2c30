# The c_end study of Fishtest tunes (fishtest #1912 and #1929): the config's
# cend_study arms at every c_end on one parameter-block scenario. Runs only when
# the configuration has a cend_study; see docs/fishtest.md.


rule cend_study:
    output:
        nc="results/fishtest/cend_study.nc",
        csv=report(
            "results/tables/cend.csv",
            caption="../report/cend_table.rst",
            category="Tables",
            labels={"table": "c_end study"},
        ),
        md="results/tables/cend.md",
        png=report(
            "results/figures/cend.png",
            caption="../report/cend.rst",
            category="Fishtest tunes",
            labels={"figure": "c_end study"},
        ),
        svg="results/figures/cend.svg",
    log:
        "results/logs/cend_study.log",
    benchmark:
        "results/benchmarks/cend_study.tsv"
    priority: -10
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cend_study_mem_mb,
        runtime=cend_study_runtime,
    params:
        settings=get_cend_study_settings(),
    script:
        "../scripts/cend_study.py"


# The workers study (fishtest #535): the config's workers_study arms and scenarios
# under one Fishtest worker pool at several sizes, paired with the synchronous mode.
# Runs only when the configuration has a workers_study; see docs/asynchrony.md.


rule workers_study:
    output:
        nc="results/fishtest/workers_study.nc",
        csv=report(
            "results/tables/workers.csv",
            caption="../report/workers_table.rst",
            category="Tables",
            labels={"table": "workers study"},
        ),
        md="results/tables/workers.md",
        png=report(
            "results/figures/workers.png",
            caption="../report/workers.rst",
            category="Fishtest tunes",
            labels={"figure": "workers study"},
        ),
        svg="results/figures/workers.svg",
        safe="results/tables/workers_safe.csv",
    log:
        "results/logs/workers_study.log",
    benchmark:
        "results/benchmarks/workers_study.tsv"
    priority: -10
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=workers_study_mem_mb,
        runtime=workers_study_runtime,
    params:
        settings=get_workers_study_settings(),
    script:
        "../scripts/workers_study.py"


# The budget study (issue 16): the config's budget_study arms at every budget, each
# budget its own run from the start, swept arms tuned per budget on held-out seeds.
# Runs only when the configuration has a budget_study; see docs/benchmark.md.


rule budget_study:
    output:
        nc="results/fishtest/budget_study.nc",
        csv=report(
            "results/tables/budget_study.csv",
            caption="../report/budget_study_table.rst",
            category="Tables",
            labels={"table": "budget study"},
        ),
        md="results/tables/budget_study.md",
        png=report(
            "results/figures/budget_study.png",
            caption="../report/budget_study.rst",
            category="Budget",
            labels={"figure": "budget study"},
        ),
        svg="results/figures/budget_study.svg",
    log:
        "results/logs/budget_study.log",
    benchmark:
        "results/benchmarks/budget_study.tsv"
    priority: -10
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=budget_study_mem_mb,
        runtime=budget_study_runtime,
    params:
        settings=get_budget_study_settings(),
    script:
        "../scripts/budget_study.py"
