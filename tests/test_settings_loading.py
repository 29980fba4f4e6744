"""app.settings.loading: which file is read, what overrides what, and the problems it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings.loading import (
    ConfigurationProblems,
    describe_database,
    find_config_file,
    load_configuration,
    load_settings,
    mask_url,
    unknown_variables,
)

FILE = """\
database_url = "sqlite:////srv/spam/file.db"
api_tokens = ["s3cret"]
scope = "from-file"

[model]
alpha = 0.5

[server]
port = 9000
"""


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment whose user config folder is empty (no file of the developer's)."""
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def write(path: Path, text: str = FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_file_values_reach_every_group(tmp_path: Path, home: dict[str, str]) -> None:
    settings = load_settings(write(tmp_path / "s.toml"), home)
    assert settings.database_url == "sqlite:////srv/spam/file.db"
    assert settings.api_tokens == ["s3cret"]
    assert (settings.model.alpha, settings.server.port) == (0.5, 9000)
    assert settings.model.clues == 15  # untouched keys keep their default


def test_environment_overrides_the_file_and_options_both(
    tmp_path: Path, home: dict[str, str]
) -> None:
    environ = {**home, "SPAMFILTER_MODEL__ALPHA": "0.7", "SPAMFILTER_SCOPE": "from-env"}
    loaded = load_configuration(write(tmp_path / "s.toml"), environ, {"scope": "from-option"})
    assert (loaded.settings.model.alpha, loaded.settings.scope) == (0.7, "from-option")
    assert loaded.settings.server.port == 9000
    assert loaded.origin("model.alpha") == "env SPAMFILTER_MODEL__ALPHA"
    assert loaded.origin("scope") == "option"
    assert loaded.origin("server.port") == f"file {tmp_path / 's.toml'}"
    assert loaded.origin("model.clues") == "default"


def test_search_order(tmp_path: Path, home: dict[str, str]) -> None:
    user = write(Path(home["XDG_CONFIG_HOME"]) / "spamfilter" / "spamfilter.toml")
    named = write(tmp_path / "named.toml")
    given = write(tmp_path / "given.toml")
    assert find_config_file(None, home) == user
    assert find_config_file(None, {**home, "SPAMFILTER_CONFIG": str(named)}) == named
    assert find_config_file(given, {**home, "SPAMFILTER_CONFIG": str(named)}) == given
    without_xdg = {"HOME": home["XDG_CONFIG_HOME"].replace("xdg", "home")}
    default = write(Path(without_xdg["HOME"]) / ".config" / "spamfilter" / "spamfilter.toml")
    assert find_config_file(None, without_xdg) == default


def test_no_file_means_defaults(home: dict[str, str]) -> None:
    loaded = load_configuration(None, home, env_file=None)
    assert loaded.file is None and loaded.origins == {}
    assert loaded.settings.scope == "global"


@pytest.mark.parametrize("via", ["option", "variable"])
def test_an_explicit_file_that_does_not_exist_is_an_error(
    tmp_path: Path, home: dict[str, str], via: str
) -> None:
    missing = tmp_path / "nowhere.toml"
    config, environ = (
        (missing, home) if via == "option" else (None, {**home, "SPAMFILTER_CONFIG": str(missing)})
    )
    with pytest.raises(ConfigurationProblems) as raised:
        load_settings(config, environ)
    assert raised.value.problems == [f"config file {missing} does not exist"]


def test_unknown_keys_are_named_with_the_nearest(tmp_path: Path, home: dict[str, str]) -> None:
    path = write(tmp_path / "s.toml", 'databse_url = "x"\n[model]\nalpah = 1\n[xyzzy]\na = 1\n')
    with pytest.raises(ConfigurationProblems) as raised:
        load_settings(path, home)
    assert raised.value.problems == [
        f"{path}: unknown key databse_url (did you mean database_url?)",
        f"{path}: unknown key model.alpah (did you mean model.alpha?)",
        f"{path}: unknown key xyzzy",
    ]


def test_bad_toml_and_bad_values_are_one_line_each(tmp_path: Path, home: dict[str, str]) -> None:
    with pytest.raises(ConfigurationProblems) as raised:
        load_settings(write(tmp_path / "bad.toml", "scope = \n"), home)
    assert len(raised.value.problems) == 1 and "bad.toml" in raised.value.problems[0]
    path = write(tmp_path / "values.toml", "[model]\nalpha = -1\n")
    with pytest.raises(ConfigurationProblems) as raised:
        load_settings(path, {**home, "SPAMFILTER_SERVER__PORT": "99999"})
    assert [line.split(":")[1].strip() for line in raised.value.problems] == [
        "model.alpha",
        "server.port",
    ]
    assert raised.value.problems[1].endswith("(env SPAMFILTER_SERVER__PORT)")


def test_unknown_variables_suggest_the_closest_setting() -> None:
    environ = {
        "SPAMFILTER_DATABSE_URL": "x",
        "SPAMFILTER_MODEL__ALPHA": "1",
        "SPAMFILTER_MODEL": "{}",
        "SPAMFILTER_CONFIG": "/etc/x.toml",
        "SPAMFILTER_FILTER_URL": "http://127.0.0.1:8000",
        "SPAMFILTER_FILTER_TIMEOUT": "5",
        "SPAMFILTER_BIN": "spamfilter",
        "SPAMFILTER_FILTER_BIN": "spamfilter-filter",
        "SPAMFILTER_TEST_ANYTHING": "1",
        "SPAMFILTER_ZZZZ": "1",
        "PATH": "/bin",
    }
    assert unknown_variables(environ) == [
        "unknown variable SPAMFILTER_DATABSE_URL (did you mean SPAMFILTER_DATABASE_URL?)",
        "unknown variable SPAMFILTER_ZZZZ",
    ]


def test_database_descriptions_never_carry_the_password() -> None:
    assert describe_database("sqlite:////var/lib/spamfilter/s.db") == (
        "sqlite /var/lib/spamfilter/s.db"
    )
    url = "postgresql+psycopg://spam:pw%40x@db.example:5433/spamfilter"
    assert describe_database(url) == "postgresql spam@db.example:5433/spamfilter"
    assert mask_url(url) == "postgresql+psycopg://spam:***@db.example:5433/spamfilter"
    assert mask_url("sqlite:////x.db") == "sqlite:////x.db"


def test_tell_from_takes_addresses_and_networks_from_the_environment_or_a_file(
    tmp_path: Path, home: dict[str, str]
) -> None:
    assert load_settings(None, home).spamd.tell_from == ["127.0.0.0/8", "::1/128"]
    environ = {**home, "SPAMFILTER_SPAMD__TELL_FROM": "10.1.0.0/16, 192.0.2.7,,2001:db8::/32"}
    loaded = load_settings(None, environ)
    assert loaded.spamd.tell_from == ["10.1.0.0/16", "192.0.2.7/32", "2001:db8::/32"]
    from_file = write(tmp_path / "t.toml", '[spamd]\ntell_from = ["192.0.2.0/24"]\n')
    assert load_settings(from_file, home).spamd.tell_from == ["192.0.2.0/24"]
    with pytest.raises(ConfigurationProblems, match="tell_from"):
        load_settings(None, {**home, "SPAMFILTER_SPAMD__TELL_FROM": "not-an-address"})


def test_classes_come_from_the_environment_or_a_file_and_are_checked(
    tmp_path: Path, home: dict[str, str]
) -> None:
    defaults = load_settings(None, home).model
    assert (defaults.classes, defaults.junk_classes) == (("ham", "spam"), ("spam",))
    environ = {
        **home,
        "SPAMFILTER_MODEL__CLASSES": "ham, spam,Newsletter,phishing",
        "SPAMFILTER_MODEL__JUNK_CLASSES": "spam,phishing",
    }
    model = load_settings(None, environ).model
    assert model.classes == ("ham", "spam", "newsletter", "phishing")
    assert model.junk_classes == ("spam", "phishing")
    as_list = write(
        tmp_path / "a.toml",
        '[model]\nclasses = ["ham", "newsletter", "spam"]\njunk_classes = ["spam"]\n',
    )
    assert load_settings(as_list, home).model.classes == ("ham", "newsletter", "spam")
    as_text = write(tmp_path / "b.toml", '[model]\nclasses = "ham,spam,receipt"\n')
    assert load_settings(as_text, home).model.classes == ("ham", "spam", "receipt")
    for variable, value, problem in (
        ("SPAMFILTER_MODEL__CLASSES", "ham,newsletter", "must include ham and spam"),
        ("SPAMFILTER_MODEL__JUNK_CLASSES", "spam,phishing", "not among the classes: phishing"),
        ("SPAMFILTER_MODEL__CLASSES", "ham,spam,news letter", "class name 'news letter'"),
    ):
        with pytest.raises(ConfigurationProblems, match=problem):
            load_settings(None, {**home, variable: value})
