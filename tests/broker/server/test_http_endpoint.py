"""The HTTP endpoint over real loopback TCP: routes, errors, and survival of bad requests."""

from __future__ import annotations

import asyncio

import httpx

from broker.server.http_endpoint import HttpEndpoint, HttpResponse


async def _ok() -> HttpResponse:
    return HttpResponse(200, "ok\n")


async def _boom() -> HttpResponse:
    raise RuntimeError("store not ready")


def test_routes_errors_and_garbage() -> None:
    async def scenario() -> None:
        ep = HttpEndpoint("127.0.0.1", 0, {"/healthz": _ok, "/readyz": _boom})
        await ep.start()
        base = f"http://127.0.0.1:{ep.port}"
        async with httpx.AsyncClient() as client:
            r = await client.get(base + "/healthz")
            assert (r.status_code, r.text) == (200, "ok\n")
            r = await client.get(base + "/readyz")
            assert r.status_code == 503 and "store not ready" in r.text
            r = await client.get(base + "/nope")
            assert r.status_code == 404 and "/healthz" in r.text
            r = await client.post(base + "/healthz")
            assert r.status_code == 405
        reader, writer = await asyncio.open_connection("127.0.0.1", ep.port)
        writer.write(b"\x00\xff garbage\r\n\r\n")
        await writer.drain()
        assert (await reader.read()).startswith(b"HTTP/1.1 400")
        writer.close()
        async with httpx.AsyncClient() as client:
            assert (await client.get(base + "/healthz")).status_code == 200
        await ep.stop()

    asyncio.run(scenario())
