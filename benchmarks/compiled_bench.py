"""``spamfilter bench compiled``: what each module that mypyc may compile gains over its pure
``.py`` source, and what the whole in-process classify gains.

Each module's stage (``compiled_work``: the module's functions over every message) is timed
in one process with the compiled module and with a copy of its pure source loaded beside it
(``compiled_work.load_source``), the passes alternating so that a busy spell of a shared
machine falls on both alike. A stage also runs what the module calls (the tokenizer calls
message's header and part readers) as built. A whole classify through the service is timed
in two processes (``benchmarks.compiled_run``): every candidate loaded from its source
(``prefer_source``), and as built.

The processes run in ``rounds``; every figure is the best over the rounds (and each
process's best of ``repeat`` passes): the least disturbed run is the one that measures the
code. A module's gain is its stage's pure time over its compiled time; one under
``MIN_GAIN`` is not worth compiling (app/compiled.py keeps it pure).
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


def run_side(plan: Plan, source: Sequence[str], *flags: str) -> dict[str, Any]:
    """One process of ``benchmarks.compiled_run time FLAGS`` with ``source`` loaded pure."""
    command = [sys.executable, "-m", "benchmarks.compiled_run", "time", *flags]
    command += ["--source", ",".join(source), "--corpus", str(plan.corpus)]
    command += ["--limit", str(plan.limit), "--repeat", str(plan.repeat)]
    done = subprocess.run(command, capture_output=True, cwd=ROOT, check=False, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure(plan: Plan, built: Sequence[str], say: Callable[[str], None]) -> dict[str, Any]:
    """The bench's JSON document: per compiled module its stage's best time pure and
    compiled (ms per message) and the gain; the whole classify all pure and as built."""
    stages: dict[str, dict[str, float]] = {}
    classify = {"pure": float("inf"), "built": float("inf")}
    messages = 0
    for round_ in range(1, plan.rounds + 1):
        say(f"round {round_} of {plan.rounds}: each compiled module's stage, pure and compiled")
        result = run_side(plan, (), "--stages")
        messages = result["messages"]
        for name, times in result["stages"].items():
            held = stages.setdefault(name, {"pure": float("inf"), "compiled": float("inf")})
            for side in held:
                held[side] = min(held[side], times[side])
        for side, source in (("pure", CANDIDATES), ("built", ())):
            say(f"round {round_} of {plan.rounds}: classify, {side}")
            result = run_side(plan, source, "--classify")
            classify[side] = min(classify[side], result["classify"])

    def row(name: str) -> dict[str, Any]:
        times = stages.get(name)
        return {
            "pure_ms": 1000 * times["pure"] if times else None,
            "compiled_ms": 1000 * times["compiled"] if times else None,
            "gain": times["pure"] / times["compiled"] if times else None,
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
        "classify": {
            "pure_ms": 1000 * classify["pure"],
            "built_ms": 1000 * classify["built"],
            "gain": classify["pure"] / classify["built"],
        },
    }


def table(doc: dict[str, Any]) -> str:
    """The document as a Markdown table (docs/benchmarks.md takes it as printed)."""
    lines = [
        f"{doc['messages']} messages of {doc['corpus']}, best of {doc['rounds']} rounds x "
        f"{doc['repeat']} passes; ms per message",
        "",
        "| module | its stage | pure | compiled | gain | in the build |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in doc["modules"].items():
        kept = "compiled" if row["kept_compiled"] else "pure"
        if row["gain"] is None:
            lines.append(f"| {name} | {STAGE_WORK[name]} | — | — | (not built) | {kept} |")
            continue
        if row["gain"] < MIN_GAIN:
            kept += f" (< {MIN_GAIN:g}x)"
        lines.append(
            f"| {name} | {STAGE_WORK[name]} | {row['pure_ms']:.3f} | {row['compiled_ms']:.3f} "
            f"| {row['gain']:.2f}x | {kept} |"
        )
    whole = doc["classify"]
    lines.append(
        f"| **classify** (service, SQLite) | whole judgement | {whole['pure_ms']:.3f} | "
        f"{whole['built_ms']:.3f} (as built) | {whole['gain']:.2f}x | |"
    )
    return "\n".join(lines)


STAGE_WORK = {
    "app.domain.message": "parse",
    "app.domain.tokenizer": "tokenize",
    "app.domain.token_ids": "token_ids",
    "app.domain.naive_bayes": "pair_multinomial",
    "app.domain.fallback": "blend_pairs",
    "app.storage.codec": "encode + decode bag",
}
