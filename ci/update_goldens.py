"""Capture the golden files of tests/cli/test_golden_cli.py and tests/e2e/test_golden_workflow.py.

The goldens pin what the command line prints and which jobs the Snakemake workflow
plans, so a refactor can show it changed neither. Capture them from a checkout whose
behaviour is the reference (the starting commit, or this tree after an intended
change), never from code being changed::

    python ci/update_goldens.py --repo /path/to/reference/checkout   # write tests/golden/
    python ci/update_goldens.py                                      # from this tree
    python ci/update_goldens.py --repo CHECKOUT --only cli           # or --only workflow

The goldens are written under this script's tree (``tests/golden/``), whatever
``--repo`` is. The tests call the same functions on the tree under test:

* ``cli_outputs(repo)`` runs ``python -m spsa_bench ARGS`` for every case of
  :func:`cli_cases` with the code of ``repo/src``, in ``repo``, with the fixed
  environment of :func:`fixed_env` (``COLUMNS=100``); each case's standard output is
  ``tests/golden/cli/<case>.txt``, its exit status and standard error are in
  ``tests/golden/cli/cases.json`` beside the subcommands in ``COMMANDS`` order;
* ``workflow_jobs(repo, configfile)`` runs ``python ci/update_goldens.py --jobs FILE``, which
  builds the dry-run DAG of ``repo/Snakefile`` through Snakemake's Python API in a
  temporary working directory with no ``results/`` (every job planned) and prints
  each planned job's rule, wildcards, input, output, log, benchmark, priority,
  threads, resources, params (long strings as sha256 and length) and the rerun
  trigger Snakemake records for the params, the report() captions, categories and
  labels, and each rule's conda file and group: ``tests/golden/workflow/<name>.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
GOLDEN = HERE / "tests" / "golden"

#: The workflow goldens: file stem -> the --configfile given (None: the default config).
WORKFLOW_CONFIGS = {"test-config": ".test/config/config.yaml", "default-config": None}

#: Params strings longer than this are stored as their sha256 and length.
LONG_STRING = 256

#: Top-level entries of a checkout that a dry run's working directory leaves out.
NOT_LINKED = {".git", ".snakemake", "results", ".venv", ".venv-ci", ".pytest_cache"}


def fixed_env(repo: Path) -> dict[str, str]:
    """The environment of every captured command: the code of ``repo/src``, a 100-column
    terminal, a C UTF-8 locale, no bytecode written into the checkout."""
    return {
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.defpath,
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(Path(repo) / "src"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "COLUMNS": "100",
        "LINES": "50",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
    }


def commands(repo: Path) -> list[str]:
    """The subcommands of ``spsa_bench.cli.main.COMMANDS`` in ``repo``, in order."""
    code = (
        "import json; from spsa_bench.cli.main import COMMANDS; print(json.dumps(list(COMMANDS)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        env=fixed_env(repo),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def cli_cases(names: list[str]) -> dict[str, list[str]]:
    """Case name -> the arguments of ``spsa-bench``: the help of the program and of every
    subcommand, then the commands whose output needs no input file and is deterministic,
    then bad input (one-line errors, exit 2)."""
    cases = {"help": ["--help"], "version": ["--version"]}
    cases |= {f"help-{name}": [name, "--help"] for name in names}
    cases |= {
        "schema": ["schema"],
        "list-config": ["list", "--config", "config/config.yaml"],
        "list-test-config": ["list", "--config", ".test/config/config.yaml"],
        "noise": ["noise"],
        "noise-json": ["noise", "--json"],
        "noise-stc": ["noise", "--time-control", "STC", "--elo", "-30", "0", "7.5", "600"],
        "noise-custom": ["noise", "--draw-rate", "0.6", "--sigma2", "0.45", "--elo", "0", "10"],
        "error-no-command": [],
        "error-unknown-command": ["frobnicate"],
        "error-unknown-flag": ["--frobnicate"],
        "error-simulate-no-args": ["simulate"],
        "error-noise-bad-elo": ["noise", "--elo", "x"],
        "error-noise-bad-time-control": ["noise", "--time-control", "blitz"],
        "error-noise-sigma2-out-of-range": ["noise", "--draw-rate", "0.6", "--sigma2", "0.2"],
        "error-list-missing-config": ["list", "--config", "no-such-config.yaml"],
        "error-plan-seeds-range": ["plan", "examples/tune-stc.txt", "--seeds", "0-99"],
    }
    return cases


def run_cli(repo: Path, argv: list[str]) -> dict:
    """Exit status, standard output and standard error of ``spsa-bench ARGV`` in ``repo``."""
    result = subprocess.run(
        [sys.executable, "-m", "spsa_bench", *argv],
        cwd=repo,
        env=fixed_env(repo),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return {"exit": result.returncode, "stdout": result.stdout, "stderr": result.stderr}


def cli_outputs(repo: Path, cases: dict[str, list[str]]) -> dict[str, dict]:
    """:func:`run_cli` of every case (a few at a time), by case name."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = pool.map(lambda argv: run_cli(repo, argv), cases.values())
        return dict(zip(cases, results, strict=True))


