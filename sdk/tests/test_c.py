"""The C ABI: sdk/c/test_sdk.c compiled against the generated header and
the static library, run under valgrind's leak checker (every object the
library hands out must be freed exactly once, with no definite leak)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("QNC_SDK_OUT", ROOT / "target/sdk"))
LIB = Path(os.environ.get("QNC_LIB_DIR", ROOT / "target/debug"))


def test_c_program_under_valgrind(server, tmp_path):
    exe = tmp_path / "test_sdk"
    subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Werror", "-g", "-I", str(OUT / "include"),
         str(ROOT / "sdk/c/test_sdk.c"), str(LIB / "libqnc_sdk.a"),
         "-lpthread", "-ldl", "-lm", "-lstdc++", "-o", str(exe)],
        check=True)
    lossy = server.link("--rate", "20mbit", "--delay", "10ms", "--loss", "bernoulli:0.1", "--seed", "5")
    args = [server.ca, server.pin, str(server.root / "data.bin"), server.url(""),
            server.url("", lossy), f"127.0.0.1:{lossy}", str(tmp_path / "out.bin")]
    cmd = [str(exe), *args]
    if shutil.which("valgrind"):
        # Leaks and invalid accesses fail the test. Uninitialised-value
        # reports are off: optimised Rust (nc-frames builds at opt-level 2
        # even in debug) compares Option<Instant> through its niche, which
        # memcheck misreads.
        cmd = ["valgrind", "-q", "--leak-check=full", "--errors-for-leak-kinds=definite",
               "--undef-value-errors=no", "--error-exitcode=99", *cmd]
    else:
        pytest.fail("valgrind is not installed (make test-sdk installs it)")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip().endswith("ok")
