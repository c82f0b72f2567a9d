"""The safe way on a live cluster: ask the group coordinator to write the tombstones itself.

Expired offsets go through OffsetDelete (KIP-496, ``KafkaAdminClient.delete_group_offsets``); dead
groups through DeleteGroups (``delete_groups``). The coordinator then appends the same tombstones its
own cleanup would, under the group lock, with its cache in step.

Because the plan may come from a snapshot (a copied log dir), each group's committed offsets are
fetched first (OffsetFetch): an offset that moved since the plan is left alone
(``changed_since_plan``), one that is no longer there counts as ``already_gone``. DeleteGroups is
only sent once every planned offset of the group is gone, and never for a group the broker lists
as not Empty. Broker answers map to per-item outcomes, never a crash:

==============================  ======================================================
broker answer                   outcome
==============================  ======================================================
NONE                            applied
GROUP_SUBSCRIBED_TO_TOPIC (86)  group_subscribed_to_topic (an active member reads it)
NON_EMPTY_GROUP (68)            non_empty_group
GROUP_ID_NOT_FOUND (69)         already_gone
UNSUPPORTED_VERSION (35), or    unsupported_by_broker (OffsetDelete needs Kafka 2.4+)
the API missing from
ApiVersions
anything else                   error (with the error name)
==============================  ======================================================

When OffsetDelete is unsupported but every planned offset of a dead group is still exactly as
planned, DeleteGroups removes the group together with those offsets; such offset items end as
``applied_via_delete_groups``.

The cluster is reached once (:meth:`AdminExecutor.check`) before anything is sent; an answer that
means the cluster itself is gone (connection lost, timed out) stops the run with
:class:`~offsetops.coordinator_core.kafka_client.ClusterUnreachable` instead of being paid again per item.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from offsetops.coordinator_core.expiration import KIND_GROUP, KIND_OFFSET
from offsetops.coordinator_core.kafka_client import (
    ClusterUnreachable,
    KafkaClientConfig,
    check_connection,
    is_connection_error,
    unreachable,
)
from offsetops.coordinator_core.tombstones.journal import (
    ALREADY_GONE,
    APPLIED,
    APPLIED_STATUSES,
    APPLIED_VIA_DELETE_GROUPS,
    BLOCKED,
    CHANGED,
    ERROR,
    NON_EMPTY_GROUP,
    SUBSCRIBED,
    UNSUPPORTED,
    Journal,
    fault_point,
)
from offsetops.coordinator_core.tombstones.runner import VerifyResult

_EMPTY_STATES = frozenset({"Empty", "Dead", "Unknown", "", None})
_T = TypeVar("_T")


def outcome_for_error(error: Any) -> tuple[str, str | None]:
    """Map a kafka-python error (class or instance, or a name from ``delete_groups``) to an outcome."""
    import kafka.errors as Errors

    if isinstance(error, str):
        if error == "OK":
            return APPLIED, None
        error = getattr(Errors, error, None) or error
        if isinstance(error, str):
            return ERROR, error
    cls = error if isinstance(error, type) else type(error)
    detail = None if isinstance(error, type) else str(error)
    if cls is Errors.NoError:
        return APPLIED, None
    if issubclass(cls, Errors.GroupSubscribedToTopicError):
        return SUBSCRIBED, detail or "an active member of the group is subscribed to this topic"
    if issubclass(cls, Errors.NonEmptyGroupError):
        return NON_EMPTY_GROUP, detail or "the group has active members"
    if issubclass(cls, Errors.GroupIdNotFoundError):
        return ALREADY_GONE, detail or "the coordinator does not know the group"
    if issubclass(cls, Errors.UnsupportedVersionError):
        return UNSUPPORTED, detail or "the broker does not support this API"
    return ERROR, f"{cls.__name__}{f': {detail}' if detail else ''}"


class AdminExecutor:
    """OffsetDelete and DeleteGroups through ``kafka.KafkaAdminClient``."""

    name = "admin"

    def __init__(self, config: KafkaClientConfig) -> None:
        self.config = config
        self._admin: Any = None

    def target(self) -> dict[str, Any]:
        return {"bootstrap": self.config.bootstrap_servers}

    def check(self) -> None:
        """Reach the cluster once, within the connect timeout, before the first item."""
        check_connection(self.config)

    @property
    def admin(self) -> Any:
        if self._admin is None:
            from kafka import KafkaAdminClient

            self._admin = self._call(
                "connect",
                lambda: KafkaAdminClient(
                    **self.config.client_kwargs(KafkaAdminClient, client_id="offsetops-expire")
                ),
            )
        return self._admin

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """``fn()``; a failure that means the cluster is gone stops the run, anything else is the caller's."""
        try:
            return fn()
        except Exception as exc:
            if is_connection_error(exc):
                raise unreachable(self.config, what, exc) from None
            raise

    def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            # Closing a broken client must not hide why the run stopped.
            with contextlib.suppress(Exception):
                admin.close()

    # -- live state ---------------------------------------------------------------------------------

    def _live_offsets(
        self, group_id: str
    ) -> tuple[dict[tuple[str, int], tuple[int, str]] | None, str | None]:
        try:
            result = self._call("OffsetFetch", lambda: self.admin.list_group_offsets(group_id))
        except ClusterUnreachable:
            raise
        except Exception as exc:  # an unreadable group must not stop the other groups
            status, detail = outcome_for_error(exc)
            return None, f"OffsetFetch failed: {detail or status}"
        offsets = result.get(group_id, {}) if isinstance(result, dict) else {}
        return {(tp.topic, tp.partition): (om.offset, om.metadata or "") for tp, om in offsets.items()}, None

    def _live_state(self, group_id: str) -> str | None:
        """The group's state from ListGroups (None when the broker does not list it)."""
        try:
            for g in self._call("ListGroups", lambda: self.admin.list_groups()):
                if g.get("group_id") == group_id:
                    return g.get("group_state")
        except ClusterUnreachable:
            raise
        except Exception:
            return None
        return None

    # -- applying -----------------------------------------------------------------------------------

    def apply(self, journal: Journal, todo: list[dict[str, Any]]) -> None:
        groups: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        for item in todo:
            groups.setdefault(item["group_id"], []).append(item)
        statuses = journal.statuses()
        all_items: dict[str, list[dict[str, Any]]] = {}
        for item in journal.items:
            all_items.setdefault(item["group_id"], []).append(item)
        for group_id, items in groups.items():
            self._apply_group(journal, group_id, items, all_items[group_id], statuses)

    def _record(self, journal: Journal, items: list[dict[str, Any]], status: str, detail: str | None) -> None:
        if status in APPLIED_STATUSES:
            for _ in items:
                fault_point("send")
        journal.record([i["item_id"] for i in items], status, detail)

    def _apply_group(
        self,
        journal: Journal,
        group_id: str,
        items: list[dict[str, Any]],
        plan_items: list[dict[str, Any]],
        statuses: dict[int, dict[str, Any]],
    ) -> None:
        offset_items = [i for i in items if i["kind"] == KIND_OFFSET]
        group_items = [i for i in items if i["kind"] == KIND_GROUP]
        live, err = self._live_offsets(group_id)
        if live is None:
            self._record(journal, items, ERROR, err)
            return
        to_delete: list[dict[str, Any]] = []
        for item in offset_items:
            tp = (item["topic"], item["partition"])
            if tp not in live:
                self._record(journal, [item], ALREADY_GONE, "no committed offset on the cluster")
            elif item["committed_offset"] is not None and live[tp][0] != item["committed_offset"]:
                self._record(
                    journal,
                    [item],
                    CHANGED,
                    f"committed offset is {live[tp][0]} on the cluster, "
                    f"{item['committed_offset']} in the plan",
                )
            else:
                to_delete.append(item)
        unsupported_unchanged = self._delete_offsets(journal, group_id, to_delete) if to_delete else []
        if group_items:
            self._delete_group(journal, group_id, group_items, plan_items, set(live), unsupported_unchanged)

    def _delete_offsets(
        self, journal: Journal, group_id: str, to_delete: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """OffsetDelete of the offsets still as planned; the ones left unchanged because the broker does
        not support it (DeleteGroups may still remove them with their group)."""
        from kafka.structs import TopicPartition

        partitions = [TopicPartition(i["topic"], i["partition"]) for i in to_delete]
        try:
            result = self._call("OffsetDelete", lambda: self.admin.delete_group_offsets(group_id, partitions))
        except ClusterUnreachable:
            raise
        except Exception as exc:
            status, detail = outcome_for_error(exc)
            self._record(journal, to_delete, status, detail)
            return list(to_delete) if status == UNSUPPORTED else []
        for item in to_delete:
            error = result.get(TopicPartition(item["topic"], item["partition"]))
            if error is None:
                self._record(journal, [item], ERROR, "partition missing from the OffsetDelete response")
                continue
            status, detail = outcome_for_error(error)
            self._record(journal, [item], status, detail)
        return []

    def _delete_group(
        self,
        journal: Journal,
        group_id: str,
        group_items: list[dict[str, Any]],
        plan_items: list[dict[str, Any]],
        live: set[tuple[str, int]],
        unsupported_unchanged: list[dict[str, Any]],
    ) -> None:
        """DeleteGroups removes every offset of the group: only once each planned offset is gone, or
        still exactly as planned when OffsetDelete could not be used, and only while it is Empty."""
        statuses = journal.statuses()
        plan_offsets = [i for i in plan_items if i["kind"] == KIND_OFFSET]
        pending = [
            i
            for i in plan_offsets
            if statuses.get(i["item_id"], {}).get("status") not in APPLIED_STATUSES
            and i not in unsupported_unchanged
        ]
        extra = live - {(i["topic"], i["partition"]) for i in plan_offsets}
        if pending or extra:
            why = (
                f"{len(pending)} planned offset(s) of the group were not removed"
                if pending
                else f"the group has {len(extra)} committed offset(s) the plan does not expire"
            )
            self._record(journal, group_items, BLOCKED, why)
            return
        state = self._live_state(group_id)
        if state not in _EMPTY_STATES:
            self._record(journal, group_items, NON_EMPTY_GROUP, f"the broker lists the group as {state}")
            return
        try:
            result = self._call("DeleteGroups", lambda: self.admin.delete_groups([group_id]))
        except ClusterUnreachable:
            raise
        except Exception as exc:
            status, detail = outcome_for_error(exc)
            self._record(journal, group_items, status, detail)
            return
        status, detail = outcome_for_error(result.get(group_id, "missing from the DeleteGroups response"))
        self._record(journal, group_items, status, detail)
        if status in APPLIED_STATUSES and unsupported_unchanged:
            self._record(
                journal,
                unsupported_unchanged,
                APPLIED_VIA_DELETE_GROUPS,
                "OffsetDelete unsupported; DeleteGroups removed the group with its offsets",
            )

    # -- verifying ----------------------------------------------------------------------------------

    def verify(self, journal: Journal) -> list[VerifyResult]:
        """Fetch each group's committed offsets again; a planned offset still there is reported.

        A group item counts as gone when the group has no committed offsets and ListGroups does not
        show it in a non-Empty state.
        """
        results: list[VerifyResult] = []
        cache: dict[str, tuple[dict[tuple[str, int], tuple[int, str]] | None, str | None]] = {}
        for item in journal.items:
            gid = item["group_id"]
            if gid not in cache:
                cache[gid] = self._live_offsets(gid)
            live, err = cache[gid]

            def result(state: str, detail: str | None, it: dict[str, Any] = item) -> VerifyResult:
                return VerifyResult(
                    it["item_id"], it["key_hex"], it["group_id"], it["topic"], it["partition"], state, detail
                )

            if live is None:
                results.append(result("unknown", err))
            elif item["kind"] == KIND_OFFSET:
                tp = (item["topic"], item["partition"])
                if tp in live:
                    results.append(result("present", f"committed offset {live[tp][0]} still on the cluster"))
                else:
                    results.append(result("gone", None))
            elif live:
                results.append(result("present", f"the group still has {len(live)} committed offset(s)"))
            else:
                state = self._live_state(gid)
                if state in _EMPTY_STATES:
                    results.append(result("gone", None if state is None else f"listed as {state}"))
                else:
                    results.append(result("present", f"the broker lists the group as {state}"))
        return results