# ---------------------------------------------------------------- workflow


def _relative(path, repo: Path) -> str:
    """``path`` relative to the checkout (captions, scripts and conda files)."""
    text = path if isinstance(path, str) else path.get_path_or_uri(secret_free=True)
    return os.path.relpath(os.path.realpath(text), os.path.realpath(repo))


def _param_value(value):
    """A params value as JSON, a long string as its sha256 and length."""
    if isinstance(value, str) and len(value) > LONG_STRING:
        digest = hashlib.sha256(value.encode()).hexdigest()
        return {"sha256": digest, "length": len(value)}
    return json.loads(json.dumps(value))


def _names(namedlist) -> dict:
    return {name: list(span) for name, span in namedlist._names.items()}


def _job_key(job) -> str:
    wildcards = " ".join(f"{key}={value}" for key, value in job.wildcards_dict.items())
    return f"{job.rule.name} {wildcards}".strip()


#: Resources Snakemake derives itself (from mem_mb, the cores and the machine).
DERIVED_RESOURCES = {"_cores", "_nodes", "tmpdir", "mem", "mem_mib", "disk", "disk_mib"}


def _job_record(job, workflow, repo: Path) -> dict:
    report = {}
    for path in job.output:
        flag = path.flags.get("report")
        if flag is not None:
            report[str(path)] = {
                "caption": None if flag.caption is None else _relative(flag.caption, repo),
                "category": flag.category,
                "subcategory": flag.subcategory,
                "labels": flag.labels,
                "patterns": list(flag.patterns),
                "htmlindex": flag.htmlindex,
            }
    trigger = json.dumps(workflow.persistence._params(job))
    return {
        "rule": job.rule.name,
        "wildcards": dict(job.wildcards_dict),
        "input": [str(path) for path in job.input],
        "input_names": _names(job.input),
        "output": [str(path) for path in job.output],
        "output_names": _names(job.output),
        "log": [str(path) for path in job.log],
        "benchmark": None if job.benchmark is None else str(job.benchmark),
        "priority": job.priority,
        "threads": job.threads,
        "resources": {
            key: value for key, value in job.resources.items() if key not in DERIVED_RESOURCES
        },
        "params": {name: _param_value(value) for name, value in job.params.items()},
        "params_trigger": {
            "sha256": hashlib.sha256(trigger.encode()).hexdigest(),
            "length": len(trigger),
        },
        "report": report,
    }


def _rule_record(rule, repo: Path) -> dict:
    """A rule's conda file (relative to the checkout) and group. Its script is left out:
    a refactor may move the code a job runs; a script's change reruns its jobs anyway."""
    conda = rule.conda_env
    if isinstance(conda, str) and not os.path.isabs(conda):
        basedir = rule.basedir.get_path_or_uri(secret_free=True)
        conda = _relative(os.path.join(basedir, conda), repo)
    group = rule._group  # rule.group is None unless the run is remote or a dry run
    return {
        "conda": conda if isinstance(conda, str | None) else repr(conda),
        "group": group if isinstance(group, str | None) else repr(group),
    }


