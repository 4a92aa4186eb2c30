"""Configuration validation: every bad input is refused with one line naming the key."""

import copy
import math

import pytest
import yaml
from conftest import set_key, small_config_dict

from spsa_bench.cli.common import parse_seed_range
from spsa_bench.config.loader import (
    STUDY_SECTIONS,
    ConfigError,
    load_config,
    resolve,
    resolve_core,
    without_studies,
)
from spsa_bench.config.schema import SCHEMA_PATH, schema_yaml


def test_default_config_resolves(default_config_path):
    config = load_config(default_config_path)
    assert set(config.scenarios) >= {
        "calibrated",
        "dev-underestimates",
        "dev-overestimates",
        "mixed",
    }
    assert {"sync", "async-fixed", "async-variable"} <= set(config.batch_modes)
    assert config.batch_mode("sync").is_sync
    assert config.optimizer("spsa").hyper.r_end == 0.002
    # defaults are filled in
    assert config.resolved["optimizers"]["spsa-block-r_scale-1"]["alpha"] == 0.602


def test_committed_schema_is_current():
    assert SCHEMA_PATH.read_text() == schema_yaml(), "run `spsa-bench schema --write`"


def test_packaged_schema_is_the_run_time_schema_without_plugins():
    from spsa_bench.config.schema import build_schema
    from spsa_bench.optimizers import REGISTRY

    assert not REGISTRY.plugins()  # the test environment installs no plugin
    assert yaml.safe_load(SCHEMA_PATH.read_text()) == build_schema()


def test_packaged_default_config_is_the_repository_default(default_config_path):
    from spsa_bench.cli.common import PACKAGED_CONFIG

    assert PACKAGED_CONFIG.read_text() == default_config_path.read_text(), (
        "copy config/config.yaml to src/spsa_bench/config/data/default.yaml"
    )


def test_the_default_grid_has_no_arm_identical_to_another(default_config_path):
    """spsa-cwd with lambda_cwd 0 equals spsa and left the default grid; the one
    duplicate left is the baseline inside its own sweep (the sweep's line needs it)."""
    config = load_config(default_config_path)
    seen: dict = {}
    for arm in config.optimizers.values():
        seen.setdefault((arm.kind, arm.hyper), []).append(arm)
    duplicates = [arms for arms in seen.values() if len(arms) > 1]
    assert [sorted(arm.name for arm in arms) for arms in duplicates] == [
        ["spsa", "spsa-sweep-r_scale-1"]
    ]
    cwd = [arm for arm in config.optimizers.values() if arm.kind == "spsa-cwd"]
    assert all(arm.hyper.lambda_cwd > 0 for arm in cwd)


def test_the_default_sweeps_hold_the_hand_set_values(default_config_path):
    """Every kind of the original grid but Autoselect is swept, and so is 2SPSA (its
    curvature floor, which sets its step), and each sweep holds the kind's hand-set
    value (conftest.HAND_SET), so the sensitivity figure shows where it lies. OpenBench's
    SPSA runs at its form's defaults (its own comparison: docs/frameworks.md)."""
    from conftest import HAND_SET

    config = load_config(default_config_path)
    swept_kinds = {arm.kind for arm in config.optimizers.values() if arm.sweep is not None}
    unswept = {"spsa-autoselect", "spsa-openbench"}
    assert swept_kinds == {arm.kind for arm in config.optimizers.values()} - unswept
    for sweep, hand_set in HAND_SET.items():
        ((key, value),) = hand_set.items()
        values = [
            getattr(arm.hyper, key) for arm in config.optimizers.values() if arm.sweep == sweep
        ]
        assert value in values and min(values) < value < max(values), sweep


