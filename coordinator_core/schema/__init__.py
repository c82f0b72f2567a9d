"""Keys and values of every ``__consumer_offsets`` record type and version, driven by the tables in
:mod:`.messages` (see docs/architecture.md, "Schemas")."""

from typing import TYPE_CHECKING

from offsetops.coordinator_core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__)
    from .codec import UNKNOWN_TAGS, decode_body, encode_body
    from .consumer_protocol import (
        Assignment,
        Subscription,
        decode_assignment,
        decode_subscription,
        encode_assignment,
        encode_subscription,
    )
    from .control import (
        ControlKey,
        ControlRecordType,
        EndTxnMarker,
        decode_control_key,
        decode_end_txn_marker,
        encode_control_key,
        encode_end_txn_marker,
    )
    from .json_view import kafka_uuid, key_json, unknown_record_text, value_json
    from .keys import (
        CoordinatorKey,
        GroupKey,
        GroupMetadataKey,
        OffsetCommitKey,
        RecordType,
        UnknownKey,
        decode_key,
        encode_key,
        record_type_name,
    )
    from .messages import KEY_SCHEMAS, VALUE_SCHEMAS, MessageSchema
    from .types import SchemaError
    from .values import (
        CoordinatorValue,
        GenericValue,
        GroupMetadataValue,
        MemberMetadata,
        OffsetCommitValue,
        decode_group_metadata_value,
        decode_offset_commit_value,
        decode_value,
        encode_value,
    )

__all__ = [
    "KEY_SCHEMAS",
    "UNKNOWN_TAGS",
    "VALUE_SCHEMAS",
    "Assignment",
    "ControlKey",
    "ControlRecordType",
    "CoordinatorKey",
    "CoordinatorValue",
    "EndTxnMarker",
    "GenericValue",
    "GroupKey",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "MessageSchema",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordType",
    "SchemaError",
    "Subscription",
    "UnknownKey",
    "decode_assignment",
    "decode_body",
    "decode_control_key",
    "decode_end_txn_marker",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "decode_subscription",
    "decode_value",
    "encode_assignment",
    "encode_body",
    "encode_control_key",
    "encode_end_txn_marker",
    "encode_key",
    "encode_subscription",
    "encode_value",
    "kafka_uuid",
    "key_json",
    "record_type_name",
    "unknown_record_text",
    "value_json",
]

#: Each name's module is imported when the name is first read: a reload reads keys, values and the
#: consumer protocol, never the JSON views of ``dump`` nor the control records the native fold reads.
__getattr__ = lazy_exports(
    __name__,
    {
        "codec": ("UNKNOWN_TAGS", "decode_body", "encode_body"),
        "consumer_protocol": (
            "Assignment",
            "Subscription",
            "decode_assignment",
            "decode_subscription",
            "encode_assignment",
            "encode_subscription",
        ),
        "control": (
            "ControlKey",
            "ControlRecordType",
            "EndTxnMarker",
            "decode_control_key",
            "decode_end_txn_marker",
            "encode_control_key",
            "encode_end_txn_marker",
        ),
        "json_view": ("kafka_uuid", "key_json", "unknown_record_text", "value_json"),
        "keys": (
            "CoordinatorKey",
            "GroupKey",
            "GroupMetadataKey",
            "OffsetCommitKey",
            "RecordType",
            "UnknownKey",
            "decode_key",
            "encode_key",
            "record_type_name",
        ),
        "messages": ("KEY_SCHEMAS", "VALUE_SCHEMAS", "MessageSchema"),
        "types": ("SchemaError",),
        "values": (
            "CoordinatorValue",
            "GenericValue",
            "GroupMetadataValue",
            "MemberMetadata",
            "OffsetCommitValue",
            "decode_group_metadata_value",
            "decode_offset_commit_value",
            "decode_value",
            "encode_value",
        ),
    },
)
