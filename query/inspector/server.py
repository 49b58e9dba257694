"""``hltm inspect``'s server: the inspector's app under uvicorn, on a loopback address only."""

from __future__ import annotations

import socket
import threading

from query.inspector.app import ScopeOf, inspector_app
from query.inspector.core import Inspector
from query.inspector.security import check_loopback

#: How long an idle connection is kept open (a browser's keep-alive, a client that went quiet).
KEEP_ALIVE_S = 5
#: How long stopping waits for the pages being served.
STOP_WAIT_S = 5


def closing_idle_connections(seconds: float = KEEP_ALIVE_S):
    """uvicorn's HTTP protocol, closing a connection that has not sent a whole request head
    within ``seconds`` of opening or of its last answer (uvicorn itself only times out a
    connection after an answer: one that never sends a request, or sends half a head, would
    stay open for ever, and enough of them exhaust the process's files). A request being
    answered is left alone."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class ClosingIdle(AutoHTTPProtocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm_head_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_head_deadline()

        def connection_lost(self, exc) -> None:
            self._head_deadline.cancel()
            super().connection_lost(exc)

        def _arm_head_deadline(self) -> None:
            previous = getattr(self, "_head_deadline", None)
            if previous is not None:
                previous.cancel()
            self._head_deadline = self.loop.call_later(seconds, self._close_if_no_request)

        def _close_if_no_request(self) -> None:
            answering = self.cycle is not None and not self.cycle.response_complete
            if not answering and not self.transport.is_closing():
                self.transport.close()

    return ClosingIdle


class InspectorServer:
    """The inspector on a loopback address (port 0: any free port). The socket is bound when
    it is made (an ``OSError`` says the port is taken); :meth:`serve_forever` serves until
    Ctrl-C (in the main thread) or :meth:`shutdown`."""

    def __init__(
        self,
        inspector: Inspector,
        host: str = "127.0.0.1",
        port: int = 8765,
        scope_of: ScopeOf | None = None,
    ):
        import uvicorn

        check_loopback(host)
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self.socket = sock
        config = uvicorn.Config(
            inspector_app(inspector, scope_of),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=STOP_WAIT_S,
            http=closing_idle_connections(KEEP_ALIVE_S),
        )
        self.server = uvicorn.Server(config)
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/"

    def serve_forever(self) -> None:
        """Serve until stopped; in the main thread, Ctrl-C stops it, then raises
        ``KeyboardInterrupt`` as usual."""
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self, timeout_s: float = 30) -> None:
        """Stop serving (from another thread) and wait until it has."""
        self.server.should_exit = True
        self._stopped.wait(timeout_s)

    def server_close(self) -> None:
        self.socket.close()
