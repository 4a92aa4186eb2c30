"""Helpers shared by the hostile-input suites (``test_hostile_round*.py``): the
before/after snapshot of a directory, and a workflow script run in a subprocess with a
stand-in ``snakemake`` object. Imported by name (pytest puts this folder on
``sys.path`` for the test modules beside it)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, tuple]:
    """Every file and directory under ``root``: kind, size, mtime and SHA-256."""
    state = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        state[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return state


def run_script(name: str, tmp_path: Path, **fields) -> tuple[int, list[str]]:
    """Run ``workflow/scripts/<name>.py`` in a subprocess with a stand-in ``snakemake``
    object (``fields``: input, output, params, config, rule; a :func:`named` value
    becomes a list with named entries and ``get``, as Snakemake's); its status and log
    lines."""
    log = tmp_path / f"{name}.log"
    fields = {"log": [str(log)], "scriptdir": str(REPO / "workflow" / "scripts"), **fields}
    code = f"""
import json, runpy
class Named(list):
    def __init__(self, items, **named):
        super().__init__(items)
        self.__dict__.update(named)
    def get(self, key, default=None):
        return self.__dict__.get(key, default)
def named(value):
    if isinstance(value, dict) and value.get("__named__"):
        return Named(value["items"], **value["named"])
    return value
fields = {{k: named(v) for k, v in json.loads({json.dumps(json.dumps(fields))}).items()}}
class Snakemake:
    pass
snakemake = Snakemake()
snakemake.__dict__.update(fields)
runpy.run_path({str(REPO / "workflow" / "scripts" / f"{name}.py")!r}, init_globals={{"snakemake": snakemake}})
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, log.read_text().strip("\n").split("\n")


def named(items=(), **attrs) -> dict:
    """A :func:`run_script` field of ``items`` with the named entries ``attrs``."""
    return {"__named__": True, "items": list(items), "named": attrs}


def tiny_run_files(config, base: Path, cells, arms) -> list[Path]:
    """Run files of ``arms`` in each ``"mode/scenario"`` of ``cells`` at seeds 0-3, written
    uncompressed under ``base/runs/<cell>/<arm>/seeds-0-3.nc`` as the workflow lays them out."""
    from spsa_bench.engine.simulate import simulate_run

    paths = []
    for cell in cells:
        mode, scenario = cell.split("/")
        for arm in arms:
            path = base / "runs" / cell / arm / "seeds-0-3.nc"
            path.parent.mkdir(parents=True, exist_ok=True)
            run = simulate_run(
                config, optimizer=arm, batch_mode=mode, scenario=scenario, seeds=range(4)
            )
            run.write(path, compress=False)
            paths.append(path)
    return paths
