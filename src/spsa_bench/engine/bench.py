"""``spsa-bench bench``: timings of the vectorized core, medians of several runs.

For each (batch mode, optimizer, R seeds) cell the schedule is generated and
the optimizer replayed over it ``repeats`` times; the table shows the median
schedule time, the median replay time, their sum (wall clock), the median
CPU time of the process (less sensitive to other load on the machine),
events/s (reports applied per second, summed over seeds), seed-runs/s, and
the peak memory traced during one extra (untimed) run.

:func:`whole_process` adds the row a user sees: a whole ``spsa-bench simulate``
process (interpreter start, imports, schedule, replay, compressed write) of R
seeds, median of several, and its speed-up over the original lab's loop,
R x ``LAB_SEED_S`` / seconds (target: at least ``WHOLE_PROCESS_TARGET``).
:func:`pool_row` times a Fishtest worker pool of 1000 workers, and
:func:`tune_sizes` adds rows for synthetic Stockfish tunes of 4, 64 and 512 int
parameters, to show the cost grows no faster than parameters x pairs.
"""

from __future__ import annotations

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import yaml

from spsa_bench.config.loader import Config, ConfigError
from spsa_bench.engine.simulate import (
    TIMED_PHASES,
    make_noise,
    make_problem,
    make_schedule,
    replay_arm,
    scenario_rounding,
)
from spsa_bench.model.noise import NoiseModel


def _one_run(
    config: Config,
    arm_name: str,
    mode_name: str,
    scenario: str,
    n_seeds: int,
    noise: NoiseModel | None = None,
):
    noise = noise or make_noise(config, scenario)
    _ = noise.fast_draw_thresholds(np.zeros(1))  # the table is built once per process, untimed
    arm = config.optimizer(arm_name)
    mode = config.batch_mode(mode_name)
    seeds = np.arange(n_seeds)
    problem = make_problem(config, scenario, seeds)
    cpu_start = time.process_time()
    start = time.perf_counter()
    schedule = make_schedule(config, mode, seeds)
    scheduled = time.perf_counter()
    replay_arm(
        config, arm, problem, schedule, noise=noise, rounding=scenario_rounding(config, scenario)
    )
    done = time.perf_counter()
    cpu = time.process_time() - cpu_start
    return scheduled - start, done - scheduled, int(schedule.n_jobs.sum()), cpu


def _cell_row(config, arm_name, mode_name, scenario, n_seeds, noise, repeats) -> dict:
    """One row of the timing table: medians of ``repeats`` runs after a warm-up, and
    the peak memory traced in one more (untimed) run."""
    _one_run(config, arm_name, mode_name, scenario, min(n_seeds, 2), noise)  # warm caches
    timings = [
        _one_run(config, arm_name, mode_name, scenario, n_seeds, noise) for _ in range(repeats)
    ]
    replay_s = statistics.median(t[1] for t in timings)
    total_s = statistics.median(t[0] + t[1] for t in timings)
    tracemalloc.start()
    _one_run(config, arm_name, mode_name, scenario, n_seeds, noise)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {
        "batch_mode": mode_name,
        "optimizer": arm_name,
        "seeds": n_seeds,
        "schedule_s": statistics.median(t[0] for t in timings),
        "replay_s": replay_s,
        "total_s": total_s,
        "cpu_s": statistics.median(t[3] for t in timings),
        "events_per_s": timings[0][2] / replay_s,
        "seed_runs_per_s": n_seeds / total_s,
        "peak_mib": peak,
    }


