"""Holds beside honest traffic: the run behind ``spamfilter bench hostile --holds``.

For the whole run, each attack keeps ``holders`` connections open, opening a new one
whenever the server cuts one off (as an attacker would):

* ``http-announce``: POST /v1/classify without a token, a Content-Length at the size cap, and
  no body;
* ``http-stall``: the same, then ``hold_bytes`` of the body, then silence;
* ``spamd-trickle``: CHECK with a Content-length at the cap, ``hold_bytes`` of the body, then a
  byte every ``trickle_seconds``;
* ``milter-stall``: a message streamed in 1 MiB body chunks up to ``hold_bytes``, then silence.

Meanwhile one honest client per path sends one request after another: HTTP classify without
a token, classify and feedback with one, spamd CHECK, a milter message. Reported per path:
requests, answers, failures by kind, median and worst seconds; per attack: connections
opened and cut off by the server; per listener: the most bytes its budget held. The run
passes when every honest request was answered.

Nothing here builds a server or reads settings: the caller passes the ports and the plan.
"""

from __future__ import annotations

import asyncio
import resource
import struct
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.admission import BodyBudget

MIB = 1024 * 1024
REQUEST_SECONDS = 60.0  # the most one honest request may take before it counts as failed
HONEST = (
    b"From: colleague@example.org\r\nTo: me@example.net\r\nSubject: Minutes of Friday\r\n\r\n"
    b"The notes from the project meeting are attached; see you at the station at noon.\r\n"
)
_FINAL = frozenset(b"cartdy")  # milter end-of-message answers: continue, accept, reject, ...


@dataclass(frozen=True, slots=True)
class Ports:
    """Where the listeners are (all on 127.0.0.1)."""

    http: int
    spamd: int
    milter: int


@dataclass(frozen=True, slots=True)
class HoldPlan:
    """How long, how many holders per attack, how much each holds, and the API token."""

    seconds: float
    holders: int
    hold_bytes: int
    cap: int
    token: str
    trickle_seconds: float = 4.0
    pause_seconds: float = 0.2


@dataclass
class PathResult:
    """One honest client's requests: seconds of the good ones, failures by kind."""

    name: str
    seconds: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)

    @property
    def requests(self) -> int:
        """Requests sent."""
        return len(self.seconds) + sum(self.failures.values())

    def percentile(self, share: float) -> float:
        """Seconds of the good answer at ``share`` (0..1) of them, sorted; 0 when none."""
        ordered = sorted(self.seconds)
        return ordered[min(int(share * len(ordered)), len(ordered) - 1)] if ordered else 0.0


@dataclass
class AttackResult:
    """One attack's connections: opened, and ended by the server."""

    name: str
    opened: int = 0
    cut: int = 0


@dataclass
class HoldReport:
    """The whole run."""

    paths: list[PathResult]
    attacks: list[AttackResult]
    peak_held: dict[str, int]
    limits: dict[str, int]
    peak_rss_bytes: int

    @property
    def ok(self) -> bool:
        """Every honest request answered, and every path served at least once."""
        return all(path.seconds and not path.failures for path in self.paths)


