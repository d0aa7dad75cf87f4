"""A live `mandate serve` for the client's tests: the binary MANDATE_BIN names.

Started once per session (`own_server`: once per test) on port 0 with a
fresh data folder; its address is read from its first line, its admin key
from the folder.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class LiveServer:
    base_url: str
    api_key: str
    #: Its data folder, for the operator's CLI (``mandate signing-key rotate --data-dir``).
    data_dir: str


@contextmanager
def mandate_server(listen: str = "127.0.0.1:0", config: str | None = None) -> Iterator[LiveServer]:
    """A fresh `mandate serve` (on port 0 unless told), with ``config`` as its TOML file when given; stopped on
    leaving."""
    binary = os.environ.get("MANDATE_BIN")
    if not binary:
        pytest.fail("set MANDATE_BIN to the mandate server binary")
    with tempfile.TemporaryDirectory(prefix="mandate-py-live-") as data:
        more = []
        if config is not None:
            (Path(data) / "config.toml").write_text(config)
            more = ["--config", str(Path(data) / "config.toml")]
        server = subprocess.Popen(
            [binary, "serve", "--listen", listen, "--data-dir", data, *more],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            base_url = None
            for line in server.stdout:
                found = re.search(r"listening on (http://\S+)", line)
                if found:
                    base_url = found.group(1)
                    break
            if base_url is None:
                pytest.fail(f"the server exited with {server.wait()} before listening")
            api_key = (Path(data) / "admin.key").read_text().strip()
            yield LiveServer(base_url, api_key, data)
        finally:
            server.terminate()
            server.wait(timeout=10)


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    with mandate_server() as server:
        yield server


@contextmanager
def oauth_issuer(oauth_config: str = "") -> Iterator[LiveServer]:
    """A fresh server acting as the OAuth authorization server (`[oauth]` on, with ``oauth_config``'s lines in that
    table), its issuer on loopback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    issuer = f"http://127.0.0.1:{port}"
    config = f'public_url = "{issuer}"\nissuer = "{issuer}"\n\n[oauth]\nenabled = true\n{oauth_config}'
    with mandate_server(f"127.0.0.1:{port}", config) as server:
        yield server


@pytest.fixture
def oauth_server() -> Iterator[LiveServer]:
    """A server of the test's own acting as the OAuth authorization server (`[oauth]` on), its issuer on loopback."""
    with oauth_issuer() as server:
        yield server


@pytest.fixture
def own_server() -> Iterator[LiveServer]:
    """A server of the test's own, for what would disturb the others (rotating its signing key)."""
    with mandate_server() as server:
        yield server
