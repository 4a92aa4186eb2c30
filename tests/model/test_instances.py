"""Tune scenarios (a Fishtest parameter block with a truth prior) and the games budget:
every bad key is refused naming it; the per-seed instances follow the prior."""

import json
import math

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config.loader import (
    ConfigError,
    load_config,
    resolve,
    scenario_block,
    scenario_kind,
    scenario_param_count,
)
from spsa_bench.config.param_block import parse_block, synthetic_tune
from spsa_bench.engine.simulate import make_problem, scenario_rounding
from spsa_bench.model.instances import PriorError, TruthPrior, draw_instances

BLOCK = "Futility,140,0,280,14,0.0020\nLMRBase,-12,-25,0,1.25,0.002\nreduction,7,1,15,1,0\n"


def tune_config(scenario: dict | None = None, **top) -> dict:
    """The small config with one tune scenario ``tune`` (a 64-parameter synthetic tune)."""
    raw = small_config_dict()
    raw["scenarios"]["tune"] = scenario or {"synthetic_tune": {"params": 64, "value": 100}}
    raw.update(top)
    return raw


def refused(raw: dict, *words: str, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        resolve(raw, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


# ------------------------------------------------------------------ the budget


def test_games_gives_num_pairs_and_is_kept():
    raw = tune_config()
    del raw["num_pairs"]
    raw["games"] = 4000
    config = resolve(raw)
    assert (config.games, config.num_pairs) == (4000, 2000)
    assert resolve(small_config_dict()).games is None
    again = resolve(json.loads(config.to_json()))  # the resolved config resolves again
    assert again.to_json() == config.to_json()


@pytest.mark.parametrize("games", [999, 1500, 3_201_000, 2000.5, "many", True, 0, -1000])
def test_bad_games_are_refused_naming_games(games):
    raw = small_config_dict()
    del raw["num_pairs"]
    raw["games"] = games
    refused(raw, "games")


def test_both_or_neither_budget_key_is_refused():
    raw = small_config_dict()
    raw["games"] = 4000
    refused(raw, "num_pairs, games", "not both")
    del raw["games"], raw["num_pairs"]
    refused(raw, "num_pairs, games", "not neither")


# ------------------------------------------------------------------ scenarios


def _tune(**keys) -> dict:
    return {"fishtest_params": BLOCK, **keys}


BAD_SCENARIOS = [
    # (id, scenario `tune`, words of the message)
    (
        "block-field",
        _tune(fishtest_params=BLOCK.replace("1.25", "0")),
        ("scenarios.tune.fishtest_params", "line 2", "field c_end"),
    ),
    (
        "block-fields-count",
        _tune(fishtest_params="a,1,0,2,1\n"),
        ("scenarios.tune.fishtest_params", "line 1", "fields"),
    ),
    (
        "block-start-outside",
        _tune(fishtest_params="\n\nx,30,0,20,1,0\n"),
        ("scenarios.tune.fishtest_params", "line 3", "field start"),
    ),
    ("block-empty", _tune(fishtest_params="\n \n"), ("scenarios.tune.fishtest_params", "empty")),
    (
        "two-sources",
        _tune(synthetic_tune={"params": 2}),
        ("scenarios.tune", "exactly one", "fishtest_params and synthetic_tune"),
    ),
    ("no-source", {"description": "nothing"}, ("scenarios.tune", "exactly one", "got none")),
    ("group-key", _tune(start_elo=-5.0), ("scenarios.tune.start_elo", "groups scenario")),
    ("synthetic-zero", {"synthetic_tune": {"params": 3, "value": 0}}, ("synthetic_tune.value",)),
    (
        "synthetic-none",
        {"synthetic_tune": {"params": 0}},
        ("scenarios.tune.synthetic_tune.params",),
    ),
    ("synthetic-extra", {"synthetic_tune": {"params": 3, "n": 1}}, ("synthetic_tune", "'n'")),
    ("rounding", _tune(rounding="floor"), ("scenarios.tune.rounding", "floor")),
    ("integer", _tune(integer="yes"), ("scenarios.tune.integer",)),
    ("truth-key", _tune(truth={"offsets": 1}), ("scenarios.tune.truth", "'offsets'")),
    (
        "offset-distribution",
        _tune(truth={"offset": {"distribution": "cauchy"}}),
        ("scenarios.tune.truth.offset.distribution", "cauchy"),
    ),
    (
        "offset-scale",
        _tune(truth={"offset": {"scale": -1}}),
        ("scenarios.tune.truth.offset.scale", "-1"),
    ),
    (
        "offset-zero",
        _tune(truth={"offset": {"scale": 0}}),
        ("scenarios.tune.truth.offset.scale = 0",),
    ),
    (
        "elo-zero",
        _tune(truth={"elo_per_c_end": 0}),
        ("scenarios.tune.truth.elo_per_c_end",),
    ),
    (
        "elo-range-reversed",
        _tune(truth={"elo_per_c_end": {"min": 0.3, "max": 0.1}}),
        ("scenarios.tune.truth.elo_per_c_end.min = 0.3", "max = 0.1"),
    ),
    (
        "elo-range-half",
        _tune(truth={"elo_per_c_end": {"min": 0.3}}),
        ("scenarios.tune.truth.elo_per_c_end",),
    ),
    (
        "inactive-over-one",
        _tune(truth={"inactive_fraction": 1.5}),
        ("scenarios.tune.truth.inactive_fraction", "1.5"),
    ),
    (
        "all-inactive",
        _tune(truth={"inactive_fraction": 0.9}),
        ("scenarios.tune.truth.inactive_fraction = 0.9", "none of the 3"),
    ),
    (
        "interaction-negative",
        _tune(truth={"interaction": -0.1}),
        ("scenarios.tune.truth.interaction", "-0.1"),
    ),
    (
        "loss-overflow",
        _tune(fishtest_params="x,0,-1e300,1e300,1e-10,0\n"),
        ("scenarios.tune.fishtest_params", "overflows"),
    ),
]


@pytest.mark.parametrize(
    "scenario, words", [b[1:] for b in BAD_SCENARIOS], ids=[b[0] for b in BAD_SCENARIOS]
)
def test_bad_tune_scenarios_are_refused_naming_the_key(scenario, words):
    refused(tune_config(scenario), *words)


def test_group_scenarios_refuse_tune_keys_and_need_their_geometry():
    raw = small_config_dict()
    raw["scenarios"]["calibrated"]["truth"] = {}
    refused(raw, "scenarios.calibrated.truth", "tune scenario")
    raw = small_config_dict()
    del raw["scenarios"]["calibrated"]["start_elo"]
    refused(raw, "scenarios.calibrated: 'start_elo' is a required property", "groups")
    raw = small_config_dict()
    raw["scenarios"]["calibrated"]["groups"][0]["integer"] = "no"
    refused(raw, "scenarios.calibrated.groups[0].integer")


def test_a_missing_block_file_is_refused_naming_key_and_path(tmp_path):
    raw = tune_config({"fishtest_params_file": "nowhere.txt"})
    refused(
        raw, "scenarios.tune.fishtest_params_file = 'nowhere.txt'", "cannot read", base_dir=tmp_path
    )
    (tmp_path / "bad.txt").write_text("a,1,0,2,1,0\nb,1,0,2,1,-1\n")
    raw = tune_config({"fishtest_params_file": "bad.txt"})
    refused(raw, "fishtest_params_file = 'bad.txt'", "line 2", "field r_end", base_dir=tmp_path)
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe")
    raw = tune_config({"fishtest_params_file": "binary.txt"})
    refused(raw, "fishtest_params_file = 'binary.txt'", "UTF-8", base_dir=tmp_path)


def test_a_block_file_is_read_relative_to_the_config_and_kept_as_text(tmp_path, monkeypatch):
    import yaml

    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "block.txt").write_text(BLOCK)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(tune_config({"fishtest_params_file": "block.txt"})))
    monkeypatch.chdir(tmp_path)  # not the config's directory
    config = load_config(path)
    spec = config.scenario("tune")
    assert spec["fishtest_params"] == BLOCK and "fishtest_params_file" not in spec
    assert scenario_block(spec) == parse_block(BLOCK)
    (folder / "block.txt").unlink()  # runs no longer need the file
    assert resolve(json.loads(config.to_json())).to_json() == config.to_json()
    # resolve() without base_dir reads relative paths from the working directory
    (tmp_path / "block.txt").write_text(BLOCK)
    assert resolve(tune_config({"fishtest_params_file": "block.txt"})).scenario("tune") == spec


