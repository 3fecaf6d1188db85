"""confluent-kafka-python (librdkafka) against Weir, for test/compat/confluent-kafka.test.ts.

One command a run; it prints one JSON object on its last line. The records follow
test/compat/client-matrix.ts (keys, values, headers, timestamps). Env: BOOTSTRAP.

  admin PREFIX                 create, list, describe, alter (configs, partitions), delete topics
  produce TOPIC PARTITIONS     every codec, librdkafka's default producer (acks=all) but the codec
  idempotent TOPIC COUNT       enable.idempotence=true, many small batches in flight
  more TOPIC COUNT             COUNT plain records (keys more-<i>)
  consume TOPIC GROUP          a group member (subscribe) until the end offsets, then commit
  read TOPIC                   group-less (assign), beginning to end offsets
  offsets TOPIC TIMESTAMP      AdminClient.list_offsets earliest, latest, for the timestamp; the
                               consumer's offsets_for_times
  committed TOPIC GROUP        AdminClient.list_consumer_group_offsets, describe_consumer_groups
"""

import json
import sys
import os
import time

import confluent_kafka
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    Consumer,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 30
BASE_TS = 1_600_000_000_000
COMMON = {"bootstrap.servers": BOOTSTRAP, "client.id": "weir-confluent"}
STARTED = time.time()


def trace(what):
    """Notes a step on stderr, with the time since the start (the test shows stderr on failure)."""
    print(f"{int((time.time() - STARTED) * 1000):6d} ms  {what}", file=sys.stderr, flush=True)


# --- the records of client-matrix.ts --------------------------------------------------------------


def key(codec, i):
    return f"k-{codec}-{i}".encode()


def value(codec, i):
    return f"{codec}-{i}:{'weir-compat-' * 8}".encode() + bytes([0, 0xFF, i & 0xFF])


def headers(codec, i):
    return [("codec", codec.encode()), ("index", str(i).encode()), ("bin", bytes([0, 0xFF, i & 0xFF]))]


# --- JSON out ------------------------------------------------------------------------------------


def hexed(b):
    return None if b is None else b.hex()


def record_json(m):
    return {
        "partition": m.partition(),
        "offset": m.offset(),
        "key": hexed(m.key()),
        "value": hexed(m.value()),
        "headers": [[k, hexed(v)] for k, v in (m.headers() or [])],
        "timestamp": m.timestamp()[1],
    }


# --- clients -------------------------------------------------------------------------------------


def admin():
    return AdminClient(COMMON)


def result(future):
    return future.result(30)


def error_name(future):
    try:
        future.result(30)
        return "none"
    except KafkaException as e:
        return e.args[0].name()


def list_names(adm):
    return sorted(t for t in adm.list_topics(timeout=10).topics if not t.startswith("__"))


def partitions_of(adm, topic):
    return sorted(adm.list_topics(topic, timeout=10).topics[topic].partitions)


def end_offsets(adm, topic):
    return {p: r.offset for p, r in list_offsets(adm, topic, OffsetSpec.latest()).items()}


def list_offsets(adm, topic, spec):
    futures = adm.list_offsets({TopicPartition(topic, p): spec for p in partitions_of(adm, topic)})
    return {str(tp.partition): result(f) for tp, f in futures.items()}


def read_to_end(consumer, start, ends):
    """Polls until every partition's next offset reached its end offset; `start` is where a
    partition begins when nothing is read from it (both {"p": offset})."""
    out = []
    at = dict(start)
    deadline = time.time() + 60
    while any(at[p] < end for p, end in ends.items()):
        if time.time() > deadline:
            raise RuntimeError(f"not at the end offsets {ends} within 60 s (at {at})")
        m = consumer.poll(0.2)
        if m is None:
            continue
        if m.error() is not None:
            raise KafkaException(m.error())
        out.append(record_json(m))
        at[str(m.partition())] = m.offset() + 1
    return out


def consumer_for(group):
    # librdkafka wants a group.id even for assign(); a consumer that never subscribes or commits
    # sends nothing to the group coordinator.
    return Consumer({**COMMON, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "group.id": group or "weir-unused"})


# --- commands ------------------------------------------------------------------------------------


def admin_command(prefix):
    adm = admin()
    a, b = f"{prefix}-a", f"{prefix}-b"
    for f in adm.create_topics([NewTopic(a, 3, -1), NewTopic(b, 1, -1, config={"cleanup.policy": "compact"})]).values():
        result(f)
    trace(f"created {a} and {b}")
    again = error_name(adm.create_topics([NewTopic(a, 3, -1)])[a])
    listed = list_names(adm)
    described = result(adm.describe_topics(TopicCollection([a]))[a])
    partitions = [[p.id, p.leader.id, len(p.replicas), len(p.isr)] for p in described.partitions]
    trace("listed and described")
    ra = ConfigResource(ResourceType.TOPIC, a, incremental_configs=[
        ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
    for f in adm.incremental_alter_configs([ra]).values():
        result(f)
    described_configs = adm.describe_configs([ConfigResource(ResourceType.TOPIC, a), ConfigResource(ResourceType.TOPIC, b)])
    configs = {r.name: result(f) for r, f in described_configs.items()}
    trace("altered and described configs")
    result(adm.create_partitions([NewPartitions(a, 5)])[a])
    partitions_after = 0
    deadline = time.time() + 10
    while time.time() < deadline:
        partitions_after = len(partitions_of(adm, a))
        if partitions_after == 5:
            break
        time.sleep(0.1)
    trace(f"{a} has {partitions_after} partitions")
    result(adm.delete_topics([b])[b])
    after_delete = list_names(adm)
    deadline = time.time() + 10
    while b in after_delete and time.time() < deadline:
        time.sleep(0.1)
        after_delete = list_names(adm)
    trace(f"deleted {b}")
    return {
        "again": again,
        "listed": listed,
        "partitions": partitions,
        "retention": configs[a]["retention.ms"].value,
        "cleanup": configs[b]["cleanup.policy"].value,
        "partitionsAfter": partitions_after,
        "listedAfterDelete": after_delete,
        "describeDeleted": error_name(adm.describe_topics(TopicCollection([b]))[b]),
    }


def produce_and_wait(producer, records):
    """records: (topic, kwargs) pairs. Returns the delivery reports in send order."""
    reports = [None] * len(records)

    def on_delivery(index):
        def report(err, msg):
            if err is not None:
                raise KafkaException(err)
            reports[index] = msg
        return report

    for index, (topic, kwargs) in enumerate(records):
        producer.produce(topic, on_delivery=on_delivery(index), **kwargs)
        producer.poll(0)
    if producer.flush(30) != 0:
        raise RuntimeError("records still unsent after 30 s")
    return reports


def produce(topic, partitions):
    adm = admin()
    result(adm.create_topics([NewTopic(topic, partitions, -1)])[topic])
    sent = []
    for c, codec in enumerate(CODECS):
        # librdkafka's defaults (acks=all, the consistent_random partitioner) but the codec.
        producer = Producer({**COMMON, "compression.type": codec, "linger.ms": 50})
        records = [(topic, {"key": key(codec, i), "value": value(codec, i), "headers": headers(codec, i),
                            "timestamp": BASE_TS + c * 1000 + i}) for i in range(PER_CODEC)]
        for m in produce_and_wait(producer, records):
            sent.append({"key": hexed(m.key()), "partition": m.partition(), "offset": m.offset(),
                         "timestamp": m.timestamp()[1]})
    return {"sent": sent}


def idempotent(topic, count):
    adm = admin()
    result(adm.create_topics([NewTopic(topic, 1, -1)])[topic])
    producer = Producer({**COMMON, "enable.idempotence": True, "acks": "all",
                         "max.in.flight.requests.per.connection": 5, "batch.size": 200, "linger.ms": 0})
    records = [(topic, {"partition": 0, "key": f"i{i}".encode(), "value": f"v{i}".encode()}) for i in range(count)]
    return {"offsets": [m.offset() for m in produce_and_wait(producer, records)]}


def more(topic, count):
    producer = Producer(COMMON)
    records = [(topic, {"key": f"more-{i}".encode(), "value": f"more-{i}".encode()}) for i in range(count)]
    return {"sent": [{"key": hexed(m.key()), "partition": m.partition(), "offset": m.offset(),
                      "timestamp": m.timestamp()[1]} for m in produce_and_wait(producer, records)]}


def consume(topic, group):
    ends = end_offsets(admin(), topic)
    consumer = consumer_for(group)
    # Where the group resumes: its committed offsets, else the start (auto.offset.reset=earliest).
    start = {str(tp.partition): max(tp.offset, 0)
             for tp in consumer.committed([TopicPartition(topic, int(p)) for p in ends], timeout=10)}
    consumer.subscribe([topic])
    records = read_to_end(consumer, start, ends)
    if records:
        consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, int(p)) for p in ends], timeout=10)
    consumer.close()
    return {"records": records, "committed": {str(tp.partition): tp.offset for tp in committed}}


def read(topic):
    ends = end_offsets(admin(), topic)
    consumer = consumer_for(None)
    consumer.assign([TopicPartition(topic, int(p), confluent_kafka.OFFSET_BEGINNING) for p in ends])
    records = read_to_end(consumer, {p: 0 for p in ends}, ends)
    consumer.close()
    return {"records": records}


def offsets(topic, timestamp):
    adm = admin()
    earliest = list_offsets(adm, topic, OffsetSpec.earliest())
    latest = list_offsets(adm, topic, OffsetSpec.latest())
    by_time = list_offsets(adm, topic, OffsetSpec.for_timestamp(timestamp))
    consumer = consumer_for(None)
    looked_up = consumer.offsets_for_times([TopicPartition(topic, int(p), timestamp) for p in latest], timeout=10)
    consumer.close()
    return {
        "earliest": {p: r.offset for p, r in earliest.items()},
        "latest": {p: r.offset for p, r in latest.items()},
        "byTime": {p: r.offset for p, r in by_time.items()},
        "byTimeTimestamp": {p: r.timestamp for p, r in by_time.items()},
        "consumerByTime": {str(tp.partition): tp.offset for tp in looked_up},
    }


def committed(topic, group):
    adm = admin()
    listed = result(adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group])
    described = result(adm.describe_consumer_groups([group])[group])
    return {
        "committed": {str(tp.partition): tp.offset for tp in listed.topic_partitions if tp.topic == topic},
        "groupState": described.state.name,
    }


def main(args):
    print(json.dumps({"client": "confluent-kafka", "version": confluent_kafka.__version__,
                      "librdkafka": confluent_kafka.libversion()[0]}), flush=True)
    command = args[0]
    if command == "admin":
        out = admin_command(args[1])
    elif command == "produce":
        out = produce(args[1], int(args[2]))
    elif command == "idempotent":
        out = idempotent(args[1], int(args[2]))
    elif command == "more":
        out = more(args[1], int(args[2]))
    elif command == "consume":
        out = consume(args[1], args[2])
    elif command == "read":
        out = read(args[1])
    elif command == "offsets":
        out = offsets(args[1], int(args[2]))
    elif command == "committed":
        out = committed(args[1], args[2])
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