def run_bench(
    config: Config,
    *,
    seed_counts,
    optimizers,
    batch_modes,
    scenario: str,
    repeats: int = 5,
    out=None,
    noise: NoiseModel | None = None,
    tune_seeds: int = 0,
    pool_workers: int = 0,
    lab: Path | None = None,
) -> list[dict]:
    """The timing table (module docstring), the whole-process row, the Fishtest pool
    row of :func:`pool_row` when ``pool_workers`` > 0, and the tune-size rows of
    :func:`tune_sizes` when ``tune_seeds`` > 0 (at that many seeds)."""
    out = out or sys.stdout
    noise = noise or make_noise(config, scenario)
    rows = []
    header = (
        f"{'batch mode':<15} {'optimizer':<14} {'R':>5} {'schedule s':>11} {'replay s':>9} {'total s':>8} "
        f"{'cpu s':>7} {'events/s':>11} {'seed-runs/s':>12} {'peak MiB':>9}"
    )
    print(
        f"spsa-bench bench: {config.num_pairs} pairs, scenario {scenario}, noise {noise.name}, "
        f"median of {repeats} runs",
        file=out,
    )
    print(header, file=out)
    for mode_name in batch_modes:
        for arm_name in optimizers:
            for n_seeds in seed_counts:
                row = _cell_row(config, arm_name, mode_name, scenario, n_seeds, noise, repeats)
                rows.append(row)
                print(
                    f"{mode_name:<15} {arm_name:<14} {n_seeds:>5} {row['schedule_s']:>11.4f} "
                    f"{row['replay_s']:>9.4f} {row['total_s']:>8.4f} {row['cpu_s']:>7.4f} "
                    f"{row['events_per_s']:>11.0f} {row['seed_runs_per_s']:>12.1f} "
                    f"{row['peak_mib']:>9.1f}",
                    file=out,
                    flush=True,
                )
    optimizer, batch_mode = optimizers[0], batch_modes[0]
    row = whole_process(
        config,
        optimizer=optimizer,
        batch_mode=batch_mode,
        scenario=scenario,
        n_seeds=max(seed_counts),
        repeats=repeats,
        out=out,
        lab=lab,
    )
    rows.append({"batch_mode": batch_mode, "optimizer": optimizer, "whole_process": True, **row})
    if pool_workers:
        pool = pool_row(config, scenario=scenario, repeats=repeats, out=out, workers=pool_workers)
        rows.append({"pool": True, **pool})
    if tune_seeds:
        noise = noise or make_noise(config, scenario)
        sizes = tune_sizes(config, noise=noise, n_seeds=tune_seeds, repeats=repeats, out=out)
        rows += [{"tune_size": True, **size} for size in sizes]
    return rows


#: Parameter counts of the tune-size rows (issue 15: cost at most linear in parameters x pairs).
PARAM_COUNTS = (4, 64, 512)


def _tune_problem(num_params: int, num_pairs: int, seeds: np.ndarray, entropy: int):
    """A synthetic Stockfish tune of ``num_params`` int parameters (TUNE()'s block at
    value 100) with the default truth prior: the developer view and per-seed bowls."""
    from spsa_bench.config.param_block import parse_block, synthetic_tune
    from spsa_bench.model.developer import DeveloperView
    from spsa_bench.model.instances import TruthPrior, draw_instances

    block = parse_block(synthetic_tune(num_params))
    bowls = draw_instances(
        TruthPrior.from_mapping(None), block.start, block.min, block.max, block.c_end,
        entropy, list(seeds),
    )  # fmt: skip
    view = DeveloperView(
        block.start, block.min, block.max, block.c_end, num_pairs,
        integer=np.ones(num_params, bool), r_end=block.r_end,
    )  # fmt: skip
    return view, bowls