def _delete(path):
    def mutate(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


def _rename(path, new):
    def mutate(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[new] = node.pop(path[-1])

    return mutate


CAL = ("scenarios", "calibrated")
G0 = (*CAL, "groups", 0)

# (id, mutation, text the message must contain: the key and the value)
BAD = [
    ("misspelled-top-key", _rename(("num_pairs",), "num_pair"), "num_pair"),
    ("missing-required", _delete(("num_pairs",)), "num_pairs"),
    ("budget-zero", set_key(("num_pairs",), 0), "num_pairs = 0"),
    ("budget-negative", set_key(("num_pairs",), -5), "num_pairs = -5"),
    ("budget-float", set_key(("num_pairs",), 100.5), "num_pairs = 100.5"),
    ("budget-string", set_key(("num_pairs",), "many"), 'num_pairs = "many"'),
    (
        "batch-zero",
        set_key(("batch_modes", "sync", "batch_size"), 0),
        "batch_modes.sync.batch_size = 0",
    ),
    (
        "batch-over-budget",
        set_key(("batch_modes", "sync", "batch_size"), 5000),
        "batch_modes.sync.batch_size = 5000",
    ),
    ("unknown-signal", set_key(("signal",), "halved"), 'signal = "halved"'),
    ("w-dev-zero-active", set_key((*G0, "w_dev"), 0.0), "groups[0].w_dev = 0.0"),
    ("w-dev-negative", set_key((*G0, "w_dev"), -1.0), "groups[0].w_dev = -1.0"),
    ("w-true-nan", set_key((*G0, "w_true"), math.nan), "groups[0].w_true = nan"),
    ("theta-inf", set_key((*G0, "theta_start"), math.inf), "groups[0].theta_start = inf"),
    ("start-above-peak", set_key((*CAL, "start_elo"), 1.0), "start_elo = 1.0"),
    ("start-equals-peak", set_key((*CAL, "start_elo"), 0.0), "start_elo = 0.0"),
    (
        "bounds-reversed",
        lambda r: r["scenarios"]["calibrated"]["groups"][0].update(theta_min=2000, theta_max=0),
        "theta_min = 2000",
    ),
    ("unknown-group-key", set_key((*G0, "weight"), 1.0), "weight"),
    ("bad-group-name", set_key((*G0, "name"), "../etc"), "../etc"),
    ("duplicate-group", set_key((*CAL, "groups", 1, "name"), "w2-low"), "w2-low"),
    ("bad-scenario-name", _rename(CAL, "Calibrated/x"), "Calibrated/x"),
    ("unknown-optimizer-name", set_key(("optimizers", "spsa2"), {}), "spsa2"),
    ("unknown-optimizer-kind", set_key(("optimizers", "mine"), {"kind": "newton"}), "newton"),
    ("unknown-hyper", set_key(("optimizers", "spsa", "r_ned"), 0.1), "r_ned"),
    ("negative-lr", set_key(("optimizers", "spsa", "r_end"), -0.1), "optimizers.spsa.r_end = -0.1"),
    (
        "gamma-above-one",
        set_key(("optimizers", "spsa", "gamma"), 1.5),
        "optimizers.spsa.gamma = 1.5",
    ),
    ("hyper-wrong-type", set_key(("optimizers", "spsa", "A"), "big"), 'optimizers.spsa.A = "big"'),
    ("baseline-unknown", set_key(("baseline",), "newton"), "baseline = 'newton'"),
    (
        "no-power-of-two",
        set_key(("batch_modes", "async-fixed", "concurrency"), {"min": 5, "max": 7}),
        "async-fixed",
    ),
    (
        "speed-reversed",
        set_key(("batch_modes", "async-fixed", "speed"), {"min": 2.0, "max": 1.0}),
        "async-fixed",
    ),
    (
        "p95-below-median",
        set_key(("batch_modes", "async-fixed", "game_duration"), {"median": 180, "p95": 100}),
        "async-fixed",
    ),
    ("seeds-count-zero", set_key(("seeds", "count"), 0), "seeds.count = 0"),
    ("seeds-negative", set_key(("seeds", "first"), -1), "seeds.first = -1"),
    ("c-fraction-zero", set_key((*CAL, "c_fraction"), 0.0), "c_fraction = 0.0"),
    ("gap-negative", set_key((*CAL, "c_elo_gap"), -2.0), "c_elo_gap = -2.0"),
    ("workers-zero", set_key(("batch_modes", "async-fixed", "workers"), 0), "workers = 0"),
    ("target-one", set_key(("targets",), [1.0]), "targets[0] = 1.0"),
]


@pytest.mark.parametrize("case_id,mutate,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_refused_with_one_line_naming_key_and_value(case_id, mutate, needle):
    raw = small_config_dict()
    mutate(raw)
    with pytest.raises(ConfigError) as info:
        resolve(raw)
    message = str(info.value)
    assert "\n" not in message
    assert needle in message, message


def test_duplicate_yaml_keys_are_refused(tmp_path):
    text = "num_pairs: 10\nnum_pairs: 20\n"
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="duplicate key 'num_pairs'"):
        load_config(path)


def test_yaml_is_loaded_safely(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("num_pairs: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


@pytest.mark.parametrize(
    "text,expected", [("7", range(7, 8)), ("0-99", range(0, 100)), (" 3 - 5 ", range(3, 6))]
)
def test_seed_ranges(text, expected):
    assert parse_seed_range(text) == expected


@pytest.mark.parametrize("text", ["9-3", "a-b", "-1", "1-", ""])
def test_bad_seed_ranges(text):
    with pytest.raises(ConfigError, match="--seeds"):
        parse_seed_range(text)


def test_resolution_does_not_alias_the_input():
    raw = small_config_dict()
    before = copy.deepcopy(raw)
    config = resolve(raw)
    assert raw == before
    config.resolved["num_pairs"] = 1
    assert raw["num_pairs"] == before["num_pairs"]


def test_resolve_core_resolves_a_recorded_grid_without_its_optional_sections():
    """A resolved configuration keeps no sweep, so its tuning section is refused when it
    is resolved again; resolve_core resolves the grid alone, to the same grid."""
    raw = small_config_dict()
    raw["optimizers"]["adam"] = {"lr": [0.02, 0.04]}
    raw["tuning"] = {"seeds": {"first": 100, "count": 3}}
    config = resolve(raw)
    recorded = config.resolved
    present = set(STUDY_SECTIONS) & set(recorded)
    assert {"tuning", "cend_study", "workers_study", "budget_study"} <= present
    with pytest.raises(ConfigError, match="^tuning"):
        resolve(recorded)
    grid = without_studies(recorded)
    assert list(grid) == [key for key in recorded if key not in STUDY_SECTIONS]
    assert present <= set(recorded)  # the input keeps its sections
    core = resolve_core(recorded)
    assert not set(STUDY_SECTIONS) & set(core.resolved)
    assert core.resolved == grid
    assert core.optimizer("adam-lr-0p04").hyper == config.optimizer("adam-lr-0p04").hyper


def test_resolved_config_round_trips_through_yaml():
    config = resolve(small_config_dict())
    again = resolve(yaml.safe_load(yaml.safe_dump(config.resolved)))
    assert again.resolved == config.resolved


def test_the_1000_seed_profile_runs_the_design_card_grid(default_config_path):
    """profiles/seeds-1000 reads config/seeds-1000.yaml: every kind of the original lab
    at its hand-set value plus Autoselect, x the default's batch modes x its four
    miscalibration scenarios, at 1000 seeds in one job per cell, no study."""
    from conftest import HAND_SET

    repo = default_config_path.parents[1]
    profile = yaml.safe_load((repo / "profiles" / "seeds-1000" / "config.yaml").read_text())
    config = load_config(repo / profile["configfile"])
    default = load_config(default_config_path)
    assert (config.seeds_count, config.seeds_per_job) == (1000, 1000)
    assert config.num_pairs == default.num_pairs
    assert config.resolved["batch_modes"] == default.resolved["batch_modes"]
    miscalibration = ["calibrated", "dev-underestimates", "dev-overestimates", "mixed"]
    assert list(config.scenarios) == miscalibration
    assert all(
        config.resolved["scenarios"][s] == default.resolved["scenarios"][s] for s in miscalibration
    )
    assert len(config.optimizers) == 10 and all(
        arm.sweep is None for arm in config.optimizers.values()
    )
    for name, hand_set in HAND_SET.items():
        if name == "spsa-2":  # not a kind of the original lab
            continue
        ((key, value),) = hand_set.items()
        assert getattr(config.optimizer(name).hyper, key) == value, name
    assert not {"tuning", "cend_study", "workers_study"} & set(config.resolved)


def test_an_empty_configuration_file_says_it_is_empty(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing but a comment\n")
    with pytest.raises(ConfigError, match=r"^<top level>: the configuration is empty"):
        load_config(path)
