# Simulations: one job per optimizer arm x batch mode x scenario x seed chunk.


rule schedule:
    output:
        "results/schedules/{batch_mode}/seeds-{a}-{b}.nc",
    log:
        "results/logs/schedule/{batch_mode}/seeds-{a}-{b}.log",
    benchmark:
        "results/benchmarks/schedule/{batch_mode}/seeds-{a}-{b}.tsv"
    group:
        "schedule"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=schedule_mem_mb,
        runtime=simulate_runtime,
    params:
        settings=get_schedule_settings,
    script:
        "../scripts/schedule.py"


rule simulate:
    input:
        schedule=get_schedule,
    output:
        run="results/runs/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.nc",
    log:
        "results/logs/simulate/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.log",
    benchmark:
        "results/benchmarks/simulate/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.tsv"
    group:
        "simulate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=simulate_mem_mb,
        runtime=simulate_runtime,
    params:
        cell=get_cell_settings,
    script:
        "../scripts/simulate.py"