def test_a_synthetic_tune_parses_back_to_itself_through_a_scenario():
    config = resolve(tune_config())
    spec = config.scenario("tune")
    block = scenario_block(spec)
    assert block == parse_block(synthetic_tune(64, 100))
    assert scenario_kind(spec) == "block" and scenario_param_count(spec) == 64
    assert block.names[0] == "p00" and block.c_end[0] == 10.0 and block.r_end[0] == 0.002
    again = resolve(tune_config({"fishtest_params": block.to_text()}))
    assert scenario_block(again.scenario("tune")) == block


def test_resolved_tune_scenarios_hold_every_default():
    config = resolve(tune_config())
    spec = config.scenario("tune")
    assert spec["integer"] is True and spec["rounding"] == "stochastic"
    assert spec["synthetic_tune"] == {"params": 64, "value": 100}
    assert (
        spec["truth"]
        == TruthPrior().to_dict()
        == {
            "offset": {"distribution": "normal", "scale": 2.0},
            "elo_per_c_end": {"min": 0.02, "max": 0.2},
            "inactive_fraction": 0.25,
            "interaction": 0.0,
        }
    )
    assert config.scenario("calibrated")["rounding"] == "stochastic"
    assert all(g["integer"] is False for g in config.scenario("calibrated")["groups"])
    assert scenario_rounding(config, "tune") == "stochastic"


