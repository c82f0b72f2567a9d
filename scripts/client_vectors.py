"""Write tests/fixtures/client_vectors.json: the consumer-protocol bytes each widely used client writes.

    python scripts/client_vectors.py            # rewrites the file; git diff shows any change

Each vector is built here, field by field, from the layout a client's own sources write (the file and
tag named in its ``source``), with a plain byte writer that shares nothing with offsetops' codec, so the
tests check offsetops against the clients and not against itself. Kafka's layouts: ConsumerProtocol
Subscription v0 ``topics [string], userData bytes``, v1 ``+ ownedPartitions [topic, [int32]]``, v2 ``+
generationId int32``, v3 ``+ rackId string``; Assignment v0-v3 ``assignedPartitions [topic, [int32]],
userData bytes``; all behind an int16 version. docs/clients.md tells the same per client.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "client_vectors.json"
NULL = None


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


def nbytes(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def strings(items: list[str]) -> bytes:
    return i32(len(items)) + b"".join(string(s) for s in items)


def topic_partitions(tps: dict[str, list[int]]) -> bytes:
    out = i32(len(tps))
    for topic, parts in tps.items():
        out += string(topic) + i32(len(parts)) + b"".join(i32(p) for p in parts)
    return out


def sticky_user_data(tps: dict[str, list[int]], generation: int) -> bytes:
    """The sticky assignors' user data v1 (KIP-341): previous assignment, then the generation."""
    return topic_partitions(tps) + i32(generation)


def subscription(
    version: int,
    topics: list[str],
    user_data: bytes | None,
    *,
    owned: dict[str, list[int]] | None = None,
    generation: int | None = None,
    rack: str | bool | None = False,
) -> bytes:
    """The version header, then exactly the fields given (a client may stop before its version's end)."""
    out = i16(version) + strings(topics) + nbytes(user_data)
    if owned is not None:
        out += topic_partitions(owned)
    if generation is not None:
        out += i32(generation)
    if rack is not False:
        out += string(rack)  # type: ignore[arg-type]
    return out


def assignment(version: int, tps: dict[str, list[int]], user_data: bytes | None) -> bytes:
    return i16(version) + topic_partitions(tps) + nbytes(user_data)


TOPICS = ["orders", "payments"]
ASSIGNED = {"orders": [0, 2], "payments": [1]}
OWNED = {"orders": [0, 2]}

JAVA = "apache/kafka"
RDKAFKA = "confluentinc/librdkafka"
RDKAFKA_USERS = (
    "confluent-kafka-python, confluent-kafka-go, confluent-kafka-dotnet, node-rdkafka, "
    "@confluentinc/kafka-javascript, rust-rdkafka"
)


def group(
    gid: str,
    client: str,
    versions: str,
    source: str,
    sub: tuple[bytes, dict[str, Any]],
    asg: tuple[bytes, dict[str, Any]],
    covers: str = "",
) -> list[dict[str, Any]]:
    """The subscription and assignment one member of a client writes, as two vectors of one group."""
    out = []
    for role, (raw, expect) in (("subscription", sub), ("assignment", asg)):
        out.append(
            {
                "id": f"{gid}-{role}",
                "group": gid,
                "client": client,
                "covers": covers,
                "client_versions": versions,
                "role": role,
                "hex": raw.hex(),
                "expect": expect,
                "source": source,
            }
        )
    return out


def s_expect(version: int, layout: int, **kw: Any) -> dict[str, Any]:
    base = {"version": version, "layout": layout, "standard": version == layout, "topics": TOPICS}
    return base | kw


def a_expect(version: int, partitions: dict[str, list[int]] = ASSIGNED, **kw: Any) -> dict[str, Any]:
    base = {"version": version, "layout": version, "standard": True, "partitions": partitions}
    return base | {"user_data_length": None} | kw


