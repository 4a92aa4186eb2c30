# The studies: one rule per row of spsa_bench.studies.STUDIES (the c_end study, the
# workers study, the budget study, ...), a target only when the configuration has the
# row's section (get_final_outputs). Each runs its section over the configuration's
# seeds and writes its dataset, tables and figure; docs/benchmark.md, "Adding a
# study", says what a new row needs. The studies need no run file, so they run at
# priority -10 beside the grid.


def study_report(output, caption_dir="../report"):
    """A study's output path, wrapped in report() when the report shows it (a table as
    its CSV to download, beside its page from rule table_pages)."""
    if output.caption is None:
        return output.path
    labels = output.labels
    if output.path.endswith(".csv"):
        labels = {**labels, "format": "CSV"}
    return report(
        output.path,
        caption=f"{caption_dir}/{output.caption}",
        category=output.category,
        labels=labels,
    )


def study_outputs(row):
    return {output.name: study_report(output) for output in row.outputs}


for _key, _row in STUDIES.items():

    rule:
        name:
            _row.rule
        output:
            **study_outputs(_row),
        log:
            f"results/logs/{_row.rule}.log",
        benchmark:
            f"results/benchmarks/{_row.rule}.tsv"
        priority: _row.priority
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=per_job(res.study_mem_mb, _row),
            runtime=per_job(res.study_runtime, _row),
        params:
            settings=grid.to_json(STUDY_SETTINGS.get(_key)),
        script:
            "../scripts/study.py"
