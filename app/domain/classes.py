"""From the log-posteriors of every class to what the spam/ham world asks: the most likely
class, and the log-odds of junk against not-junk.

With classes C split into junk J and not-junk C \\ J, the verdict's log-odds are

    log Σ_{c∈J} P(c|x) − log Σ_{c∉J} P(c|x),

each sum a log-sum-exp of log-posteriors (nats). A side of one class is its log-posterior
itself, so with the classes ham and spam this is log P(spam|x) − log P(ham|x), bit for bit.
Classes missing from the posteriors (they have learned nothing) have probability 0. With
more than two classes the service takes the verdict from the side-merged model instead
(``app.domain.sides``; docs/classes.md, "Scores").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from app.domain.naive_bayes import NEG_INF, log_sum_exp


def most_likely(log_posteriors: Mapping[str, float]) -> str:
    """The class with the highest log-posterior (the first of equals, in the mapping's
    order)."""
    best, best_value = "", NEG_INF
    for name, value in log_posteriors.items():
        if not best or value > best_value:
            best, best_value = name, value
    return best


def log_mass(log_posteriors: Mapping[str, float], classes: Collection[str]) -> float:
    """log Σ_{c∈classes} P(c|x): the log-probability that the message is of one of
    ``classes`` (−inf when none of them is in ``log_posteriors``)."""
    values = [v for name, v in log_posteriors.items() if name in classes]
    if len(values) == 1:
        return values[0]
    return log_sum_exp(values)


def junk_log_odds(log_posteriors: Mapping[str, float], junk: Collection[str]) -> float:
    """log P(junk|x) − log P(not junk|x), in nats (see the module docstring)."""
    not_junk = [name for name in log_posteriors if name not in junk]
    return log_mass(log_posteriors, junk) - log_mass(log_posteriors, not_junk)


def junk_pair(log_posteriors: Mapping[str, float], junk: Collection[str]) -> tuple[str, str]:
    """The most likely junk class and the most likely not-junk class: the two a verdict's
    clues weigh against each other (spam and ham when those are the classes)."""
    junk_side = {k: v for k, v in log_posteriors.items() if k in junk}
    other_side = {k: v for k, v in log_posteriors.items() if k not in junk}
    return most_likely(junk_side), most_likely(other_side)


def class_margin(log_posteriors: Mapping[str, float], target: str) -> float | None:
    """log P(target|x) − max_{c≠target} log P(c|x), in nats: how far ``target`` leads the
    nearest other class (< 0: another class is more likely). None when ``target`` is not
    scored (it has learned nothing) or is the only class scored."""
    own = log_posteriors.get(target)
    others = [v for name, v in log_posteriors.items() if name != target]
    if own is None or not others:
        return None
    return own - max(others)


def training_lead(
    log_posteriors: Mapping[str, float], target: str, junk: Collection[str]
) -> float | None:
    """What thick training weighs for a message of class ``target``, in nats: while another
    class is likelier, ``class_margin`` (<= 0: wrong, so learned); else how far the side of
    ``target`` (junk or not-junk) leads the other side, ``junk_log_odds`` or its negation.
    None when ``class_margin`` is. With ham and spam alone, the log-odds for spam (negated
    for ham), bit for bit: the verdict's margin, as before."""
    lead = class_margin(log_posteriors, target)
    if lead is None or lead <= 0:
        return lead
    odds = junk_log_odds(log_posteriors, junk)
    return odds if target in junk else -odds


def grouped_messages(learned: Mapping[str, int], junk: Collection[str]) -> dict[str, int]:
    """Learned messages of the not-junk and of the junk classes (keys ``not_junk`` and
    ``junk``): a verdict waits until each side has learned enough, not each class."""
    junk_messages = sum(n for name, n in learned.items() if name in junk)
    return {"not_junk": sum(learned.values()) - junk_messages, "junk": junk_messages}


def scorable(
    learned: Mapping[str, int], classes: Iterable[str], junk: Collection[str]
) -> tuple[str, ...] | None:
    """The classes a model can score (those of ``classes`` with a learned message), or None
    when they hold no junk class or no not-junk class: no verdict can be weighed yet. A
    class that has learned nothing has prior 0 and is left out."""
    found = tuple(name for name in classes if learned.get(name, 0) > 0)
    has_junk = any(name in junk for name in found)
    if not has_junk or all(name in junk for name in found):
        return None
    return found


def side_training_lead(
    log_posteriors: Mapping[str, float], target: str, *, junk: Collection[str], side_odds: float
) -> float | None:
    """Thick training's lead for a message of class ``target`` when the verdict comes from
    the side-merged model (``app.domain.sides``), in nats: while another class of the same
    side is likelier, ``target``'s margin to it (< 0: learned, so the classes keep being
    learned); else the side-merged log-odds ``side_odds`` for ``target``'s side (negated
    for not-junk), the lead a two-class site weighs. None when ``target`` is not scored."""
    own = log_posteriors.get(target)
    if own is None:
        return None
    wanted = target in junk
    same = [v for name, v in log_posteriors.items() if name != target and (name in junk) == wanted]
    if same and own <= max(same):
        return own - max(same)
    return side_odds if wanted else -side_odds