def _java(sticky: bytes) -> list[dict[str, Any]]:
    """The Java client (and Kafka Streams, Spring, every JVM consumer built on it)."""
    v: list[dict[str, Any]] = []
    v += group(
        "java-2.3",
        "Java client",
        "0.9 - 2.3",
        f"{JAVA} 2.3.0: clients/.../consumer/internals/ConsumerProtocol.java (SUBSCRIPTION_V0, "
        "ASSIGNMENT_V0); RangeAssignor has no user data (null)",
        (subscription(0, TOPICS, NULL), s_expect(0, 0, user_data_length=None)),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
    )
    v += group(
        "java-2.4-cooperative",
        "Java client",
        "2.4 - 3.3",
        f"{JAVA} 2.8.0: ConsumerProtocolSubscription.json v1, ConsumerCoordinator.metadata (highest "
        "version); CooperativeStickyAssignor.subscriptionUserData (the generation, int32)",
        (
            subscription(1, TOPICS, i32(5), owned=OWNED),
            s_expect(1, 1, owned_partitions=OWNED, user_data_length=4),
        ),
        (assignment(1, ASSIGNED, NULL), a_expect(1)),
    )
    v += group(
        "java-3.4-rack",
        "Java client",
        "3.4 - 4.x (classic protocol)",
        f"{JAVA} 3.9.0: ConsumerProtocolSubscription.json v3 (KIP-792 generation, KIP-881 rack), "
        "ConsumerProtocol.serializeSubscription; RangeAssignor, client.rack set",
        (
            subscription(3, TOPICS, NULL, owned={}, generation=7, rack="use1-az1"),
            s_expect(3, 3, owned_partitions={}, generation_id=7, rack_id="use1-az1", user_data_length=None),
        ),
        (assignment(3, ASSIGNED, NULL), a_expect(3)),
    )
    v += group(
        "java-3.4-sticky",
        "Java client",
        "3.4 - 4.x (classic protocol)",
        f"{JAVA} 3.9.0: StickyAssignor.subscriptionUserData (user data v1: previous assignment, generation); "
        "no client.rack",
        (
            subscription(3, TOPICS, sticky, owned=OWNED, generation=4, rack=NULL),
            s_expect(
                3, 3, owned_partitions=OWNED, generation_id=4, rack_id=None, user_data_length=len(sticky)
            ),
        ),
        (assignment(3, ASSIGNED, NULL), a_expect(3)),
    )
    return v


def _librdkafka(sticky: bytes) -> list[dict[str, Any]]:
    """Librdkafka and every client built on it."""
    v: list[dict[str, Any]] = []
    v += group(
        "librdkafka-1.5",
        "librdkafka",
        "0.9 - 1.5",
        f"{RDKAFKA} v1.5.3: src/rdkafka_assignor.c rd_kafka_assignor_get_metadata (version 0, empty user "
        "data), src/rdkafka_request.c rd_kafka_group_MemberState_consumer_write (version 0, NULL user data)",
        (subscription(0, TOPICS, b""), s_expect(0, 0, user_data_length=0)),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
        RDKAFKA_USERS,
    )
    v += group(
        "librdkafka-1.6",
        "librdkafka",
        "1.6 - 2.1",
        f"{RDKAFKA} v2.1.1: src/rdkafka_assignor.c rd_kafka_consumer_protocol_member_metadata_new "
        "(version 1, owned partitions, an empty array when none)",
        (subscription(1, TOPICS, b"", owned={}), s_expect(1, 1, owned_partitions={}, user_data_length=0)),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
        RDKAFKA_USERS,
    )
    v += group(
        "librdkafka-2.2",
        "librdkafka",
        "2.2 - 2.15",
        f"{RDKAFKA} v2.15.0: src/rdkafka_assignor.c rd_kafka_consumer_protocol_member_metadata_new (version "
        "3, generation -1 without user data, rack NULL without client.rack)",
        (
            subscription(3, TOPICS, b"", owned={}, generation=-1, rack=NULL),
            s_expect(3, 3, owned_partitions={}, generation_id=-1, rack_id=None, user_data_length=0),
        ),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
        RDKAFKA_USERS,
    )
    v += group(
        "librdkafka-2.2-cooperative",
        "librdkafka",
        "2.2 - 2.15",
        f"{RDKAFKA} v2.15.0: src/rdkafka_sticky_assignor.c rd_kafka_sticky_assignor_get_metadata (user data "
        "v1: previous assignment, generation), client.rack set",
        (
            subscription(3, TOPICS, sticky, owned=OWNED, generation=4, rack="rack-a"),
            s_expect(
                3, 3, owned_partitions=OWNED, generation_id=4, rack_id="rack-a", user_data_length=len(sticky)
            ),
        ),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
        RDKAFKA_USERS,
    )
    v += group(
        "librdkafka-2.2-no-topics",
        "librdkafka",
        "2.2 - 2.15",
        f"{RDKAFKA} v2.15.0: a regex subscription that matches no topic yet writes a topic count of 0; "
        "the leader gives it nothing (the coordinator stores empty assignment bytes)",
        (
            subscription(3, [], b"", owned={}, generation=-1, rack=NULL),
            s_expect(
                3, 3, topics=[], owned_partitions={}, generation_id=-1, rack_id=None, user_data_length=0
            ),
        ),
        (b"", {"version": None, "layout": None, "standard": False, "partitions": {}, "empty": True}),
        RDKAFKA_USERS,
    )
    return v


