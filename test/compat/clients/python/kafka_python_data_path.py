# kafka-python 2.0.2 against Weir's data path (test/compat/kafka-python-data-path.test.ts): keyed
# records with headers in every codec kafka-python has, read back with a group-less consumer (Fetch
# v4), offsets by time and the ends. Prints one JSON line with what it saw. Env: BOOTSTRAP,
# REPLICATION_FACTOR (default 1).
import json
import os

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

bootstrap = os.environ["BOOTSTRAP"]
topic = "kafka-python"
codecs = [None, "gzip", "snappy", "lz4", "zstd"]
per_codec = 60
base_ts = 1_600_000_000_000

admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=int(os.environ.get("REPLICATION_FACTOR", "1")))])
admin.close()

sent = []
for n, codec in enumerate(codecs):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec, linger_ms=5)
    futures = []
    for i in range(per_codec):
        key = f"{codec}-{i}".encode()
        futures.append(
            producer.send(topic, key=key, value=b"v-" + key, headers=[("h", key)], timestamp_ms=base_ts + n * 1000 + i)
        )
        sent.append(key.decode())
    producer.flush()
    for f in futures:
        f.get(timeout=30)
    producer.close()

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, consumer_timeout_ms=3000)
partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
consumer.assign(partitions)
consumer.seek_to_beginning(*partitions)
records = [
    {"partition": m.partition, "offset": m.offset, "key": m.key.decode(), "value": m.value.decode(),
     "headers": [[k, v.decode()] for k, v in m.headers], "timestamp": m.timestamp}
    for m in consumer
]
ends = consumer.end_offsets(partitions)
starts = consumer.beginning_offsets(partitions)
by_time = consumer.offsets_for_times({p: base_ts + 3 * 1000 for p in partitions})
print(json.dumps({
    "sent": sent,
    "records": records,
    "ends": [ends[p] for p in partitions],
    "starts": [starts[p] for p in partitions],
    "byTime": [[by_time[p].offset, by_time[p].timestamp] if by_time[p] else None for p in partitions],
}))
