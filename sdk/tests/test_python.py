"""The SDK's Python bindings against qnc-server, directly and over linkem at
10 % loss: downloads (sha256), uploads, streaming, progress, cancellation,
typed errors, statistics and async."""

import asyncio
import hashlib
import threading

import pytest

import qnc


def client(server, **kw):
    return qnc.Client(qnc.Config(ca_file=server.ca, **kw))


class Progress(qnc.ProgressListener):
    def __init__(self):
        self.calls = []

    def on_progress(self, nbytes, total, goodput_bps):
        self.calls.append((nbytes, total, goodput_bps))


class Chunks(qnc.ChunkListener):
    def __init__(self):
        self.data = bytearray()

    def on_chunk(self, data):
        self.data += data


def test_download_with_progress(server):
    c = client(server)
    p = Progress()
    r = c.get(server.url("/data.bin"), p)
    assert r.status == 200
    assert hashlib.sha256(r.body).hexdigest() == server.sha256
    assert p.calls[-1][:2] == (1_500_000, 1_500_000)
    assert any(h.name == "content-length" for h in r.headers)
    (st,) = c.stats()
    assert st.coding and st.controller == "hybrid" and st.rtt_ms is not None
    c.close()


def test_ten_percent_loss_recovered_by_decoding(server):
    port = server.link("--rate", "20mbit", "--delay", "10ms", "--loss", "bernoulli:0.1", "--seed", "3")
    c = client(server, request_timeout_ms=60_000)
    r = c.get(server.url("/data.bin", port), None)
    assert hashlib.sha256(r.body).hexdigest() == server.sha256
    (st,) = c.stats()
    assert st.coding
    assert st.recovered > 0, st
    assert st.repair_overhead > 0.0
    c.close()


def test_plain_quic_when_coding_is_off(server):
    c = client(server, coding=False)
    r = c.get(server.url("/bytes/100000"), None)
    assert len(r.body) == 100_000
    assert not c.stats()[0].coding


def test_file_upload_and_stream(server):
    c = client(server)
    path = str(server.tmp / "saved.bin")
    r = c.download(server.url("/data.bin"), path, None)
    assert r.saved_to == path and r.body == b""
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == server.sha256

    body = bytes(range(256)) * 1000
    r = c.post(server.url("/upload"), body, None)
    assert r.status == 200
    assert dict((h.name, h.value) for h in r.headers)["x-sha256"] == hashlib.sha256(body).hexdigest()

    chunks = Chunks()
    r = c.stream(server.url("/data.bin"), chunks, None)
    assert r.bytes == 1_500_000 and r.body == b""
    assert hashlib.sha256(chunks.data).hexdigest() == server.sha256


def test_cancel_one_and_all(server):
    port = server.link("--rate", "4mbit", "--delay", "20ms")
    c = client(server)
    p = Progress()
    call = c.start(qnc.Request(url=server.url("/bytes/50000000", port)), p, None)
    assert call.wait_timeout(1500) is None
    assert p.calls, "progress while running"
    call.cancel()
    with pytest.raises(qnc.QncError.Cancelled):
        call.wait()

    calls = [c.start(qnc.Request(url=server.url("/bytes/50000000", port)), None, None) for _ in range(2)]
    threading.Timer(0.5, c.cancel_all).start()
    for call in calls:
        with pytest.raises(qnc.QncError.Cancelled):
            call.wait()
    # The connection is still usable.
    assert len(c.get(server.url("/bytes/1000", port), None).body) == 1000
    c.close()


def test_typed_errors(server):
    with pytest.raises(qnc.QncError.Config):
        qnc.Client(qnc.Config(ca_file="/nonexistent.pem"))
    with pytest.raises(qnc.QncError.Config):
        qnc.Client(qnc.Config(controller="warp"))
    with pytest.raises(qnc.QncError.Tls):
        qnc.Client(qnc.Config(pin_sha256="00" * 32)).get(server.url("/data.bin"), None)
    ok = qnc.Client(qnc.Config(pin_sha256=server.pin)).get(server.url("/bytes/10"), None)
    assert ok.body == b"abcdefghij"
    assert client(server).get(server.url("/missing"), None).status == 404
    with pytest.raises(qnc.QncError.Timeout):
        client(server).execute(qnc.Request(url=server.url("/stream/1mbit/30s"), timeout_ms=500), None)
    with pytest.raises((qnc.QncError.Unreachable, qnc.QncError.Timeout)):
        client(server, connect_timeout_ms=2000).get("https://127.0.0.1:9/x", None)


def test_async_fetch(server):
    c = client(server)

    async def both():
        return await asyncio.gather(c.fetch(server.url("/bytes/1000")), c.fetch(server.url("/data.bin")))

    a, b = asyncio.run(both())
    assert len(a.body) == 1000
    assert hashlib.sha256(b.body).hexdigest() == server.sha256
