"""kafka-python scenario for the golden capture (tools/capture/run-all.ts).

kafka-python 2.0.2 predates flexible versions and speaks old request versions. Admin, produce in every
codec, a classic consumer group, offsets. Prints `@@step <slug> <note>` before each step so the proxy
can label the exchanges. Env: BOOTSTRAP, TOPIC, GROUP.
"""

import os
import sys
import time

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic
from kafka.errors import KafkaError

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
TOPIC = os.environ.get("TOPIC", "golden-kafka-python")
GROUP = os.environ.get("GROUP", "golden-kafka-python-group")
PER_CODEC = 3
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TOTAL = PER_CODEC * len(CODECS)
# Compressible filler, so that every codec's batch is smaller compressed and sent compressed.
FILLER = "weir-golden-" * 6


def step(slug, note):
    print(f"@@step {slug} {note}", flush=True)
    time.sleep(0.15)


def tolerate(what, call):
    try:
        return call()
    except KafkaError as e:
        print(f"{what}: {type(e).__name__}", flush=True)
        return None


def main():
    print(f"@@version kafka-python {kafka.__version__}", flush=True)
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="golden-kafka-python-admin")

    step("admin-create-topic", f"create_topics {TOPIC}, 3 partitions, replication 1")
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])
    step("admin-create-topic-again", f"create_topics {TOPIC} again: TOPIC_ALREADY_EXISTS")
    tolerate("create again", lambda: admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)]))
    step("admin-list-topics", "list_topics")
    admin.list_topics()
    step("admin-describe-topics", f"describe_topics {TOPIC}")
    admin.describe_topics([TOPIC])
    step("admin-describe-cluster", "describe_cluster")
    admin.describe_cluster()
    step("admin-describe-configs", f"describe_configs of topic {TOPIC} and broker 1")
    admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC), ConfigResource(ConfigResourceType.BROKER, "1")])
    step("admin-alter-configs", f"alter_configs {TOPIC} retention.ms=86400000 (AlterConfigs)")
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"retention.ms": "86400000"})])

    for index, codec in enumerate(CODECS):
        partition = index % 3
        step(
            f"produce-{codec}",
            f"Produce one batch of {PER_CODEC} records to {TOPIC}-{partition}, compression {codec}, acks all, "
            f"keys k0..k{PER_CODEC - 1}, values {codec}-<i>:weir-golden-x6, headers trace=<codec>-<i> and source=kafka-python",
        )
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, client_id=f"golden-kafka-python-producer-{codec}",
                                 compression_type=None if codec == "none" else codec, acks="all", linger_ms=20)
        for i in range(PER_CODEC):
            producer.send(TOPIC, partition=partition, key=f"k{i}".encode(), value=f"{codec}-{i}:{FILLER}".encode(),
                          headers=[("trace", f"{codec}-{i}".encode()), ("source", b"kafka-python")])
        producer.flush(30)
        producer.close()

    step("consume-group", f"consumer group {GROUP} reads {TOTAL} records from the beginning (JoinGroup, SyncGroup, Fetch)")
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, client_id="golden-kafka-python-consumer",
                             group_id=GROUP, auto_offset_reset="earliest", enable_auto_commit=False,
                             heartbeat_interval_ms=500)
    seen = 0
    deadline = time.time() + 60
    while seen < TOTAL and time.time() < deadline:
        for records in consumer.poll(500).values():
            seen += len(records)
    print(f"consumed {seen}", flush=True)
    step("consume-commit", "commit(), committed()")
    consumer.commit()
    for p in range(3):
        consumer.committed(TopicPartition(TOPIC, p))
    step("consume-heartbeat", "idle 1.5 s in the group: Heartbeat")
    end = time.time() + 1.5
    while time.time() < end:
        consumer.poll(200)
    step("consume-offsets", "beginning_offsets, end_offsets, offsets_for_times (ListOffsets)")
    partitions = [TopicPartition(TOPIC, p) for p in range(3)]
    consumer.beginning_offsets(partitions)
    consumer.end_offsets(partitions)
    consumer.offsets_for_times({tp: int(time.time() * 1000) - 60_000 for tp in partitions})
    step("consume-leave", "close(): LeaveGroup")
    consumer.close()

    step("admin-groups", f"list_consumer_groups, describe_consumer_groups {GROUP}, list_consumer_group_offsets")
    admin.list_consumer_groups()
    admin.describe_consumer_groups([GROUP])
    admin.list_consumer_group_offsets(GROUP)
    step("admin-create-partitions", f"create_partitions {TOPIC} to 4")
    admin.create_partitions({TOPIC: NewPartitions(4)})
    step("admin-delete-groups", f"delete_consumer_groups {GROUP}")
    admin.delete_consumer_groups([GROUP])
    step("admin-delete-topic", f"delete_topics {TOPIC}")
    admin.delete_topics([TOPIC])
    admin.close()
    print("@@done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
