"""results/findings.md from small tables: the ranked and NOT RANKED comparisons with
their numbers, the best arms with their paired intervals, the studies' answers only
where their budget check ranks them, and a missing optional study said to be missing."""

import pandas as pd
import pytest

from spsa_bench.analysis.findings import findings_markdown, read_tables, write_findings

SHORT = "the budget, 30,000 pairs, is 0.044 of the 676,552 pairs `spsa` needs"


def _convergence():
    common = {"budget_pairs": 30000, "need_reference": "spsa", "p_holm": 0.01}
    rows = [
        # mixed / sync: ranked, sf-sgd best and better than the baseline
        ("spsa", "sync", "mixed", 0.5, 0.4, 0.6, 0.0, None, None, True, ""),
        ("sf-sgd", "sync", "mixed", 0.25, 0.2, 0.3, 0.25, 0.1, 0.4, True, ""),
        ("spsa", "sync", "tune-16-stc", 2.5, 2.0, 3.0, 0.0, None, None, False, SHORT),
        ("sf-sgd", "sync", "tune-16-stc", 0.7, 0.6, 0.8, 1.8, 1.5, 2.1, False, SHORT),
    ]
    columns = ["optimizer", "batch_mode", "scenario", "final_loss_mean", "final_loss_ci_low",
               "final_loss_ci_high", "diff_elo_mean", "diff_elo_ci_low", "diff_elo_ci_high",
               "ranked", "shortfall"]  # fmt: skip
    table = pd.DataFrame(rows, columns=columns).assign(**common)
    table["reference_need_pairs"] = [28326, 28326, 676552, 676552]
    table["reference_budget_fraction"] = 30000 / table["reference_need_pairs"]
    return table


def _ranks():
    return pd.DataFrame(
        {
            "batch_mode": ["sync", "sync"],
            "arm": ["sf-sgd", "spsa"],
            "rank": [1.0, 2.0],
            "rank_low": [1.0, 1.5],
            "rank_high": [1.5, 2.0],
            "mean_final_loss": [0.25, 0.5],
            "n_scenarios": [1, 1],
            "n_seeds": [100, 100],
            "not_ranked": [f"tune-16-stc: {SHORT}"] * 2,
        }
    )


def _workers_safe():
    below = f"budget below need: {SHORT} (short by 646,552 pairs)"
    return pd.DataFrame(
        {
            "scenario": ["mixed", "tune-16-stc"],
            "arm": ["spsa", "spsa"],
            "safe_workers": [10, None],
            "safe": ["10", "NOT RANKED (budget below need)"],
            "max_workers": [200, 200],
            "diff_at_max": [299.0, -1.03],
            "ranked": [True, False],
            "shortfall": ["", below],
        }
    )


def _write(tmp_path, tables):
    paths = {}
    for key, table in tables.items():
        paths[key] = tmp_path / f"{key}.csv"
        table.to_csv(paths[key], index=False)
    return paths


def test_ranked_and_not_ranked_comparisons_carry_their_numbers(tmp_path):
    paths = _write(tmp_path, {"convergence": _convergence(), "ranks": _ranks()})
    text = findings_markdown(read_tables(paths))
    assert "1 of 2 comparisons (scenario × batch mode) are ranked at the budget of 30,000" in text
    assert "- `mixed` / `sync`: ranked; the budget is 1.06 × the 28,326 pairs `spsa` needs." in text
    assert f"- `tune-16-stc` / `sync`: **NOT RANKED**: {SHORT}." in text
    # the best arm: from the ranked comparison only (sf-sgd's 0.7 on tune-16-stc is not read)
    assert (
        "`sf-sgd` has the lowest mean rank, 1.00 (95% bootstrap interval [1.00, 1.50]) over 1 "
        "ranked scenario, mean final loss 0.250 Elo; against `spsa` (the baseline) 2.00 "
        "[1.50, 2.00]: the intervals overlap, not separated (`results/tables/ranks.csv`)" in text
    )
    assert (
        "- `mixed` / `sync`: lowest mean final loss `sf-sgd`, 0.250 Elo [0.200, 0.300] (next: "
        "`spsa`, 0.500 Elo); paired Δ vs the baseline 0.250 Elo, 95% CI [0.100, 0.400] "
        "(excludes 0, and significant after Holm's correction over the table), Holm p 0.010 "
        "(`results/tables/convergence.csv`)." in text
    )
    assert "`tune-16-stc` / `sync`: lowest" not in text


