# Simulations: one job per arm group x scenario x seed chunk, which runs the group's
# arms in every batch mode of that scenario (one cell after another). An arm group is
# the arms of one hyperparameter sweep (rule simulate_sweep_<name>) or every arm outside
# a sweep (rule simulate). One process per group and scenario pays the Python start-up
# and Snakemake's per-job bookkeeping once instead of once per arm and cell: 195 jobs
# of about a second of fixed cost each became 55 in the default grid
# (docs/performance.md). A sweep's arms differ in one number and are replayed
# together, one replay of arms x seeds rows (spsa_bench.engine.stack: the per-event work
# outside the optimizer's update is paid once for every arm), each arm's run
# bit-identical to its own replay (docs/benchmark.md, "Sweeps"); so are the arms outside
# a sweep where they can share a replay (arms of one kind), else one after another.
# Editing one arm's settings reruns its group's jobs (a sweep's, or the unswept arms'),
# editing a scenario that scenario's jobs.
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


if UNSWEPT:

    rule simulate:
        input:
            schedules=get_schedules,
        output:
            runs=group_run_files(UNSWEPT),
        log:
            "results/logs/simulate/{scenario}/unswept/seeds-{a}-{b}.log",
        benchmark:
            "results/benchmarks/simulate/{scenario}/unswept/seeds-{a}-{b}.tsv"
        group:
            "simulate"
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=per_chunk(res.group_mem_mb, len(UNSWEPT), False),
            runtime=per_chunk(res.group_runtime, len(UNSWEPT), len(BATCH_MODES), False),
        params:
            schedules=get_schedule_map,
            cells=get_group_settings(UNSWEPT),
        # the console line instead of every arm's output path
        message:
            f"simulate: {{wildcards.scenario}}, seeds {{wildcards.a}}-{{wildcards.b}}: the "
            f"{len(UNSWEPT)} arms outside a sweep in {len(BATCH_MODES)} batch mode(s) (log: {{log}})"
        script:
            "../scripts/simulate.py"


for _sweep, _arms in SWEEP_ARMS.items():

    rule:
        name:
            sweep_rule_name(_sweep)
        input:
            schedules=get_schedules,
        output:
            **tuning_part_output(_sweep),
            runs=group_run_files(_arms),
        log:
            f"results/logs/simulate/{{scenario}}/{_sweep}.sweep/seeds-{{a}}-{{b}}.log",
        benchmark:
            f"results/benchmarks/simulate/{{scenario}}/{_sweep}.sweep/seeds-{{a}}-{{b}}.tsv"
        group:
            "simulate"
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=per_chunk(res.group_mem_mb, len(_arms), True),
            runtime=per_chunk(res.group_runtime, len(_arms), len(BATCH_MODES), True),
        # tuning_seeds only with a tuning section (without one the jobs are as before)
        params:
            **tuning_seeds_param(),
            schedules=get_schedule_map,
            cells=get_group_settings(_arms),
        # the console line instead of every arm's output path
        message:
            f"{sweep_rule_name(_sweep)}: {{wildcards.scenario}}, seeds {{wildcards.a}}-{{wildcards.b}}: "
            f"the {len(_arms)} arms of {_sweep} in {len(BATCH_MODES)} batch mode(s) (log: {{log}})"
        script:
            "../scripts/simulate.py"
