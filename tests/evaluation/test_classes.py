"""Corpus classes beyond ham and spam: index labels, file-name prefixes, what each class is
learned as and which side of junk-vs-not-junk it falls on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from app.evaluation.classes import Classes, class_from_name, parse_class_names
from app.evaluation.corpus import CorpusError, CorpusItem, UnknownLabelError, load_corpus

SPAMASSASSIN = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "spamassassin"
MAIL = Classes(("ham", "newsletter", "spam", "phishing"), ("spam", "phishing"))


def _index(root: Path, lines: list[str]) -> Path:
    root.mkdir(parents=True)
    (root / "index").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _sub_corpora(root: Path) -> Path:
    """The SpamAssassin layout in small: sub-corpus names as file-name prefixes."""
    for folder, name in (
        ("ham", "easy_ham_00001.a"),
        ("ham", "easy_ham_2_00001.b"),
        ("ham", "hard_ham_00001.c"),
        ("spam", "spam_00001.d"),
        ("spam", "spam_2_00001.e"),
    ):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text("x", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("name", "prefixes", "expected"),
    [
        ("easy_ham_00001.7c53", ("easy_ham", "hard_ham"), "easy_ham"),
        ("easy_ham_2_00001.7c53", ("easy_ham", "hard_ham"), "easy_ham"),
        ("easy_ham_2_00001.7c53", ("easy_ham", "easy_ham_2"), "easy_ham_2"),
        ("easy_ham_2_00001.7c53", ("easy_ham_2", "easy_ham"), "easy_ham_2"),
        ("hard_ham", ("hard_ham",), "hard_ham"),
        ("easy_hamster_1", ("easy_ham",), None),
        ("spam_00001", ("easy_ham", "hard_ham"), None),
        ("x", (), None),
    ],
)
def test_class_from_name_takes_the_longest_whole_prefix(
    name: str, prefixes: tuple[str, ...], expected: str | None
) -> None:
    assert class_from_name(name, prefixes) == expected


def test_class_names_are_parsed_lower_case() -> None:
    assert parse_class_names(" Easy_Ham,hard_ham ") == ("easy_ham", "hard_ham")
    for bad in ("", "a,,b", ","):
        with pytest.raises(ValueError, match="class names"):
            parse_class_names(bad)


def test_a_declared_class_is_learned_as_itself_on_its_junk_side() -> None:
    assert (MAIL.side("phishing", "ham"), MAIL.learned_as("phishing", "spam")) == (
        "spam",
        "phishing",
    )
    assert (MAIL.side("newsletter", "spam"), MAIL.learned_as("newsletter", "ham")) == (
        "ham",
        "newsletter",
    )
    # Not declared: its folder's side, learned as that side.
    assert (MAIL.side("hard_ham", "ham"), MAIL.learned_as("hard_ham", "ham")) == ("ham", "ham")


def test_an_index_with_more_classes_needs_them_declared(tmp_path: Path) -> None:
    root = _index(tmp_path / "c", ["newsletter n/1", "phishing p/1", "ham h/1", "SPAM s/1"])
    with pytest.raises(UnknownLabelError, match="newsletter"):
        load_corpus(root)
    items = load_corpus(root, classes=MAIL)
    base = root.resolve()
    assert items == [
        CorpusItem("ham", base / "n/1", "newsletter", "newsletter"),
        CorpusItem("spam", base / "p/1", "phishing", "phishing"),
        CorpusItem("ham", base / "h/1"),
        CorpusItem("spam", base / "s/1"),
    ]


def test_file_names_split_the_folders_into_classes(tmp_path: Path) -> None:
    root = _sub_corpora(tmp_path / "sa").resolve()
    names = ("easy_ham", "hard_ham")
    found = {item.path.name: item for item in load_corpus(root, from_names=names)}
    # The default model (ham, spam) learns the two ham classes as ham.
    assert found["easy_ham_2_00001.b"] == CorpusItem(
        "ham", root / "ham" / "easy_ham_2_00001.b", "easy_ham", "ham"
    )
    assert (found["hard_ham_00001.c"].class_name, found["hard_ham_00001.c"].taught) == (
        "hard_ham",
        "ham",
    )
    assert found["spam_2_00001.e"] == CorpusItem("spam", root / "spam" / "spam_2_00001.e")
    # A model that declares the three classes learns each as itself.
    three = Classes(("easy_ham", "hard_ham", "spam"), ("spam",))
    taught = {
        i.path.name: (i.label, i.taught)
        for i in load_corpus(root, "shuffle", 1, None, three, names)
    }
    assert taught["hard_ham_00001.c"] == ("ham", "hard_ham")
    assert taught["easy_ham_00001.a"] == ("ham", "easy_ham")
    assert taught["spam_00001.d"] == ("spam", "spam")


def test_a_class_that_cannot_be_learned_is_refused(tmp_path: Path) -> None:
    root = _sub_corpora(tmp_path / "sa")
    # hard_ham neither declared nor given a declared side to be learned as.
    two = Classes(("easy_ham", "spam"), ("spam",))
    with pytest.raises(CorpusError, match="hard_ham"):
        load_corpus(root, classes=two, from_names=("easy_ham", "hard_ham"))


def test_the_spamassassin_corpus_is_three_classes_by_file_name() -> None:
    if not (SPAMASSASSIN / "ham").is_dir():
        pytest.skip(f"SpamAssassin corpus not found at {SPAMASSASSIN}")
    items = load_corpus(SPAMASSASSIN, from_names=("easy_ham", "hard_ham"))
    assert Counter(item.class_name for item in items) == {
        "easy_ham": 3900,
        "hard_ham": 250,
        "spam": 1896,
    }
    assert Counter(item.label for item in items) == {"ham": 4150, "spam": 1896}
