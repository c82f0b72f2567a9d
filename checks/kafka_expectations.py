"""Custom Great Expectations for the coordinator's cache: the group-to-partition rule of Kafka.

:class:`ExpectColumnPairValuesToMatchKafkaPartitionFor` is a real GX column-pair map expectation
backed by the metric ``column_pair_values.match_kafka_partition_for``. Its Spark implementation is a
native Column expression of ``Utils.abs(groupId.hashCode) % numPartitions`` (GroupMetadataManager
.partitionFor), so it runs in the JVM without a Python UDF; the pandas implementation calls
:func:`offsetops.coordinator_core.partitioner.partition_for` directly, and the tests check both agree.

:class:`UnexpectedRowsWithSampleExpectation` runs its SQL through metrics of its own whose Spark
implementation binds ``{batch}`` to a temporary view of a name unique to the call: GX's own query
metrics name every batch ``tmp_view`` in the session, so two suites validated at once would read
each other's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from great_expectations.compatibility import pydantic
from great_expectations.constants import MAX_RESULT_RECORDS
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.core.result_format import ResultFormat
from great_expectations.execution_engine import ExecutionEngine, PandasExecutionEngine, SparkDFExecutionEngine
from great_expectations.expectations.core.unexpected_rows_expectation import UnexpectedRowsExpectation
from great_expectations.expectations.expectation import ColumnPairMapExpectation
from great_expectations.expectations.metrics.map_metric_provider import (
    ColumnPairMapMetricProvider,
    column_pair_condition_partial,
)
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.query_metric_provider import QueryMetricProvider
from great_expectations.expectations.metrics.query_metrics import (
    UnexpectedRowsQueryRowCount,
    UnexpectedRowsQueryTable,
)
from great_expectations.render.renderer_configuration import (
    RendererConfiguration,
    RendererValueType,
)
from great_expectations.validator.validator import ValidationDependencies
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS, partition_for
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_TWO_POW_31 = 2**31
_TWO_POW_32 = 2**32


def java_string_hashcode_column(value: Column) -> Column:
    """Java ``String.hashCode`` of a string column as an unsigned 32-bit value (a ``bigint`` in [0, 2^32)).

    The string is encoded as UTF-16BE (Java's ``char`` units, surrogate pairs included), hex-encoded,
    and split into 4-hex-digit code units; ``h = (31 * h + unit) mod 2^32`` is folded over them.
    """
    units = F.regexp_extract_all(F.hex(F.encode(value, "UTF-16BE")), F.lit("(.{4})"), F.lit(1))
    return F.aggregate(
        units,
        F.lit(0).cast("bigint"),
        lambda acc, unit: (acc * 31 + F.conv(unit, 16, 10).cast("bigint")) % _TWO_POW_32,
    )


def partition_for_column(group_id: Column, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> Column:
    """Spark twin of :func:`partition_for`: ``Utils.abs(hashCode) % numPartitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    h = java_string_hashcode_column(group_id)
    # h is hashCode read as unsigned: h >= 2^31 is the negative int h - 2^32, whose abs is 2^32 - h,
    # except Integer.MIN_VALUE (h == 2^31) which Utils.abs maps to 0.
    kafka_abs = (
        F.when(h == _TWO_POW_31, F.lit(0).cast("bigint"))
        .when(h > _TWO_POW_31, F.lit(_TWO_POW_32) - h)
        .otherwise(h)
    )
    return (kafka_abs % num_partitions).cast("int")


class ColumnPairValuesMatchKafkaPartitionFor(ColumnPairMapMetricProvider):
    """Row condition: ``column_B == partition_for(column_A, num_partitions)``."""

    condition_metric_name = "column_pair_values.match_kafka_partition_for"
    condition_domain_keys = (
        "batch_id",
        "table",
        "column_A",
        "column_B",
        "row_condition",
        "condition_parser",
        "ignore_row_if",
    )
    condition_value_keys = ("num_partitions",)

    @column_pair_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column_A: Any, column_B: Any, **kwargs: Any) -> Any:
        num_partitions = int(kwargs.get("num_partitions") or DEFAULT_OFFSETS_PARTITIONS)
        expected = column_A.map(lambda g: partition_for(g, num_partitions))
        return expected == column_B

    @column_pair_condition_partial(engine=SparkDFExecutionEngine)
    def _spark(cls, column_A: Column, column_B: Column, **kwargs: Any) -> Column:
        num_partitions = int(kwargs.get("num_partitions") or DEFAULT_OFFSETS_PARTITIONS)
        return partition_for_column(column_A, num_partitions) == column_B


class ExpectColumnPairValuesToMatchKafkaPartitionFor(ColumnPairMapExpectation):
    """Expect each group (``column_A``) to sit in the offsets partition (``column_B``) Kafka gives it.

    Kafka's ``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % numPartitions``
    with Java ``String.hashCode`` over UTF-16 code units. A group loaded from any other partition is
    one the coordinator for that partition would never serve (a misconfigured
    ``offsets.topic.num.partitions``, a hand-copied log, or a decoder bug).

    Args:
        column_A: The group id column.
        column_B: The ``__consumer_offsets`` partition column.
        num_partitions: ``offsets.topic.num.partitions`` of the cluster (50 by default).
    """

    num_partitions: int = pydantic.Field(
        default=DEFAULT_OFFSETS_PARTITIONS, description="offsets.topic.num.partitions of the cluster"
    )
    ignore_row_if: Literal["both_values_are_missing", "either_value_is_missing", "neither"] = pydantic.Field(
        default="either_value_is_missing",
        description="Rows with a null group id or partition are left to the non-null expectations.",
    )

    library_metadata: ClassVar[dict[str, Any]] = {
        "maturity": "experimental",
        "tags": ["kafka", "column pair map expectation"],
        "contributors": ["offsetops"],
        "requirements": [],
        "has_full_test_suite": True,
        "manually_reviewed_code": True,
    }

    map_metric = ColumnPairValuesMatchKafkaPartitionFor.condition_metric_name
    success_keys = ("column_A", "column_B", "ignore_row_if", "num_partitions", "mostly")
    args_keys = ("column_A", "column_B", "num_partitions")

    @pydantic.validator("num_partitions")
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError(f"num_partitions must be positive, got {value}")
        return value

    @classmethod
    def _prescriptive_template(cls, renderer_configuration: RendererConfiguration) -> RendererConfiguration:
        for name, param_type in (
            ("column_A", RendererValueType.STRING),
            ("column_B", RendererValueType.STRING),
            ("num_partitions", RendererValueType.NUMBER),
        ):
            renderer_configuration.add_param(name=name, param_type=param_type)
        renderer_configuration.template_str = (
            "Values in $column_B must equal Kafka's partitionFor($column_A): "
            "Utils.abs(hashCode) % $num_partitions."
        )
        return renderer_configuration


