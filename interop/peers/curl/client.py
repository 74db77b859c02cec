#!/usr/bin/env python3
"""curl-client: downloads URLs over HTTP/3 with curl (libcurl with ngtcp2
and nghttp3, through the curl_cffi bindings), for nc-interop
(interop/peers/endpoints/curl.sh).

    client.py --download-dir DIR [--ca ca.pem | --insecure]
              [--multiconnect | --resume] [--timeout S (300)] URL...

HTTP/3 only (no fallback to TCP). By default every URL is requested in
parallel on ONE connection: one curl_cffi AsyncSession (one curl multi
handle) with PIPEWAIT, so the transfers wait to be multiplexed on the
first connection instead of opening others, and at most MAX_PARALLEL of
them in flight, so they do not run out of stream credit (see below).
--multiconnect uses a fresh session, so a fresh connection, per URL (in
turn). --resume fetches the first URL on connection 1, closes it, then the
others on connection 2 in the same session, which resumes the TLS session
from libcurl's session cache. No 0-RTT: curl_cffi's libcurl is built with
BoringSSL, and libcurl's early data (CURLSSLOPT_EARLYDATA) is implemented
for GnuTLS, wolfSSL, quictls and OpenSSL only (tried: the resumed
connection sends no 0-RTT packet). No key update either: libcurl has no
way to ask ngtcp2 for one.

Each body is saved as DIR/<last path segment>; one JSON line per URL
{"url":...,"status":...,"bytes":...,"http_version":...} is printed. Exit
status 0 only if every URL answered 200 over HTTP/3 and was saved. curl
reads SSLKEYLOGFILE and (with ngtcp2) QLOGDIR from the environment itself.
"""

import argparse
import asyncio
import json
import os
import sys
from urllib.parse import urlparse

from curl_cffi import CurlHttpVersion, CurlOpt
from curl_cffi.requests import AsyncSession

HTTP3 = 30  # CURL_HTTP_VERSION_3 as CURLINFO_HTTP_VERSION reports it
# Transfers in flight (curl handles) per session. libcurl opens another
# connection, whatever CURLMOPT_MAX_HOST_CONNECTIONS says, when a transfer
# finds the QUIC connection out of stream credit; aioquic's server raises
# MAX_STREAMS only once about half of its 128-stream window is used, so
# 64 parallel transfers made a second connection there, 32 do not.
MAX_PARALLEL = 32


def die(msg):
    print(f"curl-client: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


class Client:
    def __init__(self, args):
        self.args = args
        self.failed = []

    def session(self, parallel):
        options = {
            CurlOpt.PIPEWAIT: 1,
            # The handshake may take the whole timeout too (libcurl gives
            # QUIC handshakes 10 s by default: too short at 30% loss).
            CurlOpt.CONNECTTIMEOUT_MS: int(self.args.timeout * 1000),
        }
        s = AsyncSession(
            http_version=CurlHttpVersion.V3ONLY,
            verify=False if self.args.insecure else (self.args.ca or True),
            timeout=self.args.timeout,
            max_clients=max(1, min(parallel, MAX_PARALLEL)),
            curl_options=options,
            allow_redirects=False,
        )
        return s

    async def get(self, s, url):
        try:
            r = await s.get(url)
        except Exception as e:
            self.failed.append(f"{url}: {type(e).__name__}: {e}")
            print(json.dumps({"url": url, "error": str(e)}), flush=True)
            return
        line = {
            "url": url,
            "status": r.status_code,
            "bytes": len(r.content),
            "http_version": r.http_version,
        }
        print(json.dumps(line), flush=True)
        if r.status_code != 200 or r.http_version != HTTP3:
            self.failed.append(f"{url}: status {r.status_code}, HTTP version {r.http_version}")
            return
        name = os.path.basename(urlparse(url).path) or "index.html"
        with open(os.path.join(self.args.download_dir, name), "wb") as f:
            f.write(r.content)

    async def batch(self, s, urls):
        await asyncio.gather(*(self.get(s, u) for u in urls))

    async def run(self, urls):
        a = self.args
        if a.multiconnect:
            for u in urls:
                async with self.session(1) as s:
                    await self.get(s, u)
        elif a.resume:
            async with self.session(len(urls)) as s:
                # Connection 1 closes after its transfer (FORBID_REUSE); its
                # TLS session stays in the session's cache for connection 2.
                s.curl_options[CurlOpt.FORBID_REUSE] = 1
                await self.get(s, urls[0])
                del s.curl_options[CurlOpt.FORBID_REUSE]
                if len(urls) > 1:
                    await self.batch(s, urls[1:])
        else:
            async with self.session(len(urls)) as s:
                await self.batch(s, urls)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("urls", nargs="+", metavar="URL")
    p.add_argument("--download-dir", required=True, help="save each body as DIR/<name>")
    p.add_argument("--ca", default=None, help="trust anchor (PEM)")
    p.add_argument("--insecure", action="store_true", help="do not verify the server")
    p.add_argument("--multiconnect", action="store_true", help="one connection per URL")
    p.add_argument("--resume", action="store_true", help="URLs 2.. on a resumed connection")
    # Per transfer, handshake included. Long: at 30% loss (handshakeloss) a
    # PTO grown from inflated RTT samples can exceed 15 s; nc-interop
    # enforces each case's own limit anyway.
    p.add_argument("--timeout", type=float, default=300.0)
    args = p.parse_args()
    if args.multiconnect and args.resume:
        die("--multiconnect and --resume exclude each other")
    os.makedirs(args.download_dir, exist_ok=True)
    c = Client(args)
    asyncio.run(c.run(args.urls))
    if c.failed:
        die(f"{len(c.failed)} of {len(args.urls)} downloads failed, first {c.failed[0]}")


if __name__ == "__main__":
    main()
