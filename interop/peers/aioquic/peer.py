#!/usr/bin/env python3
"""aioquic-peer: a small aioquic HTTP/3 server and client, for the
third-party fallback tests (examples/tests/third_party.rs) and nc-interop
(interop/peers/endpoints/aioquic.sh).

    peer.py server --addr 127.0.0.1:0 --cert cert.pem --key key.pem [--root DIR]
                   [--retry] [--session-tickets] [--qlog-dir DIR] [--keylog FILE]
    peer.py client --url https://127.0.0.1:4433/bytes/N [--url URL ...] --ca ca.pem
                   [--out FILE | --download-dir DIR] [--upload FILE]
                   [--session-file FILE [--early-data]] [--key-update] [--fail]
                   [--qlog-dir DIR] [--keylog FILE]

The server prints "listening ADDR" once its socket is bound, then one JSON
line per answered request. It serves GET /bytes/N (N bytes of qnc-server's
pattern: byte i is 'a' + i%26), GET /NAME (a file directly under --root)
and POST/PUT to any path (answered like qnc-server: the body's length and
SHA-256 in the x-bytes / x-sha256 headers). --retry validates every new
client address with a Retry first; --session-tickets issues session
tickets (kept in memory, each good for one resumption) and so also accepts
0-RTT on the resumed connections.

The client fetches its URLs in parallel on one connection (GET, or POST
with --upload's contents), verifying the server against --ca, writes a
single URL's response body to --out, or each body to
--download-dir/<last path segment>, and prints one JSON line per URL
{"role":"client","status":...,"bytes":...,"sha256":...,"duration_s":...,
"resumed":...,"early_data":...,...}. With --upload it exits non-zero
unless the server's x-sha256 receipt matches what it sent; with --fail,
unless every status is 200. --session-file resumes the session saved there
(if the file exists) and saves the newest session ticket the server sends;
--early-data sends the requests in 0-RTT when the saved ticket allows it
(without it the resumed connection sends no 0-RTT). --key-update initiates
a TLS key update once the first response data has arrived.

Both sides also report the transport parameter ids their peer sent
("peer_transport_parameters", decimal) and whether one of them is
QUIC-NC's nc_parameters ("peer_offered_nc"). aioquic does not know that
parameter and skips it, so the connection is plain QUIC.
"""

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import pickle
import sys
import time
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted, ProtocolNegotiated
from aioquic.quic.logger import QuicFileLogger
from aioquic.tls import Epoch, ExtensionType

NC_PARAMETERS = 0x4E4350  # nc-frames' TRANSPORT_PARAM_ID
MAX_BYTES = 1_000_000_000
WINDOW = 16 << 20
CLOSE_GRACE = 0.5  # seconds the client lingers after its CONNECTION_CLOSE


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


def configuration(is_client, args=None):
    conf = QuicConfiguration(
        is_client=is_client,
        alpn_protocols=H3_ALPN,
        max_data=WINDOW,
        max_stream_data=WINDOW,
        idle_timeout=30.0,
    )
    if args is not None and args.qlog_dir:
        os.makedirs(args.qlog_dir, exist_ok=True)
        conf.quic_logger = QuicFileLogger(args.qlog_dir)
    if args is not None and args.keylog:
        conf.secrets_log_file = open(args.keylog, "a", buffering=1)
    return conf


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
        tls = self._quic.tls
        line = {
            "role": "server",
            "method": method,
            "path": path,
            "status": status,
            "bytes_sent": len(body),
            "bytes_received": received,
            "resumed": bool(tls and tls.session_resumed),
            "early_data": bool(tls and tls.early_data_accepted),
            "peer_transport_parameters": self.peer_tps,
            "peer_offered_nc": NC_PARAMETERS in self.peer_tps,
        }
        if extra:
            line["sha256"] = extra[1][1]
        print(json.dumps(line), flush=True)


class TicketStore:
    """The server's session tickets, each usable once (like aioquic's example)."""

    def __init__(self):
        self.tickets = {}

    def add(self, ticket):
        self.tickets[ticket.ticket] = ticket

    def pop(self, label):
        return self.tickets.pop(label, None)


