#!/usr/bin/env python3
"""Opens COUNT keep-alive connections to a proxy, sends one request on each
(HTTP/1.1, or HTTP/2 with prior knowledge), reads the whole response, then
holds every connection open and idle until stdin closes.

Prints "ready OK FAILED" on stdout once every connection has had its answer,
so the caller can measure the proxy's memory with COUNT idle connections.
Connections are spread over source addresses 127.0.0.2... so that more than
one ephemeral port range's worth can be held.

usage: idle_clients.py HOST PORT COUNT h1|h2
"""

import asyncio
import struct
import sys

PARALLEL = 256  # connections being set up at once
PER_SOURCE = 20000  # connections per source address (the ephemeral range is ~28k)


def h1_request(host: str) -> bytes:
    return f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def h2_request(host: str) -> bytes:
    # Connection preface, an empty SETTINGS, then HEADERS on stream 1 with
    # END_STREAM|END_HEADERS: :method GET, :scheme http, :path / (static
    # table indexes 2, 6, 4) and :authority as a literal with name index 1.
    authority = host.encode()
    block = bytes([0x82, 0x86, 0x84, 0x41, len(authority)]) + authority
    frames = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    frames += frame(0x4, 0, 0, b"")
    frames += frame(0x1, 0x5, 1, block)
    return frames


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    length = struct.pack(">I", len(payload))[1:]
    return length + bytes([kind, flags]) + struct.pack(">I", stream) + payload


async def read_h1_response(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
        if name.strip().lower() == b"transfer-encoding":
            raise RuntimeError("chunked answers are not expected from the origin")
    await reader.readexactly(length)


async def read_h2_response(reader, writer) -> None:
    # Reads frames until stream 1 ends; acknowledges the server's SETTINGS.
    while True:
        header = await reader.readexactly(9)
        length = int.from_bytes(header[0:3], "big")
        kind, flags = header[3], header[4]
        stream = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
        await reader.readexactly(length)
        if kind == 0x4 and not flags & 0x1:
            writer.write(frame(0x4, 0x1, 0, b""))
        if kind == 0x3 and stream == 1:
            raise RuntimeError("stream reset by the proxy")
        if kind == 0x7:
            raise RuntimeError("GOAWAY from the proxy")
        if stream == 1 and kind in (0x0, 0x1) and flags & 0x1:
            return


async def open_one(i, host, port, proto, held, gate):
    source = f"127.0.0.{2 + i // PER_SOURCE}"
    async with gate:
        reader, writer = await asyncio.open_connection(
            host, port, local_addr=(source, 0)
        )
        if proto == "h1":
            writer.write(h1_request(host))
            await writer.drain()
            await read_h1_response(reader)
        else:
            writer.write(h2_request(host))
            await writer.drain()
            await read_h2_response(reader, writer)
            await writer.drain()
    held.append((reader, writer))


async def main() -> int:
    host, port, count, proto = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if proto not in ("h1", "h2"):
        print("protocol must be h1 or h2", file=sys.stderr)
        return 2
    held = []
    gate = asyncio.Semaphore(PARALLEL)
    results = await asyncio.gather(
        *(open_one(i, host, port, proto, held, gate) for i in range(count)),
        return_exceptions=True,
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    for error in failed[:3]:
        print(f"connection failed: {error!r}", file=sys.stderr)
    print(f"ready {len(held)} {len(failed)}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    for _, writer in held:
        writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
