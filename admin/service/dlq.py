"""Dead letters sent back: to the group that failed them (its retry topic) or to their original topic,
each remembered so a second "resend all" does not deliver them twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from admin.models.names import DLQ_PREFIX, is_system_group
from admin.resent_marks import OffsetRanges
from admin.service.base import Progress, admin_call, gather
from admin.service.messages import MessageOps
from admin.service.topics import TopicOps

if TYPE_CHECKING:
    from broker.client.dlq_ops import ResendReport

RESENT_NAMESPACE = "RMQ_DLQ_RESENT"  # NameServer KV: "<group>@<broker name>" -> offsets resent


class DlqOps(TopicOps, MessageOps):
    async def _resend_targets(self, group: str, broker: str | None) -> dict[str, str]:
        """Broker name -> address of the brokers holding %DLQ%<group> (or of the one named)."""
        route = await self._route_or_none(DLQ_PREFIX + group)
        masters = self._route_masters(route) if route is not None else {}
        if broker is None:
            if not masters:
                raise NotFound(f"topic {DLQ_PREFIX}{group} not found")
            return masters
        names = [name for name, addr in masters.items() if addr == broker]
        return {names[0] if names else broker: broker}

    async def _resent(self, group: str, broker_name: str) -> OffsetRanges:
        text = await self.api.get_kv(self.namesrv, RESENT_NAMESPACE, f"{group}@{broker_name}")
        return OffsetRanges.parse(text or "")

    async def _remember(self, group: str, broker_name: str, done: OffsetRanges) -> None:
        key, value = f"{group}@{broker_name}", done.format()
        await gather(self.api.put_kv(addr, RESENT_NAMESPACE, key, value) for addr in self.namesrv)

    @admin_call
    async def dlq_resend(
        self,
        group: str,
        offsets: list[int] | None = None,
        broker: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
        *,
        to_topic: bool = False,
        again: bool = False,
        rate: float | None = None,
    ) -> ResendReport:
        """Send dead letters of ``group`` back: those at ``offsets`` (queue offsets of %DLQ%group on
        ``broker``, an address) or all of them (on every broker holding it).

        They go to the group's retry topic, so only ``group`` consumes them again; ``to_topic`` sends
        them to their original topic, where every group consuming it gets them (the report names the
        others). Offsets resent before are skipped unless ``again``; ``rate`` caps messages per
        second."""
        from broker.client.dlq_ops import ResendReport, resend_dead_letters

        if rate is not None and rate <= 0:
            raise BadInput(f"--rate must be positive, not {rate:g}")
        targets = await self._resend_targets(group, broker)
        if offsets is not None and len(targets) > 1:
            raise BadInput(
                f"{DLQ_PREFIX}{group} is on {len(targets)} brokers: name the one the offsets belong to"
            )
        merged = ResendReport(group, DLQ_PREFIX + group, dry_run)
        for name, addr in targets.items():

            def report(done: int, total: int, addr: str = addr) -> None:
                if progress is not None:
                    progress(f"resending from {addr}", done, total)

            resent = await self._resent(group, name)
            part = await resend_dead_letters(
                self.api, addr, group, offsets=offsets, dry_run=dry_run, progress=report,
                to_topic=to_topic, skip=OffsetRanges() if again else resent, rate=rate,
            )  # fmt: skip
            merged.messages.extend(part.messages)
            merged.missing.extend(part.missing)
            merged.skipped.extend(part.skipped)
            sent = [m.dlq_offset for m in part.messages if m.error is None]
            if sent and not dry_run:
                await self._remember(group, name, resent.union(sent))
        if offsets is not None and not merged.messages and not merged.skipped:
            listed = ", ".join(map(str, sorted(merged.missing)))
            raise NotFound(f"no dead letter of {group} at offset(s) {listed} (see 'rmq dlq browse {group}')")
        if to_topic:
            topics = sorted({m.topic for m in merged.messages if m.topic is not None})
            consumers = await self.topic_consumers(topics) if topics else {}
            merged.other_groups = sorted(
                {g for gs in consumers.values() for g in gs if g != group and not is_system_group(g)}
            )
        return merged
