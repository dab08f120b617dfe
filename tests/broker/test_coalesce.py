"""Coalesced background work: every request is covered by a run that started after it, including a
request made while a run is in flight (a topic created during a registration reaches the NameServer)."""

from __future__ import annotations

import asyncio

from broker.server.coalesce import Coalesced


def test_a_request_during_a_run_gets_a_run_of_its_own() -> None:
    async def scenario() -> list[int]:
        table = [1]
        seen: list[int] = []
        release = asyncio.Event()

        async def job() -> None:
            state = len(table)  # what this run writes is read when it starts
            await release.wait()
            seen.append(state)

        work = Coalesced(job, "test")
        work.request()
        await asyncio.sleep(0)  # the first run starts and reads one entry
        await asyncio.sleep(0)
        table.append(2)
        work.request()  # made while the first run is in flight
        release.set()
        for _ in range(100):
            if not work.pending:
                break
            await asyncio.sleep(0.01)
        return seen

    assert asyncio.run(scenario()) == [1, 2]


def test_a_burst_of_requests_costs_two_runs() -> None:
    async def scenario() -> int:
        runs = 0
        release = asyncio.Event()

        async def job() -> None:
            nonlocal runs
            runs += 1
            await release.wait()

        work = Coalesced(job, "test")
        for _ in range(50):  # the first starts a run; the other 49 wait for the next one
            work.request()
            await asyncio.sleep(0)
        release.set()
        await work.settle()
        return runs

    assert asyncio.run(scenario()) == 2
