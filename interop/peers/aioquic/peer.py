#!/usr/bin/env python3
"""aioquic-peer: a small aioquic HTTP/3 server and client, for the
third-party fallback tests (examples/tests/third_party.rs).

    peer.py server --addr 127.0.0.1:0 --cert cert.pem --key key.pem [--root DIR]
    peer.py client --url https://127.0.0.1:4433/bytes/N --ca ca.pem
                   [--out FILE] [--upload FILE]

The server prints "listening ADDR" once its socket is bound, then one JSON
line per answered request. It serves GET /bytes/N (N bytes of qnc-server's
pattern: byte i is 'a' + i%26), GET /NAME (a file directly under --root)
and POST/PUT to any path (answered like qnc-server: the body's length and
SHA-256 in the x-bytes / x-sha256 headers).

The client fetches one URL (GET, or POST with --upload's contents),
verifying the server against --ca, writes the response body to --out and
prints one JSON line {"role":"client","status":...,"bytes":...,
"sha256":...,"duration_s":...,...}. With --upload it exits non-zero unless
the server's x-sha256 receipt matches what it sent.

Both sides also report the transport parameter ids their peer sent
("peer_transport_parameters", decimal) and whether one of them is
QUIC-NC's nc_parameters ("peer_offered_nc"). aioquic does not know that
parameter and skips it, so the connection is plain QUIC.
"""

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted, ProtocolNegotiated
from aioquic.tls import ExtensionType

NC_PARAMETERS = 0x4E4350  # nc-frames' TRANSPORT_PARAM_ID
MAX_BYTES = 1_000_000_000
WINDOW = 16 << 20


