"""Keys that differ between students in content, not only in letter (issue 38 item 2).

For every multiple-choice question of Labs 05-13, over 200 ids:
- the share of ids whose right option differs in content from the default variant's (the id
  "student", no salt: what a lab shows before an id is typed) is at least a third, and so is the
  share differing from the most common right option (so no one answer serves two thirds of a
  class). Content is the option's internal id, the mechanism or layout it names; where the options
  are bare numbers (Lab 07's micro-batch counts) it is the number shown.
- no blind rule over the options as a student sees them (their order, their length, the numbers
  and words they share) finds the key more often than chance (1 / options) plus 10 points.
Each question's share and its best rule's hit rate are printed."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import pytest

from labs.core.scenarios import registry, variant

IDS = [f"student-{i:03d}" for i in range(200)]
DEFAULT_ID = "student"
LABS = tuple(sorted(lab for lab in registry() if "05" <= lab[:2] <= "13"))
NUMBER_LABELS = {("07_pipeline_visualizer", "microbatches")}  # options are bare counts: the count is the content
MIN_SHARE = 1 / 3
MAX_LEAD = 0.10  # a blind rule may beat chance by at most this


def choice_questions() -> list[tuple[str, str]]:
    return [(lab, q) for lab in LABS for q, question in variant(lab, DEFAULT_ID, salt="").questions.items() if not question.numeric]


def content(lab: str, q: str, question) -> str:
    if (lab, q) in NUMBER_LABELS:
        return next(o.label for o in question.spec.options if o.key == question.spec.correct)
    return question.spec.correct


@lru_cache(maxsize=None)
def drawn(lab: str, q: str) -> tuple:
    return tuple(variant(lab, i, salt="").questions[q] for i in IDS)


# ---- blind rules: each scores the options as a student sees them; the highest score is its pick -----
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers(label: str) -> tuple[float, ...]:
    return tuple(float(x.replace(",", "")) for x in NUMBER.findall(label))


def words(label: str) -> set[str]:
    return set(re.findall(r"[a-z]+", label.lower()))


def _rank_rules(name: str, values) -> dict:
    """Pick the largest, the smallest, the second largest and the second smallest of `values`."""
    order = sorted(set(values))
    rules = {f"{name} largest": list(values), f"{name} smallest": [-v for v in values]}
    if len(order) >= 3:
        rules[f"{name} second largest"] = [1.0 if v == order[-2] else 0.0 for v in values]
        rules[f"{name} second smallest"] = [1.0 if v == order[1] else 0.0 for v in values]
    return rules


def rule_scores(labels: list[str]) -> dict[str, list[float]]:
    """Every blind rule's score per option (options in the student's order)."""
    n = len(labels)
    nums = [numbers(label) for label in labels]
    ws = [words(label) for label in labels]
    rules: dict[str, list[float]] = {f"position {i + 1}": [1.0 if j == i else 0.0 for j in range(n)] for i in range(n)}
    rules.update(_rank_rules("length", [len(label) for label in labels]))
    rules.update(_rank_rules("word overlap", [sum(len(ws[i] & ws[j]) for j in range(n) if j != i) for i in range(n)]))
    shared = [sum(1 for j in range(n) if j != i for x in set(nums[i]) if x in nums[j]) for i in range(n)]
    rules.update(_rank_rules("numbers shared", shared))
    if all(nums):
        rules.update(_rank_rules("sum of numbers", [sum(x) for x in nums]))
        rules.update(_rank_rules("largest number", [max(x) for x in nums]))
        rules.update(_rank_rules("smallest number", [min(x) for x in nums]))
        top, bottom = max(max(x) for x in nums), min(min(x) for x in nums)
        rules["holds the extreme numbers"] = [float(top in x) + float(bottom in x) for x in nums]
        rules["holds no extreme number"] = [-(float(top in x) + float(bottom in x)) for x in nums]
    slots = len(nums[0]) if nums and len({len(x) for x in nums}) == 1 else 0
    for k in range(slots):
        column = [x[k] for x in nums]
        rules.update(_rank_rules(f"number {k + 1}", column))
        counts = Counter(column)
        rules[f"number {k + 1} shared most"] = [counts[v] for v in column]
        for j in range(slots):  # drop the options holding slot j's extreme, then rank slot k
            if j == k:
                continue
            other = [x[j] for x in nums]
            for drop, extreme in (("largest", max(other)), ("smallest", min(other))):
                kept = [v != extreme for v in other]
                if sum(kept) < 2:
                    continue
                for pick, sign in (("largest", 1), ("smallest", -1)):
                    rules[f"without number {j + 1}'s {drop}, number {k + 1} {pick}"] = [sign * v if keep else -1e18 for v, keep in zip(column, kept)]
    return rules


def rule_hits(lab: str, q: str) -> dict[str, float]:
    """Each rule's share of the 200 ids whose key it finds (a tie of t options counts 1/t if the
    key is among them)."""
    hits: Counter = Counter()
    for question in drawn(lab, q):
        labels = [o.label for o in question.options]
        key = "ABCDEFGH".index(question.key)
        for name, scores in rule_scores(labels).items():
            best = max(scores)
            tied = [i for i, s in enumerate(scores) if s == best]
            if key in tied:
                hits[name] += 1 / len(tied)
    return {name: count / len(IDS) for name, count in hits.items()} or {"none": 0.0}


def shares(lab: str, q: str) -> tuple[float, float, str]:
    """(share differing from the default variant's right option, share differing from the most
    common one, the most common one)."""
    default = content(lab, q, variant(lab, DEFAULT_ID, salt="").questions[q])
    keys = [content(lab, q, x) for x in drawn(lab, q)]
    common, count = Counter(keys).most_common(1)[0]
    return sum(k != default for k in keys) / len(keys), 1 - count / len(keys), common


# Questions that fail today, with what the first run of this test measured (Nov 28 2026); each is
# strict: once its lab's new edition passes, the entry must go.
FAILING = {
}
CONTENT_FAILING = {k for k, why in FAILING.items() if "differ" in why}


def _marked(keys) -> list:
    return [pytest.param(*k, marks=pytest.mark.xfail(strict=True, reason=FAILING[k])) if k in keys else k for k in choice_questions()]


QUESTIONS = choice_questions()


@pytest.mark.parametrize("lab, q", _marked(CONTENT_FAILING))
def test_the_right_option_differs_in_content(lab, q):
    from_default, from_common, common = shares(lab, q)
    print(f"{lab} {q}: {from_default:.0%} of ids differ from the default variant's right option, {from_common:.0%} from the most common ({common})")
    assert from_default >= MIN_SHARE and from_common >= MIN_SHARE, (lab, q, from_default, from_common, common)


@pytest.mark.parametrize("lab, q", _marked(FAILING))
def test_no_blind_rule_finds_the_key(lab, q):
    chance = 1 / len(drawn(lab, q)[0].options)
    hits = rule_hits(lab, q)
    best = max(hits, key=hits.get)
    print(f"{lab} {q}: best blind rule '{best}' finds {hits[best]:.0%} (chance {chance:.0%})")
    assert hits[best] <= chance + MAX_LEAD, (lab, q, best, hits[best])


def test_the_rules_find_a_planted_key():
    """The rules are not blind to a key that is recognisable: the longest, and the smallest
    second number among options not holding the largest first number, are found every time."""
    labels = ["TP=16 x PP=1, mb 8", "TP=8 x PP=2, micro-batch 1 or so", "TP=4 x PP=4, mb 2", "TP=2 x PP=8, mb 4"]
    scores = rule_scores(labels)
    assert max(range(4), key=lambda i: scores["length largest"][i]) == 1
    assert max(range(4), key=lambda i: scores["without number 1's largest, number 2 smallest"][i]) == 1
