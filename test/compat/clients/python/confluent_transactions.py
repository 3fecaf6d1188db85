"""confluent-kafka-python (librdkafka) transactions, for test/compat/transactions-clients.test.ts.

  all PREFIX   on PREFIX-in (3 partitions, 6 plain records): a transactional producer copies them to
               PREFIX-out with send_offsets_to_transaction for group PREFIX-g and commits, then
               produces 3 more and aborts; a read_committed consumer reads PREFIX-out back.

Every call is bounded (timeouts on each librdkafka call). Prints one JSON object on its last line.
Env: BOOTSTRAP.
"""

import json
import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
STEP_S = 20


def read_committed(topic):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": topic + "-reader", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    tps = [TopicPartition(topic, p, 0) for p in range(3)]
    c.assign(tps)
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=STEP_S)[1] for p in range(3)}
    out = []
    deadline = time.time() + STEP_S
    while any(c.position([TopicPartition(topic, p)])[0].offset < ends[p] for p in range(3) if ends[p] > 0):
        if time.time() > deadline:
            raise RuntimeError("read_committed: end offsets not reached")
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            out.append(f"{m.topic()}/{m.partition()}/{m.offset()}/{m.key().decode()}={m.value().decode()}")
    c.close()
    return sorted(out)


def main():
    prefix = sys.argv[2]
    src, dst, group = prefix + "-in", prefix + "-out", prefix + "-g"
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for f in admin.create_topics([NewTopic(t, 3) for t in (src, dst)], operation_timeout=STEP_S).values():
        f.result(timeout=STEP_S)
    plain = Producer({"bootstrap.servers": BOOTSTRAP})
    for i in range(6):
        plain.produce(src, key=f"in-{i}", value=f"v{i}", partition=i % 3)
    assert plain.flush(STEP_S) == 0, "plain records not delivered"

    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([src])
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": prefix + "-tx",
                  "transaction.timeout.ms": 60000, "message.timeout.ms": 15000})
    p.init_transactions(STEP_S)
    got = []
    deadline = time.time() + 40
    while len(got) < 6:
        if time.time() > deadline:
            raise RuntimeError(f"consumed {len(got)} of 6")
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m)
    p.begin_transaction()
    for m in got:
        p.produce(dst, key=m.key(), value=m.value().decode().upper().encode(), partition=m.partition())
    offsets = {}
    for m in got:
        offsets[m.partition()] = max(offsets.get(m.partition(), 0), m.offset() + 1)
    p.send_offsets_to_transaction([TopicPartition(src, k, v) for k, v in offsets.items()],
                                  consumer.consumer_group_metadata(), STEP_S)
    p.commit_transaction(STEP_S)
    p.begin_transaction()
    for i in range(3):
        p.produce(dst, key=f"aborted-{i}", value="x", partition=i)
    p.flush(STEP_S)
    p.abort_transaction(STEP_S)
    consumer.close()
    committed = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group}).committed(
        [TopicPartition(src, q) for q in range(3)], timeout=STEP_S)
    print(json.dumps({"read": read_committed(dst),
                      "committed": {str(t.partition): t.offset for t in committed}}))


main()
