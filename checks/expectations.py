"""The expectations offsetops holds the coordinator's cache to, one :class:`CheckSpec` each.

Every check has a stable ``check_id`` (``<table>.<rule>``) and a severity: ``error`` (the cache is
wrong; GX severity ``critical``) or ``warning`` (suspicious but possible in a healthy cluster). Both
are written into the GX expectation: ``severity`` (GX 1.x field) and ``meta`` (``check_id``,
``severity``, ``table``), so Data Docs and our report agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation
from great_expectations.expectations.metadata_types import FailureSeverity
from offsetops.checks.kafka_expectations import (
    ExpectColumnPairValuesToMatchKafkaPartitionFor,
    UnexpectedRowsWithSampleExpectation,
)
from offsetops.coordinator_core.cache import GROUP_STATES as CACHE_GROUP_STATES
from offsetops.coordinator_core.errors import NOTICE_KINDS
from offsetops.pipelines.schemas import TABLE_SCHEMAS as RELOAD_SCHEMAS
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

Severity = Literal["error", "warning"]

MIN_COMMIT_TIMESTAMP_MS = 1_293_840_000_000
"""2011-01-01T00:00:00Z: nothing Kafka wrote can be older (Kafka was open-sourced in 2011)."""

DEFAULT_SKEW_MS = 3_600_000
"""How far in the future (validator clock) a broker timestamp may be before it counts as insane."""

# Classic (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead), KIP-848 consumer groups
# (Assigning, Reconciling) and streams groups (NotReady): every state a reload can produce.
GROUP_STATES = tuple(sorted(CACHE_GROUP_STATES))

DEFAULT_MAX_METADATA_BYTES = 4096
"""``offset.metadata.max.bytes`` (OffsetConfig.DefaultMaxMetadataSize)."""

REQUIRED_TABLES = ("offsets", "groups", "members", "decode_errors")
OPTIONAL_TABLES = ("pending_offsets", "load_stats", "offset_log_ranges", "live_crosscheck")
TABLE_ORDER = (
    "offsets",
    "pending_offsets",
    "groups",
    "members",
    "decode_errors",
    "load_stats",
    "offset_log_ranges",
    "live_crosscheck",
)

OFFSET_LOG_RANGES_SCHEMA = StructType(
    [
        StructField("offsets_partition", IntegerType(), False),
        StructField("group_id", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("log_start_offset", LongType(), False),
        StructField("log_end_offset", LongType(), False),
        StructField("source", StringType(), False),
    ]
)
"""Each committed offset beside its data partition's [log start, log end] (ListOffsets or the log dir)."""

LIVE_CROSSCHECK_SCHEMA = StructType(
    [
        StructField("kind", StringType(), False),
        StructField("offsets_partition", IntegerType(), True),
        StructField("group_id", StringType(), False),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("cache_value", StringType(), True),
        StructField("live_value", StringType(), True),
        StructField("status", StringType(), False),
        StructField("detail", StringType(), False),
    ]
)
"""The cache against OffsetFetch / DescribeGroups of the live coordinator (``checks/live_crosscheck.py``)."""

TABLE_SCHEMAS = {
    **RELOAD_SCHEMAS,
    "offset_log_ranges": OFFSET_LOG_RANGES_SCHEMA,
    "live_crosscheck": LIVE_CROSSCHECK_SCHEMA,
}