# ------------------------------------------------------------------ make_problem


def test_make_problem_of_a_tune_scenario():
    raw = tune_config(_tune(integer=False, rounding="nearest", truth={"interaction": 1}))
    config = resolve(raw)
    block = parse_block(BLOCK)
    problem = make_problem(config, "tune", [3, 1])
    view, params, bowl = problem.view, problem.params, problem.bowl
    np.testing.assert_array_equal(view.theta_start, block.start)
    np.testing.assert_array_equal(view.theta_min, block.min)
    np.testing.assert_array_equal(view.theta_max, block.max)
    np.testing.assert_array_equal(view.c_dev, block.c_end)
    np.testing.assert_array_equal(view.r_end, block.r_end)
    assert view.num_pairs == config.num_pairs and not view.integer.any()
    assert params.param_group == block.names
    assert params.w_true is None and params.w_dev is None and params.theta_peak is None
    assert bowl.num_seeds == 2 and bowl.rotated
    np.testing.assert_array_equal(bowl.scale, block.c_end)
    alone = make_problem(config, "tune", [1]).bowl
    np.testing.assert_array_equal(alone.theta_peak[0], bowl.theta_peak[1])
    assert scenario_rounding(config, "tune") == "nearest"
    assert make_problem(resolve(tune_config()), "tune", [0]).view.integer.all()
    with pytest.raises(ValueError, match="seeds"):
        make_problem(config, "tune")


def test_group_scenarios_take_their_integer_mask_from_the_groups():
    raw = small_config_dict()
    raw["scenarios"]["calibrated"]["groups"][0]["integer"] = True
    config = resolve(raw)
    problem = make_problem(config, "calibrated", [0, 1])
    count = raw["scenarios"]["calibrated"]["groups"][0]["count"]
    expected = np.arange(problem.view.num_params) < count
    np.testing.assert_array_equal(problem.view.integer, expected)
    assert make_problem(config, "calibrated").bowl.k_elo > 0  # one bowl, seeds ignored


# ------------------------------------------------------------------ instances

WIDE = dict(
    start=np.zeros(400), low=np.full(400, -1e6), high=np.full(400, 1e6), c_end=np.full(400, 1.0)
)


def draw(prior: TruthPrior, seeds, **arrays):
    arrays = {**WIDE, **arrays}
    return draw_instances(
        prior, arrays["start"], arrays["low"], arrays["high"], arrays["c_end"], 7, seeds
    )


def test_a_seeds_instance_does_not_depend_on_the_other_seeds():
    prior = TruthPrior(interaction=0.7, offset_distribution="uniform")
    alone = draw(prior, [11])
    among = draw(prior, [4, 11, 2, 900])
    for name in ("theta_peak", "elo_per_scale", "partner", "cos", "sin"):
        np.testing.assert_array_equal(getattr(alone, name)[0], getattr(among, name)[1])
    assert not np.array_equal(among.theta_peak[0], among.theta_peak[1])
    assert not np.array_equal(
        draw(prior, [11]).theta_peak,
        draw_instances(
            prior, WIDE["start"], WIDE["low"], WIDE["high"], WIDE["c_end"], 8, [11]
        ).theta_peak,
    )  # the entropy matters