def _sarama(sticky: bytes) -> list[dict[str, Any]]:
    """Sarama."""
    v: list[dict[str, Any]] = []
    v += group(
        "sarama-1.50",
        "Sarama (IBM/sarama)",
        "1.19 - 1.50; 1.60 with Config.Version < 2.4",
        "IBM/sarama v1.50.3: consumer_group.go subscriptionMetadata (Version 0), consumer_group_members.go "
        "encode (nil user data is -1); syncGroupRequest (ConsumerGroupMemberAssignment, Version 0)",
        (subscription(0, TOPICS, NULL), s_expect(0, 0, user_data_length=None)),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
    )
    v += group(
        "sarama-1.60-v2",
        "Sarama (IBM/sarama)",
        "1.60 with Config.Version >= 3.2 (>= 2.4: version 1, without the generation)",
        "IBM/sarama v1.60.1: consumer_group.go subscriptionVersion (2 from 3.2, 1 from 2.4); sticky "
        "AssignmentData (StickyAssignorUserDataV1 in the assignment's user data)",
        (
            subscription(2, TOPICS, NULL, owned=OWNED, generation=4),
            s_expect(2, 2, owned_partitions=OWNED, generation_id=4, user_data_length=None),
        ),
        (assignment(0, ASSIGNED, sticky), a_expect(0, user_data_length=len(sticky))),
    )
    v += group(
        "sarama-unassigned",
        "Sarama (IBM/sarama)",
        "1.35 - 1.60",
        "IBM/sarama v1.60.1: consumer_group.go syncGroupRequest adds an empty "
        "ConsumerGroupMemberAssignment{} for members without partitions (version 0, no topics, nil user "
        "data)",
        (subscription(0, TOPICS, NULL), s_expect(0, 0, user_data_length=None)),
        (assignment(0, {}, NULL), a_expect(0, partitions={})),
    )
    return v


def _franz_go(sticky: bytes) -> list[dict[str, Any]]:
    """Franz-go."""
    v: list[dict[str, Any]] = []
    v += group(
        "franz-go-range",
        "franz-go (twmb/franz-go)",
        "1.x",
        "twmb/franz-go v1.21.5: pkg/kgo/group_balancer.go simpleMemberMetadata (version 3, no owned "
        "partitions, nil user data and rack), BalancePlan.IntoSyncAssignment (kmsg.ConsumerMemberAssignment "
        "version 0)",
        (
            subscription(3, TOPICS, NULL, owned={}, generation=3, rack=NULL),
            s_expect(3, 3, owned_partitions={}, generation_id=3, rack_id=None, user_data_length=None),
        ),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
    )
    v += group(
        "franz-go-cooperative",
        "franz-go (twmb/franz-go)",
        "1.x",
        "twmb/franz-go v1.21.5: stickyBalancer.JoinGroupMetadata (StickyMemberMetadata user data, owned "
        "partitions when cooperative), pkg/kgo/consumer_group.go joinGroupProtocols (KIP-881 rack)",
        (
            subscription(3, TOPICS, sticky, owned=OWNED, generation=4, rack="rack-a"),
            s_expect(
                3, 3, owned_partitions=OWNED, generation_id=4, rack_id="rack-a", user_data_length=len(sticky)
            ),
        ),
        (assignment(0, ASSIGNED, NULL), a_expect(0)),
    )
    return v