def dump_jobs(repo: Path, configfile: str | None) -> dict:
    """The dry-run DAG of ``repo/Snakefile`` (with ``--configfile configfile`` when given)
    from an empty results folder: a working directory of links to the checkout's
    top-level entries but ``results/`` and ``.snakemake/``. Runs in this process (it
    changes directory and imports ``repo/src``): :func:`workflow_jobs` calls it in a
    subprocess."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    repo = Path(repo).resolve()
    with tempfile.TemporaryDirectory(prefix="golden-dag-") as tmp:
        workdir = Path(tmp)
        for entry in repo.iterdir():
            if entry.name not in NOT_LINKED:
                (workdir / entry.name).symlink_to(entry)
        os.chdir(workdir)
        configfiles = [Path(configfile)] if configfile else []
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
            workflow_api = api.workflow(
                # many cores, so each job's threads are what its rule declares
                resource_settings=ResourceSettings(cores=1024),
                config_settings=ConfigSettings(configfiles=configfiles),
                snakefile=repo / "Snakefile",
                workdir=workdir,
            )
            workflow_api.dag(DAGSettings())
            workflow = workflow_api._workflow
            workflow._prepare_dag(
                forceall=False, ignore_incomplete=True, lock_warn_only=True, nolock=True
            )
            workflow._build_dag()
            dag = workflow.dag
            workflow.async_run(dag.postprocess(update_needrun=False, check_initial=True))
            jobs = {}
            for job in dag.needrun_jobs():
                key = _job_key(job)
                assert key not in jobs, key
                jobs[key] = _job_record(job, workflow, repo)
            rules = {rule.name: _rule_record(rule, repo) for rule in workflow.rules}
            counts = {}
            for record in jobs.values():
                counts[record["rule"]] = counts.get(record["rule"], 0) + 1
            return {
                "configfile": configfile,
                "default_target": workflow.default_target,
                "job_counts": dict(sorted(counts.items())),
                "rules": dict(sorted(rules.items())),
                "jobs": dict(sorted(jobs.items())),
            }


def workflow_jobs(repo: Path, configfile: str | None) -> dict:
    """:func:`dump_jobs` in a subprocess with the code of ``repo/src``."""
    with tempfile.TemporaryDirectory(prefix="golden-jobs-") as tmp:
        out = Path(tmp) / "jobs.json"
        argv = [sys.executable, str(Path(__file__).resolve()), "--jobs", str(out)]
        argv += ["--repo", str(repo)] + (["--configfile", configfile] if configfile else [])
        env = fixed_env(repo)
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}")
        return json.loads(out.read_text())


def to_text(data: dict) -> str:
    """The stable text of a workflow golden."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


# ---------------------------------------------------------------- writing


def write_goldens(repo: Path, only: str | None = None, golden: Path = GOLDEN) -> None:
    """Every golden file (or only the ``cli`` or the ``workflow`` ones), captured from
    ``repo``."""
    repo = Path(repo).resolve()
    if only != "workflow":
        write_cli_goldens(repo, golden)
    if only != "cli":
        workflow_dir = golden / "workflow"
        workflow_dir.mkdir(parents=True, exist_ok=True)
        for stem, configfile in WORKFLOW_CONFIGS.items():
            text = to_text(workflow_jobs(repo, configfile))
            (workflow_dir / f"{stem}.json").write_text(text)
            print(f"wrote {workflow_dir / stem}.json from {repo}")


def write_cli_goldens(repo: Path, golden: Path) -> None:
    names = commands(repo)
    cases = cli_cases(names)
    outputs = cli_outputs(repo, cases)
    cli_dir = golden / "cli"
    cli_dir.mkdir(parents=True, exist_ok=True)
    for stale in cli_dir.glob("*.txt"):
        stale.unlink()
    manifest = {"commands": names, "cases": {}}
    for case, argv in cases.items():
        result = outputs[case]
        (cli_dir / f"{case}.txt").write_text(result["stdout"])
        manifest["cases"][case] = {
            "argv": argv,
            "exit": result["exit"],
            "stderr": result["stderr"],
        }
    (cli_dir / "cases.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(cases)} CLI goldens under {cli_dir} from {repo}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="checkout to capture from")
    parser.add_argument(
        "--jobs", type=Path, metavar="FILE", help="write the planned jobs as JSON (for the tests)"
    )
    parser.add_argument("--only", choices=["cli", "workflow"], help="write only these goldens")
    parser.add_argument("--configfile", help="with --jobs: the --configfile given to Snakemake")
    args = parser.parse_args()
    if args.jobs:
        out = args.jobs.resolve()  # before dump_jobs changes directory
        data = dump_jobs(args.repo, args.configfile)
        out.write_text(to_text(data))
    else:
        write_goldens(args.repo, args.only)


if __name__ == "__main__":
    main()