def _active_offsets(bowls, prior) -> np.ndarray:
    active = bowls.elo_per_scale > 0
    assert active.sum() == bowls.num_seeds * (400 - prior.inactive_count(400))
    return ((bowls.theta_peak - WIDE["start"]) / WIDE["c_end"])[active]


def test_normal_offsets_have_the_priors_mean_and_variance():
    prior = TruthPrior(offset_distribution="normal", offset_scale=2.0)
    x = _active_offsets(draw(prior, range(50)), prior)
    n, s = x.size, prior.offset_scale
    assert abs(x.mean()) < 4 * s / math.sqrt(n)
    # the sample variance of a normal has standard error s^2 sqrt(2 / (n - 1))
    assert abs(x.var(ddof=1) - s**2) < 4 * s**2 * math.sqrt(2 / (n - 1))


def test_uniform_offsets_have_the_priors_mean_and_variance():
    prior = TruthPrior(offset_distribution="uniform", offset_scale=3.0)
    x = _active_offsets(draw(prior, range(50)), prior)
    n, s = x.size, prior.offset_scale
    assert np.all(np.abs(x) <= s)
    assert abs(x.mean()) < 4 * (s / math.sqrt(3)) / math.sqrt(n)
    # E x^2 = s^2 / 3 and var(x^2) = E x^4 - (E x^2)^2 = s^4 / 5 - s^4 / 9
    assert abs(np.mean(x**2) - s**2 / 3) < 4 * math.sqrt(4 * s**4 / 45) / math.sqrt(n)


def test_fixed_offsets_are_plus_or_minus_the_scale_with_a_fair_sign():
    prior = TruthPrior(offset_distribution="fixed", offset_scale=1.5)
    x = _active_offsets(draw(prior, range(50)), prior)
    assert np.all(np.abs(x) == 1.5)
    assert abs(np.mean(x > 0) - 0.5) < 4 * 0.5 / math.sqrt(x.size)


@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 0.99])
def test_the_inactive_count_is_exact_and_inactive_parameters_sit_at_the_start(fraction):
    prior = TruthPrior(inactive_fraction=fraction)
    start = np.linspace(-50, 50, 400)
    bowls = draw(prior, range(20), start=start)
    inactive = bowls.elo_per_scale == 0
    assert np.all(inactive.sum(axis=1) == round(fraction * 400))
    assert np.all(bowls.theta_peak[inactive] == np.broadcast_to(start, inactive.shape)[inactive])
    assert not np.array_equal(inactive[0], inactive[1]) or fraction == 0


def test_log_uniform_elo_has_the_mean_log_of_the_prior():
    prior = TruthPrior(elo_min=0.02, elo_max=0.2)
    bowls = draw(prior, range(50))
    elo = bowls.elo_per_scale[bowls.elo_per_scale > 0]
    assert elo.min() >= 0.02 and elo.max() <= 0.2
    a, b = math.log(0.02), math.log(0.2)
    assert abs(np.log(elo).mean() - (a + b) / 2) < 4 * (b - a) / math.sqrt(12 * elo.size)


def test_a_fixed_elo_is_the_same_on_every_active_parameter():
    prior = TruthPrior.from_mapping({"elo_per_c_end": 0.5, "inactive_fraction": 0})
    assert prior.to_dict()["elo_per_c_end"] == 0.5
    assert np.all(draw(prior, range(3)).elo_per_scale == 0.5)


def test_optima_stay_within_the_bounds():
    prior = TruthPrior(offset_scale=5.0, inactive_fraction=0.0)
    low, high = np.full(400, -3.0), np.full(400, 2.0)
    bowls = draw(prior, range(10), low=low, high=high, c_end=np.full(400, 0.5))
    assert np.all(bowls.theta_peak >= -3.0) and np.all(bowls.theta_peak <= 2.0)
    assert np.any(bowls.theta_peak == -3.0) and np.any(bowls.theta_peak == 2.0)  # clipped