@pytest.mark.parametrize(
    ("columns", "verdict"),
    [
        ({"p_holm": 0.3}, "but not significant after Holm's correction"),
        # the table's own column wins over p_holm (a table made at another level)
        ({"p_holm": 0.01, "significant": False}, "but not significant after Holm's correction"),
        ({"p_holm": 0.3, "significant": True}, "and significant after Holm's correction"),
        ({"p_holm": 0.01, "diff_elo_ci_low": -0.1}, "(includes 0: not distinguished)"),
    ],
)
def test_an_interval_excluding_0_is_named_distinguished_only_if_holm_agrees(
    tmp_path, columns, verdict
):
    convergence = _convergence()
    best = (convergence["optimizer"] == "sf-sgd") & (convergence["scenario"] == "mixed")
    for column, value in columns.items():
        if column not in convergence:
            convergence[column] = True
        convergence.loc[best, column] = value
    paths = _write(tmp_path, {"convergence": convergence, "ranks": _ranks()})
    text = findings_markdown(read_tables(paths))
    line = next(x for x in text.splitlines() if x.startswith("- `mixed` / `sync`: lowest"))
    assert verdict in line, line


def test_in_short_counts_and_names_what_the_sections_below_say(tmp_path):
    paths = _write(tmp_path, {"convergence": _convergence(), "ranks": _ranks()})
    text = findings_markdown(read_tables(paths))
    short = text.split("## In short", 1)[1].split("## ", 1)[0]
    assert text.index("## In short") < text.index("## Which comparisons are ranked")
    assert (
        "- **Ranked**: 1 of 2 comparisons; NOT RANKED: `tune-16-stc` in every batch mode (the "
        "budget is below the reference arm's need)" in short
    )
    assert "`sf-sgd` in every batch mode (1.00 in `sync`)" in short
    assert (
        "- **Against the baseline `spsa`**: in 1 of the 1 ranked comparisons the arm with the "
        "lowest mean final loss beats it after Holm's correction, in 0 it is not "
        "distinguished from it, and in 0 the baseline itself" in short
    )
    # a second batch mode: NOT RANKED in one mode only, another leader, a Holm-rejected
    # best arm and a cell the baseline wins
    convergence = _convergence()
    extra = convergence.copy()
    extra["batch_mode"] = "async-fixed"
    extra.loc[extra["scenario"] == "tune-16-stc", "ranked"] = True
    extra.loc[extra["scenario"] == "tune-16-stc", "shortfall"] = ""
    extra.loc[(extra["optimizer"] == "sf-sgd") & (extra["scenario"] == "mixed"), "p_holm"] = 0.4
    extra.loc[(extra["optimizer"] == "sf-sgd") & (extra["scenario"] == "tune-16-stc"),
              "final_loss_mean"] = 9.0  # fmt: skip
    ranks = _ranks()
    more = ranks.copy()
    more["batch_mode"] = "async-fixed"
    more["rank"] = [2.0, 1.0]
    paths = _write(tmp_path, {"convergence": pd.concat([convergence, extra]),
                              "ranks": pd.concat([ranks, more])})  # fmt: skip
    short = findings_markdown(read_tables(paths)).split("## In short", 1)[1].split("## ", 1)[0]
    assert "- **Ranked**: 3 of 4 comparisons; NOT RANKED: `tune-16-stc` in `sync` (" in short
    assert "`sf-sgd` in `sync` (1.00); `spsa` in `async-fixed` (1.00)" in short
    assert (
        "in 1 of the 3 ranked comparisons the arm with the lowest mean final loss beats it "
        "after Holm's correction, in 1 it is not distinguished from it, and in 1 the baseline "
        "itself has the lowest loss" in short
    )


