# Macro-versus-micro validation (`spsa-bench validate`) of every optimizer kind
# the configuration uses: one job for all kinds (the plotting start-up is paid
# once), started early so it overlaps the simulations.


rule validate_optimizers:
    output:
        nc=expand("results/validation/{kind}.nc", kind=KINDS),
        png=[
            report(
                f"results/validation/{kind}.png",
                caption="../report/validation.rst",
                category="Validation",
                labels={"optimizer kind": kind},
            )
            for kind in KINDS
        ],
        svg=expand("results/validation/{kind}.svg", kind=KINDS),
        gaps=expand("results/validation/{kind}_gaps.csv", kind=KINDS),
    log:
        "results/logs/validate_optimizers.log",
    priority: 50
    group:
        "validation"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=JOB_OVERHEAD_MB + 400,
        runtime=validation_runtime,
    params:
        kinds=KINDS,
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
            labels={"table": "validation gaps"},
        ),
    log:
        "results/logs/validation_gaps.log",
    group:
        "validation"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=JOB_OVERHEAD_MB + 200,
        runtime=1,
    script:
        "../scripts/validation_gaps.py"
