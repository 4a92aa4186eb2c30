# spsa-bench: the benchmark workflow.
#
#   snakemake --cores all                      # the full benchmark of config/config.yaml
#   snakemake --cores 2 --configfile .test/config/config.yaml   # the tiny test benchmark
#   snakemake --report results/report.html     # self-contained HTML report
#
# Rules live in workflow/rules/, their thin scripts in workflow/scripts/ and the
# logic in the spsa_bench package (src/). See docs/benchmark.md.

import sys

from snakemake.utils import min_version

min_version("8.0")


# config/config.yaml unless --configfile (or --config configfile=PATH, read by the
# bounded loader only) names the configuration: a given file is the whole
# configuration, never merged into the default one. common.smk reads it; see
# docs/benchmark.md, "Input limits". `--config key=value` still overrides single keys.


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/validation.smk"
include: "workflow/rules/noise.smk"
include: "workflow/rules/calibration.smk"
include: "workflow/rules/studies.smk"
include: "workflow/rules/findings.smk"


# the report command repeats the run's --configfile, --config, --directory... (sys.argv:
# this process's own command line)
onsuccess:
    print(grid.done_message(options=grid.run_options(sys.argv[1:])))


rule all:
    default_target: True
    input:
        get_final_outputs(),
    # the console line instead of every final output's path
    message:
        "all: every output of the configuration is up to date"