def tune_sizes(
    config: Config,
    *,
    noise: NoiseModel,
    n_seeds: int,
    batch_size: int = 36,
    counts=PARAM_COUNTS,
    repeats: int = 5,
    out=None,
) -> list[dict]:
    """Replay time of classic SPSA (A = 0.1 N, Fishtest's default) on synthetic tunes of
    ``counts`` int parameters with stochastic rounding, sync batches of ``batch_size``
    pairs, ``n_seeds`` seeds of the configuration's budget: the median of ``repeats``,
    and the cost per seed x parameter x pair, which must not grow with the parameters."""
    from spsa_bench import optimizers
    from spsa_bench.dispatch.schedule import sync_schedule
    from spsa_bench.engine.replay import replay

    out = out or sys.stdout
    seeds = np.arange(n_seeds)
    schedule = sync_schedule(seeds, config.num_pairs, batch_size)
    hyper = optimizers.hyper_from_dict("spsa", {"A": 0.1 * config.num_pairs})
    print(
        f"tune sizes: spsa, sync batches of {batch_size} pairs, stochastic rounding, "
        f"R = {n_seeds}, {config.num_pairs} pairs, noise {noise.name}, median of {repeats}",
        file=out,
    )
    print(f"{'params':>7} {'replay s':>9} {'ns per seed x param x pair':>27}", file=out)
    rows = []
    for count in counts:
        view, bowls = _tune_problem(count, config.num_pairs, seeds, config.entropy)
        optimizer = optimizers.build("spsa", view, hyper)

        def once(optimizer=optimizer, view=view, bowls=bowls) -> float:
            start = time.perf_counter()
            replay(
                optimizer, schedule, bowls, view, entropy=config.entropy, noise=noise,
                rounding="stochastic", checkpoints=config.checkpoints,
            )  # fmt: skip
            return time.perf_counter() - start

        once()  # warm caches
        replay_s = statistics.median(once() for _ in range(repeats))
        unit_ns = replay_s / (n_seeds * count * config.num_pairs) * 1e9
        rows.append({"params": count, "seeds": n_seeds, "replay_s": replay_s, "unit_ns": unit_ns})
        print(f"{count:>7} {replay_s:>9.3f} {unit_ns:>27.2f}", file=out, flush=True)
    growth = rows[-1]["unit_ns"] / rows[0]["unit_ns"]
    verdict = "no faster than linear" if growth <= 1.0 else "FASTER than linear"
    print(
        f"cost per seed x param x pair at {counts[-1]} params is {growth:.2f}x that at "
        f"{counts[0]}: {verdict} in parameters x pairs",
        file=out,
        flush=True,
    )
    return rows


#: The Fishtest-scale pool row (issue 20): workers, seeds and pairs, and its target.
POOL_ROW = {"workers": 1000, "seeds": 100, "num_pairs": 60_000}
POOL_TARGET_S = 10.0


def pool_row(config: Config, *, scenario: str, repeats: int = 5, out=None, **row) -> dict:
    """Schedule and replay time of classic SPSA under a Fishtest worker pool (``batch:
    fishtest`` at STC) of ``workers`` workers, ``seeds`` seeds and ``num_pairs`` pairs
    (:data:`POOL_ROW` by default): the medians of ``repeats``; the replay should take
    under :data:`POOL_TARGET_S` on one core."""
    from spsa_bench.config.loader import resolve

    out = out or sys.stdout
    row = {**POOL_ROW, **row}
    raw = simulate_only(config)
    raw.pop("games", None)
    raw.update(num_pairs=row["num_pairs"], seeds={"first": 0, "count": row["seeds"]})
    raw["batch_modes"] = {"pool": {"workers": row["workers"], "batch": "fishtest", "tc": "STC"}}
    pool_config = resolve(raw)
    mode, seeds = pool_config.batch_mode("pool"), np.arange(row["seeds"])
    problem = make_problem(pool_config, scenario, seeds)
    noise, rounding = make_noise(pool_config, scenario), scenario_rounding(pool_config, scenario)
    arm = pool_config.optimizer(pool_config.baseline)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        schedule = make_schedule(pool_config, mode, seeds)
        scheduled = time.perf_counter()
        replay_arm(pool_config, arm, problem, schedule, noise=noise, rounding=rounding)
        timings.append((scheduled - start, time.perf_counter() - scheduled))
    schedule_s = statistics.median(t[0] for t in timings)
    replay_s = statistics.median(t[1] for t in timings)
    met = "met" if replay_s < POOL_TARGET_S else "NOT met"
    print(
        f"Fishtest pool: {arm.name} {scenario}, {row['workers']} workers (batch: fishtest, STC), "
        f"R = {row['seeds']}, {row['num_pairs']} pairs: schedule {schedule_s:.2f} s, replay "
        f"{replay_s:.2f} s, median of {repeats} (replay target < {POOL_TARGET_S:.0f} s: {met})",
        file=out,
        flush=True,
    )
    return {**row, "schedule_s": schedule_s, "replay_s": replay_s}


