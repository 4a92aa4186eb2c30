"""``spsa-bench bench``: timings of the vectorized core, medians of several runs.

For each (batch mode, optimizer, R seeds) cell the schedule is generated and
the optimizer replayed over it ``repeats`` times; the table shows the median
schedule time, the median replay time, their sum (wall clock), the median
CPU time of the process (less sensitive to other load on the machine),
events/s (reports applied per second, summed over seeds), seed-runs/s, and
the peak memory traced during one extra (untimed) run.
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc

import numpy as np

from spsa_bench.config.loader import Config
from spsa_bench.engine.simulate import make_problem, make_schedule, replay_arm


def _one_run(config: Config, arm_name: str, mode_name: str, scenario: str, n_seeds: int):
    arm = config.optimizer(arm_name)
    mode = config.batch_mode(mode_name)
    problem = make_problem(config, scenario)
    seeds = np.arange(n_seeds)
    cpu_start = time.process_time()
    start = time.perf_counter()
    schedule = make_schedule(config, mode, seeds)
    scheduled = time.perf_counter()
    replay_arm(config, arm, problem, schedule)
    done = time.perf_counter()
    cpu = time.process_time() - cpu_start
    return scheduled - start, done - scheduled, int(schedule.n_jobs.sum()), cpu


def run_bench(
    config: Config,
    *,
    seed_counts,
    optimizers,
    batch_modes,
    scenario: str,
    repeats: int = 5,
    out=None,
) -> list[dict]:
    out = out or sys.stdout
    rows = []
    header = (
        f"{'batch mode':<15} {'optimizer':<14} {'R':>5} {'schedule s':>11} {'replay s':>9} {'total s':>8} "
        f"{'cpu s':>7} {'events/s':>11} {'seed-runs/s':>12} {'peak MiB':>9}"
    )
    print(
        f"spsa-bench bench: {config.num_pairs} pairs, scenario {scenario}, median of {repeats} runs",
        file=out,
    )
    print(header, file=out)
    for mode_name in batch_modes:
        for arm_name in optimizers:
            for n_seeds in seed_counts:
                _one_run(config, arm_name, mode_name, scenario, min(n_seeds, 2))  # warm caches
                timings = [
                    _one_run(config, arm_name, mode_name, scenario, n_seeds) for _ in range(repeats)
                ]
                schedule_s = statistics.median(t[0] for t in timings)
                replay_s = statistics.median(t[1] for t in timings)
                total_s = statistics.median(t[0] + t[1] for t in timings)
                events = timings[0][2]
                cpu_s = statistics.median(t[3] for t in timings)
                tracemalloc.start()
                _one_run(config, arm_name, mode_name, scenario, n_seeds)
                peak = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                row = {
                    "batch_mode": mode_name,
                    "optimizer": arm_name,
                    "seeds": n_seeds,
                    "schedule_s": schedule_s,
                    "replay_s": replay_s,
                    "total_s": total_s,
                    "cpu_s": cpu_s,
                    "events_per_s": events / replay_s,
                    "seed_runs_per_s": n_seeds / total_s,
                    "peak_mib": peak,
                }
                rows.append(row)
                print(
                    f"{mode_name:<15} {arm_name:<14} {n_seeds:>5} {schedule_s:>11.4f} {replay_s:>9.4f} {total_s:>8.4f} {cpu_s:>7.4f} "
                    f"{row['events_per_s']:>11.0f} {row['seed_runs_per_s']:>12.1f} {peak:>9.1f}",
                    file=out,
                    flush=True,
                )
    return rows