def _kafka_go() -> list[dict[str, Any]]:
    """Segmentio/kafka-go."""
    v: list[dict[str, Any]] = []
    v += group(
        "kafka-go-reader",
        "segmentio/kafka-go",
        "0.3 - 0.4.50 (Reader with GroupID)",
        "segmentio/kafka-go v0.4.50: consumergroup.go makeJoinGroupRequestV1 (groupMetadata{Version: 1}), "
        "joingroup.go groupMetadata.writeTo (topics, user data only), syncgroup.go groupAssignment "
        "(Version 1)",
        (subscription(1, TOPICS, NULL), s_expect(1, 0, user_data_length=None)),
        (assignment(1, ASSIGNED, NULL), a_expect(1)),
    )
    rack = b"us-east-1a"
    v += group(
        "kafka-go-reader-rack",
        "segmentio/kafka-go",
        "0.4 - 0.4.50 (Reader with RackAffinityGroupBalancer)",
        "segmentio/kafka-go v0.4.50: groupbalancer.go RackAffinityGroupBalancer.UserData (the rack as user "
        "data) under the same version 1 header over topics and user data",
        (subscription(1, TOPICS, rack), s_expect(1, 0, user_data_length=len(rack))),
        (assignment(1, ASSIGNED, NULL), a_expect(1)),
    )
    v += group(
        "kafka-go-reader-unassigned",
        "segmentio/kafka-go",
        "0.3 - 0.4.50 (Reader with GroupID)",
        "segmentio/kafka-go v0.4.50: the balancers assign only members that get partitions; the coordinator "
        "stores empty assignment bytes for the others",
        (subscription(1, TOPICS, NULL), s_expect(1, 0, user_data_length=None)),
        (b"", {"version": None, "layout": None, "standard": False, "partitions": {}, "empty": True}),
    )
    v += group(
        "kafka-go-client",
        "segmentio/kafka-go",
        "0.4 - 0.4.50 (Client.JoinGroup / Client.SyncGroup)",
        "segmentio/kafka-go v0.4.50: joingroup.go Client.JoinGroup and syncgroup.go Client.SyncGroup "
        "(protocol/consumer Subscription/Assignment, MaxVersionSupported = 1)",
        (
            subscription(1, TOPICS, NULL, owned=OWNED),
            s_expect(1, 1, owned_partitions=OWNED, user_data_length=None),
        ),
        (assignment(1, ASSIGNED, NULL), a_expect(1)),
    )
    return v


def _kafkajs() -> list[dict[str, Any]]:
    """KafkaJS (and NestJS, whose Kafka transport is KafkaJS)."""
    v: list[dict[str, Any]] = []
    v += group(
        "kafkajs-2.2.1",
        "KafkaJS",
        "0.7.0 - 2.2.1",
        "tulios/kafkajs v2.2.1: src/consumer/assignerProtocol.js MemberMetadata.encode (version, topics, "
        "user data only), src/consumer/assigners/roundRobinAssigner/index.js (version: 1)",
        (subscription(1, TOPICS, b""), s_expect(1, 0, user_data_length=0)),
        (assignment(1, ASSIGNED, b""), a_expect(1, user_data_length=0)),
        "NestJS (@nestjs/microservices)",
    )
    v += group(
        "kafkajs-2.2.2",
        "KafkaJS",
        "2.2.2 - 2.2.4",
        "tulios/kafkajs v2.2.4: roundRobinAssigner version 0 (commit 7d574066, 'so that MemberMetadata "
        "adheres to the standard embedded schema')",
        (subscription(0, TOPICS, b""), s_expect(0, 0, user_data_length=0)),
        (assignment(0, ASSIGNED, b""), a_expect(0, user_data_length=0)),
        "NestJS (@nestjs/microservices)",
    )
    v += group(
        "kafkajs-unassigned",
        "KafkaJS",
        "0.7.0 - 2.2.4",
        "tulios/kafkajs v2.2.4: RoundRobinAssigner.assign returns members with partitions only; the "
        "coordinator stores empty assignment bytes for the others",
        (subscription(0, TOPICS, b""), s_expect(0, 0, user_data_length=0)),
        (b"", {"version": None, "layout": None, "standard": False, "partitions": {}, "empty": True}),
        "NestJS (@nestjs/microservices)",
    )
    return v


