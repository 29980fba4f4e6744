"""The build: pyproject.toml's setuptools build, with the hot modules compiled by mypyc.

The modules named by ``COMPILED`` in app/compiled.py are compiled to C extension modules
when a C compiler and Python's headers are present; their ``.py`` files stay the source and
are installed too. Without a compiler, without mypyc, when ``SPAMFILTER_PURE=1`` is set, or
when compiling fails, the build says so in one line and installs pure Python, which gives the
same verdicts and scores bit for bit. ``spamfilter --version`` says which build runs.

mypyc keeps its bounds and type checks (its default); the one flag added,
``-ffp-contract=off``, stops the C compiler fusing a multiply and an add into one rounding
(an FMA), which would make a compiled score differ from the pure one in its last bits.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# An extension module that build_ext replaces with mypyc's: it makes the wheel a platform
# wheel and runs build_ext, where the (slow) compiling happens, only when a build asks.
PLACEHOLDER = "app._mypyc_placeholder"


def say(line: str) -> None:
    print(f"spamfilter build: {line}", file=sys.stderr, flush=True)


def compiled_modules() -> list[str]:
    """``COMPILED`` of app/compiled.py, or its ``CANDIDATES`` when
    SPAMFILTER_COMPILE=candidates (for ``spamfilter bench compiled``)."""
    wanted = "CANDIDATES" if os.environ.get("SPAMFILTER_COMPILE") == "candidates" else "COMPILED"
    return ast_tuple(wanted)


def ast_tuple(name: str) -> list[str]:
    """The literal tuple ``name`` of app/compiled.py, read without importing the package."""
    tree = ast.parse((ROOT / "app" / "compiled.py").read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            return list(ast.literal_eval(node.value))
    raise RuntimeError(f"app/compiled.py has no {name} tuple")


def pure_reason() -> str | None:
    """Why this build installs pure Python; None when it compiles."""
    if os.environ.get("SPAMFILTER_PURE", "").strip() not in ("", "0"):
        return "SPAMFILTER_PURE is set"
    if not compiled_modules():
        return "app/compiled.py names no module to compile"
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return "mypyc is not installed (it ships with mypy)"
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler

    compiler: Any = new_compiler()
    customize_compiler(compiler)
    command = getattr(compiler, "compiler_so", None) or [""]
    if compiler.compiler_type == "unix" and shutil.which(command[0]) is None:
        return f"no C compiler ({command[0] or 'none configured'})"
    include = sysconfig.get_path("include")
    if not (Path(include) / "Python.h").is_file():
        return f"no Python headers ({include}/Python.h)"
    return None


class BuildMypyc(build_ext):
    """build_ext with mypyc's extension modules in place of the placeholder; on a compile
    error, what was built is removed and the pure modules are installed."""

    def finalize_options(self) -> None:
        try:
            extensions = self._mypyc_extensions()
        except (Exception, SystemExit) as error:  # mypyc refused: pure Python
            # With no extension left to build, ``run`` never comes to remove the old ones.
            removed = remove_extensions(ROOT) if "editable_wheel" in sys.argv else []
            also = f" (removed {len(removed)} built in place)" if removed else ""
            say(f"mypyc failed ({error!r}); installing pure Python{also}")
            extensions = []
        self.distribution.ext_modules = extensions
        super().finalize_options()

    def run(self) -> None:
        remove_extensions(Path(self.build_lib), self.get_outputs())
        if self.inplace or getattr(self, "editable_mode", False):
            remove_extensions(ROOT)  # the build puts the current ones back
        try:
            super().run()
        except Exception as error:  # a compile error: pure Python
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            self.extensions = []
            say(f"compiling failed ({error!r}); installing pure Python")
        else:
            if self.extensions:
                say(f"compiled with mypyc: {', '.join(compiled_modules())}")

    def _mypyc_extensions(self) -> list[Extension]:
        from mypyc.build import mypycify

        paths = [str(Path(*name.split(".")).with_suffix(".py")) for name in compiled_modules()]
        # No config file: pyproject's [tool.mypy] names plugins the build does not install.
        extensions: list[Extension] = mypycify(
            ["--config-file=", "--ignore-missing-imports", *paths],
            opt_level="3",
            # One stable name for the shared library, so a rebuild replaces it.
            group_name="spamfilter",
        )
        for extension in extensions:
            if self.compiler in (None, "unix"):
                extension.extra_compile_args = [*extension.extra_compile_args, "-ffp-contract=off"]
        return extensions


def remove_extensions(folder: Path, keep: Iterable[str] = ()) -> list[Path]:
    """Delete the extension modules of the candidates (and mypyc's shared libraries) that an
    earlier build left in ``folder`` (the source tree after an editable install, or a build
    folder a wheel is made from), but those named in ``keep``; returns those deleted. Left in
    place, a stale one is imported instead of its source, or packed into a wheel."""
    found = [*folder.glob("*__mypyc.*.so")]
    for name in ast_tuple("CANDIDATES"):
        module = folder.joinpath(*name.split("."))
        found += module.parent.glob(f"{module.name}.*.so")
    kept = {Path(path).resolve() for path in keep}
    stale = [path for path in found if path.resolve() not in kept]
    for path in stale:
        path.unlink()
    return stale


def options() -> dict[str, Any]:
    reason = pure_reason()
    if reason is not None:
        # An editable install runs the tree's modules: compiled ones left there would run.
        removed = remove_extensions(ROOT) if "editable_wheel" in sys.argv else []
        also = f" (removed {len(removed)} extension modules built in place)" if removed else ""
        say(f"installing pure Python: {reason}{also}")
        return {}
    return {
        "ext_modules": [Extension(PLACEHOLDER, sources=[])],
        "cmdclass": {"build_ext": BuildMypyc},
    }


setup(**options())