_GX_SEVERITY: dict[Severity, FailureSeverity] = {
    "error": FailureSeverity.CRITICAL,
    "warning": FailureSeverity.WARNING,
}


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One expectation on one table, with its offsetops id and severity."""

    check_id: str
    table: str
    severity: Severity
    expectation: Expectation

    @property
    def name(self) -> str:
        """The rule part of the id: ``offsets.key_unique`` -> ``key_unique``."""
        return self.check_id.split(".", 1)[1]


class _Builder:
    """Collects specs, stamping severity, description and meta onto each expectation."""

    def __init__(self) -> None:
        self.specs: list[CheckSpec] = []

    def add(
        self, table: str, rule: str, severity: Severity, description: str, expectation: Expectation
    ) -> None:
        check_id = f"{table}.{rule}"
        expectation.severity = _GX_SEVERITY[severity]
        expectation.description = description
        expectation.meta = {"check_id": check_id, "table": table, "severity": severity}
        self.specs.append(CheckSpec(check_id, table, severity, expectation))

    def columns_match_schema(self, table: str) -> None:
        columns = TABLE_SCHEMAS[table].fieldNames()
        self.add(
            table,
            "columns_match_schema",
            "error",
            f"`{table}` has exactly the columns of its schema in pipelines/schemas.py.",
            gxe.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True),
        )

    def not_null(self, table: str, *columns: str) -> None:
        for column in columns:
            self.add(
                table,
                f"{column}_not_null",
                "error",
                f"`{column}` is never null (a key of the coordinator's cache).",
                gxe.ExpectColumnValuesToNotBeNull(column=column),
            )

    def in_offsets_partition_range(self, table: str, num_partitions: int) -> None:
        self.add(
            table,
            "offsets_partition_in_range",
            "error",
            f"`offsets_partition` is a real __consumer_offsets partition: 0..{num_partitions - 1}.",
            gxe.ExpectColumnValuesToBeBetween(
                column="offsets_partition", min_value=0, max_value=num_partitions - 1
            ),
        )

    def rows(self, table: str, rule: str, severity: Severity, description: str, query: str) -> None:
        """A rule written as the SQL of the rows that break it (``{batch}`` is the table)."""
        self.add(
            table,
            rule,
            severity,
            description,
            UnexpectedRowsWithSampleExpectation(unexpected_rows_query=query),
        )

    def group_in_partition_for(self, table: str, num_partitions: int) -> None:
        self.add(
            table,
            "group_in_partition_for",
            "error",
            "Each group sits in the offsets partition Kafka's partitionFor gives it "
            f"(Utils.abs(groupId.hashCode) % {num_partitions}).",
            ExpectColumnPairValuesToMatchKafkaPartitionFor(
                column_A="group_id", column_B="offsets_partition", num_partitions=num_partitions
            ),
        )


def build_checks(
    *,
    now_ms: int,
    num_partitions: int = 50,
    skew_ms: int = DEFAULT_SKEW_MS,
    max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES,
) -> list[CheckSpec]:
    """Every check, in report order. ``now_ms`` + ``skew_ms`` bounds timestamps from above.

    Severities follow what on-call wants paged: ``error`` when the cache cannot be what the
    coordinator holds (it would mislead every plan built on it) or a consumer reads corrupt
    positions; ``warning`` for what a healthy cluster can show but an owner should look at.
    """
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    max_ts = now_ms + skew_ms
    b = _Builder()
    _offsets_checks(
        b, now_ms=now_ms, max_ts=max_ts, num_partitions=num_partitions, max_metadata_bytes=max_metadata_bytes
    )
    _pending_offsets_checks(b, num_partitions=num_partitions)
    _groups_checks(b, max_ts=max_ts, num_partitions=num_partitions)
    _members_checks(b)
    _decode_errors_checks(b)
    _load_stats_checks(b, num_partitions=num_partitions)
    _offset_log_ranges_checks(b)
    _live_crosscheck_checks(b)
    return b.specs


def _offsets_checks(
    b: _Builder, *, now_ms: int, max_ts: int, num_partitions: int, max_metadata_bytes: int
) -> None:
    """The committed offsets: one per (group, topic, partition), each sane and in its group's partition."""
    b.columns_match_schema("offsets")
    b.not_null("offsets", "offsets_partition", "group_id", "topic", "partition", "offset", "commit_timestamp")
    b.add(
        "offsets",
        "key_unique",
        "error",
        "(group_id, topic, partition) is unique: the cache keeps one committed offset per partition.",
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["group_id", "topic", "partition"]),
    )
    b.add(
        "offsets",
        "offset_at_least_minus_one",
        "error",
        "`offset` >= -1 (-1 is OffsetAndMetadata's INVALID_OFFSET; anything lower is corrupt).",
        gxe.ExpectColumnValuesToBeBetween(column="offset", min_value=-1),
    )
    b.add(
        "offsets",
        "partition_non_negative",
        "error",
        "`partition` >= 0.",
        gxe.ExpectColumnValuesToBeBetween(column="partition", min_value=0),
    )
    b.in_offsets_partition_range("offsets", num_partitions)
    b.add(
        "offsets",
        "commit_timestamp_sane",
        "error",
        f"`commit_timestamp` between 2011-01-01 ({MIN_COMMIT_TIMESTAMP_MS}) and now + skew ({max_ts}).",
        gxe.ExpectColumnValuesToBeBetween(
            column="commit_timestamp", min_value=MIN_COMMIT_TIMESTAMP_MS, max_value=max_ts
        ),
    )
    b.add(
        "offsets",
        "expire_not_before_commit",
        "error",
        "`expire_timestamp`, when set, is not before `commit_timestamp`.",
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="expire_timestamp",
            column_B="commit_timestamp",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
    )
    b.add(
        "offsets",
        "leader_epoch_non_negative",
        "warning",
        "`leader_epoch`, when set, is >= 0 (-1 must have been turned into null).",
        gxe.ExpectColumnValuesToBeBetween(column="leader_epoch", min_value=0),
    )
    b.group_in_partition_for("offsets", num_partitions)
    b.rows(
        "offsets",
        "commit_timestamp_not_after_as_of",
        "warning",
        f"`commit_timestamp` is not after the as-of clock ({now_ms}): a later commit means broker clock "
        "skew or an as-of set before the log's end, and expiration is computed from the wrong base.",
        "SELECT offsets_partition, group_id, topic, partition, commit_timestamp FROM {batch} "
        f"WHERE commit_timestamp > {int(now_ms)}",
    )
    b.rows(
        "offsets",
        "metadata_within_max_bytes",
        "warning",
        f"`metadata` is at most offset.metadata.max.bytes ({max_metadata_bytes}) characters "
        "(GroupMetadataManager.validateOffsetMetadataLength): a broker rejects longer commits with "
        "OFFSET_METADATA_TOO_LARGE, so a longer one was written under another limit or by another writer.",
        "SELECT offsets_partition, group_id, topic, partition, length(metadata) AS metadata_length "
        f"FROM {{batch}} WHERE length(metadata) > {int(max_metadata_bytes)}",
    )


