"""A live `mandate serve` for the client's tests: the binary MANDATE_BIN names.

Started once per session on port 0 with a fresh data folder; its address is
read from its first line, its admin key from the folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class LiveServer:
    base_url: str
    api_key: str


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    binary = os.environ.get("MANDATE_BIN")
    if not binary:
        pytest.fail("set MANDATE_BIN to the mandate server binary")
    with tempfile.TemporaryDirectory(prefix="mandate-py-live-") as data:
        server = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
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
            yield LiveServer(base_url, api_key)
        finally:
            server.terminate()
            server.wait(timeout=10)
