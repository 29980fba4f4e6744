"""``spamfilter bench compiled``: what each module that mypyc may compile gains over its pure
``.py`` source, and what the whole in-process classify gains.

Every measurement is a new process (``benchmarks.compiled_run``) over the same messages:
*all pure*, every candidate module loaded from its source (``prefer_source``), and *as
built*. Each times every module's stage (``compiled_work``: the module's functions over every
message) and a whole classify through the service. A stage also runs what the module calls
(the tokenizer calls message's header and part readers), compiled or not as built: modules
cannot be mixed more finely, since a compiled module takes only the compiled classes of the
modules compiled with it.

The two processes run in ``rounds``, and every figure is the best over the rounds (and each
process's best of ``repeat`` passes): on a shared machine the least disturbed run is the one
that measures the code. A module's gain is its stage's pure time over its compiled time; one
under ``MIN_GAIN`` is not worth compiling (app/compiled.py keeps it pure).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.compiled import CANDIDATES, COMPILED

# The bar for keeping a module compiled (the speed issue's rule).
MIN_GAIN = 1.5
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Plan:
    """What to run: the corpus (ham/ and spam/ folders), how many messages, passes per
    process, rounds of processes."""

    corpus: Path
    limit: int
    repeat: int
    rounds: int


def run_side(plan: Plan, source: Sequence[str], classify: bool = False) -> dict[str, Any]:
    """One process of ``benchmarks.compiled_run time`` with ``source`` loaded pure."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.compiled_run",
        "time",
        "--source",
        ",".join(source),
        "--corpus",
        str(plan.corpus),
        "--limit",
        str(plan.limit),
        "--repeat",
        str(plan.repeat),
    ]
    if classify:
        command.append("--classify")
    done = subprocess.run(command, capture_output=True, cwd=ROOT, check=False, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure(plan: Plan, built: Sequence[str], say: Callable[[str], None]) -> dict[str, Any]:
    """The bench's JSON document: per module its stage's best time pure and as built (seconds
    per message) and the gain; the whole classify likewise."""
    best: dict[str, dict[str, float]] = {"pure": {}, "built": {}}
    messages = 0
    for round_ in range(1, plan.rounds + 1):
        for side, source in (("pure", CANDIDATES), ("built", ())):
            say(f"round {round_} of {plan.rounds}: {'all pure' if source else 'as built'}")
            result = run_side(plan, source, classify=True)
            messages = result["messages"]
            times = {**result["stages"], "classify": result["classify"]}
            for name, seconds in times.items():
                best[side][name] = min(best[side].get(name, float("inf")), seconds)
    pure, compiled = best["pure"], best["built"]

    def row(name: str) -> dict[str, Any]:
        return {
            "pure_ms": 1000 * pure[name],
            "built_ms": 1000 * compiled[name],
            "gain": pure[name] / compiled[name] if name in built or name == "classify" else None,
            "kept_compiled": name in COMPILED,
        }

    return {
        "bench": "compiled",
        "messages": messages,
        "corpus": str(plan.corpus),
        "repeat": plan.repeat,
        "rounds": plan.rounds,
        "built": list(built),
        "modules": {name: row(name) for name in CANDIDATES},
        "classify": row("classify"),
    }


def table(doc: dict[str, Any]) -> str:
    """The document as a Markdown table (docs/benchmarks.md takes it as printed)."""
    lines = [
        f"{doc['messages']} messages of {doc['corpus']}, best of {doc['rounds']} rounds x "
        f"{doc['repeat']} passes; ms per message",
        "",
        "| module | its stage | pure | as built | gain | kept |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in doc["modules"].items():
        gain = "(not built)" if row["gain"] is None else f"{row['gain']:.2f}x"
        kept = "compiled" if row["kept_compiled"] else "pure"
        if row["gain"] is not None and row["gain"] < MIN_GAIN:
            kept += f" (< {MIN_GAIN:g}x)"
        lines.append(
            f"| {name} | {STAGE_WORK[name]} | {row['pure_ms']:.3f} | {row['built_ms']:.3f} "
            f"| {gain} | {kept} |"
        )
    whole = doc["classify"]
    lines.append(
        f"| **classify** (service, SQLite) | whole judgement | {whole['pure_ms']:.3f} | "
        f"{whole['built_ms']:.3f} | {whole['gain']:.2f}x | |"
    )
    return "\n".join(lines)


STAGE_WORK = {
    "app.domain.message": "parse",
    "app.domain.tokenizer": "tokenize",
    "app.domain.token_ids": "token_id per token",
    "app.domain.naive_bayes": "multinomial",
    "app.domain.fallback": "blend",
    "app.storage.codec": "encode + decode bag",
    "app.domain.codec": "encode + decode bag",
}