def _pending_offsets_checks(b: _Builder, *, num_partitions: int) -> None:
    """Offsets staged by open transactions."""
    b.columns_match_schema("pending_offsets")
    b.not_null("pending_offsets", "offsets_partition", "group_id", "producer_id", "topic", "partition")
    b.add(
        "pending_offsets",
        "offset_at_least_minus_one",
        "error",
        "`offset` >= -1.",
        gxe.ExpectColumnValuesToBeBetween(column="offset", min_value=-1),
    )
    b.group_in_partition_for("pending_offsets", num_partitions)


def _groups_checks(b: _Builder, *, max_ts: int, num_partitions: int) -> None:
    """Groups: one GroupMetadata each, in a state Kafka knows, in the partition partitionFor gives."""
    b.columns_match_schema("groups")
    b.not_null("groups", "offsets_partition", "group_id", "state")
    b.add(
        "groups",
        "group_id_unique",
        "error",
        "`group_id` is unique: the cache holds one GroupMetadata per group.",
        gxe.ExpectColumnValuesToBeUnique(column="group_id"),
    )
    b.add(
        "groups",
        "state_known",
        "error",
        "`state` is one of Kafka's group states: " + ", ".join(GROUP_STATES) + ".",
        gxe.ExpectColumnValuesToBeInSet(column="state", value_set=list(GROUP_STATES)),
    )
    b.add(
        "groups",
        "generation_non_negative",
        "error",
        "`generation` >= 0.",
        gxe.ExpectColumnValuesToBeBetween(column="generation", min_value=0),
    )
    b.add(
        "groups",
        "member_count_non_negative",
        "error",
        "`member_count` >= 0.",
        gxe.ExpectColumnValuesToBeBetween(column="member_count", min_value=0),
    )
    b.in_offsets_partition_range("groups", num_partitions)
    b.group_in_partition_for("groups", num_partitions)
    b.add(
        "groups",
        "current_state_timestamp_sane",
        "warning",
        "`current_state_timestamp`, when set, is between 2011-01-01 and now + skew.",
        gxe.ExpectColumnValuesToBeBetween(
            column="current_state_timestamp", min_value=MIN_COMMIT_TIMESTAMP_MS, max_value=max_ts
        ),
    )

    b.rows(
        "groups",
        "stable_has_members_and_protocol",
        "error",
        "A classic group in state Stable has members, a protocol and a leader (GroupMetadata: Stable is "
        "only reached after SyncGroup); one without is a cache the coordinator could not hold.",
        "SELECT offsets_partition, group_id, member_count, protocol, leader FROM {batch} "
        "WHERE state = 'Stable' AND coalesce(group_type, 'classic') = 'classic' "
        "AND (member_count = 0 OR protocol IS NULL OR leader IS NULL)",
    )