async def run_holds(ports: Ports, plan: HoldPlan, budgets: Mapping[str, BodyBudget]) -> HoldReport:
    """Run the attacks and the honest clients for ``plan.seconds``; see the module doc."""
    attacks = [AttackResult(name) for name in ATTACKS]
    paths = [PathResult(name) for name in HONEST_PATHS]
    peak = dict.fromkeys(budgets, 0)
    tasks = [
        asyncio.create_task(_keep_holding(ATTACKS[attack.name], ports, plan, attack))
        for attack in attacks
        for _ in range(plan.holders)
    ]
    tasks.append(asyncio.create_task(_sample(budgets, peak)))
    honest = [asyncio.create_task(_honest(path, ports, plan)) for path in paths]
    await asyncio.sleep(plan.seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*honest)
    await asyncio.gather(*tasks, return_exceptions=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    limits = {name: budget.limit for name, budget in budgets.items()}
    return HoldReport(paths, attacks, peak, limits, rss)


async def _sample(budgets: Mapping[str, BodyBudget], peak: dict[str, int]) -> None:
    while True:
        for name, budget in budgets.items():
            peak[name] = max(peak[name], budget.held)
        await asyncio.sleep(0.02)


# The attacks -------------------------------------------------------------------------------

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Attack = Callable[[Streams, Ports, HoldPlan], Awaitable[None]]


async def _keep_holding(attack: Attack, ports: Ports, plan: HoldPlan, result: AttackResult) -> None:
    """One holder: connect, attack, wait to be cut off; again until cancelled."""
    port = {"http": ports.http, "spamd": ports.spamd, "milter": ports.milter}
    while True:
        try:
            streams = await asyncio.open_connection("127.0.0.1", port[result.name.split("-")[0]])
        except OSError:
            await asyncio.sleep(plan.pause_seconds)
            continue
        result.opened += 1
        try:
            await attack(streams, ports, plan)
            result.cut += 1
        except (ConnectionError, OSError):
            result.cut += 1
        finally:
            streams[1].close()
        await asyncio.sleep(plan.pause_seconds)


async def _until_closed(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass


async def _http_announce(streams: Streams, _ports: Ports, plan: HoldPlan) -> None:
    reader, writer = streams
    writer.write(_http_head("/v1/classify", plan.cap, None))
    await writer.drain()
    await _until_closed(reader)


async def _http_stall(streams: Streams, _ports: Ports, plan: HoldPlan) -> None:
    reader, writer = streams
    writer.write(_http_head("/v1/classify", plan.cap, None) + b"x" * plan.hold_bytes)
    await _until_closed(reader)


async def _spamd_trickle(streams: Streams, _ports: Ports, plan: HoldPlan) -> None:
    reader, writer = streams
    writer.write(b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % plan.cap)
    writer.write(b"x" * plan.hold_bytes)
    while True:
        try:
            async with asyncio.timeout(plan.trickle_seconds):
                if not await reader.read(65536):
                    return
        except TimeoutError:
            writer.write(b"y")


async def _milter_stall(streams: Streams, _ports: Ports, plan: HoldPlan) -> None:
    reader, writer = streams
    writer.write(b"".join(_frame(body) for body in _milter_head()))
    for start in range(0, plan.hold_bytes, MIB):
        writer.write(_frame(b"B" + b"x" * min(MIB, plan.hold_bytes - start)))
    await _until_closed(reader)


ATTACKS: dict[str, Attack] = {
    "http-announce": _http_announce,
    "http-stall": _http_stall,
    "spamd-trickle": _spamd_trickle,
    "milter-stall": _milter_stall,
}


# The honest clients ------------------------------------------------------------------------


async def _honest(path: PathResult, ports: Ports, plan: HoldPlan) -> None:
    """Requests one after another on ``path`` until the run ends."""
    loop = asyncio.get_running_loop()
    ends = loop.time() + plan.seconds
    ask = HONEST_PATHS[path.name]
    while loop.time() < ends:
        started = loop.time()
        try:
            async with asyncio.timeout(REQUEST_SECONDS):
                failure = await ask(ports, plan)
        except TimeoutError:
            failure = "no answer"
        except (ConnectionError, OSError) as error:
            failure = type(error).__name__
        if failure is None:
            path.seconds.append(loop.time() - started)
        else:
            path.failures[failure] += 1
        await asyncio.sleep(plan.pause_seconds)


async def _exchange(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


async def _http(path: str, token: str | None, ports: Ports) -> str | None:
    head = _http_head(path, len(HONEST), token, close=True)
    reply = await _exchange(ports.http, head + HONEST)
    status = reply.split(b" ", 2)[1:2]
    return None if status == [b"200"] else f"HTTP {status[0].decode() if status else '?'}"


async def _anonymous_classify(ports: Ports, _plan: HoldPlan) -> str | None:
    return await _http("/v1/classify", None, ports)


async def _token_classify(ports: Ports, plan: HoldPlan) -> str | None:
    return await _http("/v1/classify", plan.token, ports)


async def _token_feedback(ports: Ports, plan: HoldPlan) -> str | None:
    return await _http("/v1/feedback?label=ham", plan.token, ports)


async def _spamd_check(ports: Ports, _plan: HoldPlan) -> str | None:
    request = b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(HONEST) + HONEST
    line = (await _exchange(ports.spamd, request)).split(b"\r\n", 1)[0]
    return None if b" 0 EX_OK" in line else f"spamd {line[10:40].decode('latin-1')}"


async def _milter_message(ports: Ports, _plan: HoldPlan) -> str | None:
    reader, writer = await asyncio.open_connection("127.0.0.1", ports.milter)
    try:
        head, _, body = HONEST.partition(b"\r\n\r\n")
        frames = [*_milter_head(head), b"B" + body, b"E", b"Q"]
        writer.write(b"".join(_frame(frame) for frame in frames))
        for _ in range(len(frames) - 2):  # the answers before end of message
            await _response(reader)
        code = await _response(reader)
        while code[:1] and code[0] not in _FINAL:  # header edits, then the verdict
            code = await _response(reader)
        return None if code[:1] in (b"c", b"a") else f"milter {code[:1].decode('latin-1')!r}"
    finally:
        writer.close()


HONEST_PATHS: dict[str, Callable[[Ports, HoldPlan], Awaitable[str | None]]] = {
    "http classify, no token": _anonymous_classify,
    "http classify, token": _token_classify,
    "http feedback, token": _token_feedback,
    "spamd CHECK": _spamd_check,
    "milter message": _milter_message,
}


# Wire formats --------------------------------------------------------------------------------


def _http_head(path: str, length: int, token: str | None, close: bool = False) -> bytes:
    auth = "" if token is None else f"Authorization: Bearer {token}\r\n"
    closing = "Connection: close\r\n" if close else ""
    head = f"POST {path} HTTP/1.1\r\nHost: bench\r\n{auth}{closing}Content-Length: {length}\r\n\r\n"
    return head.encode()


def _frame(body: bytes) -> bytes:
    return struct.pack("!I", len(body)) + body


def _milter_head(head: bytes = b"Subject: hold") -> list[bytes]:
    """Negotiation, envelope and header frames, up to end of headers."""
    frames = [b"O" + struct.pack("!III", 6, 0x1FF, 0x1FFFFF), b"Cbench\x004\x00\x19127.0.0.1\x00"]
    frames += [b"Hbench\x00", b"M<a@example.org>\x00", b"R<b@example.net>\x00", b"T"]
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b": ")
        frames.append(b"L" + name + b"\0" + value + b"\0")
    return [*frames, b"N"]


async def _response(reader: asyncio.StreamReader) -> bytes:
    """One milter response frame's code and data (b"" at the end of the connection)."""
    try:
        (length,) = struct.unpack("!I", await reader.readexactly(4))
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return b""


def holds_json(report: HoldReport, plan: HoldPlan) -> dict[str, Any]:
    """The report as a JSON-ready object (the plan without its token)."""
    return {
        "seconds": plan.seconds,
        "holders": plan.holders,
        "hold_bytes": plan.hold_bytes,
        "announced_bytes": plan.cap,
        "paths": [
            {
                "name": path.name,
                "requests": path.requests,
                "ok": len(path.seconds),
                "median_seconds": path.percentile(0.5),
                "worst_seconds": path.percentile(1.0),
                "failures": dict(path.failures),
            }
            for path in report.paths
        ],
        "attacks": [{"name": a.name, "opened": a.opened, "cut": a.cut} for a in report.attacks],
        "peak_held_bytes": report.peak_held,
        "budget_bytes": report.limits,
        "peak_rss_bytes": report.peak_rss_bytes,
        "ok": report.ok,
    }


def format_holds(report: HoldReport, plan: HoldPlan) -> list[str]:
    """The report as lines of text."""
    lines = [
        f"{plan.holders} holders per attack for {plan.seconds:g} s, each holding "
        f"{plan.hold_bytes / MIB:.1f} MiB (announcing {plan.cap / MIB:.1f} MiB)",
        f"{'honest path':<24} {'requests':>8} {'ok':>6} {'median s':>9} {'worst s':>8}  failures",
    ]
    for path in report.paths:
        failures = ", ".join(f"{kind}: {count}" for kind, count in path.failures.items())
        lines.append(
            f"{path.name:<24} {path.requests:>8} {len(path.seconds):>6} "
            f"{path.percentile(0.5):>9.3f} {path.percentile(1.0):>8.3f}  {failures or '-'}"
        )
    lines.append(f"{'attack':<24} {'opened':>8} {'cut off':>8}")
    lines += [f"{a.name:<24} {a.opened:>8} {a.cut:>8}" for a in report.attacks]
    for name, held in report.peak_held.items():
        limit = report.limits[name]
        lines.append(f"{name} budget: at most {held / MIB:.1f} of {limit / MIB:.1f} MiB held")
    lines.append(f"process peak RSS: {report.peak_rss_bytes / MIB:.0f} MiB (attackers included)")
    lines.append("every honest request answered" if report.ok else "honest requests failed")
    return lines
