"""The side-merged model: a site's classes summed into junk and not-junk.

With classes C split into junk J and not-junk C \\ J, the side-merged model is the
two-class model whose ``spam`` counts are the sums over J and whose ``ham`` counts the sums
over C \\ J, per token and in the totals:

    T_{spam,t} = Σ_{c∈J} T_ct,   T_{ham,t} = Σ_{c∉J} T_ct   (likewise D_ct, N_c, T_c).

It is exactly what a site declaring ham and spam alone would have learned from the same
messages, so its log-odds log P(spam|x) − log P(ham|x) are that site's, bit for bit while
the counts are integers. Only a site with more than two classes builds it; its verdict
comes from it, its class from the multi-class posteriors of the tokens that decided it
(docs/classes.md, "Scores").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from app.domain.naive_bayes import Scored
from app.domain.scoring import ModelCounts, ScoringParams

NOT_JUNK, JUNK = "ham", "spam"
V = TypeVar("V")
SIDES = (NOT_JUNK, JUNK)


@dataclass(frozen=True, slots=True)
class SideTotals:
    """A side's totals summed over its classes: messages N, occurrences T, Σ_t D_t."""

    messages: int
    occurrences: int
    token_messages: int


@dataclass(frozen=True, slots=True)
class SideModel:
    """A model's totals merged by side (``ModelCounts`` with the labels ham and spam)."""

    vocabulary: int
    sides: Mapping[str, SideTotals]

    def of(self, label: str) -> SideTotals:
        """The side's totals (zeros for a label that is not a side)."""
        return self.sides.get(label, SideTotals(0, 0, 0))


def side_of(label: str, junk: Collection[str]) -> str:
    """``spam`` for a junk class, else ``ham``."""
    return JUNK if label in junk else NOT_JUNK


def lumps(labels: Iterable[str], junk: Collection[str]) -> dict[str, str]:
    """Each class's side (``scoring.evidence``'s ``lumps``): ``spam`` for junk, else ``ham``."""
    return {label: side_of(label, junk) for label in labels}


def merge_totals(totals: ModelCounts, labels: Iterable[str], junk: Collection[str]) -> SideModel:
    """A model's totals summed by side over ``labels``; the vocabulary |V| is unchanged."""
    sums = {NOT_JUNK: [0, 0, 0], JUNK: [0, 0, 0]}
    for label in labels:
        of, side = totals.of(label), sums[side_of(label, junk)]
        side[0] += of.messages
        side[1] += of.occurrences
        side[2] += of.token_messages
    return SideModel(totals.vocabulary, {name: SideTotals(*s) for name, s in sums.items()})


def merge_vocabulary_counts(
    vocabulary_counts: Iterable[Mapping[str, int]], junk: Collection[str]
) -> Iterator[dict[str, int]]:
    """Each vocabulary token's learned messages D_ct summed by side (lazily)."""
    for per in vocabulary_counts:
        sums = {NOT_JUNK: 0, JUNK: 0}
        for label, n in per.items():
            sums[side_of(label, junk)] += n
        yield sums


def deciding_tokens(sides: Scored, params: ScoringParams) -> Collection[str] | None:
    """The tokens the side-merged model scored (its ``top`` most decisive), which name the
    class too; None (every token) without a ``top`` or under the Bernoulli model, which
    weighs every token of the vocabulary."""
    if params.top is None or params.kind == "bernoulli":
        return None
    return sides.contributions.keys()


def restricted(
    counts: Mapping[int, V], names: Mapping[int, str], tokens: Collection[str] | None
) -> Mapping[int, V]:
    """``counts`` of the ``tokens`` alone (``names``: token id -> token); all for None."""
    if tokens is None:
        return counts
    return {tid: per for tid, per in counts.items() if names[tid] in tokens}


def side_params(params: ScoringParams) -> ScoringParams:
    """``params`` for the side-merged model: the labels ham and spam, spam junk."""
    return replace(params, labels=SIDES, junk=(JUNK,))