async def run_server(args):
    host, _, port = args.addr.rpartition(":")
    conf = configuration(False, args)
    conf.load_cert_chain(args.cert, args.key)
    ServerProtocol.root = args.root
    tickets = {}
    if args.session_tickets:
        store = TicketStore()
        tickets = dict(session_ticket_fetcher=store.pop, session_ticket_handler=store.add)
    server = await serve(
        host.strip("[]"),
        int(port),
        configuration=conf,
        create_protocol=ServerProtocol,
        retry=args.retry,
        **tickets,
    )
    addr = server._transport.get_extra_info("sockname")
    print(f"listening {addr[0]}:{addr[1]}", flush=True)
    await asyncio.Future()


class Response:
    def __init__(self, url):
        self.url = url
        self.headers = {}
        self.body = bytearray()
        self.done = asyncio.get_running_loop().create_future()
        self.finished_at = None


class ClientProtocol(QuicConnectionProtocol):
    key_update = False  # initiate a key update on the first response data

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.responses = {}  # stream id -> Response
        self.peer_tps = []
        self.resumed = False
        self.early_data = False
        self.key_update_sent = False

    def fail_all(self, exc):
        for r in self.responses.values():
            if not r.done.done():
                r.done.set_exception(exc)

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            self.peer_tps = peer_transport_parameters(self._quic)
            self.resumed = event.session_resumed
            self.early_data = event.early_data_accepted
        elif isinstance(event, ConnectionTerminated):
            self.fail_all(
                RuntimeError(f"connection closed: {event.error_code} {event.reason_phrase}")
            )
        for ev in self.h3.handle_event(event):
            r = self.responses.get(getattr(ev, "stream_id", None))
            if r is None:
                continue
            if isinstance(ev, HeadersReceived):
                r.headers.update({k.decode(): v.decode() for k, v in ev.headers})
            elif isinstance(ev, DataReceived):
                r.body += ev.data
                if self.key_update and not self.key_update_sent:
                    # Deferred by aioquic until the handshake is confirmed.
                    self._quic.request_key_update()
                    self.key_update_sent = True
            if getattr(ev, "stream_ended", False) and not r.done.done():
                r.finished_at = time.monotonic()
                r.done.set_result(None)

    async def wait_closed(self):
        # connect() waits here after sending CONNECTION_CLOSE, for the whole
        # closing period (3 PTO: seconds on a long-RTT path). Give a lost
        # CONNECTION_CLOSE a chance to be repeated, then exit.
        try:
            await asyncio.wait_for(asyncio.shield(super().wait_closed()), CLOSE_GRACE)
        except asyncio.TimeoutError:
            pass

    def key_phase(self):
        crypto = self._quic._cryptos.get(Epoch.ONE_RTT)
        return crypto.recv.key_phase if crypto is not None else 0

    def request(self, method, url, body):
        sid = self._quic.get_next_available_stream_id()
        self.responses[sid] = Response(url)
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
        return self.responses[sid]


def load_ticket(path, early_data):
    """The session ticket saved in `path`, or None; without `early_data`
    the ticket's early-data allowance is dropped so no 0-RTT is offered."""
    try:
        with open(path, "rb") as f:
            ticket = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception as e:  # a corrupt file: a full handshake instead
        print(f"aioquic-peer: ignoring session file {path}: {e}", file=sys.stderr, flush=True)
        return None
    if not early_data:
        ticket = dataclasses.replace(ticket, max_early_data_size=None)
    return ticket


