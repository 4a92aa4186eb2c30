# Macro-versus-micro validation (`spsa-bench validate`) of every configured arm
# with its own hyperparameters: one job for all arms (the plotting start-up is
# paid once), at a priority above the simulations so it starts first (common.smk,
# "Priorities").
# Arms whose kind has no micro reference are skipped (one line in the log); a failing
# gate fails the job.


rule validate_optimizers:
    output:
        nc=expand("results/validation/{arm}.nc", arm=VALIDATED),
        png=[
            report(
                f"results/validation/{arm}.png",
                caption="../report/validation.rst",
                category="Validation",
                labels={"optimizer arm": arm},
            )
            for arm in VALIDATED
        ],
        svg=expand("results/validation/{arm}.svg", arm=VALIDATED),
        gaps=expand("results/validation/{arm}_gaps.csv", arm=VALIDATED),
    log:
        "results/logs/validate_optimizers.log",
    benchmark:
        "results/benchmarks/validate_optimizers.tsv"
    priority: 1
    group:
        "validation"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=JOB_OVERHEAD_MB + 330,  # 246 MB measured at most
        runtime=per_job(res.validation_runtime, len(VALIDATED)),
    params:
        arms=validation_settings(),
    # the console line instead of every output path
    message:
        "validate_optimizers: each arm against its reference, into results/validation/ (log: {log})"
    script:
        "../scripts/validate.py"


rule validation_gaps:
    input:
        gaps=rules.validate_optimizers.output.gaps,
    output:
        report(
            "results/tables/validation_gaps.csv",
            caption="../report/validation_gaps.rst",
            category="Tables",
            labels={"table": "validation gaps", "format": "CSV"},
        ),
    log:
        "results/logs/validation_gaps.log",
    benchmark:
        "results/benchmarks/validation_gaps.tsv"
    group:
        "validation"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=JOB_OVERHEAD_MB + 120,  # 83 MB measured
        runtime=1,
    message:
        "validation_gaps: {output} from the arms' gap tables (log: {log})"
    script:
        "../scripts/validation_gaps.py"
