"""librdkafka (confluent-kafka) driver for bench/broker.ts: create or delete a topic, produce with delivery
latencies (at full speed or at a fixed rate), consume by assignment. Prints one JSON line."""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create(bootstrap, topic, partitions, replication_factor=1, configs=""):
    """configs: comma-separated key=value topic configs (e.g. flush.messages=1), or empty."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = dict(kv.split("=", 1) for kv in configs.split(",") if kv)
    fs = admin.create_topics(
        [NewTopic(topic, num_partitions=int(partitions), replication_factor=int(replication_factor), config=config)]
    )
    for f in fs.values():
        f.result(30)
    # Wait until the topic's leaders are known.
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == int(partitions) and all(
            p.leader >= 0 and len(p.isrs) >= int(replication_factor) for p in md.partitions.values()
        ):
            break
        time.sleep(0.05)
    print(json.dumps({"ok": True}))


def delete(bootstrap, topic):
    """Delete a topic (a bench's round done with its data)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_topics([topic]).values():
        f.result(30)
    print(json.dumps({"ok": True}))


def produce(bootstrap, topic, n, size, acks, rate):
    n, size, rate = int(n), int(size), float(rate)
    lat = []
    errors = [0]
    append = lat.append

    def on_delivery(err, msg):
        if err is not None:
            errors[0] += 1
        else:
            append(msg.latency())

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5 if rate == 0 else 1,
            "batch.size": 1000000,
            "batch.num.messages": 100000,
            "queue.buffering.max.messages": 2000000,
            "queue.buffering.max.kbytes": 2097151,
            "compression.type": "none",
            "enable.idempotence": False,
            "on_delivery": on_delivery,
        }
    )
    p.list_topics(topic, timeout=10)
    value = b"x" * size
    produce_ = p.produce
    poll = p.poll
    start = time.perf_counter()
    if rate == 0:
        for i in range(n):
            try:
                produce_(topic, value)
            except BufferError:
                poll(0.001)
                produce_(topic, value)
            if i & 0x3FF == 0:
                poll(0)
    else:
        chunk = max(1, int(rate / 1000))  # one burst per millisecond
        sent = 0
        while sent < n:
            due = start + sent / rate
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            for _ in range(min(chunk, n - sent)):
                produce_(topic, value)
            sent += chunk
            poll(0)
    p.flush(60)
    seconds = time.perf_counter() - start
    lat.sort()

    def q(f):
        return lat[min(len(lat) - 1, int(f * len(lat)))] * 1000 if lat else None

    print(json.dumps({"n": n, "seconds": seconds, "p50": q(0.5), "p99": q(0.99), "errors": errors[0], "delivered": len(lat)}))


def consume(bootstrap, topic, n, partitions):
    n, partitions = int(n), int(partitions)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
            "fetch.wait.max.ms": 100,
            "queued.min.messages": 1000000,
            "queued.max.messages.kbytes": 1048576,
        }
    )
    start = time.perf_counter()
    c.assign([TopicPartition(topic, i, 0) for i in range(partitions)])
    got = 0
    nbytes = 0
    while got < n and time.perf_counter() - start < 120:
        for m in c.consume(num_messages=100000, timeout=1.0):
            if m.error() is None:
                got += 1
                nbytes += len(m.value())
    seconds = time.perf_counter() - start
    c.close()
    print(json.dumps({"n": got, "bytes": nbytes, "seconds": seconds}))


if __name__ == "__main__":
    {"create": create, "delete": delete, "produce": produce, "consume": consume}[sys.argv[1]](*sys.argv[2:])
