"""What several subcommands share: the --config option, --seeds ranges and progress on stderr."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from spsa_bench.config.loader import PACKAGED_CONFIG

LOCAL_CONFIG = Path("config") / "config.yaml"


def default_config() -> Path:
    """./config/config.yaml if it exists (running inside the repository), else the packaged default."""
    return LOCAL_CONFIG if LOCAL_CONFIG.is_file() else PACKAGED_CONFIG


def add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        help="YAML configuration (default: ./config/config.yaml if it exists, "
        "else the packaged default grid, a copy of the repository's config/config.yaml)",
    )


def config_path(args: argparse.Namespace) -> Path:
    return Path(args.config) if args.config else default_config()


def load(args: argparse.Namespace):
    """The resolved configuration of ``--config`` (or its default)."""
    from spsa_bench.config.loader import load_config

    return load_config(config_path(args))


def bounded_int(flag: str, low: int, high: int, hint: str = ""):
    """An argparse ``type`` accepting ASCII digits in ``[low, high]``; errors name ``flag``
    (and end with ``hint`` when the text is not a whole number)."""

    def parse(text: str) -> int:
        digits = text.strip().removeprefix("-")
        if not digits.isascii() or not digits.isdigit() or len(digits) > 30:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{hint}")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside [{low}, {high:,}]")
        return value

    parse.__name__ = flag  # argparse names the type in its messages
    return parse


#: The configuration's table of each name :func:`pick` looks up.
_TABLES = {"optimizer": "optimizers", "scenario": "scenarios", "batch_mode": "batch_modes"}


def pick(config, what: str, flag: str, name: str):
    """``config.<what>(name)``; an unknown name is refused in one line naming ``flag``
    and at most five of the configuration's closest names (not all of them)."""
    from spsa_bench.cli.arm_names import close_names
    from spsa_bench.config.loader import ConfigError

    try:
        return getattr(config, what)(name)
    except ConfigError as error:
        if what not in _TABLES:
            raise ConfigError(f"{flag} = {name!r}: {error}") from None
        close = close_names(name, getattr(config, _TABLES[what]))
        hint = f"closest: {', '.join(close)}" if close else "no close name"
        noun = what.replace("_", " ")
        article = "an" if noun[0] in "aeiou" else "a"
        raise ConfigError(
            f"{flag} = {name!r}: not {article} {noun} of this config; {hint} "
            "(`spsa-bench list` shows them all)"
        ) from None


def seeds(args: argparse.Namespace, config) -> range:
    """``--seeds`` (given, even empty, it must parse) or the config's seeds."""
    return config.seed_range() if args.seeds is None else parse_seed_range(args.seeds)


def parse_seed_range(text: str) -> range:
    """``"7"`` or ``"0-99"`` (inclusive, ASCII digits) -> range; refuses reversed,
    malformed and empty ranges and ranges beyond :mod:`spsa_bench.config.limits`."""
    from spsa_bench.config.limits import LimitError, check_seed_range
    from spsa_bench.config.records import ConfigError

    match = re.fullmatch(r"\s*([0-9]{1,30})\s*(?:-\s*([0-9]{1,30})\s*)?", text, flags=re.ASCII)
    if not match:
        raise ConfigError(f"--seeds = {text!r}: expected FIRST or FIRST-LAST, e.g. 0-99")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        raise ConfigError(f"--seeds = {text!r}: the range is reversed (last < first)")
    try:
        check_seed_range(f"--seeds = {text!r}", first, last - first + 1)
    except LimitError as error:
        raise ConfigError(str(error)) from None
    return range(first, last + 1)


def check_output(args: argparse.Namespace) -> None:
    """Refuse ``--output`` before any work (empty, directory, device, the config itself)."""
    from spsa_bench.results.atomic import check_output as check

    check(args.output, flag="--output", inputs=[config_path(args)])


def check_run_memory(config, scenario: str, n_seeds: int, flag: str = "--seeds") -> None:
    """Refuse a run whose estimated memory exceeds the machine's, before it starts."""
    from spsa_bench.config.limits import check_memory, run_bytes
    from spsa_bench.config.loader import scenario_param_count

    params = scenario_param_count(config.scenario(scenario))
    needed = run_bytes(n_seeds, config.num_pairs, config.checkpoints, params)
    check_memory(f"{flag}: {n_seeds:,} seeds x {config.num_pairs:,} pairs", needed)


class Progress:
    """Progress on stderr for work that takes more than a second; silent with --quiet."""

    def __init__(self, label: str, quiet: bool):
        self.label = label
        self.quiet = quiet
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.start
        if elapsed < 1.0 and done < total:
            return
        if done >= total and not self.shown:
            return  # finished within a second: say nothing
        self.shown = True
        percent = 100.0 * done / max(total, 1)
        end = "\n" if done >= total else ""
        prefix = "\r" if sys.stderr.isatty() else ""
        if not sys.stderr.isatty() and done < total:
            end = "\n"
        print(
            f"{prefix}{self.label}: {percent:5.1f}% ({done}/{total} reports, {elapsed:.1f} s)",
            end=end,
            file=sys.stderr,
            flush=True,
        )