def _members_checks(b: _Builder) -> None:
    """Members of classic groups."""
    b.columns_match_schema("members")
    b.not_null("members", "offsets_partition", "group_id", "member_id")
    b.add(
        "members",
        "member_unique",
        "error",
        "(group_id, member_id) is unique.",
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["group_id", "member_id"]),
    )
    b.add(
        "members",
        "assignment_within_subscription",
        "warning",
        "Every topic in a member's assignment is one it subscribed to (when both are known).",
        UnexpectedRowsWithSampleExpectation(
            unexpected_rows_query=(
                "SELECT offsets_partition, group_id, member_id, subscribed_topics, assignment FROM {batch} "
                "WHERE subscribed_topics IS NOT NULL AND assignment IS NOT NULL "
                "AND NOT forall(assignment, a -> array_contains(subscribed_topics, a.topic))"
            ),
        ),
    )


def _decode_errors_checks(b: _Builder) -> None:
    """The decode errors of the reload: none."""
    b.columns_match_schema("decode_errors")
    notices = ", ".join(f"'{k}'" for k in sorted(NOTICE_KINDS))
    b.rows(
        "decode_errors",
        "empty",
        "error",
        "No decode errors: every batch and record of the log was read (notices are not errors).",
        "SELECT offsets_partition, file, position, offset, kind, reason FROM {batch} "
        f"WHERE kind NOT IN ({notices})",
    )


def _load_stats_checks(b: _Builder, *, num_partitions: int) -> None:
    """The reload's statistics: one row per loaded partition."""
    b.columns_match_schema("load_stats")
    b.not_null("load_stats", "offsets_partition")
    b.add(
        "load_stats",
        "offsets_partition_unique",
        "error",
        "One row per loaded partition.",
        gxe.ExpectColumnValuesToBeUnique(column="offsets_partition"),
    )
    b.in_offsets_partition_range("load_stats", num_partitions)


def _offset_log_ranges_checks(b: _Builder) -> None:
    """Committed offsets against their data partitions' log start and end."""
    b.columns_match_schema("offset_log_ranges")
    b.rows(
        "offset_log_ranges",
        "not_below_log_start",
        "warning",
        "Each committed offset is at or above its data partition's log start: below it, the consumer's "
        "next fetch is OFFSET_OUT_OF_RANGE and auto.offset.reset skips or replays data.",
        "SELECT offsets_partition, group_id, topic, partition, offset, log_start_offset, source FROM {batch} "
        "WHERE offset < log_start_offset",
    )
    b.rows(
        "offset_log_ranges",
        "not_above_log_end",
        "error",
        "Each committed offset is at or below its data partition's log end: a position past the end of the "
        "log is corruption (or a truncated log after an unclean leader election).",
        "SELECT offsets_partition, group_id, topic, partition, offset, log_end_offset, source FROM {batch} "
        "WHERE offset > log_end_offset",
    )


def _live_crosscheck_checks(b: _Builder) -> None:
    """The cache against the live coordinator (OffsetFetch, DescribeGroups)."""
    b.columns_match_schema("live_crosscheck")
    b.rows(
        "live_crosscheck",
        "offsets_agree",
        "error",
        "Every committed offset of the cache is what the live coordinator serves (OffsetFetch), except "
        "commits made after the cache was read (status newer_than_read).",
        "SELECT offsets_partition, group_id, topic, partition, cache_value, live_value, status, detail "
        "FROM {batch} WHERE kind <> 'group' AND status NOT IN ('match', 'newer_than_read')",
    )
    b.rows(
        "live_crosscheck",
        "groups_agree",
        "warning",
        "Each group's state and protocol type in the cache is what DescribeGroups reports (a rebalance "
        "between the read and the describe can differ briefly).",
        "SELECT offsets_partition, group_id, cache_value, live_value, status, detail FROM {batch} "
        "WHERE kind = 'group' AND status <> 'match'",
    )
