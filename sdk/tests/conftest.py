"""Fixtures: a qnc-server with test certificates, and linkem links in front
of it. QNC_BIN names the directory of the built tools; QNC_BINDINGS the
directory holding the generated `qnc.py` and `libqnc_sdk.so` (both set by
`make test-sdk`; by default target/debug and target/sdk/python)."""

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("QNC_BIN", ROOT / "target/debug"))
sys.path.insert(0, str(os.environ.get("QNC_BINDINGS", ROOT / "target/sdk/python")))


def _start(cmd):
    """Starts `cmd`, waits for its `listening ADDR` line, returns (proc, port)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    assert line.startswith("listening "), f"{cmd[0]} printed {line!r}"
    return p, int(line.split()[1].rsplit(":", 1)[1])


def _stop(p):
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()


class Server:
    def __init__(self, root, certs):
        self.root, self.certs = root, certs
        data = bytes(((i * 2654435761) >> 13) & 0xFF for i in range(1_500_000))
        (root / "data.bin").write_bytes(data)
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.proc, self.port = _start([
            str(BIN / "qnc-server"), "--listen", "127.0.0.1:0", "--root", str(root),
            "--cert", str(certs / "cert.pem"), "--key", str(certs / "key.pem"),
            "--idle-timeout", "5000",
        ])
        self.links = []

    def url(self, path, port=None):
        return f"https://127.0.0.1:{port or self.port}{path}"

    def link(self, *args):
        """A linkem relay in front of the server; returns its port."""
        p, port = _start([str(BIN / "linkem"), "--upstream", f"127.0.0.1:{self.port}", *args])
        self.links.append(p)
        return port

    def close(self):
        for p in self.links:
            _stop(p)
        _stop(self.proc)


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory(prefix="qnc-sdk-py-") as d:
        d = Path(d)
        out = subprocess.run([str(BIN / "qnc-certs"), "--out", str(d / "certs")],
                             capture_output=True, text=True, check=True).stdout
        pin = [l.split()[-1] for l in out.splitlines() if l.startswith("leaf sha256 pin")]
        (d / "root").mkdir()
        s = Server(d / "root", d / "certs")
        s.pin = pin[0]
        s.ca = str(d / "certs" / "ca.pem")
        s.tmp = d
        yield s
        s.close()
