"""The numbers README.md and docs/ quote from the default run are a recorded run's.

``docs/default-run/findings.md`` is ``results/findings.md`` of a recorded default run
(its README says which). The docs quote the budget check (each scenario's predicted
need and the budget's share of it) and the best mean ranks by hand; these tests read
the recorded file and fail when a doc and the run disagree (a doc's rounding of the
run's number is agreement: 2.5 for 2.52).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "docs" / "default-run" / "findings.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def _agrees(quoted: str, recorded: float) -> bool:
    """Whether ``quoted`` is ``recorded`` rounded to the decimals ``quoted`` shows."""
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    return abs(float(quoted) - round(recorded, decimals)) < 1e-9


def _recorded_needs() -> dict[str, tuple[float, str]]:
    """``{scenario: (budget share of the need, need as printed)}`` of the sync mode."""
    pattern = r"^- `([\w-]+)` / `sync`: .*?([\d.]+) (?:×|of) the ([\d,]+) pairs `spsa` needs"
    needs = {s: (float(f), n) for s, f, n in re.findall(pattern, RECORDED.read_text(), re.M)}
    assert len(needs) >= 5, "the recorded findings lost their budget verdicts"
    return needs


def _section(text: str, start: str) -> str:
    """The paragraph of flattened ``text`` that starts with ``start`` (to the next bold
    heading)."""
    begin = text.index(start)
    end = text.find(" **", begin + len(start))
    return text[begin : end if end > 0 else None]


SHARE = r"([\d.]+) (?:×|of) the ([\d,]+) pairs"


def test_every_quoted_budget_share_is_the_recorded_runs():
    """Any budget share of the recorded findings (the main tables' and the studies': a
    need can come with several budgets) may be quoted, as the run printed it."""
    recorded: dict[str, list[float]] = {}
    for share, need in re.findall(SHARE, RECORDED.read_text()):
        recorded.setdefault(need, []).append(float(share))
    quoted = [(path.name, *found) for path in DOCS for found in re.findall(SHARE, _flat(path))]
    assert quoted, "no doc quotes a budget share any more: drop this test or the file"
    for name, share, need in quoted:
        assert need in recorded, f"{name}: a need of {need} pairs is not the recorded run's"
        assert any(_agrees(share, value) for value in recorded[need]), (
            f"{name}: {share} of {need} pairs, the run printed {recorded[need]}"
        )


def test_the_default_grids_needs_in_benchmark_md_are_the_recorded_runs():
    sentence = _section(_flat(ROOT / "docs" / "benchmark.md"), "**On the default grid**")
    for scenario, (share, need) in _recorded_needs().items():
        match = re.search(
            rf"`{re.escape(scenario)}` ([\d,]+)(?: pairs)? \((?:budget )?([\d.]+)", sentence
        )
        assert match, f"benchmark.md no longer states {scenario}'s need"
        assert match.group(1) == need, (scenario, match.group(1), need)
        assert _agrees(match.group(2), share), (scenario, match.group(2), share)


def test_what_the_default_run_concludes_quotes_the_recorded_verdicts():
    paragraph = _section(
        _flat(ROOT / "docs" / "benchmark.md"), "**Which comparisons can be ranked at all**"
    )
    for scenario, (share, _) in _recorded_needs().items():
        match = re.search(rf"`{re.escape(scenario)}` (?:\(|gets )?([\d.]+)", paragraph)
        assert match, f"the conclusions no longer give {scenario}'s share"
        assert _agrees(match.group(1), share), (scenario, match.group(1), share)


def test_the_best_mean_rank_quoted_is_the_recorded_runs():
    found = re.findall(
        r"^- `([\w-]+)`: `([\w-]+)` has the lowest mean rank, ([\d.]+)",
        RECORDED.read_text(),
        re.M,
    )
    assert {mode for mode, _, _ in found} == {"sync", "async-fixed", "async-variable"}
    assert {arm for _, arm, _ in found} == {"sf-sgd-lr-0p003"}
    ranks = [float(rank) for _, _, rank in found]
    text = _flat(ROOT / "docs" / "benchmark.md")
    match = re.search(
        r"schedule-free SGD \(`lr` 0\.003\) has the best mean rank \(([\d.]+)–([\d.]+)", text
    )
    assert match, "benchmark.md no longer names the best mean rank"
    assert _agrees(match.group(1), min(ranks)) and _agrees(match.group(2), max(ranks))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_no_doc_quotes_a_need_the_recorded_run_does_not_print(path):
    """A need in a NOT RANKED sentence ("short by N pairs") is the recorded run's too."""
    recorded = _flat(RECORDED)
    for short in re.findall(r"short by ([\d,]+) pairs", _flat(path)):
        assert f"short by {short} pairs" in recorded, f"{path.name}: short by {short} pairs"
