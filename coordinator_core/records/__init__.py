"""Segment bytes <-> record batches: magic 0/1/2, every codec, CRC checks (Kafka's ``record`` package)."""

from typing import TYPE_CHECKING

from offsetops.coordinator_core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__)
    from offsetops.coordinator_core.records.batch import (
        CONTROL_FLAG,
        DELETE_HORIZON_FLAG,
        LOG_APPEND_TIME,
        LOG_OVERHEAD,
        NO_TIMESTAMP,
        TIMESTAMP_TYPE_FLAG,
        TRANSACTIONAL_FLAG,
        V2_HEADER_SIZE,
        Record,
        RecordBatch,
    )
    from offsetops.coordinator_core.records.builder import (
        ABORT,
        COMMIT,
        build_control_batch,
        build_legacy_message_set,
        build_record_batch,
        encode_varint,
    )
    from offsetops.coordinator_core.records.compression import (
        GZIP,
        LZ4,
        NONE,
        SNAPPY,
        ZSTD,
        CompressionError,
        compress,
        decompress,
    )
    from offsetops.coordinator_core.records.reader import (
        DEFAULT_CHUNK_SIZE,
        iter_segment_batches,
        read_batches,
    )

__all__ = [
    "ABORT",
    "COMMIT",
    "CONTROL_FLAG",
    "DEFAULT_CHUNK_SIZE",
    "DELETE_HORIZON_FLAG",
    "GZIP",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "LZ4",
    "NONE",
    "NO_TIMESTAMP",
    "SNAPPY",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "V2_HEADER_SIZE",
    "ZSTD",
    "CompressionError",
    "Record",
    "RecordBatch",
    "build_control_batch",
    "build_legacy_message_set",
    "build_record_batch",
    "compress",
    "decompress",
    "encode_varint",
    "iter_segment_batches",
    "read_batches",
]

#: Each name's module is imported when the name is first read: a reload never builds batches, and the
#: codecs' libraries load with the first compressed batch.
__getattr__ = lazy_exports(
    __name__,
    {
        "batch": (
            "CONTROL_FLAG",
            "DELETE_HORIZON_FLAG",
            "LOG_APPEND_TIME",
            "LOG_OVERHEAD",
            "NO_TIMESTAMP",
            "TIMESTAMP_TYPE_FLAG",
            "TRANSACTIONAL_FLAG",
            "V2_HEADER_SIZE",
            "Record",
            "RecordBatch",
        ),
        "builder": (
            "ABORT",
            "COMMIT",
            "build_control_batch",
            "build_legacy_message_set",
            "build_record_batch",
            "encode_varint",
        ),
        "compression": (
            "GZIP",
            "LZ4",
            "NONE",
            "SNAPPY",
            "ZSTD",
            "CompressionError",
            "compress",
            "decompress",
        ),
        "reader": ("DEFAULT_CHUNK_SIZE", "iter_segment_batches", "read_batches"),
    },
)