def test_robust_settings_are_one_table_of_test_seed_losses_per_family_scenario(tmp_path):
    def row(sweep, mode, tuning, scenario, setting, loss, family=True, edge=False):
        return {"sweep": sweep, "batch_mode": mode, "tuning": tuning, "scenario": scenario,
                "arm": f"{sweep}-x", "setting": setting, "at_edge": edge,
                "in_family": family, "loss_mean": loss, "loss_low": loss - 0.01,
                "loss_high": loss + 0.01}  # fmt: skip

    tuned = pd.DataFrame([
        row("adam", "sync", "robust", "mixed", "lr=0.04", 0.3),
        row("adam", "sync", "robust", "calibrated", "lr=0.04", 0.2),
        row("adam", "sync", "oracle", "mixed", "lr=0.01", 0.1),  # the oracle's: not read
        row("adam", "sync", "robust", "tune-16-stc", "lr=0.04", 9.0, family=False),
        row("sf-sgd", "sync", "robust", "mixed", "lr=0.3", 0.5, edge=True),
    ])  # fmt: skip
    tables = {"convergence": _convergence(), "ranks": _ranks(), "tuned": tuned}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    section = text.split("## Robust hyperparameters", 1)[1].split("\n## ", 1)[0]
    assert "| sweep | batch mode | robust setting | `mixed` | `calibrated` |" in section
    assert "| `adam` | `sync` | lr=0.04 | 0.300 [0.290, 0.310] | 0.200 [0.190, 0.210] |" in section
    # a scenario outside the family is not a column; a sweep without a scenario shows –
    assert "| `sf-sgd` | `sync` | lr=0.3 (*edge*) | 0.500 [0.490, 0.510] | – |" in section
    assert "tune-16-stc" not in section and "9.00 [8.99, 9.01]" not in section
    assert "lr=0.01" not in section


def test_missing_optional_studies_are_named_not_invented(tmp_path):
    paths = _write(tmp_path, {"convergence": _convergence(), "ranks": _ranks()})
    text = findings_markdown(read_tables(paths))
    assert "Not run: the configuration has no `workers_study` section." in text
    assert "Not run: the configuration has no `cend_study` section." in text
    assert "Not run: the configuration has no `tuning` section." in text
    with pytest.raises(ValueError, match="ranks.csv"):
        read_tables({"convergence": paths["convergence"]})


def test_no_ranked_comparison_names_no_best_arm(tmp_path):
    convergence = _convergence()
    convergence["ranked"] = False
    convergence["shortfall"] = SHORT
    ranks = _ranks().assign(rank=float("nan"), n_scenarios=0)
    paths = _write(tmp_path, {"convergence": convergence, "ranks": ranks})
    text = findings_markdown(read_tables(paths))
    assert "0 of 2 comparisons" in text
    assert "No comparison is ranked (the section above says why), so no arm is named best" in text
    assert "lowest mean" not in text


def test_safe_concurrency_only_where_the_budget_check_ranks(tmp_path):
    tables = {"convergence": _convergence(), "ranks": _ranks(), "workers_safe": _workers_safe()}
    out = write_findings(_write(tmp_path, tables), tmp_path / "findings.md")
    text = out.read_text()
    assert (
        "- `mixed`: safe concurrency `spsa` 10 (Δ vs sync at 200 workers 299 Elo) "
        "(`results/tables/workers_safe.csv`)." in text
    )
    assert (
        "- `tune-16-stc`: **NOT RANKED**, budget below need: " + SHORT + " (short by 646,552 "
        "pairs); no safe concurrency is declared for any arm" in text
    )
    assert "-1.03" not in text  # the NOT RANKED scenario's "more workers help" is not read
    # what "safe" and "none" mean is said where they are read, with where the margin is
    assert "*none*: even the smallest pool tested fails" in text
    assert "`results/tables/workers.md`" in text


