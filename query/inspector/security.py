"""The inspector serves the memory without a login, so only to this machine: it listens on
loopback only, answers only requests that name a loopback host (a page elsewhere that rebinds
its DNS name to 127.0.0.1 sends its own name), and lets a page load nothing but itself."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hltm_resources.config import ConfigError

#: The only hosts the inspector listens on: it serves the memory without authentication.
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")

#: A Host header naming loopback: the name, then at most a port of digits, and nothing else.
_LOOPBACK_HOST_HEADER = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?", re.I)

#: What a page may load: its own inline style and forms to itself. No script runs, even if some
#: memory text slipped past escaping.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address; the inspector has no login, so nothing else."""
    if host not in LOOPBACK_HOSTS:
        raise ConfigError(
            f"--host {host!r} is not a loopback address: the inspector shows the memory without "
            f"a login, so it only listens on {', '.join(LOOPBACK_HOSTS)}; to open it from "
            "another machine, tunnel the port (ssh -L 8765:127.0.0.1:8765 HOST)"
        )
    return host


def names_loopback(host_headers: Sequence[bytes]) -> bool:
    """Whether a request's Host headers name a loopback host: none (HTTP/1.0 clients may omit
    it) or exactly one that is ``127.0.0.1``, ``localhost`` or ``[::1]`` with an optional
    ``:port``. Two Host headers are refused: servers and proxies disagree on which counts."""
    if not host_headers:
        return True
    if len(host_headers) > 1:
        return False
    try:
        host = host_headers[0].decode("ascii")
    except UnicodeDecodeError:
        return False
    return _LOOPBACK_HOST_HEADER.fullmatch(host.strip(" \t")) is not None
