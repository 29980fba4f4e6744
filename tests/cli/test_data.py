"""export, import and backup through the real command line, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cli.conftest import Run
from tests.cli.mailfiles import messages
from tests.conftest import DatabaseFactory

Stats = Callable[[], dict[str, Any]]


def _learn(run: Run, tmp_path: Path) -> None:
    for label in ("ham", "spam"):
        folder = tmp_path / f"train-{label}"
        folder.mkdir()
        for number, raw in enumerate(messages(label, 6)):
            (folder / f"{number}.eml").write_bytes(raw)
        assert run("learn", "--label", label, str(folder)).exit_code == 0


def test_export_then_import_into_another_database(
    run: Run, tmp_path: Path, database_factory: DatabaseFactory, stats: Stats
) -> None:
    _learn(run, tmp_path)
    exported = tmp_path / "model.tsv"
    result = run("export", "-o", str(exported))
    assert result.exit_code == 0, result.output
    assert "exported 1 model(s)" in result.stderr
    assert run("export").stdout == exported.read_text(encoding="utf-8")

    other = database_factory()
    result = run("--database-url", other, "import", str(exported))
    assert result.exit_code == 0, result.output
    assert "imported 1 model(s) (new)" in result.stderr
    again = run("--database-url", other, "export")
    assert again.stdout == exported.read_text(encoding="utf-8")
    assert json.loads(run("--database-url", other, "stats", "--json").stdout) == stats()


def test_import_refuses_to_double_or_clobber_and_names_a_bad_line(
    run: Run, tmp_path: Path, stats: Stats
) -> None:
    _learn(run, tmp_path)
    exported = tmp_path / "model.tsv"
    assert run("export", "-o", str(exported)).exit_code == 0
    before = stats()

    result = run("import", str(exported))
    assert result.exit_code == 1
    assert "--merge" in result.stderr and "--replace" in result.stderr
    result = run("import", "--merge", str(exported))
    assert result.exit_code == 1
    assert "count them twice" in result.stderr

    lines = exported.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = "token\tnot-a-number\n"
    broken = tmp_path / "broken.tsv"
    broken.write_text("".join(lines), encoding="utf-8")
    result = run("import", "--replace", str(broken))
    assert result.exit_code == 1
    assert "invalid_data_file: line 6:" in result.stderr
    assert stats() == before

    assert run("import", "--replace", "-", input=exported.read_bytes()).exit_code == 0
    assert stats() == before


def test_export_options_and_one_users_import(run: Run, tmp_path: Path) -> None:
    _learn(run, tmp_path)
    result = run("export", "--user", "a", "--site")
    assert result.exit_code == 2
    site = run("export", "--site").stdout
    assert site.count("scope\t") == 1
    result = run("import", "--user", "carol", "-", input=site.encode())
    assert result.exit_code == 0, result.output
    assert "user:carol: vocabulary" in result.stderr
    carol = run("export", "--user", "carol").stdout
    assert carol.replace("scope\tuser:carol", "scope\tsite") == site
    assert run("export").stdout.count("scope\t") == 2


def test_backup_of_a_live_sqlite_database(run_sqlite: Run, tmp_path: Path) -> None:
    _learn(run_sqlite, tmp_path)
    copy = tmp_path / "backup.db"
    result = run_sqlite("backup", str(copy))
    assert result.exit_code == 0, result.output
    with sqlite3.connect(copy) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT count(*) FROM learned_message").fetchone()[0] > 0
    result = run_sqlite("backup", str(copy))
    assert result.exit_code == 1
    assert "--force" in result.stderr
    assert run_sqlite("backup", "--force", str(copy)).exit_code == 0
    restored = run_sqlite("--database-url", f"sqlite:///{copy}", "export").stdout
    assert restored == run_sqlite("export").stdout


def test_backup_names_pg_dump_on_postgresql(
    run: Run, tmp_path: Path, database_backend: str
) -> None:
    result = run("backup", str(tmp_path / "backup.db"))
    if database_backend == "postgresql":
        assert result.exit_code == 1
        assert "pg_dump -Fc" in result.stderr
    else:
        assert result.exit_code == 0, result.output


def test_import_refuses_a_count_too_large_for_the_file_or_for_a_merge(
    run: Run, tmp_path: Path, stats: Stats
) -> None:
    _learn(run, tmp_path)
    before = stats()
    top = 2**53 - 1
    header = "spamfilter-export\t1\nlabels\tham\tspam\nscope\tsite\n"
    too_large = tmp_path / "too-large.tsv"
    too_large.write_text(f"{header}total\tham\t{top + 1}\t0\t0\nend\t1\t1\t0\t0\n")
    result = run("import", "--merge", str(too_large))
    assert result.exit_code == 1
    assert f"invalid_data_file: line 4: {top + 1} is not a non-negative count" in result.stderr
    at_most = tmp_path / "at-most.tsv"
    at_most.write_text(f"{header}total\tham\t{top}\t0\t0\nend\t1\t1\t0\t0\n")
    result = run("import", "--merge", str(at_most))
    assert result.exit_code == 1
    assert "transfer_refused: merging model 'site' would make a count larger" in result.stderr
    assert stats() == before


def test_a_failed_export_leaves_the_last_good_file_and_names_the_damaged_record(
    run_sqlite: Run, sqlite_database: str, tmp_path: Path
) -> None:
    """An export that stops (here at a learned-message record whose bag is damaged) exits 1
    naming the record, and leaves the file it would have replaced as it was, with no
    temporary file beside it; a good export then replaces it and keeps its permissions."""
    _learn(run_sqlite, tmp_path)
    target = tmp_path / "nightly" / "model.tsv"
    target.parent.mkdir()
    assert run_sqlite("export", "-o", str(target)).exit_code == 0
    good = target.read_bytes()
    target.chmod(0o640)

    with sqlite3.connect(sqlite_database.removeprefix("sqlite:///")) as conn:
        (digest,) = conn.execute("SELECT digest FROM learned_message ORDER BY digest").fetchone()
        conn.execute(
            "UPDATE learned_message SET tokens = x'0102030405' WHERE digest = ?", (digest,)
        )
    result = run_sqlite("export", "-o", str(target))
    assert result.exit_code == 1
    assert f"transfer_refused: the learned-message record {digest} holds a damaged" in (
        result.stderr
    )
    assert target.read_bytes() == good
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.tsv"]

    with sqlite3.connect(sqlite_database.removeprefix("sqlite:///")) as conn:
        conn.execute("DELETE FROM learned_message WHERE digest = ?", (digest,))
    assert run_sqlite("export", "-o", str(target)).exit_code == 0
    assert target.read_bytes() != good
    assert target.stat().st_mode & 0o777 == 0o640


def test_an_export_to_a_path_it_cannot_write_names_the_path(
    run_sqlite: Run, tmp_path: Path
) -> None:
    _learn(run_sqlite, tmp_path)
    for target, why in ((tmp_path / "missing" / "x.tsv", "No such file"), (tmp_path, "directory")):
        result = run_sqlite("export", "-o", str(target))
        assert result.exit_code == 1
        assert f"Could not open file '{target}'" in result.stderr and why in result.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
