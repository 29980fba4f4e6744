"""Which build is running: the hot modules compiled by mypyc, or every module pure Python.

``COMPILED`` names the modules that ``setup.py`` compiles with mypyc when a C compiler and
Python's headers are present (and ``SPAMFILTER_PURE`` is not set at build time). Their ``.py``
files stay the source, and the pure modules give the same tokens, ids and scores bit for bit;
docs/benchmarks.md has what each gains compiled, and which stay pure because they gain less
than 1.5x.

Only ``importlib`` is imported: ``spamfilter --version`` asks ``build_kind`` and must stay
lean. A module's spec is found without running the module (its parent package is imported,
and ``app.domain``'s ``__init__`` is a docstring).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util

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
# The modules compiled: the candidates that gain 1.5x or more (docs/benchmarks.md). Parsing,
# the tokenizer and token ids spend their time in the regex engine, the email package and
# xxhash, which are C already; the codec in array's C code.
COMPILED = (
    "app.domain.naive_bayes",
    "app.domain.fallback",
)


def is_compiled(module: str) -> bool:
    """Whether ``module`` loads from an extension module (a mypyc build) here, not from its
    ``.py`` source; the module itself is not imported."""
    spec = importlib.util.find_spec(module)
    return spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)


def compiled_modules() -> list[str]:
    """The modules of ``COMPILED`` that load compiled here."""
    return [module for module in COMPILED if is_compiled(module)]


def build_kind() -> str:
    """``compiled: mypyc`` when every module of ``COMPILED`` loads compiled, ``pure Python``
    when none does, and ``partly compiled: mypyc (N of M)`` in between (a build that failed
    half-way, or a source checkout beside stale extension modules)."""
    found = compiled_modules()
    if not found:
        return "pure Python"
    if len(found) == len(COMPILED):
        return "compiled: mypyc"
    return f"partly compiled: mypyc ({len(found)} of {len(COMPILED)})"