@pytest.mark.parametrize("num_params, inactive", [(400, 0.0), (401, 0.0), (400, 0.25)])
def test_interaction_pairs_the_active_parameters_and_bounds_the_angles(num_params, inactive):
    g = 0.6
    prior = TruthPrior(interaction=g, inactive_fraction=inactive)
    arrays = {k: v[:1].repeat(num_params) for k, v in WIDE.items()}
    bowls = draw(prior, range(5), **arrays)
    for row in range(5):
        partner, cos, sin = bowls.partner[row], bowls.cos[row], bowls.sin[row]
        active = bowls.elo_per_scale[row] > 0
        index = np.arange(num_params)
        assert np.array_equal(partner[partner], index)  # an involution: a matching
        unpaired = partner == index
        assert np.all(unpaired[~active])  # inactive parameters are never paired
        assert unpaired[active].sum() == active.sum() % 2  # perfect, but for an odd one out
        assert np.all(cos[unpaired] == 1) and np.all(sin[unpaired] == 0)
        assert np.allclose(cos, cos[partner]) and np.allclose(sin, -sin[partner])
        np.testing.assert_allclose(cos**2 + sin**2, 1.0)
        assert np.all(np.abs(np.arcsin(sin)) <= g * math.pi / 4 + 1e-12)
        assert np.all(cos > 0)
    angles = np.abs(np.arcsin(bowls.sin[bowls.partner != np.arange(num_params)]))
    assert angles.max() > 0.8 * g * math.pi / 4  # the range is used
    np.testing.assert_allclose(bowls.elo_loss(bowls.theta_peak[:, None, :]), 0.0, atol=1e-12)


def test_no_interaction_means_no_rotation():
    assert not draw(TruthPrior(), [0]).rotated


def test_prior_errors_name_the_key():
    for truth, key in [
        ({"offset": {"distribution": "cauchy"}}, "truth.offset.distribution"),
        ({"offset": {"scale": math.inf}}, "truth.offset.scale"),
        ({"offset": 3}, "truth.offset"),
        ({"elo_per_c_end": {"min": 0.1, "max": 0.2, "mode": 1}}, "truth.elo_per_c_end"),
        ({"elo_per_c_end": "big"}, "truth.elo_per_c_end"),
        ({"inactive_fraction": True}, "truth.inactive_fraction"),
        ({"interaction": 1.01}, "truth.interaction"),
        ({"strength": 1}, "truth"),
    ]:
        with pytest.raises(PriorError, match=key.replace(".", r"\.")):
            TruthPrior.from_mapping(truth)
    assert TruthPrior.from_mapping(None) == TruthPrior.from_mapping({}) == TruthPrior()
    prior = TruthPrior(elo_min=0.1, elo_max=0.3, interaction=0.5)
    assert TruthPrior.from_mapping(prior.to_dict()) == prior


@pytest.mark.slow
def test_a_tune_of_1000_parameters_and_3_2_million_games_runs():
    """The largest tune Fishtest accepts in games, at 1000 int parameters: it runs
    (about 10 s, 0.3 GB), stays finite and in bounds, and improves on the start."""
    from spsa_bench.engine.simulate import simulate

    raw = {
        "games": 3_200_000,
        "checkpoints": 11,
        "seeds": {"first": 0, "count": 2},
        "noise": "STC",
        "batch_modes": {"sync": {"workers": 1, "batch": "fixed", "batch_size": 36}},
        "scenarios": {"big": {"synthetic_tune": {"params": 1000, "value": 100}}},
        "optimizers": {"spsa": {"A_ratio": 0.1}},
    }
    ds = simulate(resolve(raw), optimizer="spsa", batch_mode="sync", scenario="big", seeds=[0, 1])
    assert ds.sizes["param"] == 1000 and int(ds["pairs"].values[-1]) == 1_600_000
    loss = ds["elo_loss"].values
    assert np.isfinite(loss).all() and np.all(loss[:, -1] < loss[:, 0])
    theta = ds["theta"].values
    assert np.all((theta >= 0) & (theta <= 200))
    assert np.all(ds["total_pairs"].values == 1_600_000)