def die(msg):
    print(f"aioquic-peer: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def pattern(n):
    block = bytes(ord("a") + i % 26 for i in range(26))
    reps, rest = divmod(n, 26)
    return block * reps + block[:rest]


def peer_transport_parameters(quic):
    """Ids of the transport parameters the peer sent (raw TLS extension)."""
    for ext_type, data in quic.tls.received_extensions or []:
        if ext_type == ExtensionType.QUIC_TRANSPORT_PARAMETERS:
            buf = Buffer(data=data)
            ids = []
            while not buf.eof():
                ids.append(buf.pull_uint_var())
                buf.pull_bytes(buf.pull_uint_var())
            return ids
    return []


def configuration(is_client):
    return QuicConfiguration(
        is_client=is_client,
        alpn_protocols=H3_ALPN,
        max_data=WINDOW,
        max_stream_data=WINDOW,
        idle_timeout=30.0,
    )


class ServerProtocol(QuicConnectionProtocol):
    root = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.requests = {}  # stream id -> [headers dict, sha256, bytes]
        self.peer_tps = []

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        elif isinstance(event, HandshakeCompleted):
            self.peer_tps = peer_transport_parameters(self._quic)
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                hdrs = {k.decode(): v.decode() for k, v in ev.headers}
                self.requests[ev.stream_id] = [hdrs, hashlib.sha256(), 0]
                if ev.stream_ended:
                    self.answer(ev.stream_id)
            elif isinstance(ev, DataReceived) and ev.stream_id in self.requests:
                req = self.requests[ev.stream_id]
                req[1].update(ev.data)
                req[2] += len(ev.data)
                if ev.stream_ended:
                    self.answer(ev.stream_id)

    def respond(self, sid, status, body, extra=()):
        headers = [
            (b":status", str(status).encode()),
            (b"server", b"aioquic-peer"),
            (b"content-length", str(len(body)).encode()),
        ] + [(k.encode(), v.encode()) for k, v in extra]
        self.h3.send_headers(sid, headers, end_stream=not body)
        if body:
            self.h3.send_data(sid, body, end_stream=True)
        self.transmit()

    def answer(self, sid):
        hdrs, sha, received = self.requests.pop(sid)
        method = hdrs.get(":method", "")
        path = hdrs.get(":path", "")
        extra = []
        if method in ("POST", "PUT"):
            digest = sha.hexdigest()
            status = 200
            body = f"bytes {received}\nsha256 {digest}\n".encode()
            extra = [("x-bytes", str(received)), ("x-sha256", digest)]
        elif method != "GET":
            status, body = 405, b"only GET, POST and PUT\n"
        elif path.startswith("/bytes/"):
            try:
                n = int(path[len("/bytes/"):])
                if not 0 <= n <= MAX_BYTES:
                    raise ValueError
                status, body = 200, pattern(n)
            except ValueError:
                status, body = 400, b"/bytes/<n> needs a count\n"
        else:
            name = path.lstrip("/")
            full = os.path.join(self.root, name) if self.root else None
            if full and name and "/" not in name and os.path.isfile(full):
                with open(full, "rb") as f:
                    status, body = 200, f.read()
            else:
                status, body = 404, b"not found\n"
        self.respond(sid, status, body, extra)
        line = {
            "role": "server",
            "method": method,
            "path": path,
            "status": status,
            "bytes_sent": len(body),
            "bytes_received": received,
            "peer_transport_parameters": self.peer_tps,
            "peer_offered_nc": NC_PARAMETERS in self.peer_tps,
        }
        if extra:
            line["sha256"] = extra[1][1]
        print(json.dumps(line), flush=True)


async def run_server(args):
    host, _, port = args.addr.rpartition(":")
    conf = configuration(False)
    conf.load_cert_chain(args.cert, args.key)
    ServerProtocol.root = args.root
    server = await serve(
        host.strip("[]"), int(port), configuration=conf, create_protocol=ServerProtocol
    )
    addr = server._transport.get_extra_info("sockname")
    print(f"listening {addr[0]}:{addr[1]}", flush=True)
    await asyncio.Future()


class ClientProtocol(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.done = asyncio.get_running_loop().create_future()
        self.headers = {}
        self.body = bytearray()
        self.peer_tps = []

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            self.peer_tps = peer_transport_parameters(self._quic)
        elif isinstance(event, ConnectionTerminated) and not self.done.done():
            self.done.set_exception(
                RuntimeError(f"connection closed: {event.error_code} {event.reason_phrase}")
            )
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self.headers.update({k.decode(): v.decode() for k, v in ev.headers})
            elif isinstance(ev, DataReceived):
                self.body += ev.data
            if getattr(ev, "stream_ended", False) and not self.done.done():
                self.done.set_result(None)

    def request(self, method, url, body):
        sid = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", url.netloc.encode()),
            (b":path", (url.path or "/").encode()),
            (b"user-agent", b"aioquic-peer"),
        ]
        if body is not None:
            headers.append((b"content-length", str(len(body)).encode()))
        self.h3.send_headers(sid, headers, end_stream=not body)
        if body:
            self.h3.send_data(sid, body, end_stream=True)
        self.transmit()


async def run_client(args):
    url = urlparse(args.url)
    if url.scheme != "https" or not url.hostname:
        die(f"not an https URL: {args.url}")
    conf = configuration(True)
    conf.server_name = url.hostname
    if args.ca:
        conf.load_verify_locations(args.ca)
    body = None
    if args.upload:
        with open(args.upload, "rb") as f:
            body = f.read()
    start = time.monotonic()
    async with connect(
        url.hostname, url.port or 443, configuration=conf, create_protocol=ClientProtocol
    ) as client:
        client.request("POST" if body is not None else "GET", url, body)
        await asyncio.wait_for(client.done, args.timeout)
        duration = time.monotonic() - start
    if args.out:
        with open(args.out, "wb") as f:
            f.write(client.body)
    line = {
        "role": "client",
        "url": args.url,
        "status": int(client.headers.get(":status", "0")),
        "bytes": len(client.body),
        "sha256": hashlib.sha256(client.body).hexdigest(),
        "duration_s": duration,
        "peer_transport_parameters": client.peer_tps,
        "peer_offered_nc": NC_PARAMETERS in client.peer_tps,
    }
    if body is not None:
        sent = hashlib.sha256(body).hexdigest()
        line["uploaded"] = len(body)
        line["upload_sha256"] = client.headers.get("x-sha256")
        if line["upload_sha256"] != sent:
            print(json.dumps(line), flush=True)
            die(f"upload receipt {line['upload_sha256']} != sent {sent}")
    print(json.dumps(line), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("--addr", default="127.0.0.1:4433")
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--root", default=None, help="serve the files directly under DIR")
    c = sub.add_parser("client")
    c.add_argument("--url", required=True)
    c.add_argument("--ca", default=None, help="trust anchor (PEM)")
    c.add_argument("--out", default=None, help="write the response body here")
    c.add_argument("--upload", default=None, help="POST this file's contents")
    c.add_argument("--timeout", type=float, default=120.0)
    args = p.parse_args()
    try:
        asyncio.run(run_server(args) if args.mode == "server" else run_client(args))
    except KeyboardInterrupt:
        pass
    except Exception as e:  # one line, like the other peers
        die(f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
