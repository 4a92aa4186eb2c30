# spsa-bench: the benchmark workflow.
#
#   snakemake --cores all                      # the full benchmark of config/config.yaml
#   snakemake --cores 2 --configfile .test/config/config.yaml --replace-workflow-config
#   snakemake --report results/report.html     # self-contained HTML report
#
# Rules live in workflow/rules/, their thin scripts in workflow/scripts/ and the
# logic in the spsa_bench package (src/). See docs/benchmark.md.

from snakemake.utils import min_version

min_version("8.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/validation.smk"


rule all:
    default_target: True
    input:
        get_final_outputs(),
