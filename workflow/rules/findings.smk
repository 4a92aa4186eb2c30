# The run's findings (docs/benchmark.md, "Findings"): its conclusions computed from its
# tables, results/findings.md, and the same as the report's first page (category
# "1. Findings": the report lists its categories in alphabetical order). The tables it
# reads: spsa_bench.analysis.findings.workflow_inputs (the optional ones only when the
# configuration has their section).

from spsa_bench.analysis import findings as FINDINGS


rule findings:
    input:
        **FINDINGS.workflow_inputs(TUNING is not None, STUDY_SETTINGS),
    output:
        md="results/findings.md",
        html=report(
            "results/findings.html",
            caption="../report/findings.rst",
            category="1. Findings",
            labels={"page": "findings"},
        ),
    log:
        "results/logs/findings.log",
    benchmark:
        "results/benchmarks/findings.tsv"
    conda:
        ENV
    threads: 1
    # reads a few small CSV tables: the interpreter, pandas and the job's overhead
    resources:
        mem_mb=JOB_OVERHEAD_MB + 300,
        runtime=5,
    script:
        "../scripts/findings.py"