#: Seconds the original lab's per-seed loop takes for one seed (sync, spsa, 30,000
#: pairs), as measured when this benchmark was written (docs/benchmark.md); used when
#: no ``--lab`` checkout is given to measure it in the same run.
LAB_SEED_S = 0.13

#: Run by :func:`lab_seed_seconds` in a fresh interpreter: the original lab's own
#: runner (ppigazzini/fishtest-spsa-lab, ``simulator/runner.py``) on its default
#: problem, one seed at a time, printing the median seconds per seed.
_LAB_TIMER = """
import statistics, sys, time
sys.path.insert(0, sys.argv[1])
from fishtest_spsa_lab.simulator.config import SPSAConfig
from fishtest_spsa_lab.simulator.runner import SpsaRunner
num_pairs, batch_size, repeats = map(int, sys.argv[2:5])
seconds = []
for seed in range(repeats):
    config = SPSAConfig(optimizer="spsa", seed=seed, num_pairs=num_pairs, batch_size=batch_size)
    start = time.perf_counter()
    SpsaRunner(config).run()
    seconds.append(time.perf_counter() - start)
print(statistics.median(seconds))
"""


def check_lab(lab: Path) -> Path:
    """The ``src`` folder of the original lab's checkout ``lab``; refused in one line
    (:class:`ConfigError`, naming ``--lab``) when it has no lab runner."""
    source = Path(lab) / "src"
    if not (source / "fishtest_spsa_lab" / "simulator" / "runner.py").is_file():
        raise ConfigError(
            f"--lab {lab}: no src/fishtest_spsa_lab/simulator/runner.py there (give a "
            "checkout of ppigazzini/fishtest-spsa-lab)"
        )
    return source