async def run_client(args):
    urls = [urlparse(u) for u in args.url]
    for raw, url in zip(args.url, urls):
        if url.scheme != "https" or not url.hostname:
            die(f"not an https URL: {raw}")
        if (url.hostname, url.port) != (urls[0].hostname, urls[0].port):
            die(f"all URLs must name one server: {raw}")
    if args.out and len(urls) > 1:
        die("--out takes one URL; use --download-dir")
    conf = configuration(True, args)
    conf.server_name = urls[0].hostname
    if args.ca:
        conf.load_verify_locations(args.ca)
    saved = []
    ticket_handler = None
    if args.session_file:
        conf.session_ticket = load_ticket(args.session_file, args.early_data)

        def ticket_handler(ticket):
            saved.append(ticket)
            tmp = args.session_file + ".tmp"
            with open(tmp, "wb") as f:
                pickle.dump(ticket, f)
            os.replace(tmp, args.session_file)

    # 0-RTT: send the requests before the handshake completes.
    early = bool(args.early_data and conf.session_ticket is not None)
    body = None
    if args.upload:
        with open(args.upload, "rb") as f:
            body = f.read()
    ClientProtocol.key_update = args.key_update
    start = time.monotonic()
    async with connect(
        urls[0].hostname,
        urls[0].port or 443,
        configuration=conf,
        create_protocol=ClientProtocol,
        session_ticket_handler=ticket_handler,
        wait_connected=not early,
    ) as client:
        responses = [
            client.request("POST" if body is not None else "GET", url, body) for url in urls
        ]
        client.transmit()
        await asyncio.wait_for(
            asyncio.gather(*(r.done for r in responses)), args.timeout
        )
        duration = time.monotonic() - start
        if args.session_file and not saved:
            # The ticket may trail the responses: wait a little for it.
            deadline = time.monotonic() + 2.0
            while not saved and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        key_phase = client.key_phase()
    failed = []
    for raw, r in zip(args.url, responses):
        status = int(r.headers.get(":status", "0"))
        if args.out:
            with open(args.out, "wb") as f:
                f.write(r.body)
        elif args.download_dir and status == 200:
            name = os.path.basename(r.url.path) or "index.html"
            with open(os.path.join(args.download_dir, name), "wb") as f:
                f.write(r.body)
        line = {
            "role": "client",
            "url": raw,
            "status": status,
            "bytes": len(r.body),
            "sha256": hashlib.sha256(r.body).hexdigest(),
            "duration_s": duration if len(urls) == 1 else r.finished_at - start,
            "resumed": client.resumed,
            "early_data": early and client.early_data,
            "peer_transport_parameters": client.peer_tps,
            "peer_offered_nc": NC_PARAMETERS in client.peer_tps,
        }
        if args.key_update:
            line["key_update"] = client.key_update_sent
            line["key_phase"] = key_phase
        if args.session_file:
            line["ticket_saved"] = bool(saved)
        if body is not None:
            sent = hashlib.sha256(body).hexdigest()
            line["uploaded"] = len(body)
            line["upload_sha256"] = r.headers.get("x-sha256")
            if line["upload_sha256"] != sent:
                print(json.dumps(line), flush=True)
                die(f"upload receipt {line['upload_sha256']} != sent {sent}")
        if status != 200:
            failed.append(f"{raw}: status {status}")
        print(json.dumps(line), flush=True)
    if args.fail and failed:
        die(f"{len(failed)} of {len(urls)} requests failed, first {failed[0]}")
    if args.key_update and not client.key_update_sent:
        die("no key update initiated (no response data arrived)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("--addr", default="127.0.0.1:4433")
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--root", default=None, help="serve the files directly under DIR")
    s.add_argument("--retry", action="store_true", help="send a Retry to every new client")
    s.add_argument(
        "--session-tickets",
        action="store_true",
        help="issue session tickets (in memory), accepting 0-RTT on resumption",
    )
    c = sub.add_parser("client")
    c.add_argument("--url", required=True, action="append", help="repeat: one connection")
    c.add_argument("--ca", default=None, help="trust anchor (PEM)")
    c.add_argument("--out", default=None, help="write the (one) response body here")
    c.add_argument("--download-dir", default=None, help="write each body to DIR/<name>")
    c.add_argument("--upload", default=None, help="POST this file's contents")
    c.add_argument("--timeout", type=float, default=120.0)
    c.add_argument("--session-file", default=None, help="resume from / save the ticket here")
    c.add_argument("--early-data", action="store_true", help="requests in 0-RTT if resuming")
    c.add_argument("--key-update", action="store_true", help="initiate a TLS key update")
    c.add_argument("--fail", action="store_true", help="exit 1 unless every status is 200")
    for sp in (s, c):
        sp.add_argument("--qlog-dir", default=None, help="write a qlog per connection here")
        sp.add_argument("--keylog", default=None, help="append TLS secrets (SSLKEYLOGFILE)")
    args = p.parse_args()
    try:
        asyncio.run(run_server(args) if args.mode == "server" else run_client(args))
    except KeyboardInterrupt:
        pass
    except Exception as e:  # one line, like the other peers
        die(f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