def test_cend_and_budget_answers_follow_their_budget_check(tmp_path):
    cend = pd.DataFrame(
        {"arm": ["classic", "min-c2"], "c_end": [1.0, 1.0], "loss_mean": [2.0, 1.5],
         "loss_low": [1.8, 1.3], "loss_high": [2.2, 1.7], "diff_mean": [None, -0.5],
         "diff_low": [None, -0.7], "diff_high": [None, -0.3], "p_holm": [None, 0.001],
         "ranked": [True, True], "shortfall": ["", ""]}
    )  # fmt: skip
    budget = pd.DataFrame(
        {"scenario": ["mixed"] * 4, "budget": [10000, 10000, 30000, 30000],
         "arm": ["spsa", "spsa-constant"] * 2, "tuning": ["as configured", "oracle"] * 2,
         "setting": ["", "r_scale=1", "", "r_scale=3"], "loss_mean": [1.0, 0.8, 0.4, 0.3],
         "loss_low": [0.9, 0.7, 0.3, 0.2], "loss_high": [1.1, 0.9, 0.5, 0.4],
         "baseline": ["spsa"] * 4, "diff_mean": [None, -0.2, None, -0.1],
         "diff_low": [None, -0.3, None, -0.15], "diff_high": [None, -0.1, None, -0.05],
         "ranked": [False, False, True, True],
         "shortfall": ["budget below need: the budget, 10,000 pairs, is 0.35 of it"] * 2 + [""] * 2}
    )  # fmt: skip
    tables = {"convergence": _convergence(), "ranks": _ranks(), "cend": cend, "budget": budget}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    assert (
        "- c_end 1: lowest mean final loss `min-c2`, 1.50 Elo [1.30, 1.70], Δ vs the baseline "
        "-0.500 Elo, 95% CI [-0.700, -0.300], Holm p 0.0010 (`results/tables/cend.csv`)." in text
    )
    assert (
        "- `mixed` at 10,000 pairs: **NOT RANKED**, budget below need: the budget, 10,000 "
        "pairs, is 0.35 of it; no winner" in text
    )
    assert (
        "- `mixed` at 30,000 pairs: lowest mean final loss `spsa-constant` (oracle, r_scale=3), "
        "0.300 Elo [0.200, 0.400], Δ vs `spsa` -0.100 Elo, 95% CI [-0.150, -0.0500]" in text
    )
    # a tie (the same runs under two names) is said, each arm's setting once
    tie = budget.copy()
    tie.loc[2, ["setting", "loss_mean", "diff_mean", "diff_low", "diff_high"]] = (
        "as configured", 0.3, 0.0, 0.0, 0.0)  # fmt: skip
    tie.loc[2, "baseline"] = "spsa-constant"
    tie.loc[3, ["diff_mean", "diff_low", "diff_high"]] = None
    text = findings_markdown(read_tables(_write(tmp_path, tables | {"budget": tie})))
    assert (
        "- `mixed` at 30,000 pairs: lowest mean final loss `spsa` (as configured), tied with "
        "`spsa-constant` (oracle, r_scale=3), 0.300 Elo [0.300, 0.500], the same loss as "
        "`spsa-constant` on every seed (Δ 0)" in text
    )
    cend["ranked"] = False
    cend["shortfall"] = f"budget below need: {SHORT}"
    text = findings_markdown(read_tables(_write(tmp_path, tables | {"cend": cend})))
    assert f"budget below need: {SHORT}; no winner is read" in text
    assert "**NOT RANKED** (the arms `classic` and `min-c2` at c_end 1, on the study's" in text
    assert "c_end 1: lowest" not in text