def lab_seed_seconds(lab: Path, *, num_pairs: int, batch_size: int, repeats: int) -> float:
    """Median seconds per seed of the original lab's synchronous SPSA runner, run from the
    checkout ``lab`` (its ``src`` folder is put on the path; nothing is installed)."""
    source = check_lab(lab)
    command = [sys.executable, "-c", _LAB_TIMER, str(source), str(num_pairs), str(batch_size)]
    done = subprocess.run([*command, str(repeats)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"--lab {lab}: the lab's runner failed: {last}")
    return float(done.stdout.strip().splitlines()[-1])


#: Target speed-up of a whole ``spsa-bench simulate`` process over the lab's loop.
WHOLE_PROCESS_TARGET = 150.0


def whole_process(
    config: Config,
    *,
    optimizer: str,
    batch_mode: str,
    scenario: str,
    n_seeds: int,
    repeats: int = 5,
    out=None,
    lab: Path | None = None,
) -> dict:
    """Median wall time of a whole ``spsa-bench simulate`` process of ``n_seeds`` seeds
    (``config`` given to it as a file; after one untimed run, :func:`_warm_up`), with its
    imports alone (``import spsa_bench.cli.simulate``) and the speed-up ``n_seeds * lab_seed_s / seconds``:
    ``lab_seed_s`` measured in this run from the lab checkout ``lab`` (same pairs and
    batch size), else the recorded :data:`LAB_SEED_S`."""
    out = out or sys.stdout
    if lab is None:
        lab_seed_s, lab_source = LAB_SEED_S, "recorded"
    else:
        mode = config.batch_mode(batch_mode)
        if not mode.is_sync:
            raise ConfigError(
                f"--lab times the lab's synchronous runner; the whole-process row's batch mode "
                f"{batch_mode!r} (the first of --batch-modes) is not synchronous"
            )
        lab_seed_s = lab_seed_seconds(
            lab, num_pairs=config.num_pairs, batch_size=mode.batch_size, repeats=repeats
        )
        lab_source = "measured now"
    spsa_bench = [sys.executable, "-m", "spsa_bench"]
    seeds = f"0-{n_seeds - 1}"
    with tempfile.TemporaryDirectory() as folder:
        config_path = Path(folder) / "config.yaml"
        config_path.write_text(yaml.safe_dump(simulate_only(config)))
        cell = ["--optimizer", optimizer, "--batch-mode", batch_mode, "--scenario", scenario]
        command = [*spsa_bench, "simulate", "--config", str(config_path), *cell]
        command += ["--seeds", seeds, "--quiet", "--timings"]
        # every timed run replaces the file the one before wrote, as a workflow job does
        command += ["--output", str(Path(folder) / "run.nc"), "--force"]
        imports = [sys.executable, "-c", "import spsa_bench.cli.main, spsa_bench.cli.simulate"]
        _warm_up(command)
        runs = [_timed(command) for _ in range(repeats)]
        import_s = statistics.median(_timed(imports)[0] for _ in range(repeats))
    total_s = statistics.median(wall for wall, _, _ in runs)
    cpu_s = statistics.median(cpu for _, cpu, _ in runs)
    phases = {
        name: statistics.median(_phase(text, name) for _, _, text in runs) for name in TIMED_PHASES
    }
    phases = {"start-up and imports": total_s - sum(phases.values()), **phases}
    speedup = n_seeds * lab_seed_s / total_s
    met = "met" if speedup >= WHOLE_PROCESS_TARGET else "NOT met"
    print(
        f"whole process: spsa-bench simulate {optimizer} {batch_mode} {scenario}, R = {n_seeds}: "
        f"{total_s:.3f} s (cpu {cpu_s:.3f} s, imports {import_s:.3f} s), median of {repeats}; "
        f"{speedup:.0f}x the lab's {lab_seed_s:.3f} s per seed ({lab_source}; target >= "
        f"{WHOLE_PROCESS_TARGET:.0f}x: {met})",
        file=out,
        flush=True,
    )
    print(
        "  its phases (medians; start-up = total - the others): "
        + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in phases.items()),
        file=out,
        flush=True,
    )
    return {
        "seeds": n_seeds,
        "total_s": total_s,
        "cpu_s": cpu_s,
        "import_s": import_s,
        "lab_seed_s": lab_seed_s,
        "speedup": speedup,
        "phases": phases,
    }


def simulate_only(config: Config) -> dict:
    """``config`` resolved, as a file's content, without its optional studies: they name
    sweeps, which the resolved arms no longer are (and no simulate job reads them)."""
    from spsa_bench.config.resolution import without_studies

    return without_studies(json.loads(config.to_json()))


def _warm_up(command: list[str]) -> None:
    """Run ``command`` once, untimed, letting Python write its bytecode caches as any
    first use does (even under ``PYTHONDONTWRITEBYTECODE``: otherwise every timed run
    would compile the modules changed since the caches were written)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _timed(command: list[str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system) seconds of running ``command`` to its end, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done.stderr


def _phase(stderr: str, name: str) -> float:
    """Seconds of phase ``name`` in the ``timings:`` line ``simulate --timings`` printed."""
    line = [text for text in stderr.splitlines() if text.startswith("timings: ")][-1]
    match = re.search(rf"\b{re.escape(name)} ([0-9.]+) s", line)
    if match is None:
        raise RuntimeError(f"simulate --timings printed no {name!r} phase: {line!r}")
    return float(match.group(1))
