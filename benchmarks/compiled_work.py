"""The work of the modules mypyc may compile, over a set of messages, and a way to run their
pure ``.py`` sources in a build where they are compiled.

``prefer_source`` makes the next imports of some modules load their ``.py`` files even beside
extension modules; it must run before anything imports them, so a comparison of the two builds
runs each side in a process of its own (``python -m benchmarks.compiled_run``). ``Workload``
holds what each module's stage reads: the raw messages, their parses and token counts, and a
model learned from the first half, each stage being one module's functions:

    message      parse(raw)
    tokenizer    tokenize(parsed)
    token_ids    token_ids of every message's tokens
    naive_bayes  pair_multinomial over the message's tokens and their counts (the site-wide
                 default model's scorer, with its options)
    fallback     blend_pairs of the same tokens as a user's counts over the site-wide model
    codec        encode_bag then decode_bag of the message's token bag
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# A message this size or larger is left out: a stage's time per message is that of mail.
SCAN_BYTES = 512 * 1024


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` source of each named module, ahead of its extension module."""

    def __init__(self, modules: Iterable[str]) -> None:
        self._modules = frozenset(modules)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._modules:
            return None
        for entry in path if path is not None else sys.path:
            source = Path(entry) / f"{fullname.rpartition('.')[2]}.py"
            if source.is_file():
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def prefer_source(modules: Iterable[str]) -> None:
    """Load ``modules`` from their ``.py`` files from now on, compiled or not. Raises
    RuntimeError when one is imported already (it would stay as it was loaded)."""
    chosen = list(modules)
    loaded = [name for name in chosen if name in sys.modules]
    if loaded:
        raise RuntimeError(f"already imported, so not reloaded from source: {loaded}")
    sys.meta_path.insert(0, _SourceFinder(chosen))


