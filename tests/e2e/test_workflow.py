"""The Snakemake workflow: lint, formatting, configuration errors, the job grid,
and the tiny benchmark end to end (in a temporary working directory).

Snakemake runs as a subprocess from this Python environment. If
snakemake-executor-plugin-slurm is installed, it asks ``scontrol`` for the
cluster configuration when Snakemake starts and waits up to 10 s when no SLURM
controller answers; these local runs put a stub ``scontrol`` that fails at
once first on the PATH so that probe does not slow them down.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml

from spsa_bench.config.loader import read_yaml, resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.optimizers import REGISTRY
from spsa_bench.results.cf import open_labelled

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def env(snakemake_env):
    return snakemake_env


def snakemake(env, *args, cwd=REPO, check=True, timeout=300):
    result = subprocess.run(
        [str(BIN / "snakemake"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        )
    return result


def simulate_jobs(path: Path) -> dict[str, int]:
    """Simulate jobs per rule and seed chunk of the configuration at ``path``: one per
    scenario for the arms outside a sweep (rule simulate) and one per sweep and scenario
    (simulate_sweep_<name>), each job running its arms in every batch mode."""
    config = resolve(read_yaml(path))
    scenarios = len(config.scenarios)
    sweeps = {arm.sweep for arm in config.optimizers.values() if arm.sweep is not None}
    unswept = any(arm.sweep is None for arm in config.optimizers.values())
    jobs = {"simulate": scenarios} if unswept else {}
    jobs |= {"simulate_sweep_" + re.sub(r"\W", "_", sweep): scenarios for sweep in sweeps}
    return jobs


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake run or dry run."""
    counts = {}
    block = output.split("Job stats:", 1)[1]
    for line in block.splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    return counts


@pytest.mark.slow
def test_lint_has_no_findings(env):
    result = snakemake(env, "--lint")
    text = result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition!" in text, text
    assert "Lints for" not in text, text


def test_snakefmt_check_passes():
    result = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_is_the_package_schema():
    link = REPO / "workflow" / "schemas" / "config.schema.yaml"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert (
        link.resolve()
        == (REPO / "src" / "spsa_bench" / "config" / "data" / "config.schema.yaml").resolve()
    )


@pytest.mark.slow
def test_semantic_config_error_is_one_clear_line(env, tmp_path):
    result = snakemake(
        env,
        "-n",
        "--directory",
        str(tmp_path),
        "--snakefile",
        str(REPO / "Snakefile"),
        "--configfile",
        str(TINY),
        "--replace-workflow-config",
        "--config",
        "baseline=nope",
        check=False,
    )
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert "invalid configuration: baseline = 'nope': not one of the optimizers" in text, text
    assert not (tmp_path / "results").exists()  # stopped before any job ran


@pytest.mark.slow
def test_full_grid_and_nested_overrides(env, tmp_path):
    """The default config expands to arms x batch modes x scenarios cells, a sweep's
    arms sharing one job per cell; a nested --config override re-chunks the seeds."""
    common = [
        "-n",
        "--directory",
        str(tmp_path),
        "--snakefile",
        str(REPO / "Snakefile"),
        "--configfile",
        str(REPO / "config" / "config.yaml"),
    ]
    result = snakemake(env, *common, "--config", "seeds={first: 0, count: 100, per_job: 50}")
    counts = job_counts(result.stdout + result.stderr)
    expected = simulate_jobs(REPO / "config" / "config.yaml")
    assert {rule: counts[rule] for rule in expected} == {
        rule: 2 * n for rule, n in expected.items()
    }
    # the three unswept arms (spsa, Autoselect, OpenBench's SPSA) and each of ten sweeps
    # (2SPSA's curvature floor the tenth): one job per scenario, in all 3 batch modes
    assert expected["simulate"] == 5 and len(expected) == 1 + 10
    assert counts["schedule"] == 2 * 2  # two asynchronous modes x two seed chunks
    assert counts["validate_optimizers"] == 1
    ademamix = "results/runs/async-fixed/mixed/ademamix-lr-0p01/seeds-50-99.nc"
    assert ademamix in result.stdout + result.stderr


