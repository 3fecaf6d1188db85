"""confluent-kafka-python (librdkafka) scenario for the golden capture (tools/capture/run-all.ts).

Admin, produce in every codec, a classic and a KIP-848 consumer group, a transaction, offsets. Prints
`@@step <slug> <note>` before each step so the proxy can label the exchanges. Env: BOOTSTRAP, TOPIC, GROUP.
"""

import os
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
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
TOPIC = os.environ.get("TOPIC", "golden-confluent-kafka-python")
GROUP = os.environ.get("GROUP", "golden-confluent-kafka-python-group")
PER_CODEC = 3
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TOTAL = PER_CODEC * len(CODECS)
# Compressible filler, so that every codec's batch is smaller compressed and sent compressed.
FILLER = "weir-golden-" * 6


def step(slug, note):
    print(f"@@step {slug} {note}", flush=True)
    time.sleep(0.15)


def wait(futures):
    for future in futures.values():
        try:
            future.result(30)
        except confluent_kafka.KafkaException as e:
            print(f"expected or tolerated failure: {e}", flush=True)


def consume_all(consumer):
    seen = 0
    deadline = time.time() + 60
    while seen < TOTAL and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    return seen


def main():
    print(f"@@version confluent-kafka-python {confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})")
    common = {"bootstrap.servers": BOOTSTRAP}
    admin = AdminClient({**common, "client.id": "golden-confluent-admin"})

    step("admin-create-topic", f"CreateTopics {TOPIC}, 3 partitions, replication 1")
    wait(admin.create_topics([NewTopic(TOPIC, 3, 1)]))
    step("admin-create-topic-again", f"CreateTopics {TOPIC} again: TOPIC_ALREADY_EXISTS")
    wait(admin.create_topics([NewTopic(TOPIC, 3, 1)]))
    step("admin-list-topics", "list_topics: Metadata of all topics")
    admin.list_topics(timeout=10)
    step("admin-describe-cluster", "describe_cluster")
    admin.describe_cluster().result(30)
    step("admin-describe-topics", f"describe_topics {TOPIC}")
    wait(admin.describe_topics(TopicCollection([TOPIC])))
    step("admin-describe-configs", f"describe_configs of topic {TOPIC} and broker 1")
    wait(admin.describe_configs([ConfigResource(ResourceType.TOPIC, TOPIC), ConfigResource(ResourceType.BROKER, "1")]))
    step("admin-alter-configs", f"incremental_alter_configs {TOPIC} retention.ms=86400000")
    entry = ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
    wait(admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, TOPIC, incremental_configs=[entry])]))

    for index, codec in enumerate(CODECS):
        partition = index % 3
        step(
            f"produce-{codec}",
            f"Produce one batch of {PER_CODEC} records to {TOPIC}-{partition}, compression {codec}, acks all, idempotent, "
            f"keys k0..k{PER_CODEC - 1}, values {codec}-<i>:weir-golden-x6, headers trace=<codec>-<i> and source=confluent",
        )
        producer = Producer({**common, "client.id": f"golden-confluent-producer-{codec}", "compression.type": codec,
                             "linger.ms": 20, "acks": "all", "enable.idempotence": True})
        for i in range(PER_CODEC):
            producer.produce(TOPIC, partition=partition, key=f"k{i}", value=f"{codec}-{i}:{FILLER}",
                             headers=[("trace", f"{codec}-{i}".encode()), ("source", b"confluent")])
        producer.flush(30)

    step("consume-classic", f"classic consumer group {GROUP} reads {TOTAL} records from the beginning")
    consumer = Consumer({**common, "client.id": "golden-confluent-consumer", "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "heartbeat.interval.ms": 500})
    consumer.subscribe([TOPIC])
    print(f"classic consumed {consume_all(consumer)}", flush=True)
    step("consume-classic-commit", "commit (sync), committed()")
    consumer.commit(asynchronous=False)
    consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=10)
    step("consume-classic-heartbeat", "idle 1.5 s in the group: Heartbeat")
    end = time.time() + 1.5
    while time.time() < end:
        consumer.poll(0.2)
    step("consume-classic-watermarks", "get_watermark_offsets (ListOffsets earliest and latest)")
    consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10, cached=False)
    consumer.offsets_for_times([TopicPartition(TOPIC, p, int(time.time() * 1000) - 60_000) for p in range(3)], timeout=10)

    step("transaction", f"transactional producer golden-confluent-txn: 2 records, send_offsets_to_transaction for {GROUP}, commit")
    txn = Producer({**common, "client.id": "golden-confluent-txn-producer", "transactional.id": "golden-confluent-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(TOPIC, key="txn-k0", value="txn-0", partition=0)
    txn.produce(TOPIC, key="txn-k1", value="txn-1", partition=0)
    txn.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 1)], consumer.consumer_group_metadata(), 30)
    txn.commit_transaction(30)

    step("consume-classic-leave", "close(): LeaveGroup")
    consumer.close()

    group848 = f"{GROUP}-848"
    step("consume-consumer-protocol", f"KIP-848 consumer group {group848} reads {TOTAL} records (ConsumerGroupHeartbeat)")
    consumer = Consumer({**common, "client.id": "golden-confluent-consumer-848", "group.id": group848,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    print(f"consumer-protocol consumed {consume_all(consumer)}", flush=True)
    step("consume-consumer-protocol-commit", "commit (sync)")
    consumer.commit(asynchronous=False)
    step("consume-consumer-protocol-leave", "close(): ConsumerGroupHeartbeat with epoch -1")
    consumer.close()

    step("admin-list-offsets", f"list_offsets of {TOPIC}: earliest, latest, max-timestamp")
    for spec in [OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.max_timestamp()]:
        wait(admin.list_offsets({TopicPartition(TOPIC, p): spec for p in range(3)}))
    step("admin-groups", f"list_consumer_groups, describe_consumer_groups {GROUP} and {group848}, list_consumer_group_offsets")
    admin.list_consumer_groups().result(30)
    wait(admin.describe_consumer_groups([GROUP, group848]))
    wait(admin.list_consumer_group_offsets([confluent_kafka.ConsumerGroupTopicPartitions(GROUP)]))
    step("admin-delete-records", f"delete_records {TOPIC}-0 before offset 1")
    wait(admin.delete_records([TopicPartition(TOPIC, 0, 1)]))
    step("admin-create-partitions", f"create_partitions {TOPIC} to 4")
    wait(admin.create_partitions([NewPartitions(TOPIC, 4)]))
    step("admin-delete-groups", f"delete_consumer_groups {GROUP}, {group848}")
    wait(admin.delete_consumer_groups([GROUP, group848]))
    step("admin-delete-topic", f"delete_topics {TOPIC}")
    wait(admin.delete_topics([TOPIC]))
    print("@@done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
