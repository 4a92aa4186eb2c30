"""The default console (profiles/default, issue 32 item 7): no line listing hundreds of
paths, no per-job reason, no "Shell command: None". A dry run prints each job as a real
run does, so a dry run of the default grid shows what a user's console would.

That a failing job still prints in full (its error block and log) is checked with a real
failure in tests/e2e/test_reproducibility.py (a truncated run file given to combine)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: Longest console line allowed for a job (the old combine line listed ~800 run files:
#: 58,000 characters; a job with its log, wildcards and resources is ~300).
LONGEST = 500


@pytest.fixture(scope="module")
def dry_run(snakemake_env, tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("console")
    done = subprocess.run(
        [
            str(BIN / "snakemake"),
            "-n",
            "--directory",
            str(work),
            "--snakefile",
            str(REPO / "Snakefile"),
            "--configfile",
            str(REPO / "config" / "config.yaml"),
            "--replace-workflow-config",
        ],
        cwd=work,
        env=snakemake_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def job_lines(output: str) -> list[str]:
    """The lines of the jobs (before the dry run's closing summary of reasons)."""
    return output.split("\nReasons:\n", 1)[0].splitlines()


def test_the_default_console_has_no_long_lines(dry_run):
    lines = job_lines(dry_run)
    assert len(lines) > 300  # the jobs are there (77 of them)
    longest = max(lines, key=len)
    assert len(longest) <= LONGEST, longest[:300]
    assert "Shell command" not in dry_run
    assert not any(line.strip().startswith(("reason:", "Reason:")) for line in lines)


def test_long_io_lists_are_replaced_by_one_line_messages(dry_run):
    lines = job_lines(dry_run)
    assert any(
        "combine: the run files into results/benchmark.nc (log: results/logs/combine.log)" in line
        for line in lines
    )
    assert any(
        "simulate_sweep_spsa_sweep: calibrated, seeds 0-99: the 5 arms of spsa-sweep in 3 "
        "batch mode(s)" in line
        for line in lines
    )
    assert any("all: every output of the configuration is up to date" in line for line in lines)
    # a rule with short lists still shows its files
    assert any(line.strip().startswith("output: results/tables/convergence.csv") for line in lines)


def test_the_report_command_repeats_the_options_that_chose_the_configuration():
    """A run's closing message names the report command with the run's configuration
    options (a `--configfile` run's report without it looks for the default grid's
    files and fails), its other options left out."""
    from spsa_bench.workflow import done_message, run_options

    argv = [
        "--cores", "2", "--configfile", "my grid.yaml", "--config", "seeds={count: 4}",
        "keep_run_files=true", "--quiet", "rules", "--directory=work", "-s", "Snakefile",
        "extra", "--profile", "profiles/seeds-1000", "--replace-workflow-config", "-n",
    ]  # fmt: skip
    options = run_options(argv)
    assert options == [
        "--configfile", "my grid.yaml", "--config", "seeds={count: 4}", "keep_run_files=true",
        "--directory=work", "-s", "Snakefile", "--profile", "profiles/seeds-1000",
        "--replace-workflow-config",
    ]  # fmt: skip
    line = done_message("nowhere", options).splitlines()[-1]
    assert line == (
        "  the report: snakemake --report nowhere/report.html --configfile 'my grid.yaml' "
        "--config 'seeds={count: 4}' keep_run_files=true --directory=work -s Snakefile "
        "--profile profiles/seeds-1000 --replace-workflow-config"
    )
    assert done_message("nowhere").splitlines()[-1].endswith("--report nowhere/report.html")
