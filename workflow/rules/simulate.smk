# Simulations: one job per optimizer arm x batch mode x scenario x seed chunk, except
# that the arms of one hyperparameter sweep share a job (rule simulate_sweep_<name>):
# a sweep's arms differ in one number, and one process for all of them pays the
# Python start-up and reads the schedule once instead of once per arm. The job
# replays its arms together, one replay of arms x seeds rows (spsa_bench.engine.stack:
# the per-event work outside the optimizer's update is paid once for every arm), each
# arm's run bit-identical to its own replay (docs/benchmark.md, "Sweeps").
# The run files are temp() (common.smk, run_file): Snakemake deletes them once combine
# has written results/benchmark.nc, unless the configuration sets keep_run_files: true.
# With a `tuning` section, each sweep job also replays its share of the tuning seeds
# (spsa_bench.workflow.chunk_tuning_seeds; all of them when there is one seed chunk)
# as extra rows of the same replays: a replay costs per event, not per row, so this
# adds a few percent to the job instead of a second replay (docs/benchmark.md,
# "Tuning protocol"). The run files hold the chunk's seeds only, bit-identical to a
# replay of those alone; the tuning losses go to results/fishtest/tuning/..., which
# rule tuning_runs (aggregate.smk) gathers.


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
            **tuning_part_output(_sweep),
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
            mem_mb=per_chunk(res.sweep_mem_mb, len(_arms)),
            runtime=per_chunk(res.sweep_runtime, len(_arms)),
        # tuning_seeds only with a tuning section (without one the jobs are as before)
        params:
            **tuning_seeds_param(),
            cells=get_sweep_settings(_arms),
        # the console line instead of every arm's output path
        message:
            f"simulate {{wildcards.batch_mode}}/{{wildcards.scenario}}: the {len(_arms)} arms "
            f"of {_sweep}, seeds {{wildcards.a}}-{{wildcards.b}} (log: {{log}})"
        script:
            "../scripts/simulate.py"
