"""Explicit Spark schemas of the reload output tables (the group coordinator's cache, as Parquet).

Each column carries its user-facing description as Spark column metadata (``{"comment": ...}``), so
the Parquet footer, ``DESCRIBE`` and :data:`COLUMN_DOCS` all say the same thing. ``docs/tables.md``
is rendered from these definitions by ``offsetops.pipelines.table_docs.render_tables_markdown``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)


@dataclass(frozen=True, slots=True)
class ColumnDoc:
    """What a column means for users, and where it comes from in Kafka."""

    meaning: str
    source: str


def _field(name: str, data_type: DataType, nullable: bool, meaning: str, source: str) -> StructField:
    """A field whose description travels with the schema (Spark's ``comment`` metadata key)."""
    return StructField(
        name,
        data_type,
        nullable=nullable,
        metadata={"comment": meaning, "kafka_source": source},
    )


def _offsets_partition() -> StructField:
    return _field(
        "offsets_partition",
        IntegerType(),
        False,
        "The __consumer_offsets partition the row was loaded from.",
        "Partition directory `__consumer_offsets-N` (or the Fetch partition for a live read).",
    )


def _group_id(source: str = "Record key `group` (OffsetCommitKey / GroupMetadataKey).") -> StructField:
    return _field("group_id", StringType(), False, "Consumer group id.", source)


def _committed_topic_partition() -> tuple[StructField, StructField]:
    """The topic and partition an offset was committed for (committed and pending offsets alike)."""
    return (
        _field(
            "topic", StringType(), False, "Topic the offset was committed for.", "OffsetCommitKey `topic`."
        ),
        _field(
            "partition",
            IntegerType(),
            False,
            "Partition of `topic` the offset was committed for.",
            "OffsetCommitKey `partition`.",
        ),
    )


ASSIGNMENT_ENTRY = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("partitions", ArrayType(IntegerType(), containsNull=False), nullable=False),
    ]
)
"""One topic of a member's assignment: ``ConsumerProtocolAssignment.assignedPartitions[i]``."""

OFFSETS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _group_id("OffsetCommitKey `group` (record key type 0 or 1)."),
        *_committed_topic_partition(),
        _field(
            "offset",
            LongType(),
            False,
            "Committed offset: the next record the group will consume (-1 means no position).",
            "OffsetCommitValue `offset`.",
        ),
        _field(
            "leader_epoch",
            IntegerType(),
            True,
            "Leader epoch of the committed offset (KIP-320); null when unknown (-1) or value version < 3.",
            "OffsetCommitValue `leaderEpoch` (v3+).",
        ),
        _field(
            "metadata",
            StringType(),
            False,
            "Free-form metadata the client attached to the commit (often empty).",
            "OffsetCommitValue `metadata`.",
        ),
        _field(
            "commit_timestamp",
            LongType(),
            False,
            "When the coordinator accepted the commit, epoch milliseconds.",
            "OffsetCommitValue `commitTimestamp`.",
        ),
        _field(
            "expire_timestamp",
            LongType(),
            True,
            "Explicit expiry time, epoch milliseconds; null when not set (-1, or any value version but 1).",
            "OffsetCommitValue `expireTimestamp` (v1 only; KIP-211 removed it from v2+).",
        ),
        _field(
            "record_offset",
            LongType(),
            False,
            "Offset in __consumer_offsets of the record this row came from (the last writer wins).",
            "Log offset of the OffsetCommit record (RecordBatch base offset + record delta).",
        ),
    ]
)
"""``offsets``: one row per committed (group, topic, partition) in the coordinator's cache."""

PENDING_OFFSETS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _group_id("OffsetCommitKey `group`, in a transactional batch."),
        _field(
            "producer_id",
            LongType(),
            False,
            "Transactional producer that wrote the offset; it is pending until its COMMIT/ABORT marker.",
            "RecordBatch `producerId` of a transactional batch (KIP-98 TxnOffsetCommit).",
        ),
        *_committed_topic_partition(),
        _field("offset", LongType(), False, "The pending committed offset.", "OffsetCommitValue `offset`."),
        _field(
            "record_offset",
            LongType(),
            False,
            "Offset in __consumer_offsets of the transactional OffsetCommit record.",
            "Log offset of the record.",
        ),
    ]
)
"""``pending_offsets``: transactional offset commits with no end-transaction marker yet."""

