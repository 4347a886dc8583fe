#!/usr/bin/env python3
"""Load generator for `punctkit serve` (utils/bench_serve.sh runs it): N concurrent clients POST
the lines of a text file (one request per line, in turn) to /punctuate, bounded in requests
and in time, and one JSON line reports throughput and latency.

    serve_load.py URL TEXT --clients 8 [--requests 2000] [--seconds 30] [--warmup 4]

Prints {"clients", "requests", "errors", "words", "seconds", "words_per_s", "p50_ms", "p99_ms"};
words are the request lines' whitespace-separated tokens; latency is per request, from
sending it to the end of its response; errors are answers other than 200 (not timed).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import sys
import time
from pathlib import Path

import aiohttp


def percentile(sorted_ms: list[float], q: float) -> float:
    """The nearest-rank q-th percentile of sorted values (0 for none)."""
    if not sorted_ms:
        return 0.0
    return sorted_ms[max(0, math.ceil(q / 100 * len(sorted_ms)) - 1)]


async def load(url: str, lines: list[str], clients: int, requests: int, seconds: float, warmup: int) -> dict:
    """Run the clients; returns the report."""
    bodies = [(ln.encode(), len(ln.split())) for ln in lines]
    turn = itertools.count()
    latencies: list[float] = []
    errors = words = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients),
                                     headers={"Content-Type": "text/plain"}) as s:
        async def send(body: bytes) -> tuple[int, float]:
            t0 = time.perf_counter()
            async with s.post(url, data=body) as r:
                await r.read()
                return r.status, time.perf_counter() - t0

        for k in range(warmup):  # connections, caches, the model's first batches
            await send(bodies[k % len(bodies)][0])
        t_end = time.perf_counter() + seconds

        async def client() -> None:
            nonlocal errors, words
            while time.perf_counter() < t_end:
                k = next(turn)
                if k >= requests:
                    return
                body, n = bodies[k % len(bodies)]
                status, secs = await send(body)
                if status == 200:
                    latencies.append(1000 * secs)
                    words += n
                else:
                    errors += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    lat = sorted(latencies)
    return {"clients": clients, "requests": len(lat) + errors, "errors": errors, "words": words,
            "seconds": round(elapsed, 3), "words_per_s": round(words / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(percentile(lat, 50), 1), "p99_ms": round(percentile(lat, 99), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url", help="the server's /punctuate URL")
    ap.add_argument("text", type=Path, help="request bodies, one a line (e.g. 100 words a line)")
    ap.add_argument("--clients", type=int, default=1, help="concurrent clients")
    ap.add_argument("--requests", type=int, default=2000, help="at most this many requests in all")
    ap.add_argument("--seconds", type=float, default=30.0, help="stop sending after this long")
    ap.add_argument("--warmup", type=int, default=4, help="untimed requests first")
    a = ap.parse_args()
    lines = [ln for ln in a.text.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not lines or a.clients < 1 or a.requests < 1:
        sys.exit(f"{sys.argv[0]}: need a non-empty {a.text}, --clients >= 1 and --requests >= 1")
    print(json.dumps(asyncio.run(load(a.url, lines, a.clients, a.requests, a.seconds, a.warmup))))


if __name__ == "__main__":
    main()
