"""NameServer KV configuration and NameServer settings; changes go to every NameServer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from admin.service.base import ServiceBase, admin_call, gather

if TYPE_CHECKING:
    from admin.models.cluster import ConfigChange
    from admin.models.namesrv import KvChange, KvEntries, ServerConfigs


class NamesrvOps(ServiceBase):
    @admin_call
    async def namesrv_kv_get(self, namespace: str, key: str | None = None) -> KvEntries:
        """One key of a namespace, or all of them."""
        from admin.models.namesrv import KvEntries

        if key is None:
            return KvEntries(
                namespace, dict(sorted((await self.api.kv_list(self.namesrv, namespace)).items()))
            )
        value = await self.api.get_kv(self.namesrv, namespace, key)
        if value is None:
            raise NotFound(f"no KV config {namespace}/{key}")
        return KvEntries(namespace, {key: value})

    @admin_call
    async def namesrv_kv_put(self, namespace: str, key: str, value: str) -> KvChange:
        from admin.models.namesrv import KvChange

        if not namespace or not key:
            raise BadInput("the namespace and the key must not be empty")
        await gather(self.api.put_kv(a, namespace, key, value) for a in self.namesrv)
        return KvChange(namespace, key, value, list(self.namesrv))

    @admin_call
    async def namesrv_kv_delete(self, namespace: str, key: str) -> KvChange:
        from admin.models.namesrv import KvChange

        if await self.api.get_kv(self.namesrv, namespace, key) is None:
            raise NotFound(f"no KV config {namespace}/{key}")
        await gather(self.api.delete_kv(a, namespace, key) for a in self.namesrv)
        return KvChange(namespace, key, None, list(self.namesrv))

    @admin_call
    async def namesrv_config_get(self) -> ServerConfigs:
        from admin.models.cluster import ConfigValues
        from admin.models.namesrv import ServerConfigs

        answers = await gather(self.api.namesrv_config(a) for a in self.namesrv)
        return ServerConfigs(
            [ConfigValues(a, dict(sorted(v.items()))) for a, v in zip(self.namesrv, answers, strict=True)]
        )

    @admin_call
    async def namesrv_config_set(self, values: Mapping[str, str]) -> ConfigChange:
        from admin.models.cluster import ConfigChange

        if not values:
            raise BadInput("no setting to change")
        await gather(self.api.update_namesrv_config(a, values) for a in self.namesrv)
        return ConfigChange(list(self.namesrv), dict(values))

    @admin_call
    async def namesrv_write_perm(self, broker_name: str, writable: bool) -> dict[str, int]:
        """Take (or give back) the write permission of a broker's topics on every NameServer; returns
        NameServer -> how many topics it changed."""
        change = self.api.add_write_perm if writable else self.api.wipe_write_perm
        counts = await gather(change(a, broker_name) for a in self.namesrv)
        return dict(zip(self.namesrv, counts, strict=True))
