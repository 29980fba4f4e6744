"""docker/: the Dockerfile and compose.yaml, checked without a Docker engine.

Both files are parsed (the Dockerfile by hand, compose.yaml with PyYAML) and every command
they run is looked up in the ``spamfilter`` click group, options included, so a renamed
subcommand or option breaks this test rather than a deployment. docker/healthcheck.py, the
image's HEALTHCHECK, is run against real listeners. ``docker compose config`` runs too when
the compose plugin is installed (it needs no engine).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest
import yaml

from app.cli import cli
from app.settings.loading import unknown_variables

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
ROLES = {"serve": 8000, "spamd": 783, "milter": 8891}


def instructions(path: Path = DOCKER / "Dockerfile") -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text().splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, args = pending.strip().partition(" ")
        result.append((keyword.upper(), args.strip()))
        pending = ""
    return result


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's build stages, each its instructions from FROM on."""
    found: list[list[tuple[str, str]]] = []
    for keyword, args in instructions():
        if keyword == "FROM":
            found.append([])
        found[-1].append((keyword, args))
    return found


def compose() -> dict[str, Any]:
    """compose.yaml as data (YAML anchors and merge keys resolved)."""
    doc: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    return doc


def resolve(args: Sequence[str]) -> tuple[click.Command, list[str]]:
    """The click command ``spamfilter ARGS`` runs, and the options given to it."""
    command: click.Command = cli
    words = list(args)
    while words and isinstance(command, click.Group) and not words[0].startswith("-"):
        name = words.pop(0)
        found = command.get_command(click.Context(command), name)
        assert found is not None, f"spamfilter has no command {' '.join(args)!r}"
        command = found
    return command, [w.split("=", 1)[0] for w in words if w.startswith("-")]


def check_command(args: Sequence[str]) -> None:
    """Assert that ``spamfilter ARGS`` names a command that takes every option given."""
    command, options = resolve(args)
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    unknown = [option for option in options if option not in known]
    assert not unknown, f"`spamfilter {' '.join(args)}`: no option {unknown} on {command.name}"


# The Dockerfile


def test_the_image_is_built_in_stages_and_runs_as_a_user() -> None:
    build, final = stages()[0], stages()[-1]
    assert len(stages()) >= 2
    assert build[0][1].endswith(" AS build")
    assert any(k == "COPY" and a.startswith("--from=build ") for k, a in final)
    users = [args for keyword, args in final if keyword == "USER"]
    assert users, "the image runs as root"
    uid, _, gid = users[-1].partition(":")
    # Numeric, so that an orchestrator can tell it is not root without reading /etc/passwd.
    assert uid.isdigit() and gid.isdigit() and int(uid) > 0 and int(gid) > 0
    run = " ".join(a for k, a in final if k == "RUN")
    assert f"useradd --system --uid {uid} --gid {gid}" in run
    assert f"groupadd --system --gid {gid}" in run


def test_the_data_directory_is_a_volume_the_user_owns() -> None:
    final = stages()[-1]
    (volume,) = [json.loads(a) if a.startswith("[") else a for k, a in final if k == "VOLUME"]
    user = [a for k, a in final if k == "USER"][-1]
    run = " ".join(a for k, a in final if k == "RUN")
    assert f"chown {user} {volume}" in run
    # The volume is declared after the user owns it, or Docker would give it to root.
    keywords = [k for k, _ in final]
    assert keywords.index("VOLUME") > max(i for i, k in enumerate(keywords) if k == "RUN")
    assert f"sqlite:///{volume}/" in dict(final)["ENV"]


def test_the_image_installs_the_runtime_lock_only() -> None:
    build = stages()[0]
    installs = [a for k, a in build if k == "RUN" and "pip install" in a]
    assert any("pip install -r requirements.lock" in a for a in installs)
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    text = " ".join([a for _, a in instructions()] + [i for i in ignore if not i.startswith("#")])
    for other in ("requirements-dev.lock", "[test]", "[eval]", "[plot]"):
        assert other not in text
    copied = " ".join(a for k, a in build if k == "COPY").split()
    assert "requirements.lock" in copied


def test_everything_the_dockerfile_copies_exists() -> None:
    for keyword, args in instructions():
        if keyword != "COPY" or args.startswith("--from="):
            continue
        *sources, _target = args.split()
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    for keyword, args in instructions():
        if keyword == "COPY" and not args.startswith("--from="):
            for source in args.split()[:-1]:
                assert f"!{source.rstrip('/')}" in {i.rstrip("/") for i in ignore}, source