def _python_clients(sticky: bytes) -> list[dict[str, Any]]:
    """Kafka-python and aiokafka."""
    v: list[dict[str, Any]] = []
    v += group(
        "kafka-python-range",
        "kafka-python",
        "1.0 - 3.0",
        "dpkp/kafka-python 2.0.2: kafka/coordinator/protocol.py ConsumerProtocolMemberMetadata; 3.0.11: "
        "kafka/coordinator/assignors/range.py (version 0, user data b'')",
        (subscription(0, TOPICS, b""), s_expect(0, 0, user_data_length=0)),
        (assignment(0, ASSIGNED, b""), a_expect(0, user_data_length=0)),
    )
    v += group(
        "kafka-python-cooperative",
        "kafka-python",
        "3.0",
        "dpkp/kafka-python 3.0.11: kafka/coordinator/assignors/cooperative_sticky.py (version 1, owned "
        "partitions, user data b'')",
        (
            subscription(1, TOPICS, b"", owned=OWNED),
            s_expect(1, 1, owned_partitions=OWNED, user_data_length=0),
        ),
        (assignment(1, ASSIGNED, b""), a_expect(1, user_data_length=0)),
    )
    v += group(
        "aiokafka-sticky",
        "aiokafka",
        "0.1 - 0.14",
        "aio-libs/aiokafka v0.14.0: aiokafka/coordinator/protocol.py, assignors/sticky/sticky_assignor.py "
        "(version 0, StickyAssignorUserDataV1 user data)",
        (subscription(0, TOPICS, sticky), s_expect(0, 0, user_data_length=len(sticky))),
        (assignment(0, ASSIGNED, b""), a_expect(0, user_data_length=0)),
        "Faust (built on aiokafka)",
    )
    v += group(
        "aiokafka-range",
        "aiokafka",
        "0.1 - 0.14",
        "aio-libs/aiokafka v0.14.0: aiokafka/coordinator/assignors/range.py (version 0, user data b'')",
        (subscription(0, TOPICS, b""), s_expect(0, 0, user_data_length=0)),
        (assignment(0, ASSIGNED, b""), a_expect(0, user_data_length=0)),
    )
    return v


def _rust() -> list[dict[str, Any]]:
    """Rust."""
    v: list[dict[str, Any]] = []
    v += group(
        "kafka-protocol-rs-v3",
        "kafka-protocol (tychedelia/kafka-protocol-rs)",
        "0.x (the application picks the version)",
        "tychedelia/kafka-protocol-rs 0.16.0: src/messages/consumer_protocol_subscription.rs and "
        "consumer_protocol_assignment.rs (generated from Kafka's JSON, versions 0-3, None is -1)",
        (
            subscription(3, TOPICS, NULL, owned=OWNED, generation=2, rack=NULL),
            s_expect(3, 3, owned_partitions=OWNED, generation_id=2, rack_id=None, user_data_length=None),
        ),
        (assignment(3, ASSIGNED, NULL), a_expect(3)),
    )
    return v


def vectors() -> list[dict[str, Any]]:
    """Every client's vectors, client by client."""
    sticky = sticky_user_data(OWNED, 4)
    return [
        *_java(sticky),
        *_librdkafka(sticky),
        *_sarama(sticky),
        *_franz_go(sticky),
        *_kafka_go(),
        *_kafkajs(),
        *_python_clients(sticky),
        *_rust(),
    ]


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(vectors(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
