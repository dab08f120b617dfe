"""mqadmin's controller-mode commands: getControllerMetaData, getSyncStateSet, getBrokerEpoch,
electMaster, cleanBrokerMetadata, getControllerConfig and updateControllerConfig, with RocketMQ's
option letters and output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import BadInput
from cli.mqadmin import render_controller
from cli.mqadmin.args import Command, Values, every, flag, integer, o, opt, req

if TYPE_CHECKING:
    from admin.service import AdminService


def _controllers(v: Values) -> list[str]:
    return [a for a in req(v, "controllerAddress").split(";") if a.strip()]


async def get_controller_metadata(s: AdminService, v: Values) -> str:
    return render_controller.controller_metadata(await s.controller_metadata(_controllers(v)))


async def get_sync_state_set(s: AdminService, v: Values) -> str:
    broker, cluster = opt(v, "brokerName"), opt(v, "clusterName")
    if broker is None and cluster is None:
        raise BadInput("give -b brokerName or -c clusterName")

    async def one_round() -> str:
        groups = await s.sync_state_sets(_controllers(v)[:1], [broker] if broker else [], cluster)
        return render_controller.sync_state_sets(groups)

    return await every(integer(v, "interval"), one_round)


async def get_broker_epoch(s: AdminService, v: Values) -> str:
    broker, cluster = opt(v, "brokerName"), opt(v, "clusterName")
    if broker is None and cluster is None:
        raise BadInput("give -b brokerName or -c clusterName")

    async def one_round() -> str:
        return render_controller.broker_epochs(await s.broker_epochs(broker, cluster))

    return await every(integer(v, "interval"), one_round)


async def elect_master(s: AdminService, v: Values) -> str:
    broker_id = integer(v, "brokerId")
    election = await s.elect_master(_controllers(v), req(v, "clusterName"), req(v, "brokerName"), broker_id)
    return render_controller.election(election)


async def clean_broker_metadata(s: AdminService, v: Values) -> str:
    ids_text = opt(v, "brokerControllerIdsToClean")
    try:
        ids = [int(i) for i in ids_text.split(";") if i.strip()] if ids_text else []
    except ValueError:
        raise BadInput("please set the option <brokerControllerIdsToClean> according to the format") from None
    living = flag(v, "cleanLivingBroker")
    cluster = opt(v, "clusterName")
    if not living and not cluster:
        raise BadInput("cleanLivingBroker option is false, clusterName option can not be empty.")
    name = req(v, "brokerName")
    await s.clean_broker_metadata(_controllers(v), name, cluster, ids, living)
    return f"clear broker {name} metadata from controller success! \n"


async def get_controller_config(s: AdminService, v: Values) -> str:
    return render_controller.controller_configs(await s.controller_configs(_controllers(v)))


async def update_controller_config(s: AdminService, v: Values) -> str:
    key, value = req(v, "key"), req(v, "value")
    servers = _controllers(v)
    await s.update_controller_config(servers, key, value)
    return f"update controller config success![{', '.join(servers)}]\n{key} : {value}\n"


_ADDRESS_LIST = "Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878"
COMMANDS: tuple[Command, ...] = (
    Command("getControllerMetaData", "Get controller cluster's metadata.", (
        o("a", "controllerAddress", "the address of controller", True),
    ), get_controller_metadata),
    Command("getSyncStateSet", "Fetch syncStateSet for target brokers.", (
        o("a", "controllerAddress", "the address of controller", True),
        o("c", "clusterName", "which cluster"),
        o("b", "brokerName", "which broker to fetch"),
        o("i", "interval", "the interval(second) of get info"),
    ), get_sync_state_set),
    Command("getBrokerEpoch", "Fetch broker epoch entries.", (
        o("c", "clusterName", "which cluster"),
        o("b", "brokerName", "which broker to fetch"),
        o("i", "interval", "the interval(second) of get info"),
    ), get_broker_epoch),
    Command("electMaster", "Re-elect the specified broker as master.", (
        o("a", "controllerAddress", "The address of controller", True),
        o("b", "brokerId", "The id of the broker which requires to become master", True),
        o("bn", "brokerName", "The broker name of the replicas that require to be manipulated", True),
        o("c", "clusterName", "the clusterName of broker", True),
    ), elect_master),
    Command("cleanBrokerMetadata", "Clean metadata of broker on controller.", (
        o("a", "controllerAddress", "The address of controller", True),
        o("b", "brokerControllerIdsToClean", "The brokerController id list which requires to clean metadata. "
          "eg: 1;2;3, means that clean broker-1, broker-2 and broker-3"),
        o("bn", "brokerName", "The broker name of the replicas that require to be manipulated", True),
        o("c", "clusterName", "The clusterName of broker"),
        o("l", "cleanLivingBroker", "Whether clean up living brokers,default value is false", arg=False),
    ), clean_broker_metadata),
    Command("getControllerConfig", "Get controller config.", (
        o("a", "controllerAddress", _ADDRESS_LIST, True),
    ), get_controller_config),
    Command("updateControllerConfig", "Update controller config.", (
        o("a", "controllerAddress", _ADDRESS_LIST, True),
        o("k", "key", "config key", True),
        o("v", "value", "config value", True),
    ), update_controller_config),
)  # fmt: skip
