"""Consumer-group scenarios for the compat tests, one per command (BOOTSTRAP in the environment).

  kafka-python-consume GROUP TOPIC COUNT   kafka-python 2.0.2: read COUNT records in GROUP, commit,
                                           close; prints {"values": [...], "assigned": [...]}
  confluent-consume GROUP TOPIC COUNT      the same with confluent-kafka (librdkafka)
  confluent-static GROUP TOPIC INSTANCE    a static member (group.instance.id) that runs until killed;
                                           prints {"event": "assign"|"revoke", "partitions": [...]}
"""
import json
import os
import sys
import time

BOOTSTRAP = os.environ["BOOTSTRAP"]


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def kafka_python_consume(group, topic, count):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=BOOTSTRAP,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
        consumer_timeout_ms=30000,
    )
    values = []
    deadline = time.time() + 60
    while len(values) < count and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values.extend(r.value.decode() for r in records)
    consumer.commit()
    assigned = sorted(tp.partition for tp in consumer.assignment())
    consumer.close()
    out({"values": values, "assigned": assigned})


def confluent_consume(group, topic, count):
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": BOOTSTRAP,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
        }
    )
    consumer.subscribe([topic])
    values = []
    deadline = time.time() + 60
    while len(values) < count and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None or m.error():
            continue
        values.append(m.value().decode())
    consumer.commit(asynchronous=False)
    assigned = sorted(tp.partition for tp in consumer.assignment())
    consumer.close()
    out({"values": values, "assigned": assigned})


def confluent_static(group, topic, instance):
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": BOOTSTRAP,
            "group.id": group,
            "group.instance.id": instance,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 30000,
            "heartbeat.interval.ms": 1000,
        }
    )

    def on_assign(c, partitions):
        out({"event": "assign", "partitions": sorted(p.partition for p in partitions)})

    def on_revoke(c, partitions):
        out({"event": "revoke", "partitions": sorted(p.partition for p in partitions)})

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    while True:
        consumer.poll(0.2)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "kafka-python-consume":
        kafka_python_consume(args[0], args[1], int(args[2]))
    elif command == "confluent-consume":
        confluent_consume(args[0], args[1], int(args[2]))
    elif command == "confluent-static":
        confluent_static(args[0], args[1], args[2])
    else:
        raise SystemExit(f"unknown command {command}")