GROUPS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _group_id("GroupMetadataKey `group` (key type 2), or OffsetCommitKey for offsets-only groups."),
        _field(
            "state",
            StringType(),
            False,
            "Group state after load: Empty (no members) or Stable (members) for classic groups; "
            "Empty, Assigning, Reconciling or Stable for KIP-848 consumer groups (by their epochs); Empty or "
            "Stable for share groups; Empty, NotReady, Assigning, Reconciling or Stable for streams groups; "
            "EarlyAccess for a share or streams group an early-access coordinator wrote (not upgradable).",
            "Derived as GroupMetadata.loadGroup / ConsumerGroup, ShareGroup and StreamsGroup "
            ".maybeUpdateGroupState do; not stored in the log.",
        ),
        _field(
            "protocol_type",
            StringType(),
            True,
            'Embedded protocol, e.g. `consumer` or `connect`; null for none (offsets-only groups, or "").',
            "GroupMetadataValue `protocolType`.",
        ),
        _field(
            "generation",
            IntegerType(),
            False,
            "Generation id of the group; 0 for offsets-only groups.",
            "GroupMetadataValue `generation`.",
        ),
        _field(
            "protocol",
            StringType(),
            True,
            "Selected assignor (for consumers) or protocol name; null when none was chosen.",
            "GroupMetadataValue `protocol`.",
        ),
        _field(
            "leader",
            StringType(),
            True,
            "Member id of the group leader; null when there is none.",
            "GroupMetadataValue `leader`.",
        ),
        _field(
            "current_state_timestamp",
            LongType(),
            True,
            "When the group last changed state, epoch milliseconds; null when -1 or value version < 2.",
            "GroupMetadataValue `currentStateTimestamp` (v2+).",
        ),
        _field(
            "member_count",
            IntegerType(),
            False,
            "Number of members of the group (stored in its metadata record for classic groups).",
            "Length of GroupMetadataValue `members`; member records of consumer, share and streams groups.",
        ),
        _field(
            "group_type",
            StringType(),
            False,
            "classic (the JoinGroup protocol, and offsets-only groups), consumer (KIP-848), share or "
            "streams; expiration rules differ by type.",
            "Record type of the group's records: 2 for classic, 3-8 and 16 consumer, 9-15 share, "
            "17-24 streams.",
        ),
        _field(
            "assignment_epoch",
            IntegerType(),
            True,
            "Epoch of the group's target assignment (share and streams groups; -1 once its record was "
            "deleted); never above `generation`, the group epoch. Null for other groups.",
            "ShareGroupTargetAssignmentMetadataValue / StreamsGroupTargetAssignmentMetadataValue "
            "`assignmentEpoch`.",
        ),
    ]
)
"""``groups``: one row per group in the coordinator's cache."""

MEMBERS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _group_id("GroupMetadataKey `group`."),
        _field(
            "member_id",
            StringType(),
            False,
            "Member id assigned by the coordinator.",
            "MemberMetadata `memberId`.",
        ),
        _field(
            "group_instance_id",
            StringType(),
            True,
            "Static membership id (KIP-345); null for dynamic members or value version < 3.",
            "MemberMetadata `groupInstanceId` (v3+).",
        ),
        _field("client_id", StringType(), False, "Client id the member sent.", "MemberMetadata `clientId`."),
        _field(
            "client_host",
            StringType(),
            False,
            "Host the member connected from.",
            "MemberMetadata `clientHost`.",
        ),
        _field(
            "session_timeout_ms",
            IntegerType(),
            True,
            "Session timeout, milliseconds.",
            "MemberMetadata `sessionTimeout`.",
        ),
        _field(
            "rebalance_timeout_ms",
            IntegerType(),
            True,
            "Rebalance timeout, milliseconds (equal to the session timeout for value version 0).",
            "MemberMetadata `rebalanceTimeout` (v1+).",
        ),
        _field(
            "subscribed_topics",
            ArrayType(StringType(), containsNull=False),
            True,
            "Topics the member subscribed to; null when not the consumer protocol or unparseable.",
            "ConsumerProtocolSubscription `topics`, decoded from MemberMetadata `subscription`.",
        ),
        _field(
            "assignment",
            ArrayType(ASSIGNMENT_ENTRY, containsNull=False),
            True,
            "Partitions the leader assigned to the member, by topic; null when unknown.",
            "ConsumerProtocolAssignment `assignedPartitions`, decoded from MemberMetadata `assignment`.",
        ),
    ]
)
"""``members``: one row per member of a group with a GroupMetadata record."""

