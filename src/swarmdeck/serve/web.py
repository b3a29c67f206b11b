"""The web server: textual-serve's page, websocket and files behind the token (access.py).

textual-serve's Server knows how to run an app process per websocket; its own `serve` would log
every request line (the first one carries the token) and print a banner, so this module makes
the aiohttp application itself from the Server's public handlers, without an access log, and
refuses every request that lacks the token: 401, the page, the websocket and the files alike. A
websocket whose Origin is another site is refused too (403), cookie or not. The app delivers no
files, so textual-serve's download route is left out.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server

from swarmdeck.errors import UsageError
from swarmdeck.serve.access import COOKIE_NAME, QUERY_KEY, token_matches

TITLE = "swarmdeck"
"""The page's title."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Listening:
    """Where the server listens, once it does."""

    host: str
    port: int

    def url(self, token: str) -> str:
        """The URL to open: the page, with the token in its query."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/?{QUERY_KEY}={token}"


def web_app(command: str, token: str) -> web.Application:
    """The aiohttp application serving `command` (one process per browser) to holders of
    `token`."""
    server = Server(command, title=TITLE)

    @web.middleware
    async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get(QUERY_KEY)
        if given is not None and token_matches(given, token):
            # The token moves from the address bar into a cookie the page's requests carry.
            answer = web.HTTPSeeOther(location=request.rel_url.path)
            answer.set_cookie(COOKIE_NAME, token, httponly=True, samesite="Strict", path="/")
            return answer
        if not token_matches(request.cookies.get(COOKIE_NAME), token):
            raise web.HTTPUnauthorized(text="swarmdeck serve: open the URL it printed\n")
        if not _same_origin(request):
            raise web.HTTPForbidden(text="swarmdeck serve: a page of another site\n")
        return await handler(request)

    async def index(request: web.Request) -> web.Response:
        context = {
            "font_size": 16,
            "app_websocket_url": f"ws://{request.host}/ws",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": TITLE},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    app = web.Application(middlewares=[require_token])
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(server.templates_path))
    app.add_routes([
        web.get("/", index),
        web.get("/ws", server.handle_websocket),
        web.static("/static", server.statics_path),
    ])
    return app


def _same_origin(request: web.Request) -> bool:
    """False when the request says it comes from a page of another host (its Origin)."""
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host


async def serve_until_stopped(
    app: web.Application, host: str, port: int, ready: Callable[[Listening], None]
) -> None:
    """Listen on `host`:`port` (0: any free port), call `ready` once listening, and serve until
    SIGINT or SIGTERM; UsageError (one line) when the address cannot be had."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as error:
            raise UsageError(
                f"cannot listen on {host} port {port} ({error.strerror or error});"
                " pick another with --port or --bind"
            ) from None
        bound_host, bound_port = runner.addresses[0][:2]
        ready(Listening(host if host else bound_host, bound_port))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
