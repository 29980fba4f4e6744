"""The three listeners of ``spamfilter bench hostile --holds``, each on a loopback port of its
own and an event loop of its own in a thread, as ``serve``, ``spamd`` and ``milter`` run
them in their own processes: the HTTP app under uvicorn with the options ``serve`` gives it,
the spamd server and the milter, each with its own byte budget.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from app.admission import BodyBudget
from app.service import SpamFilter
from app.settings.schema import Settings
from benchmarks.hold_bench import HoldPlan, HoldReport, Ports, run_holds

START_SECONDS = 30.0


@dataclass
class Listeners:
    """Where each listener is, and the budget each draws from."""

    http_port: int
    spamd_port: int
    milter_port: int
    budgets: dict[str, BodyBudget]
    _stops: list[Any] = field(default_factory=list, repr=False)

    def close(self) -> None:
        """Stop every listener and join its thread."""
        for stop in reversed(self._stops):
            stop()


def start_listeners(service: SpamFilter, settings: Settings) -> Listeners:
    """Start HTTP, spamd and milter on free loopback ports for ``service``."""
    listeners = Listeners(0, 0, 0, {})
    try:
        listeners.http_port = _start_http(service, settings, listeners)
        listeners.spamd_port = _start_spamd(service, settings, listeners)
        listeners.milter_port = _start_milter(service, settings, listeners)
    except BaseException:
        listeners.close()
        raise
    return listeners


def _start_http(service: SpamFilter, settings: Settings, listeners: Listeners) -> int:
    import uvicorn

    from app.api.app import create_app
    from app.api.connections import server_options

    app = create_app(settings, service)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        lifespan="off",  # the app was given its service
        log_level="critical",
        timeout_graceful_shutdown=1,
        **server_options(settings),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bench-http", daemon=True)
    thread.start()

    def stop() -> None:
        server.should_exit = True
        thread.join(START_SECONDS)

    listeners._stops.append(stop)
    give_up = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > give_up:
            raise RuntimeError("the HTTP listener did not start")
        time.sleep(0.01)
    listeners.budgets["http"] = app.state.budget
    return int(server.servers[0].sockets[0].getsockname()[1])


class _Loop:
    """An event loop running in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, Any]) -> Any:
        """Run ``work`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(START_SECONDS)

    def stop(self, closing: Coroutine[Any, Any, Any]) -> None:
        """Run ``closing``, cancel what is left, stop the loop and join its thread."""
        self.run(closing)
        self.run(_cancel_the_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(START_SECONDS)
        self.loop.close()


async def _cancel_the_rest() -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _start_spamd(service: SpamFilter, settings: Settings, listeners: Listeners) -> int:
    from app.adapters.spamd.server import SpamdServer

    loop = _Loop("bench-spamd")
    spamd_settings = settings.model_copy(
        update={"spamd": settings.spamd.model_copy(update={"host": "127.0.0.1", "port": 0})}
    )
    server = SpamdServer(service, spamd_settings)
    listeners._stops.append(lambda: loop.stop(server.close()))
    loop.run(server.start())
    listeners.budgets["spamd"] = server.budget
    return server.address[1]


def _start_milter(service: SpamFilter, settings: Settings, listeners: Listeners) -> int:
    from app.adapters.milter.server import MilterServer
    from app.binding import parse_socket

    loop = _Loop("bench-milter")
    server = MilterServer(service, settings)
    listeners._stops.append(lambda: loop.stop(server.close()))
    bound: str = loop.run(server.start(parse_socket("inet:0@127.0.0.1")))
    listeners.budgets["milter"] = server.budget
    return int(parse_socket(bound).port)


def measure_holds(service: SpamFilter, settings: Settings, plan: HoldPlan) -> HoldReport:
    """Start the listeners for ``service`` and run ``plan`` against them (``hold_bench``)."""
    listeners = start_listeners(service, settings)
    try:
        ports = Ports(listeners.http_port, listeners.spamd_port, listeners.milter_port)
        return asyncio.run(run_holds(ports, plan, listeners.budgets))
    finally:
        listeners.close()