def test_the_stake_cap_bounds_every_curvature_and_only_binds_where_steeper():
    """elo_at_stake.cap: e_i = min(kappa s_i, cap); without the cap the same instances
    (same draws) are unchanged, and the gain is at most the drawn total."""
    from spsa_bench.model.instances import TruthPrior, draw_instances

    start = np.full(12, 100.0)
    args = (start, start - 100.0, start + 100.0, np.full(12, 10.0), 7, list(range(300)))
    truth = {
        "elo_at_stake": {"median": 2.0, "sigma": 1.0},
        "plateau": {"fraction": 0.5, "width": 1},
    }
    free = draw_instances(TruthPrior.from_mapping(truth), *args)
    truth["elo_at_stake"]["cap"] = 0.5
    capped = draw_instances(TruthPrior.from_mapping(truth), *args)
    assert free.elo_per_scale.max() > 0.5  # the uncapped prior has steeper parameters
    np.testing.assert_array_equal(capped.elo_per_scale, np.minimum(free.elo_per_scale, 0.5))
    np.testing.assert_array_equal(capped.theta_peak, free.theta_peak)
    starts = np.tile(start, (300, 1))
    assert np.all(capped.elo_loss(starts) <= free.elo_loss(starts) + 1e-12)
    assert TruthPrior.from_mapping(
        TruthPrior.from_mapping(truth).to_dict()
    ) == TruthPrior.from_mapping(truth)


def _bowl_arrays(bowl):
    names = ("theta_peak", "elo_per_scale", "partner", "cos", "sin", "plateau", "tc_theta_peak")
    return {n: getattr(bowl, n) for n in names if getattr(bowl, n) is not None}


def test_posterior_instances_draw_seed_s_from_prior_s_mod_k():
    """Seed s's bowl is the one its prior (priors[s mod K]) draws at that seed alone, so
    it depends on neither the other seeds nor their priors; one prior is draw_instances
    exactly; the priors differ, so a mix-up of rows would show."""
    from spsa_bench.model.instances import draw_posterior_instances

    block = parse_block(synthetic_tune(6))
    args = (block.start, block.min, block.max, block.c_end, 11)
    priors = [
        TruthPrior.from_mapping(
            {
                "offset": {"scale": scale},
                "plateau": {"fraction": 0.5, "width": 1},
                "time_control_shift": {"spread": 0.5, "tuned_at": "LTC"},
            }
        )
        for scale in (0.5, 2.0, 4.0)
    ]
    seeds = [0, 1, 2, 3, 4, 7, 9]
    mixed = draw_posterior_instances(priors, *args, seeds)
    for row, seed in enumerate(seeds):
        alone = draw_instances(priors[seed % 3], *args, [seed])
        for name, values in _bowl_arrays(alone).items():
            axis = 1 if name == "tc_theta_peak" else 0  # (time control, seed, param)
            mine = np.take(getattr(mixed, name), [row], axis=axis)
            np.testing.assert_array_equal(mine, values, name)
    one = draw_posterior_instances(priors[:1], *args, seeds)
    plain = draw_instances(priors[0], *args, seeds)
    for name, values in _bowl_arrays(plain).items():
        np.testing.assert_array_equal(getattr(one, name), values, name)
    offsets = np.abs(mixed.theta_peak - block.start) / block.c_end
    assert offsets[[0, 3]].mean() < offsets[[2, 4]].mean()  # scale 0.5 against 4.0
    assert mixed.tc_theta_peak is not None and mixed.tc_theta_peak.shape[1] == len(seeds)
    with pytest.raises(ValueError, match="at least one prior"):
        draw_posterior_instances([], *args, seeds)


def test_make_problem_takes_a_sequence_of_priors_as_the_posterior_predictive():
    from spsa_bench.model.instances import draw_posterior_instances

    config = resolve(small_config_dict())
    scenario = next(n for n in config.scenarios if "fishtest_params" in config.scenario(n)
                    or "synthetic_tune" in config.scenario(n))  # fmt: skip
    priors = [TruthPrior.from_mapping({"offset": {"scale": s}}) for s in (0.5, 3.0)]
    problem = make_problem(config, scenario, [0, 1, 2, 3], prior=priors)
    view = problem.view
    expected = draw_posterior_instances(
        priors, view.theta_start, view.theta_min, view.theta_max, view.c_dev, config.entropy,
        [0, 1, 2, 3],
    )  # fmt: skip
    np.testing.assert_array_equal(problem.bowl.theta_peak, expected.theta_peak)