@pytest.mark.slow
def test_a_configfile_replaces_the_default_config_without_any_flag(env, tmp_path):
    """From a directory that has config/config.yaml (the repository root, say), a
    --configfile is the whole configuration. Jobs submitted to a cluster are started
    with --configfiles but never with --replace-workflow-config, so a merge would give
    them the default file's grid beside the given one."""
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    common = ["-n", "--directory", str(tmp_path), "--snakefile", str(REPO / "Snakefile")]
    tiny_cells = simulate_jobs(TINY)["simulate"]
    tiny_run = snakemake(env, *common, "--configfile", str(TINY))
    assert job_counts(tiny_run.stdout + tiny_run.stderr)["simulate"] == tiny_cells
    # --config still overrides single keys of the given file ...
    override = snakemake(
        env,
        *common,
        "--configfile",
        str(TINY),
        "--config",
        "seeds={first: 0, count: 8, per_job: 4}",
    )
    assert job_counts(override.stdout + override.stderr)["simulate"] == 2 * tiny_cells
    # ... and without a --configfile the directory's config/config.yaml is the grid.
    default = snakemake(env, *common)
    default_jobs = simulate_jobs(REPO / "config" / "config.yaml")
    counts = job_counts(default.stdout + default.stderr)
    assert {rule: counts[rule] for rule in default_jobs} == default_jobs