def test_markdown_html_renders_headings_lists_tables_and_escapes():
    from spsa_bench.analysis.html import markdown_html

    text = "# Title\n\nA *b* and **c** `x<y`.\n\n- one\n- two <b>\n\n| a | b |\n|---|---|\n| 1 | `2` |\n"
    page = markdown_html(text, "T")
    assert "<h1>Title</h1>" in page
    assert "<p>A <em>b</em> and <strong>c</strong> <code>x&lt;y</code>.</p>" in page
    assert "<ul><li>one</li><li>two &lt;b&gt;</li></ul>" in page
    assert "<tr><th>a</th><th>b</th></tr>" in page and "<td><code>2</code></td>" in page


def test_numbers_keep_three_significant_digits_and_p_values_two():
    from spsa_bench.analysis.findings import _num, _p

    # a mean is not shown coarser than its interval: trailing zeros stay
    assert [_num(v) for v in (0.100029, 0.029981, 20.958, 4.0, 0.000895)] == [
        "0.100", "0.0300", "21.0", "4.00", "0.000895",
    ]  # fmt: skip
    assert _num(1.2e-5) == "1.20e-05" and _num(0.0) == "0" and _num(float("inf")) == "∞"
    assert [_p(v) for v in (0.561, 0.01, 6.7e-23, 1.0)] == ["0.56", "0.010", "< 0.001", "1.0"]


def test_the_rank_leader_is_separated_only_when_the_intervals_do_not_overlap(tmp_path):
    ranks = _ranks().assign(rank_low=[1.0, 1.8], rank_high=[1.4, 2.0])
    text = findings_markdown(read_tables(_write(tmp_path, {"convergence": _convergence(),
                                                           "ranks": ranks})))  # fmt: skip
    assert "against `spsa` (the baseline) 2.00 [1.80, 2.00]: separated" in text


def test_workers_name_the_first_failing_pool_and_warn_that_within_is_not_no_worse(tmp_path):
    safe = _workers_safe().assign(first_failing=[50.0, None])
    tables = {"convergence": _convergence(), "ranks": _ranks(), "workers_safe": safe}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    assert "`spsa` 10 [fails at 50] (Δ vs sync at 200 workers 299 Elo)" in text
    assert "Within the margin is not no worse" in text


def test_the_robust_table_marks_losses_of_comparisons_the_budget_does_not_rank(tmp_path):
    tuned = pd.DataFrame([
        {"sweep": "adam", "batch_mode": "sync", "tuning": "robust", "scenario": s,
         "arm": "adam-x", "setting": "lr=0.04", "at_edge": False, "in_family": True,
         "loss_mean": 0.3, "loss_low": 0.2, "loss_high": 0.4}
        for s in ("mixed", "tune-16-stc")
    ])  # fmt: skip
    tables = {"convergence": _convergence(), "ranks": _ranks(), "tuned": tuned}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    assert "| `adam` | `sync` | lr=0.04 | 0.300 [0.200, 0.400] | 0.300 [0.200, 0.400] † |" in text
    assert "† a comparison the budget does not rank" in text


def test_budget_study_names_the_baseline_winner_and_the_next_arm_with_its_delta(tmp_path):
    budget = pd.DataFrame(
        {"scenario": ["mixed"] * 2, "budget": [30000] * 2, "arm": ["spsa-decay", "spsa-constant"],
         "tuning": ["oracle"] * 2, "setting": ["r_scale=0.3", "r_scale=1"],
         "loss_mean": [0.08, 0.12], "loss_low": [0.07, 0.11], "loss_high": [0.09, 0.13],
         "baseline": ["spsa-decay"] * 2, "diff_mean": [None, 0.04], "diff_low": [None, 0.03],
         "diff_high": [None, 0.05], "p_holm": [None, 2e-24], "ranked": [True, True],
         "shortfall": ["", ""]}
    )  # fmt: skip
    tables = {"convergence": _convergence(), "ranks": _ranks(), "budget": budget}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    assert (
        "- `mixed` at 30,000 pairs: lowest mean final loss `spsa-decay` (oracle, r_scale=0.3), "
        "0.0800 Elo [0.0700, 0.0900] (the baseline itself); next `spsa-constant` (oracle, "
        "r_scale=1), 0.120 Elo, Δ vs `spsa-decay` 0.0400 Elo, 95% CI [0.0300, 0.0500], "
        "Holm p < 0.001" in text
    )
    assert "*oracle*: its swept setting chosen for that scenario and budget" in text