def _spark_over_batch_rows(result: Callable[[DataFrame], Any]) -> Any:
    """A Spark metric function: ``result`` of the rule's query over the metric's batch. PySpark's
    ``sql(query, batch=df)`` gives the batch a temporary view named for this call only and drops it once
    the query is analysed."""

    @metric_value(engine=SparkDFExecutionEngine)
    def _spark(
        cls: type[QueryMetricProvider],
        execution_engine: SparkDFExecutionEngine,
        metric_domain_kwargs: dict,
        metric_value_kwargs: dict,
        metrics: dict[str, Any],
        runtime_configuration: dict,
    ) -> Any:
        query = cls._get_query_from_metric_value_kwargs(metric_value_kwargs)
        batch, _, _ = execution_engine.get_compute_domain(
            metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
        return result(execution_engine.spark.sql(query, batch=batch))

    return _spark


class BatchRowsQueryTable(UnexpectedRowsQueryTable):
    """GX's ``unexpected_rows_query.table`` (the first ``MAX_RESULT_RECORDS`` rows, as dicts), its batch
    bound to a view of its own on Spark."""

    metric_name = "offsetops.unexpected_rows_query.table"
    _spark = _spark_over_batch_rows(
        lambda rows: [row.asDict() for row in rows.limit(MAX_RESULT_RECORDS).collect()]
    )


class BatchRowsQueryRowCount(UnexpectedRowsQueryRowCount):
    """GX's ``unexpected_rows_query.row_count``, its batch bound to a view of its own on Spark."""

    metric_name = "offsetops.unexpected_rows_query.row_count"
    _spark = _spark_over_batch_rows(DataFrame.count)


class UnexpectedRowsWithSampleExpectation(UnexpectedRowsExpectation):
    """``UnexpectedRowsExpectation`` that also returns a sample of the rows at SUMMARY level.

    GX only returns the offending rows at COMPLETE; a report needs a few of them to be useful. The rows
    (capped at GX's ``MAX_RESULT_RECORDS``) are a Spark job beside the count's, resolved only when the
    result shows some (at SUMMARY with a sample size of 0 the rule is its count alone). Its metrics are
    :class:`BatchRowsQueryTable` and :class:`BatchRowsQueryRowCount`, safe to resolve for several
    batches at once.
    """

    metric_dependencies: ClassVar[tuple[str, ...]] = (
        BatchRowsQueryTable.metric_name,
        BatchRowsQueryRowCount.metric_name,
    )

    def _rows_shown(self, runtime_configuration: dict | None) -> tuple[Any, int]:
        """The result format's level (a name or a ``ResultFormat``, either equal to its member) and how
        many rows its result shows at SUMMARY."""
        result_format = self._get_result_format(runtime_configuration=runtime_configuration)
        if not isinstance(result_format, dict):
            return result_format, 20
        count = result_format.get("partial_unexpected_count", 20)
        level = result_format.get("result_format", ResultFormat.SUMMARY)
        return level, int(count) if isinstance(count, int | str) else 20

    def get_validation_dependencies(
        self,
        execution_engine: ExecutionEngine | None = None,
        runtime_configuration: dict | None = None,
        **kwargs: Any,
    ) -> ValidationDependencies:
        """The row count, and the rows (a Spark job of their own) only where the result shows some: at
        COMPLETE, or at SUMMARY with a sample size above 0 (``suite_samples.COUNTS_FORMAT`` has none)."""
        dependencies = super().get_validation_dependencies(
            execution_engine=execution_engine, runtime_configuration=runtime_configuration
        )
        level, size = self._rows_shown(runtime_configuration)
        if not (level == ResultFormat.COMPLETE or (level == ResultFormat.SUMMARY and size)):
            dependencies.remove_metric_configuration(BatchRowsQueryTable.metric_name)
        return dependencies

    def _validate(
        self,
        metrics: dict,
        runtime_configuration: dict | None = None,
        execution_engine: ExecutionEngine | None = None,
    ) -> Any:
        metrics = {
            "unexpected_rows_query.table": metrics.get(BatchRowsQueryTable.metric_name, []),
            "unexpected_rows_query.row_count": metrics[BatchRowsQueryRowCount.metric_name],
        }
        outcome = super()._validate(metrics, runtime_configuration, execution_engine)
        level, size = self._rows_shown(runtime_configuration)
        if level == ResultFormat.SUMMARY and isinstance(outcome, dict) and "result" in outcome:
            rows = list(metrics["unexpected_rows_query.table"])[:size]
            outcome["result"]["details"] = {"unexpected_rows": rows}
        return outcome