GROUP_ASSIGNMENTS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _group_id("ShareGroup* / StreamsGroup* record key `groupId`."),
        _field("group_type", StringType(), False, "share or streams.", "Record type (10-15 or 17-23)."),
        _field(
            "member_id",
            StringType(),
            False,
            "The member the tasks or partitions are assigned to.",
            "Record key `memberId`.",
        ),
        _field(
            "assignment",
            StringType(),
            False,
            "current (what the member owns now), target (what the coordinator computed for it) or "
            "revoking (active tasks it still has to give up).",
            "ShareGroup/StreamsGroupCurrentMemberAssignmentValue, *TargetAssignmentMemberValue, "
            "`activeTasksPendingRevocation`.",
        ),
        _field(
            "task_type",
            StringType(),
            False,
            "partition for a share group; active, standby or warmup for a streams group's tasks.",
            "`assignedPartitions` / `topicPartitions`; `activeTasks`, `standbyTasks`, `warmupTasks`.",
        ),
        _field(
            "topic",
            StringType(),
            True,
            "Share groups: the topic (its id when no record names it). Null for streams tasks.",
            "`topicId`, named by ShareGroupStatePartitionMetadataValue or v4 offset commits.",
        ),
        _field(
            "subtopology_id",
            StringType(),
            True,
            "Streams groups: the subtopology of the task (task id `<subtopology>_<partition>`). Null for "
            "share groups.",
            "TaskIds `subtopologyId`.",
        ),
        _field(
            "partition",
            IntegerType(),
            False,
            "Partition (share) or task partition (streams).",
            "`partitions`.",
        ),
        _field(
            "member_exists",
            BooleanType(),
            False,
            "Whether the member is in the group: a target assignment for a member the group does not "
            "have is one Kafka's replay refuses.",
            "Member records (ShareGroupMemberMetadata / StreamsGroupMemberMetadata) surviving the replay.",
        ),
        _field(
            "member_epoch",
            IntegerType(),
            True,
            "The member's epoch (null for target rows); never above `group_epoch`.",
            "*CurrentMemberAssignmentValue `memberEpoch`.",
        ),
        _field("group_epoch", IntegerType(), False, "The group epoch.", "*GroupMetadataValue `epoch`."),
        _field(
            "assignment_epoch",
            IntegerType(),
            False,
            "The target assignment's epoch; never above `group_epoch`.",
            "*TargetAssignmentMetadataValue `assignmentEpoch`.",
        ),
    ]
)
"""``group_assignments``: one row per partition of a share member, or task of a streams member."""