def load_source(name: str) -> ModuleType:
    """A second copy of module ``name`` run from its ``.py`` source, under the name
    ``_pure_`` + ``name`` with dots as underscores, beside the module as imported."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(name)
    source = Path(spec.origin).parent / f"{name.rpartition('.')[2]}.py"
    alias = "_pure_" + name.replace(".", "_")
    pure_spec = importlib.util.spec_from_file_location(alias, source)
    if pure_spec is None or pure_spec.loader is None:
        raise ModuleNotFoundError(f"no source for {name}")
    module = importlib.util.module_from_spec(pure_spec)
    sys.modules[alias] = module  # dataclasses look their module up there
    pure_spec.loader.exec_module(module)
    return module


def read_messages(folder: Path, limit: int) -> list[tuple[bytes, str]]:
    """Up to ``limit`` messages of a ham/ and spam/ folder pair, alternating labels (sorted
    file names: the same set on every run), each under ``SCAN_BYTES``."""
    found: dict[str, list[Path]] = {
        label: sorted(p for p in (folder / label).iterdir() if p.is_file())
        for label in ("ham", "spam")
    }
    messages: list[tuple[bytes, str]] = []
    for pair in zip(found["ham"], found["spam"], strict=False):
        for path, label in zip(pair, ("ham", "spam"), strict=True):
            raw = path.read_bytes()
            if len(raw) < SCAN_BYTES and len(messages) < limit:
                messages.append((raw, label))
    return messages


@dataclass(frozen=True, slots=True)
class Model:
    """Learned counts per token and label, and per-label totals (messages, occurrences)."""

    counts: dict[str, dict[str, int]]
    messages: dict[str, int]
    tokens: dict[str, int]


class Workload:
    """The messages, read once; every stage reads what the stages before it made."""

    def __init__(self, messages: Sequence[tuple[bytes, str]]) -> None:
        from app.domain.message import NotAMessage, parse
        from app.domain.tokenizer import TokenizerOptions, tokenize

        self.options = TokenizerOptions()
        self.raws: list[bytes] = []
        self.labels: list[str] = []
        for raw, label in messages:
            try:
                parse(raw, SCAN_BYTES)
            except NotAMessage:
                continue
            self.raws.append(raw)
            self.labels.append(label)
        self.parsed = [parse(raw, SCAN_BYTES) for raw in self.raws]
        self.tokens = [tokenize(parsed, self.options) for parsed in self.parsed]
        middle = len(self.tokens) // 2
        self.site = _learn(self.tokens[:middle], self.labels[:middle])
        # A user's model: every third message of the first half.
        self.own = _learn(self.tokens[:middle:3], self.labels[:middle:3])
        self.test = self.tokens[middle:]
        from app.domain.token_ids import token_id

        # why: the pairs are what a site-wide and a user's classify of the default model
        # score and blend (``scoring.pair_evidence``); ``multinomial`` and ``blend`` of
        # ``Evidence`` only convert to them first.
        self.site_pairs = [_pairs(tokens, self.site) for tokens in self.test]
        self.own_pairs = [_pairs(tokens, self.own) for tokens in self.test]
        self.bags = [{token_id(t): n for t, n in tokens.items()} for tokens in self.tokens]

    def stages(self) -> dict[str, Callable[[Any], object]]:
        """Each stage: a call that does its work once over every message with the module it
        is given (the module as imported, or its pure source loaded beside it)."""
        return {
            "app.domain.message": self.parse_all,
            "app.domain.tokenizer": self.tokenize_all,
            "app.domain.token_ids": self.ids_all,
            "app.domain.naive_bayes": self.score_all,
            "app.domain.fallback": self.blend_all,
            "app.storage.codec": self.codec_all,
        }

    def parse_all(self, message: Any) -> list[Any]:
        return [message.parse(raw, SCAN_BYTES) for raw in self.raws]

    def tokenize_all(self, tokenizer: Any) -> list[Counter[str]]:
        return [tokenizer.tokenize(parsed, self.options) for parsed in self.parsed]

    def ids_all(self, token_ids: Any) -> list[list[int]]:
        return [list(token_ids.token_ids(tokens).values()) for tokens in self.tokens]

    def score_all(self, naive_bayes: Any) -> list[Any]:
        """pair_multinomial with the default model settings' options (top 150 per kind,
        length floor, distinct repeats) against the site-wide model."""
        from app.domain.tokenizer import token_kind

        totals = _totals(self.site)
        vocabulary = len(self.site.counts)
        return [
            naive_bayes.pair_multinomial(
                pairs,
                totals=totals,
                vocabulary=vocabulary,
                alpha=1.0,
                top=150,
                group=token_kind,
                floor=30,
                distinct=3,
            )
            for pairs in self.site_pairs
        ]

    def blend_all(self, fallback: Any) -> list[tuple[list[Any], dict[str, Any]]]:
        """blend_pairs of a user's counts over the site-wide model: pairs and totals to
        score."""
        from app.domain.tokenizer import token_kind

        own_totals, site_totals = _totals(self.own), _totals(self.site)
        vocabulary = len(self.site.counts)
        blended = []
        for own, site in zip(self.own_pairs, self.site_pairs, strict=True):
            blended.append(
                fallback.blend_pairs(
                    own=own,
                    own_totals=own_totals,
                    site=site,
                    site_totals=site_totals,
                    site_vocabulary=vocabulary,
                    alpha=1.0,
                    strength=50.0,
                    distinct=3,
                    group=token_kind,
                )
            )
        return blended

    def codec_all(self, codec: Any) -> list[dict[int, int]]:
        return [codec.decode_bag(codec.encode_bag(bag)) for bag in self.bags]


def _learn(tokens: Sequence[Counter[str]], labels: Sequence[str]) -> Model:
    counts: dict[str, dict[str, int]] = {}
    messages = dict.fromkeys(("ham", "spam"), 0)
    occurrences = dict.fromkeys(("ham", "spam"), 0)
    for bag, label in zip(tokens, labels, strict=True):
        messages[label] += 1
        for token, n in bag.items():
            per = counts.setdefault(token, {})
            per[label] = per.get(label, 0) + n
            occurrences[label] += n
    return Model(counts, messages, occurrences)


def _totals(model: Model) -> dict[str, Any]:
    from app.domain.naive_bayes import ClassTotals

    return {
        label: ClassTotals(model.messages[label], model.tokens[label]) for label in model.messages
    }


def _pairs(tokens: Counter[str], model: Model) -> list[tuple[str, int, int, int]]:
    """The message's tokens the model knows, each with its count in the message and its
    learned counts under ham and spam (the labels' order of ``_totals``)."""
    return [
        (t, n, model.counts[t].get("ham", 0), model.counts[t].get("spam", 0))
        for t, n in tokens.items()
        if t in model.counts
    ]


def results(work: Workload) -> dict[str, Any]:
    """Every stage's output as JSON-able data, floats as ``float.hex`` (exact): what the
    compiled and the pure modules must agree on bit for bit."""
    modules = {name: importlib.import_module(name) for name in work.stages()}
    parsed = work.parse_all(modules["app.domain.message"])
    return {
        "digests": [p.digest for p in parsed],
        "parts": [len(p.parts) for p in parsed],
        "tokens": [sorted(t.items()) for t in work.tokenize_all(modules["app.domain.tokenizer"])],
        "ids": work.ids_all(modules["app.domain.token_ids"]),
        "scores": [_scored(s) for s in work.score_all(modules["app.domain.naive_bayes"])],
        "blended": [
            _blended(pairs, totals)
            for pairs, totals in work.blend_all(modules["app.domain.fallback"])
        ],
        "bags": [sorted(bag.items()) for bag in work.codec_all(modules["app.storage.codec"])],
    }


def _blended(pairs: Sequence[tuple[str, int, float, float]], totals: dict[str, Any]) -> Any:
    """A blend's pseudo-counts and totals, floats as ``float.hex``."""
    return {
        "pairs": [(token, n, float(p).hex(), float(q).hex()) for token, n, p, q in pairs],
        "totals": {
            label: [float(t.messages).hex(), float(t.tokens).hex()]
            for label, t in sorted(totals.items())
        },
    }


def _scored(scored: Any) -> dict[str, Any]:
    return {
        "joint": {k: v.hex() for k, v in sorted(scored.log_joint.items())},
        "posteriors": {k: v.hex() for k, v in sorted(scored.log_posteriors.items())},
        "contributions": {
            token: {k: v.hex() for k, v in sorted(per.items())}
            for token, per in sorted(scored.contributions.items())
        },
    }
