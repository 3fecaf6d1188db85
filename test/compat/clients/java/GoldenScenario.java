// The Java client's scenario for the golden capture (tools/capture/run-all.ts): admin, produce in every
// codec, a classic and a KIP-848 consumer group, transactions, offsets. Prints `@@step <slug> <note>`
// before each step so the proxy can label the exchanges. Env: BOOTSTRAP, TOPIC, GROUP.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class GoldenScenario {
  static final String BOOTSTRAP = env("BOOTSTRAP", "127.0.0.1:9092");
  static final String TOPIC = env("TOPIC", "golden-java");
  static final String GROUP = env("GROUP", "golden-java-group");
  static final int PER_CODEC = 3;
  static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
  /** Compressible filler, so that every codec's batch is smaller compressed and sent compressed. */
  static final String FILLER = "weir-golden-".repeat(6);

  static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null ? fallback : value;
  }

  static void step(String slug, String note) throws InterruptedException {
    System.out.println("@@step " + slug + " " + note);
    System.out.flush();
    Thread.sleep(150);
  }

  /** Runs an admin call whose failure is part of the scenario (e.g. TOPIC_ALREADY_EXISTS). */
  static void expectFailure(String what, ThrowingRunnable call) throws InterruptedException {
    try {
      call.run();
      System.out.println(what + ": succeeded");
    } catch (ExecutionException e) {
      System.out.println(what + ": " + e.getCause().getClass().getSimpleName());
    }
  }

  interface ThrowingRunnable {
    void run() throws ExecutionException, InterruptedException;
  }

  static Properties common(String clientId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", BOOTSTRAP);
    p.put("client.id", clientId);
    return p;
  }

  static KafkaConsumer<String, String> consumer(String groupId, String protocol) {
    Properties p = common("golden-java-consumer-" + protocol);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    if (protocol.equals("classic")) p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  static int consumeAll(KafkaConsumer<String, String> consumer, int want) {
    int seen = 0;
    long deadline = System.currentTimeMillis() + 60_000;
    while (seen < want && System.currentTimeMillis() < deadline) {
      for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) seen++;
    }
    return seen;
  }

  @SuppressWarnings("removal")
  static org.apache.kafka.clients.consumer.ConsumerGroupMetadata groupMetadata(String group) {
    // Stands for a consumer of `group` outside any generation, as a simple consume-transform-produce app.
    return new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(group);
  }

  public static void main(String[] args) throws Exception {
    Properties version = new Properties();
    try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      version.load(in);
    }
    System.out.println("@@version java kafka-clients " + version.getProperty("version"));
    int total = PER_CODEC * CODECS.length;
    try (Admin admin = Admin.create(common("golden-java-admin"))) {
      step("admin-create-topic", "CreateTopics " + TOPIC + ", 3 partitions, replication 1");
      admin.createTopics(List.of(new NewTopic(TOPIC, 3, (short) 1))).all().get();
      step("admin-create-topic-again", "CreateTopics " + TOPIC + " again: TOPIC_ALREADY_EXISTS");
      expectFailure("create again", () -> admin.createTopics(List.of(new NewTopic(TOPIC, 3, (short) 1))).all().get());
      step("admin-list-topics", "listTopics");
      admin.listTopics().names().get();
      step("admin-describe-topics", "describeTopics " + TOPIC);
      admin.describeTopics(List.of(TOPIC)).allTopicNames().get();
      step("admin-describe-cluster", "describeCluster");
      admin.describeCluster().nodes().get();
      admin.describeCluster().clusterId().get();
      step("admin-describe-configs", "describeConfigs of topic " + TOPIC + " and broker 1");
      admin.describeConfigs(List.of(
          new ConfigResource(ConfigResource.Type.TOPIC, TOPIC),
          new ConfigResource(ConfigResource.Type.BROKER, "1"))).all().get();
      step("admin-alter-configs", "incrementalAlterConfigs " + TOPIC + " retention.ms=86400000");
      admin.incrementalAlterConfigs(Map.of(
          new ConfigResource(ConfigResource.Type.TOPIC, TOPIC),
          List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET)))).all().get();

      for (int c = 0; c < CODECS.length; c++) {
        String codec = CODECS[c];
        int partition = c % 3;
        step("produce-" + codec, "Produce one batch of " + PER_CODEC + " records to " + TOPIC + "-" + partition
            + ", compression " + codec + ", acks all, idempotent, keys k0..k" + (PER_CODEC - 1) + ", values "
            + codec + "-<i>:weir-golden-x6, headers trace=<codec>-<i> and source=java");
        Properties p = common("golden-java-producer-" + codec);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
          for (int i = 0; i < PER_CODEC; i++) {
            ProducerRecord<String, String> r =
                new ProducerRecord<>(TOPIC, partition, "k" + i, codec + "-" + i + ":" + FILLER);
            r.headers().add("trace", (codec + "-" + i).getBytes(StandardCharsets.UTF_8));
            r.headers().add("source", "java".getBytes(StandardCharsets.UTF_8));
            producer.send(r);
          }
          producer.flush();
        }
      }

      step("consume-classic", "classic consumer group " + GROUP + " reads " + total
          + " records from the beginning (JoinGroup, SyncGroup, Heartbeat, Fetch)");
      try (KafkaConsumer<String, String> consumer = consumer(GROUP, "classic")) {
        consumer.subscribe(List.of(TOPIC));
        int seen = consumeAll(consumer, total);
        System.out.println("classic consumed " + seen);
        step("consume-classic-commit", "commitSync, then committed() (OffsetCommit, OffsetFetch)");
        consumer.commitSync();
        Set<TopicPartition> assigned = consumer.assignment();
        consumer.committed(assigned);
        step("consume-classic-heartbeat", "idle 1.5 s in the group: Heartbeat");
        long until = System.currentTimeMillis() + 1500;
        while (System.currentTimeMillis() < until) consumer.poll(Duration.ofMillis(200));
        step("consume-classic-leave", "close(): LeaveGroup");
      }

      String group848 = GROUP + "-848";
      step("consume-consumer-protocol", "KIP-848 consumer group " + group848 + " reads " + total
          + " records (ConsumerGroupHeartbeat, Fetch)");
      try (KafkaConsumer<String, String> consumer = consumer(group848, "consumer")) {
        consumer.subscribe(List.of(TOPIC));
        int seen = consumeAll(consumer, total);
        System.out.println("consumer-protocol consumed " + seen);
        step("consume-consumer-protocol-commit", "commitSync, committed()");
        consumer.commitSync();
        consumer.committed(consumer.assignment());
        step("consume-consumer-protocol-leave", "close(): ConsumerGroupHeartbeat with epoch -1");
      }

      step("admin-list-offsets", "listOffsets of " + TOPIC + ": earliest, latest, max-timestamp, by timestamp");
      for (OffsetSpec spec : List.of(OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.maxTimestamp(),
          OffsetSpec.forTimestamp(System.currentTimeMillis() - 60_000))) {
        Map<TopicPartition, OffsetSpec> query = new java.util.HashMap<>();
        for (int p = 0; p < 3; p++) query.put(new TopicPartition(TOPIC, p), spec);
        admin.listOffsets(query).all().get();
      }
      step("admin-groups", "listGroups, describeConsumerGroups (classic and KIP-848), listConsumerGroupOffsets");
      admin.listGroups().all().get();
      admin.describeConsumerGroups(List.of(GROUP)).all().get();
      admin.describeConsumerGroups(List.of(group848)).all().get();
      admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();

      step("transaction", "transactional producer golden-java-txn: initTransactions, 2 records, "
          + "sendOffsetsToTransaction for " + GROUP + ", commitTransaction");
      Properties tp = common("golden-java-txn-producer");
      tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "golden-java-txn");
      tp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      tp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(tp)) {
        producer.initTransactions();
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(TOPIC, 0, "txn-k0", "txn-0"));
        producer.send(new ProducerRecord<>(TOPIC, 0, "txn-k1", "txn-1"));
        producer.sendOffsetsToTransaction(
            Map.of(new TopicPartition(TOPIC, 0), new OffsetAndMetadata(1)),
            groupMetadata(GROUP));
        producer.commitTransaction();
      }
      step("admin-transactions", "listTransactions, describeTransactions golden-java-txn, describeProducers "
          + TOPIC + "-0");
      admin.listTransactions().all().get();
      admin.describeTransactions(List.of("golden-java-txn")).all().get();
      admin.describeProducers(List.of(new TopicPartition(TOPIC, 0))).all().get();

      step("admin-describe-log-dirs", "describeLogDirs of broker 1, describeReplicaLogDirs");
      admin.describeLogDirs(List.of(1)).allDescriptions().get();
      step("admin-describe-features", "describeFeatures");
      admin.describeFeatures().featureMetadata().get();
      step("admin-describe-quorum", "describeMetadataQuorum");
      admin.describeMetadataQuorum().quorumInfo().get();
      step("admin-describe-acls", "describeAcls ANY: no authorizer, SECURITY_DISABLED");
      expectFailure("describeAcls", () -> admin.describeAcls(AclBindingFilter.ANY).values().get());
      step("admin-delete-records", "deleteRecords " + TOPIC + "-0 before offset 1");
      admin.deleteRecords(Map.of(new TopicPartition(TOPIC, 0), RecordsToDelete.beforeOffset(1))).all().get();
      step("admin-create-partitions", "createPartitions " + TOPIC + " to 4");
      admin.createPartitions(Map.of(TOPIC, NewPartitions.increaseTo(4))).all().get();
      step("admin-list-partition-reassignments", "listPartitionReassignments");
      admin.listPartitionReassignments().reassignments().get();
      step("admin-delete-groups", "deleteConsumerGroups " + GROUP + ", " + group848);
      admin.deleteConsumerGroups(List.of(GROUP, group848)).all().get();
      step("admin-delete-topic", "deleteTopics " + TOPIC);
      admin.deleteTopics(List.of(TOPIC)).all().get();
    }
    System.out.println("@@done");
  }
}