def test_the_entrypoint_and_default_command_exist() -> None:
    final = dict(stages()[-1])
    assert json.loads(final["ENTRYPOINT"]) == ["spamfilter"]
    assert 'spamfilter = "app.cli:main"' in (ROOT / "pyproject.toml").read_text()
    check_command(json.loads(final["CMD"]))
    assert final["HEALTHCHECK"].split("CMD", 1)[1].strip() == (
        '["python", "/opt/spamfilter/healthcheck.py"]'
    )
    exposed = {int(port) for port in final["EXPOSE"].split()}
    assert exposed == set(ROLES.values())


# compose.yaml


def test_compose_has_the_roles_postgres_and_a_migration() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "migrate", *ROLES}
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("migrate", *ROLES):
        service = services[name]
        assert service["image"] == "spamfilter:latest"
        build = service["build"]
        assert (DOCKER / build["context"] / build["dockerfile"]).resolve() == (
            DOCKER / "Dockerfile"
        )
        url = service["environment"]["SPAMFILTER_DATABASE_URL"]
        assert url.startswith("postgresql://spamfilter:") and "@postgres:5432/" in url


@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_role_waits_for_the_migration(role: str) -> None:
    service = compose()["services"][role]
    assert service["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}


@pytest.mark.parametrize("name", ["migrate", *sorted(ROLES)])
def test_every_compose_command_is_a_spamfilter_command(name: str) -> None:
    """spamd and milter are checked too: this fails until those commands are registered."""
    check_command(compose()["services"][name]["command"])


@pytest.mark.parametrize(("role", "port"), sorted(ROLES.items()))
def test_roles_listen_publish_and_check_their_port(role: str, port: int) -> None:
    service = compose()["services"][role]
    assert service["command"][0] == role
    assert service["ports"] == [f"127.0.0.1:{port}:{port}"]
    test = service["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    compile(test[3], f"{role} healthcheck", "exec")
    assert str(port) in test[3]
    assert "curl" not in " ".join(test)


def test_the_api_needs_tokens_in_compose() -> None:
    environment = compose()["services"]["serve"]["environment"]
    assert environment["SPAMFILTER_API_TOKENS"].startswith("${SPAMFILTER_API_TOKENS:?")


def test_the_api_is_healthy_when_ready() -> None:
    """Ready means the database answers at the newest schema, not only that uvicorn runs."""
    assert "/readyz" in compose()["services"]["serve"]["healthcheck"]["test"][3]


def test_postgres_keeps_its_data_in_a_named_volume_and_is_checked() -> None:
    doc = compose()
    postgres = doc["services"]["postgres"]
    volumes = [v.split(":") for v in postgres["volumes"]]
    assert ["pgdata", "/var/lib/postgresql/data"] in volumes
    assert "pgdata" in doc["volumes"]
    assert postgres["healthcheck"]["test"][0] == "CMD-SHELL"
    assert "pg_isready -U spamfilter -d spamfilter" in postgres["healthcheck"]["test"][1]


def test_the_env_file_example_names_every_variable_compose_reads() -> None:
    used = set(re.findall(r"\$\{(\w+)", (DOCKER / "compose.yaml").read_text()))
    example = (DOCKER / "env.example").read_text().splitlines()
    named = {line.split("=", 1)[0] for line in example if line and not line.startswith("#")}
    assert used == named == {"SPAMFILTER_API_TOKENS", "POSTGRES_PASSWORD"}


def test_every_spamfilter_variable_in_docker_is_a_setting() -> None:
    files = ["Dockerfile", "compose.yaml", "env.example", "healthcheck.py"]
    names = {n for f in files for n in re.findall(r"SPAMFILTER_\w+", (DOCKER / f).read_text())}
    assert {"SPAMFILTER_DATABASE_URL", "SPAMFILTER_API_TOKENS"} <= names
    assert unknown_variables(dict.fromkeys(names, "")) == []


@pytest.mark.parametrize("role", sorted(ROLES))
def test_the_compose_health_checks_work(role: str) -> None:
    """Each one-liner, pointed at a live listener of its kind, exits 0; at nothing, not 0."""
    code = compose()["services"][role]["healthcheck"]["test"][3]
    with listener(role) as port:
        live = code.replace(str(ROLES[role]), str(port))
        assert subprocess.run([sys.executable, "-c", live], timeout=20).returncode == 0
    dead = code.replace(str(ROLES[role]), str(port))
    assert subprocess.run([sys.executable, "-c", dead], capture_output=True, timeout=20).returncode


def compose_command() -> list[str] | None:
    """``docker compose``, if the plugin is installed (it reads the file with no engine).

    The standalone ``docker-compose`` 1.x predates the Compose specification (``name:``)."""
    docker = shutil.which("docker")
    if docker is None:
        return None
    plugin = subprocess.run([docker, "compose", "version"], capture_output=True)
    return None if plugin.returncode else [docker, "compose"]


def test_docker_compose_config_accepts_the_file() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("the docker compose plugin is not installed")
    env = {**os.environ, "SPAMFILTER_API_TOKENS": "test-token"}
    result = subprocess.run(
        [*command, "-f", str(DOCKER / "compose.yaml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# docker/healthcheck.py


def healthcheck() -> ModuleType:
    """docker/healthcheck.py, imported from its path."""
    spec = importlib.util.spec_from_file_location("healthcheck", DOCKER / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("args", "environ", "expected"),
    [
        (["/venv/bin/python", "/venv/bin/spamfilter", "serve", "--host", "0.0.0.0"], {},
         ("serve", "127.0.0.1:8000")),
        (["spamfilter", "serve", "--port=9000"], {"SPAMFILTER_SERVER__PORT": "1"},
         ("serve", "127.0.0.1:9000")),
        (["spamfilter", "serve"], {"SPAMFILTER_SERVER__PORT": "8080"}, ("serve", "127.0.0.1:8080")),
        (["spamfilter", "spamd", "--host", "0.0.0.0", "--port", "7830"], {},
         ("spamd", "127.0.0.1:7830")),
        (["spamfilter", "spamd"], {}, ("spamd", "127.0.0.1:783")),
        (["spamfilter", "milter", "--socket", "inet:8891@0.0.0.0"], {},
         ("milter", "127.0.0.1:8891")),
        (["spamfilter", "milter"], {"SPAMFILTER_MILTER__SOCKET": "unix:/run/m.sock"},
         ("milter", "unix:/run/m.sock")),
        (["spamfilter", "milter", "--socket", "inet6:10025@::"], {}, ("milter", "[::1]:10025")),
        (["spamfilter", "db", "upgrade"], {}, None),
    ],
)  # fmt: skip
def test_the_image_healthcheck_finds_the_role(
    args: list[str], environ: dict[str, str], expected: tuple[str, str] | None
) -> None:
    assert healthcheck().target(args, environ) == expected


def test_the_image_healthcheck_reads_the_command_line(tmp_path: Path) -> None:
    cmdline = tmp_path / "cmdline"
    cmdline.write_bytes(b"/venv/bin/python\x00/venv/bin/spamfilter\x00spamd\x00--port\x00783\x00")
    assert healthcheck().command_line(str(cmdline)) == [
        "/venv/bin/python", "/venv/bin/spamfilter", "spamd", "--port", "783"
    ]  # fmt: skip


@pytest.mark.parametrize("role", sorted(ROLES))
def test_the_image_healthcheck_checks_live_listeners(role: str) -> None:
    module = healthcheck()
    with listener(role) as port:
        assert module.check(role, f"127.0.0.1:{port}") is True
    assert module.check(role, f"127.0.0.1:{port}") is False


def test_a_spamd_that_does_not_pong_is_unhealthy() -> None:
    with listener("milter") as port:  # accepts, never answers PONG
        assert healthcheck().check("spamd", f"127.0.0.1:{port}") is False


@contextmanager
def listener(role: str) -> Iterator[int]:
    """A stand-in for ``role`` on a free port: /healthz, PING -> PONG, or a bare accept."""
    if role == "serve":
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Healthz)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield int(server.server_address[1])
        finally:
            server.shutdown()
            server.server_close()
        return
    with socket.create_server(("127.0.0.1", 0)) as sock:
        stop = threading.Event()
        thread = threading.Thread(target=_answer, args=(sock, role, stop), daemon=True)
        thread.start()
        yield int(sock.getsockname()[1])
        stop.set()
        thread.join(5)


def _answer(sock: socket.socket, role: str, stop: threading.Event) -> None:
    sock.settimeout(0.05)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        with conn:
            if role == "spamd":
                conn.settimeout(2)
                if conn.recv(128).startswith(b"PING SPAMC/"):
                    conn.sendall(b"SPAMD/1.5 0 PONG\r\n")


class _Healthz(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path in ("/healthz", "/readyz") else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass
