"""librdkafka (confluent-kafka-python) on a topic the moment it is created, for
test/compat/fresh-topic.test.ts. One command a run; it prints one JSON object on its last line.
Env: BOOTSTRAP.

  offsets TOPIC PARTITIONS     creates TOPIC, then at once get_watermark_offsets and
                               offsets_for_times on every partition: what each answered
  ordered TOPIC PARTITIONS N   creates TOPIC, then at once N keyed records (64 keys, a sequence
                               number per key in the value) with librdkafka's default producer
                               (not idempotent, many requests in flight); reads them all back and
                               reports every key whose records are stored out of order
"""

import json
import os
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
COMMON = {"bootstrap.servers": BOOTSTRAP, "client.id": "weir-fresh-topic"}
KEYS = 64


def create(topic, partitions):
    adm = AdminClient(COMMON)
    adm.create_topics([NewTopic(topic, partitions)])[topic].result(30)


def error_of(call):
    try:
        return "NONE", call()
    except KafkaException as e:
        return e.args[0].name(), None


def offsets(topic, partitions):
    consumer = Consumer({**COMMON, "group.id": "weir-unused", "enable.auto.commit": False})
    create(topic, partitions)
    out = {"watermarks": [], "byTime": []}
    for p in range(partitions):
        err, marks = error_of(lambda: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10))
        out["watermarks"].append({"partition": p, "error": err, "offsets": list(marks) if marks else None})
    for p in range(partitions):
        err, found = error_of(
            lambda: consumer.offsets_for_times([TopicPartition(topic, p, int(time.time() * 1000) - 60_000)], timeout=10)
        )
        tp = found[0] if found else None
        if tp is not None and tp.error is not None:
            err = tp.error.name()
        out["byTime"].append({"partition": p, "error": err, "offset": tp.offset if tp else None})
    consumer.close()
    return out


def ordered(topic, partitions, count):
    producer = Producer(COMMON)
    create(topic, partitions)
    failed = []

    def report(err, msg):
        if err is not None:
            failed.append(err.name())

    for i in range(count):
        k = i % KEYS
        while True:
            try:
                producer.produce(topic, key=f"key-{k}".encode(), value=f"{i // KEYS}".encode(), on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(60)
    consumer = Consumer({**COMMON, "group.id": "weir-unused", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    ends = {}
    for p in range(partitions):
        ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    last = {}
    disorder = []
    read = 0
    at = {p: 0 for p in range(partitions)}
    deadline = time.time() + 60
    while any(at[p] < ends[p] for p in ends):
        if time.time() > deadline:
            raise RuntimeError(f"not at the end offsets {ends} within 60 s (at {at})")
        m = consumer.poll(0.2)
        if m is None:
            continue
        if m.error() is not None:
            raise KafkaException(m.error())
        read += 1
        at[m.partition()] = m.offset() + 1
        k = m.key().decode()
        n = int(m.value().decode())
        if k in last and n < last[k][0] and len(disorder) < 10:
            disorder.append(f"{k}: index {n} at {m.partition()}@{m.offset()} after index {last[k][0]} at {last[k][1]}")
        if k not in last or n > last[k][0]:
            last[k] = (n, f"{m.partition()}@{m.offset()}")
    consumer.close()
    return {"undelivered": left, "failed": failed[:10], "failedCount": len(failed), "read": read,
            "disorder": disorder}


def main(args):
    print(json.dumps({"client": "confluent-kafka", "version": confluent_kafka.__version__,
                      "librdkafka": confluent_kafka.libversion()[0]}), flush=True)
    command = args[0]
    if command == "offsets":
        out = offsets(args[1], int(args[2]))
    elif command == "ordered":
        out = ordered(args[1], int(args[2]), int(args[3]))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
