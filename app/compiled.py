"""Which build is running: modules compiled by mypyc, or every module pure Python.

``COMPILED`` names the modules that ``setup.py`` compiles with mypyc when a C compiler and
Python's headers are present (and ``SPAMFILTER_PURE`` is not set at build time): the
candidates that gain 1.5x or more compiled, none at present, so the release build is pure
Python. ``.py`` files stay the source, and compiled modules give the same tokens, ids and
scores bit for bit; docs/benchmarks.md has what each candidate gains.

Only ``importlib``, ``os`` and ``sys`` are imported: ``spamfilter --version`` asks
``build_kind`` and must stay lean, so a module's file is found without importing it or its
parent packages.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

# Literal tuples: setup.py parses this file. The candidates are the pure modules of a
# classify's profile (and the count codec); ``spamfilter bench compiled`` measures them in a
# build made with SPAMFILTER_COMPILE=candidates.
CANDIDATES = (
    "app.domain.message",
    "app.domain.tokenizer",
    "app.domain.token_ids",
    "app.domain.naive_bayes",
    "app.domain.fallback",
    "app.storage.codec",
)
# The modules compiled: the candidates that gain 1.5x or more (docs/benchmarks.md, "The
# compiled build"). None does on a quiet machine: the scoring maths 1.22x and 1.12x, the
# rest under 1.1x, a whole classify 1.12x with all six compiled. Parsing, the tokenizer and
# token ids spend their time in the regex engine, the email package and xxhash, which are C
# already; the codec in array's C code; the scoring maths in dicts and tuples of objects.
# Cython's pure-Python mode, measured on the same files, gains no more (at most 1.28x).
COMPILED: tuple[str, ...] = ()


def is_compiled(module: str) -> bool:
    """Whether ``module`` loads from an extension module (a mypyc build) here, not from its
    ``.py`` source. Neither the module nor its parent packages are imported (the storage
    package's ``__init__`` imports SQLAlchemy): its file is looked up in their folders."""
    loaded = sys.modules.get(module)
    spec = loaded.__spec__ if loaded is not None else _find(module)
    return spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)


def _find(module: str) -> importlib.machinery.ModuleSpec | None:
    """``module``'s spec as the import system would find it (``sys.meta_path``, so a
    finder that prefers sources is heard), given its parent package's folders."""
    folders = _folders(module.rpartition(".")[0])
    if folders is None:
        return None
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        found = None if find is None else find(module, folders)
        if found is not None:
            return found  # type: ignore[no-any-return]
    return None


def _folders(package: str) -> list[str] | None:
    """The folders ``package`` would be imported from, found through its top-level package
    (``app``, imported already) without importing the packages between."""
    top, *inner = package.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or spec.submodule_search_locations is None:
        return None
    return [os.path.join(folder, *inner) for folder in spec.submodule_search_locations]


def compiled_modules() -> list[str]:
    """The candidate modules that load compiled here (those of ``COMPILED`` in a release
    build; every candidate in a build made with SPAMFILTER_COMPILE=candidates)."""
    return [module for module in CANDIDATES if is_compiled(module)]


def build_kind() -> str:
    """``pure Python`` when no module loads compiled, ``compiled: mypyc`` when the modules
    of ``COMPILED`` do and no other, else ``compiled: mypyc, N of the M candidates`` (a
    build of the candidates for ``spamfilter bench compiled``, one that failed half-way, or
    a source checkout beside stale extension modules)."""
    found = compiled_modules()
    if not found:
        return "pure Python"
    if set(found) == set(COMPILED):
        return "compiled: mypyc"
    return f"compiled: mypyc, {len(found)} of the {len(CANDIDATES)} candidates"
