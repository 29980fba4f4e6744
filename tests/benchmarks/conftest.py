"""The command-line fixtures the bench commands' tests share with tests/cli."""

from tests.cli.conftest import clean_environment

__all__ = ["clean_environment"]