DECODE_ERRORS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _field(
            "file",
            StringType(),
            True,
            "Segment file (or source) being read; null for an in-memory buffer.",
            "DecodeError `file`.",
        ),
        _field(
            "position",
            LongType(),
            True,
            "Byte position in `file` where the problem starts.",
            "DecodeError `position`.",
        ),
        _field(
            "offset",
            LongType(),
            True,
            "Log offset of the batch or record, when known.",
            "DecodeError `offset`.",
        ),
        _field(
            "kind",
            StringType(),
            False,
            "Stable category: truncated, crc_mismatch, bad_length, unknown_magic, decompression, "
            "corrupt_batch, corrupt_record, missing_key, unknown_value_version, corrupt_key, "
            "corrupt_value, corrupt_embedded, offset_order, io; log-dir anomalies unreadable, "
            "dangling_segment, not_a_file, bad_segment_name, leftover_file, duplicate_segment, "
            "segment_offset_mismatch, overlapping_segments; and the notices (not errors) zero_tail and "
            "embedded_layout.",
            "DecodeError `kind`.",
        ),
        _field("reason", StringType(), False, "Human-readable explanation.", "DecodeError `reason`."),
        _field(
            "count",
            LongType(),
            True,
            "How many problems the row stands for: 1, or more for the summary of the repeats of one kind "
            "in one batch beyond its first examples (null in tables written before the column: 1).",
            "DecodeError `count` (ErrorLog summaries).",
        ),
    ]
)
"""``decode_errors``: every problem found while decoding; empty on a healthy log."""

LOAD_STATS_SCHEMA = StructType(
    [
        _offsets_partition(),
        _field("segments", IntegerType(), False, "Segment files read.", "LoadStats `segments`."),
        _field(
            "batches",
            LongType(),
            False,
            "Record batches read (legacy messages count one each).",
            "LoadStats `batches`.",
        ),
        _field(
            "records", LongType(), False, "Records read, control records included.", "LoadStats `records`."
        ),
        _field("bytes", LongType(), False, "Bytes of log read.", "LoadStats `bytes`."),
        _field(
            "tombstones",
            LongType(),
            False,
            "Records with a null value (offset or group deletions).",
            "LoadStats `tombstones`.",
        ),
        _field(
            "control_records", LongType(), False, "COMMIT/ABORT markers read.", "LoadStats `control_records`."
        ),
        _field(
            "unknown_record_types",
            LongType(),
            False,
            "Records whose key type this version does not know (skipped, as the broker does).",
            "LoadStats `unknown_record_types`.",
        ),
        _field(
            "errors",
            LongType(),
            False,
            "Decode errors for this partition (see decode_errors).",
            "LoadStats `errors`, each summary by its count (error_total).",
        ),
        _field(
            "elapsed_ms",
            DoubleType(),
            False,
            "Wall time of the partition load, milliseconds.",
            "LoadStats `elapsed_ms`.",
        ),
    ]
)
"""``load_stats``: one row per loaded ``__consumer_offsets`` partition."""

TABLE_SCHEMAS: dict[str, StructType] = {
    "offsets": OFFSETS_SCHEMA,
    "pending_offsets": PENDING_OFFSETS_SCHEMA,
    "groups": GROUPS_SCHEMA,
    "members": MEMBERS_SCHEMA,
    "group_assignments": GROUP_ASSIGNMENTS_SCHEMA,
    "decode_errors": DECODE_ERRORS_SCHEMA,
    "load_stats": LOAD_STATS_SCHEMA,
}
"""Every reload output table, by name, in the order the docs list them."""

TABLE_DOCS: dict[str, str] = {
    "offsets": "One row per committed (group, topic, partition) in the coordinator's cache after load.",
    "pending_offsets": "Transactional offset commits whose transaction has no COMMIT/ABORT marker yet.",
    "groups": "One row per group in the cache, offsets-only groups included (Empty, no protocol type).",
    "members": "One row per member of a group (its GroupMetadata record, or its member records).",
    "group_assignments": "Share and streams groups: one row per partition of a share member, or task of a "
    "streams member, current, target or being revoked. A share group's offsets are not here: they live in "
    "__share_group_state.",
    "decode_errors": "Every problem found while reading the log, with its file, position, offset and reason.",
    "load_stats": "One row per loaded __consumer_offsets partition: what was read and how long it took.",
}
"""What each table holds, for users."""

COLUMN_DOCS: dict[str, dict[str, ColumnDoc]] = {
    table: {f.name: ColumnDoc(f.metadata["comment"], f.metadata["kafka_source"]) for f in schema.fields}
    for table, schema in TABLE_SCHEMAS.items()
}
"""Column documentation, ``COLUMN_DOCS[table][column]``, taken from the schemas' metadata."""