@pytest.mark.parametrize("ranked", [False, True])
def test_the_framework_study_is_answered_only_where_ranked(tmp_path, ranked):
    frameworks = pd.DataFrame(
        {"arm": ["fishtest", "openbench"], "c_end": [2.0, 2.0], "loss_mean": [1.0, 0.9],
         "loss_low": [0.9, 0.8], "loss_high": [1.1, 1.0], "diff_mean": [None, -0.1],
         "diff_low": [None, -0.15], "diff_high": [None, -0.05], "p_holm": [None, 0.02],
         "ranked": [ranked] * 2, "shortfall": ["" if ranked else f"budget below need: {SHORT}"] * 2}
    )  # fmt: skip
    tables = {"convergence": _convergence(), "ranks": _ranks(), "frameworks": frameworks}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    section = text.split("## The framework study", 1)[1]
    if ranked:
        assert (
            "- c_end 2: lowest mean final loss `openbench`, 0.900 Elo [0.800, 1.00], Δ vs the "
            "reference -0.100 Elo, 95% CI [-0.150, -0.0500], Holm p 0.020" in section
        )
    else:
        assert "**NOT RANKED** (the arms `fishtest` and `openbench` at c_end 2:" in section
        assert "lowest" not in section


def test_in_short_says_not_relaxed_when_that_is_why(tmp_path):
    convergence = _convergence()
    unranked = convergence["scenario"] == "tune-16-stc"
    convergence.loc[unranked, "shortfall"] = "the mean loss of `spsa` has not relaxed (measured)"
    text = findings_markdown(read_tables(_write(tmp_path, {"convergence": convergence,
                                                           "ranks": _ranks()})))  # fmt: skip
    assert "(the reference arm's loss has not relaxed within the budget)" in text


def test_budget_study_gives_the_robust_choice_and_says_what_it_was_chosen_on(tmp_path):
    rows = []
    for scenario, ranked in (("mixed", True), ("tune-16-stc", False)):
        for arm, tuning, loss, diff in (
            ("spsa-decay", "oracle", 0.03, None),
            ("spsa-decay", "robust", 0.0731, None),
            ("spsa-constant", "robust", 0.0719, -0.00115),
        ):
            rows.append({"scenario": scenario, "budget": 300000, "arm": arm, "tuning": tuning,
                         "setting": "r_scale=0.3", "loss_mean": loss, "loss_low": loss - 0.01,
                         "loss_high": loss + 0.01, "baseline": "spsa-decay", "diff_mean": diff,
                         "diff_low": None if diff is None else -0.0017,
                         "diff_high": None if diff is None else -0.0006,
                         "p_holm": None if diff is None else 6.7e-4, "ranked": ranked,
                         "shortfall": "" if ranked else f"budget below need: {SHORT}"})  # fmt: skip
    tables = {"convergence": _convergence(), "ranks": _ranks(), "budget": pd.DataFrame(rows)}
    text = findings_markdown(read_tables(_write(tmp_path, tables)))
    assert (
        "; robust (one setting chosen across the study's scenarios, NOT RANKED ones included): "
        "lowest `spsa-constant` (robust, r_scale=0.3), 0.0719 Elo, Δ vs `spsa-decay` -0.00115 "
        "Elo, 95% CI [-0.00170, -0.000600], Holm p < 0.001" in text
    )