@pytest.mark.slow
def test_tiny_benchmark_end_to_end(env, tmp_path):
    snakefile = str(REPO / "Snakefile")
    base = ["--directory", str(tmp_path), "--snakefile", snakefile, "--replace-workflow-config"]
    # keep_run_files: the run files are checked below and an edit reruns its cells only
    # (by default they are temp files, gone once combined: tests/e2e/test_reproducibility.py)
    keep = ["--config", "keep_run_files=true"]
    # about 160 s alone on two idle cores; under the README's command (pytest-xdist) it
    # shares them with another worker, hence more room than the other runs here
    tiny = ["--configfile", str(TINY), *keep, "--cores", "2", "--quiet"]
    run = snakemake(env, *base, *tiny, timeout=1200)
    config = yaml.safe_load(TINY.read_text())
    optimizers, modes, scenarios = (
        list(config["optimizers"]),
        list(config["batch_modes"]),
        list(config["scenarios"]),
    )
    results = tmp_path / "results"

    # one run file per cell and seed chunk
    for mode in modes:
        for scenario in scenarios:
            for optimizer in optimizers:
                assert (results / "runs" / mode / scenario / optimizer / "seeds-0-3.nc").is_file()

    # the combined dataset opens in one call, with the grid's dims and no missing trajectory
    with open_labelled(results / "benchmark.nc") as ds:
        assert dict(ds["elo_loss"].sizes) == {
            "optimizer": len(optimizers),
            "batch_mode": len(modes),
            "scenario": len(scenarios),
            "seed": config["seeds"]["count"],
            "pairs": config["checkpoints"],
        }
        assert [str(v) for v in ds["optimizer"].values] == optimizers
        assert ds.sizes["param"] == 8 and ds.sizes["worker"] == 20
        assert not ds["elo_loss"].isnull().any()

    convergence = pd.read_csv(results / "tables" / "convergence.csv")
    assert len(convergence) == len(optimizers) * len(modes) * len(scenarios)
    assert not convergence.duplicated(["optimizer", "batch_mode", "scenario"]).any()
    assert (convergence["n_seeds"] == 4).all()
    kpis = pd.read_csv(results / "tables" / "async.csv")
    assert list(kpis["batch_mode"]) == modes
    gaps = pd.read_csv(results / "tables" / "validation_gaps.csv")
    validated = {name for name in optimizers if REGISTRY[name].micro is not None}
    assert set(gaps["arm"]) == validated  # every arm with a micro reference is validated
    assert set(gaps["kind"]) == validated  # the tiny config's arms are the kinds
    assert "common random numbers" in (results / "tables" / "convergence.md").read_text()
    # 2,000 pairs are far below the 21,659 the baseline spsa needs on calibrated: no
    # comparison is ranked, every table says so
    spsa = convergence[convergence["optimizer"] == "spsa"]
    assert (spsa["predicted_need_pairs"] > 2000).all() and not convergence["ranked"].any()
    for table in ("convergence.md", "ranks.md"):
        assert "**NOT RANKED**" in (results / "tables" / table).read_text()
    for name in (
        "convergence",
        "ecdf_pairs_to_target",
        "final_loss",
        "paired_difference",
        "async_staleness",
        "async_workers",
        "performance_profile",
        "aggregated_ecdf",
    ):
        for ext in ("png", "svg"):
            assert (results / "figures" / f"{name}.{ext}").stat().st_size > 5000, name
    for kind in optimizers:
        if REGISTRY[kind].micro is not None:  # spsa-autoselect has no micro reference
            assert (results / "validation" / f"{kind}.png").is_file()

    # the tune scenario's runs hold their instances and the rounding KPIs; the c_end
    # study's table, figure and file are there
    with open_labelled(results / "benchmark.nc") as ds:
        tune = ds.sel(scenario="tune-6")
        assert tune["w_true"].dims[-2:] == ("seed", "param")
        assert tune["probe_equal_fraction"].notnull().all()
        assert ds["probe_equal_fraction"].sel(scenario="mixed").isnull().all()
    ranks = pd.read_csv(results / "tables" / "ranks.csv")
    assert set(ranks["arm"]) == set(optimizers) and set(ranks["batch_mode"]) == set(modes)
    cend = pd.read_csv(results / "tables" / "cend.csv")
    assert set(cend["arm"]) == {"classic", "realized", "min-c2"} and len(cend) == 9
    assert (results / "figures" / "cend.png").stat().st_size > 5000
    assert (results / "fishtest" / "cend_study.nc").is_file()
    # the budget study: a row per scenario x budget x arm choice, its figure and file
    budget = pd.read_csv(results / "tables" / "budget_study.csv")
    assert len(budget) == 2 * 2 * (1 + 2) and set(budget["budget"]) == {500, 2000}
    tuned = budget[budget["arm"] == "spsa-constant"]
    assert set(tuned["setting"]) <= {"r_scale=0.5", "r_scale=2"}
    assert (results / "figures" / "budget_study.png").stat().st_size > 5000
    with open_labelled(results / "fishtest" / "budget_study.nc") as study:
        assert list(study["seed"].values) == [0, 1, 2, 3]
        assert list(study["tuning_seed"].values) == [100, 101, 102, 103]

    # the report is one self-contained HTML file with every figure and table, built by
    # the command the run printed last (it repeats the run's --configfile, --config...)
    report = results / "report.html"
    (printed,) = [line for line in run.stdout.splitlines() if "the report: " in line]
    command = shlex.split(printed.split("the report: ", 1)[1])
    assert command[:3] == ["snakemake", "--report", "results/report.html"]
    assert command[3:] == [*base, "--configfile", str(TINY), *keep]
    snakemake(env, *command[1:])
    text = report.read_text()
    assert report.stat().st_size > 100_000 and "<html" in text[:2000].lower()
    # every table also as a page the report shows inline, its verdicts included
    pages = ["convergence", "async", "ranks", "validation_gaps", "cend", "budget_study"]
    for name in pages:
        page = (results / "tables" / f"{name}.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and "<table>" in page, name
        assert f"tables/{name}.html" in text, name
    assert "NOT RANKED" in (results / "tables" / "ranks.html").read_text()

    # editing one arm re-runs its group's simulations (the tiny grid sweeps nothing: the
    # jobs of the arms outside a sweep, one per scenario) and the aggregation only
    edited = yaml.safe_load(TINY.read_text())
    edited["optimizers"]["sf-sgd"] = {"lr": 0.02}
    edited["keep_run_files"] = True
    edited_path = tmp_path / "edited.yaml"
    edited_path.write_text(yaml.safe_dump(edited))
    dry = snakemake(env, *base, "--configfile", str(edited_path), "-n")
    out = dry.stdout + dry.stderr
    logs = set(re.findall(r"\(log: results/logs/simulate/([^/]+)/unswept/seeds-0-3\.log\)", out))
    assert logs == set(scenarios)
    counts = job_counts(out)
    assert counts["simulate"] == len(scenarios)
    # validation runs the configured arms with their hyperparameters: it reruns too
    assert counts["validate_optimizers"] == 1
    assert "schedule" not in counts and "async_figures" not in counts


@pytest.mark.slow
def test_the_fishtest_tune_example_runs_through_the_workflow(env, tmp_path):
    """config/fishtest-tune.yaml (a 20-line block, games 60,000, STC, stochastic
    rounding) runs end to end; a few seeds keep it short."""
    base = ["--directory", str(tmp_path), "--snakefile", str(REPO / "Snakefile")]
    config = REPO / "config" / "fishtest-tune.yaml"
    seeds = "seeds={first: 0, count: 3, per_job: 3}"
    snakemake(env, *base, "--replace-workflow-config", "--configfile", str(config),
              "--config", seeds, "--cores", "2", "--quiet", timeout=600)  # fmt: skip
    with open_labelled(tmp_path / "results" / "benchmark.nc") as ds:
        assert ds.sizes["param"] == 20 and int(ds["pairs"].values[-1]) == 30_000
        assert ds["probe_equal_fraction"].notnull().all()  # ContHistWeight's c_end is 0.2
        assert float(ds["probe_equal_fraction"].max()) > 0
        assert float(ds["autoselect_games"].sel(optimizer="spsa-autoselect")) >= 1000
    table = pd.read_csv(tmp_path / "results" / "tables" / "convergence.csv")
    assert set(table["optimizer"]) == {"spsa", "spsa-realized", "spsa-min-c2", "spsa-autoselect"}


@pytest.mark.slow
def test_a_copy_of_the_workflow_reads_its_own_config(env, tmp_path):
    """The catalog layout: a copy of the workflow whose config/config.yaml is the tiny one."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "workflow", copy / "workflow")  # follows the schema symlink
    shutil.copytree(REPO / "profiles" / "default", copy / "profiles" / "default")
    shutil.copy(REPO / "Snakefile", copy / "Snakefile")
    (copy / "config").mkdir()
    shutil.copy(TINY, copy / "config" / "config.yaml")
    result = snakemake(env, "-n", cwd=copy)
    assert job_counts(result.stdout + result.stderr)["simulate"] == simulate_jobs(TINY)["simulate"]


@pytest.mark.slow
def test_the_tuned_rule_chooses_on_tuning_seeds_and_reports_on_the_test_seeds(env, tmp_path):
    """A swept arm and a tuning section: the workflow runs the tuning protocol and writes
    the tuned table (one sync mode, to stay short)."""
    raw = yaml.safe_load(TINY.read_text())
    # values out of their names' sorted order: each run file is still its own arm's
    raw["optimizers"] = {"spsa": {}, "adam": {"lr": [0.08, 0.02]}}
    raw["batch_modes"] = {"sync": raw["batch_modes"]["sync"]}
    raw.pop("cend_study", None)
    raw.pop("budget_study", None)
    raw["tuning"] = {"seeds": {"first": 100, "count": 3}}
    config = tmp_path / "tuning.yaml"
    config.write_text(yaml.safe_dump(raw))
    base = ["--directory", str(tmp_path), "--snakefile", str(REPO / "Snakefile")]
    # the sweep's two arms share one simulate job per cell
    dry = snakemake(env, *base, "--replace-workflow-config", "--configfile", str(config), "-n")
    counts = job_counts(dry.stdout + dry.stderr)
    assert counts["simulate_sweep_adam"] == len(raw["scenarios"]) and counts["simulate"] == len(
        raw["scenarios"]
    )
    snakemake(env, *base, "--replace-workflow-config", "--configfile", str(config),
              "--cores", "2", "--quiet", "--config", "keep_run_files=true",
              timeout=600)  # fmt: skip
    # ... and write each arm's run exactly as a run of that arm alone (kept to read it)
    scenario = next(iter(raw["scenarios"]))
    bench = resolve(raw)
    alone = simulate(
        bench, optimizer="adam-lr-0p08", batch_mode="sync", scenario=scenario,
        seeds=bench.seed_range(),
    )  # fmt: skip
    run = tmp_path / "results" / "runs" / "sync" / scenario / "adam-lr-0p08" / "seeds-0-3.nc"
    with xr.open_dataset(run) as ds:
        np.testing.assert_array_equal(ds["theta"].values, alone["theta"].values)
        np.testing.assert_array_equal(ds["elo_loss"].values, alone["elo_loss"].values)
    # the tuning seeds ran inside the sweep jobs: the same losses as spsa-bench tune's
    from spsa_bench.config.sections.tuning import parse
    from spsa_bench.studies.tuning import run_tuning

    reference = run_tuning(bench, parse(bench))
    with open_labelled(tmp_path / "results" / "fishtest" / "tuning.nc") as gathered:
        np.testing.assert_array_equal(
            gathered["final_elo_loss"].values, reference["final_elo_loss"].values
        )
        assert list(gathered["arm"].values) == list(reference["arm"].values)
    tuned = pd.read_csv(tmp_path / "results" / "tables" / "tuned.csv")
    assert set(tuned["sweep"]) == {"adam"} and set(tuned["tuning"]) == {"oracle", "robust"}
    assert set(tuned["setting"]) <= {"lr=0.02", "lr=0.08"}
    assert "held-out" in (tmp_path / "results" / "tables" / "tuned.md").read_text().lower()
    sensitivity = pd.read_csv(tmp_path / "results" / "tables" / "sensitivity.csv")
    assert set(sensitivity["arm"]) == {"adam-lr-0p02", "adam-lr-0p08"}
    assert (tmp_path / "results" / "figures" / "sensitivity.png").stat().st_size > 5000

    # an edit reruns its own arm group's simulate jobs only: the unswept arm's edit
    # leaves the sweep's jobs alone, and the sweep's edit leaves the unswept arm's
    for arm, settings, reruns, stays in [
        ("spsa", {"r_end": 0.003}, "simulate", "simulate_sweep_adam"),
        ("adam", {"lr": [0.08, 0.03]}, "simulate_sweep_adam", "simulate"),
    ]:
        edited = {**raw, "optimizers": {**raw["optimizers"], arm: settings}}
        edited_path = tmp_path / f"edited-{arm}.yaml"
        edited_path.write_text(yaml.safe_dump(edited))
        dry = snakemake(env, *base, "--replace-workflow-config", "--configfile",
                        str(edited_path), "--config", "keep_run_files=true", "-n")  # fmt: skip
        counts = job_counts(dry.stdout + dry.stderr)
        assert counts.get(reruns) == len(raw["scenarios"]), (arm, counts)
        assert stays not in counts, (arm, counts)
