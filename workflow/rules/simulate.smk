# Simulations: one job per optimizer arm x batch mode x scenario x seed chunk, except
# that the arms of one hyperparameter sweep share a job (rule simulate_sweep_<name>):
# a sweep's arms differ in one number, and one process for all of them pays the
# Python start-up and reads the schedule once instead of once per arm.
# The run files are temp() (common.smk, run_file): Snakemake deletes them once combine
# has written results/benchmark.nc, unless the configuration sets keep_run_files: true.


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
        mem_mb=per_chunk(res.schedule_mem_mb),
        runtime=per_chunk(res.simulate_runtime),
    params:
        settings=get_schedule_settings,
    script:
        "../scripts/schedule.py"


rule simulate:
    input:
        schedule=get_schedule,
    output:
        run=run_file(
            "results/runs/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.nc"
        ),
    log:
        "results/logs/simulate/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.log",
    benchmark:
        "results/benchmarks/simulate/{batch_mode}/{scenario}/{optimizer}/seeds-{a}-{b}.tsv"
    wildcard_constraints:
        optimizer=_alternatives(UNSWEPT),
    group:
        "simulate"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=per_chunk(res.simulate_mem_mb),
        runtime=per_chunk(res.simulate_runtime),
    params:
        cells=get_cell_settings,
    script:
        "../scripts/simulate.py"


for _sweep, _arms in SWEEP_ARMS.items():

    rule:
        name:
            sweep_rule_name(_sweep)
        input:
            schedule=get_schedule,
        output:
            runs=[
                run_file(
                    f"results/runs/{{batch_mode}}/{{scenario}}/{arm}/seeds-{{a}}-{{b}}.nc"
                )
                for arm in _arms
            ],
        log:
            f"results/logs/simulate/{{batch_mode}}/{{scenario}}/{_sweep}.sweep/seeds-{{a}}-{{b}}.log",
        benchmark:
            f"results/benchmarks/simulate/{{batch_mode}}/{{scenario}}/{_sweep}.sweep/seeds-{{a}}-{{b}}.tsv"
        group:
            "simulate"
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=per_chunk(res.simulate_mem_mb),
            runtime=per_chunk(res.sweep_runtime, len(_arms)),
        params:
            cells=get_sweep_settings(_arms),
        # the console line instead of every arm's output path
        message:
            f"simulate {{wildcards.batch_mode}}/{{wildcards.scenario}}: the {len(_arms)} arms "
            f"of {_sweep}, seeds {{wildcards.a}}-{{wildcards.b}} (log: {{log}})"
        script:
            "../scripts/simulate.py"
