"""The SDK's Kotlin bindings on the JVM: sdk/kotlin (a Maven project)
compiles the generated uniffi/qnc/qnc.kt and runs SdkTest.kt against
qnc-server, directly and over linkem links (10 % loss; 4 Mbit/s for
cancellation). QNC_SDK_OUT names the directory of the generated bindings
(its `kotlin/` subdirectory; default target/sdk) and QNC_LIB_DIR the one
holding libqnc_sdk.so (default target/debug), as for test_c.py."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("QNC_SDK_OUT", ROOT / "target/sdk"))
LIB = Path(os.environ.get("QNC_LIB_DIR", ROOT / "target/debug"))
POM = ROOT / "sdk/kotlin/pom.xml"


def test_kotlin_jvm(server):
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.fail("mvn (Maven) is not installed: the Kotlin test needs Maven 3 and a JDK 17+")
    bindings = OUT / "kotlin"
    kt = bindings / "uniffi/qnc/qnc.kt"
    assert kt.is_file(), f"no Kotlin bindings in {bindings}"
    if "override fun `close`()" in kt.read_text():
        pytest.fail(f"{kt}: Client.close clashes with AutoCloseable.close (and QncError's "
                    "`message` fields with Throwable.message): sdk/uniffi.toml must rename "
                    "them for Kotlin ([bindings.kotlin.rename])")
    assert (LIB / "libqnc_sdk.so").is_file(), f"no libqnc_sdk.so in {LIB}"

    lossy = server.link("--rate", "20mbit", "--delay", "10ms", "--loss", "bernoulli:0.1", "--seed", "7")
    slow = server.link("--rate", "4mbit", "--delay", "20ms")
    env = dict(os.environ,
               QNC_CA=server.ca,
               QNC_URL=server.url(""),
               QNC_LOSSY_URL=server.url("", lossy),
               QNC_SLOW_URL=server.url("", slow),
               QNC_DATA=str(server.root / "data.bin"))
    cmd = [mvn, "-B", "-q", "-f", str(POM),
           f"-Dqnc.bindings={bindings.resolve()}", f"-Dqnc.libdir={LIB.resolve()}", "test"]
    # The first run downloads Kotlin and the plugins from Maven Central.
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired as e:
        out = b"".join(x if isinstance(x, bytes) else x.encode() for x in (e.stdout, e.stderr) if x)
        pytest.fail(f"mvn timed out:\n{out.decode(errors='replace')}")
    assert p.returncode == 0, f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}"
