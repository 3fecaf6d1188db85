// The Java client (kafka-clients 4.x: KafkaProducer with its defaults, idempotent and acks=all;
// KafkaConsumer in a classic group and group-less; Admin) against Weir, for
// test/compat/java-client.test.ts. One command a run; it prints one JSON object on its last line.
// The records follow test/compat/client-matrix.ts (keys, values, headers, timestamps).
// Env: BOOTSTRAP.
//
//   java CompatMatrix admin <prefix>
//   java CompatMatrix produce <topic> <partitions>     every codec, default producer but compression
//   java CompatMatrix idempotent <topic> <count>       enable.idempotence=true, max.in.flight=5
//   java CompatMatrix more <topic> <count>             plain records (keys more-<i>), the default producer
//   java CompatMatrix consume <topic> <group>          group member until the end offsets, commitSync
//   java CompatMatrix read <topic>                     group-less (assign), beginning to end offsets
//   java CompatMatrix offsets <topic> <timestamp>      Admin.listOffsets earliest, latest, for timestamp
//   java CompatMatrix committed <topic> <group>        Admin.listConsumerGroupOffsets, describeProducers
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class CompatMatrix {
  static final String BOOTSTRAP = System.getenv().getOrDefault("BOOTSTRAP", "127.0.0.1:9092");
  static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
  static final int PER_CODEC = 30;
  static final long BASE_TS = 1_600_000_000_000L;
  static final HexFormat HEX = HexFormat.of();

  // --- the records of client-matrix.ts -------------------------------------------------------

  static byte[] key(String codec, int i) {
    return ("k-" + codec + "-" + i).getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(String codec, int i) {
    byte[] text = (codec + "-" + i + ":" + "weir-compat-".repeat(8)).getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[text.length + 3];
    System.arraycopy(text, 0, out, 0, text.length);
    out[text.length] = 0;
    out[text.length + 1] = (byte) 0xff;
    out[text.length + 2] = (byte) i;
    return out;
  }

  static long timestamp(int codecIndex, int i) {
    return BASE_TS + codecIndex * 1000L + i;
  }

  static ProducerRecord<byte[], byte[]> record(String topic, int codecIndex, int i) {
    String codec = CODECS[codecIndex];
    ProducerRecord<byte[], byte[]> r =
        new ProducerRecord<>(topic, null, timestamp(codecIndex, i), key(codec, i), value(codec, i));
    r.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8));
    r.headers().add("index", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
    r.headers().add("bin", new byte[] {0, (byte) 0xff, (byte) i});
    return r;
  }

  // --- JSON out ------------------------------------------------------------------------------

  static String str(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static String hex(byte[] bytes) {
    return bytes == null ? "null" : str(HEX.formatHex(bytes));
  }

  static String list(Collection<String> items) {
    return "[" + String.join(",", items) + "]";
  }

  static String strings(Collection<String> items) {
    List<String> out = new ArrayList<>();
    for (String s : items) out.add(str(s));
    return list(out);
  }

  static String offsets(Map<Integer, Long> byPartition) {
    List<String> out = new ArrayList<>();
    for (var e : new TreeMap<>(byPartition).entrySet()) out.add(str(e.getKey().toString()) + ":" + e.getValue());
    return "{" + String.join(",", out) + "}";
  }

  static String recordJson(ConsumerRecord<byte[], byte[]> r) {
    List<String> headers = new ArrayList<>();
    for (Header h : r.headers()) headers.add("[" + str(h.key()) + "," + hex(h.value()) + "]");
    return "{\"partition\":" + r.partition() + ",\"offset\":" + r.offset() + ",\"key\":" + hex(r.key())
        + ",\"value\":" + hex(r.value()) + ",\"headers\":" + list(headers) + ",\"timestamp\":" + r.timestamp()
        + "}";
  }

  // --- clients -------------------------------------------------------------------------------

  static Properties common(String clientId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", BOOTSTRAP);
    p.put("client.id", clientId);
    return p;
  }

  static KafkaProducer<byte[], byte[]> producer(Properties extra) {
    Properties p = common("weir-java-producer");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.putAll(extra);
    return new KafkaProducer<>(p);
  }

  static KafkaConsumer<byte[], byte[]> consumer(String group) {
    Properties p = common("weir-java-consumer");
    if (group != null) {
      p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
      p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    }
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  static Admin admin() {
    return Admin.create(common("weir-java-admin"));
  }

  static List<TopicPartition> partitions(Admin admin, String topic) throws Exception {
    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    List<TopicPartition> out = new ArrayList<>();
    for (TopicPartitionInfo p : d.partitions()) out.add(new TopicPartition(topic, p.partition()));
    return out;
  }

  /** Polls until the position of every partition in `ends` reached its end offset. */
  static List<String> readToEnd(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends)
      throws Exception {
    List<String> out = new ArrayList<>();
    long deadline = System.currentTimeMillis() + 60_000;
    for (;;) {
      Set<TopicPartition> assigned = consumer.assignment();
      boolean done = assigned.containsAll(ends.keySet());
      if (done) {
        for (var e : ends.entrySet()) if (consumer.position(e.getKey()) < e.getValue()) done = false;
      }
      if (done) return out;
      if (System.currentTimeMillis() > deadline) throw new Exception("not at the end offsets " + ends + " within 60 s");
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) out.add(recordJson(r));
    }
  }

  static String errorName(ThrowingRunnable call) throws InterruptedException {
    try {
      call.run();
      return "none";
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName();
    }
  }

  interface ThrowingRunnable {
    void run() throws ExecutionException, InterruptedException;
  }

  static Set<String> listNames(Admin admin) throws Exception {
    return new TreeSet<>(admin.listTopics().names().get());
  }

  // --- commands ------------------------------------------------------------------------------

  static String admin(String prefix) throws Exception {
    String a = prefix + "-a";
    String b = prefix + "-b";
    try (Admin admin = admin()) {
      admin.createTopics(List.of(new NewTopic(a, Optional.of(3), Optional.empty()),
          new NewTopic(b, Optional.of(1), Optional.empty()).configs(Map.of("cleanup.policy", "compact")))).all().get();
      String again = errorName(() -> admin.createTopics(List.of(new NewTopic(a, Optional.of(3), Optional.empty()))).all().get());
      Set<String> listed = listNames(admin);
      TopicDescription described = admin.describeTopics(List.of(a)).allTopicNames().get().get(a);
      List<String> leaders = new ArrayList<>();
      for (TopicPartitionInfo p : described.partitions())
        leaders.add("[" + p.partition() + "," + p.leader().id() + "," + p.replicas().size() + "," + p.isr().size() + "]");
      ConfigResource ra = new ConfigResource(ConfigResource.Type.TOPIC, a);
      ConfigResource rb = new ConfigResource(ConfigResource.Type.TOPIC, b);
      admin.incrementalAlterConfigs(Map.of(ra, List.of(
          new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET)))).all().get();
      Map<ConfigResource, Config> configs = admin.describeConfigs(List.of(ra, rb)).all().get();
      String retention = configs.get(ra).get("retention.ms").value();
      String cleanup = configs.get(rb).get("cleanup.policy").value();
      admin.createPartitions(Map.of(a, NewPartitions.increaseTo(5))).all().get();
      int partitionsAfter = 0;
      for (long deadline = System.currentTimeMillis() + 10_000; System.currentTimeMillis() < deadline; Thread.sleep(100)) {
        partitionsAfter = admin.describeTopics(List.of(a)).allTopicNames().get().get(a).partitions().size();
        if (partitionsAfter == 5) break;
      }
      admin.deleteTopics(List.of(b)).all().get();
      Set<String> afterDelete = listNames(admin);
      for (long deadline = System.currentTimeMillis() + 10_000;
          afterDelete.contains(b) && System.currentTimeMillis() < deadline; Thread.sleep(100))
        afterDelete = listNames(admin);
      String describeDeleted = errorName(() -> admin.describeTopics(List.of(b)).allTopicNames().get());
      return "{\"again\":" + str(again) + ",\"listed\":" + strings(listed) + ",\"partitions\":" + list(leaders)
          + ",\"retention\":" + str(retention) + ",\"cleanup\":" + str(cleanup) + ",\"partitionsAfter\":"
          + partitionsAfter + ",\"listedAfterDelete\":" + strings(afterDelete) + ",\"describeDeleted\":"
          + str(describeDeleted) + "}";
    }
  }

  static String produce(String topic, int partitionCount) throws Exception {
    try (Admin admin = admin()) {
      admin.createTopics(List.of(new NewTopic(topic, Optional.of(partitionCount), Optional.empty()))).all().get();
    }
    List<String> sent = new ArrayList<>();
    for (int c = 0; c < CODECS.length; c++) {
      Properties p = new Properties();
      // Only the codec and a linger, so that each codec's records go in a few batches: the
      // defaults otherwise (enable.idempotence=true, acks=all, max.in.flight=5).
      p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, CODECS[c]);
      p.put(ProducerConfig.LINGER_MS_CONFIG, "50");
      try (KafkaProducer<byte[], byte[]> producer = producer(p)) {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int i = 0; i < PER_CODEC; i++) acks.add(producer.send(record(topic, c, i)));
        producer.flush();
        for (int i = 0; i < PER_CODEC; i++) {
          RecordMetadata m = acks.get(i).get();
          sent.add("{\"key\":" + hex(key(CODECS[c], i)) + ",\"partition\":" + m.partition() + ",\"offset\":"
              + m.offset() + ",\"timestamp\":" + m.timestamp() + "}");
        }
      }
    }
    return "{\"sent\":" + list(sent) + "}";
  }

  static String idempotent(String topic, int count) throws Exception {
    try (Admin admin = admin()) {
      admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()))).all().get();
    }
    Properties p = new Properties();
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "200"); // a batch a record or two: many in flight
    List<String> offsets = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = producer(p)) {
      List<Future<RecordMetadata>> acks = new ArrayList<>();
      for (int i = 0; i < count; i++)
        acks.add(producer.send(new ProducerRecord<>(topic, 0, ("i" + i).getBytes(StandardCharsets.UTF_8),
            ("v" + i).getBytes(StandardCharsets.UTF_8))));
      for (var f : acks) offsets.add(Long.toString(f.get().offset()));
    }
    return producers(topic, "\"offsets\":" + list(offsets));
  }

  static String more(String topic, int count) throws Exception {
    List<String> sent = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = producer(new Properties())) {
      List<Future<RecordMetadata>> acks = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        byte[] b = ("more-" + i).getBytes(StandardCharsets.UTF_8);
        acks.add(producer.send(new ProducerRecord<>(topic, b, b)));
      }
      for (int i = 0; i < count; i++) {
        RecordMetadata m = acks.get(i).get();
        sent.add("{\"key\":" + hex(("more-" + i).getBytes(StandardCharsets.UTF_8)) + ",\"partition\":"
            + m.partition() + ",\"offset\":" + m.offset() + ",\"timestamp\":" + m.timestamp() + "}");
      }
    }
    return "{\"sent\":" + list(sent) + "}";
  }

  static String producers(String topic, String prefix) throws Exception {
    try (Admin admin = admin()) {
      List<TopicPartition> tps = partitions(admin, topic);
      var described = admin.describeProducers(tps).all().get();
      List<String> out = new ArrayList<>();
      for (TopicPartition tp : tps) {
        for (ProducerState s : described.get(tp).activeProducers())
          out.add("{\"partition\":" + tp.partition() + ",\"producerId\":" + s.producerId() + ",\"epoch\":"
              + s.producerEpoch() + ",\"lastSequence\":" + s.lastSequence() + "}");
      }
      return "{" + prefix + ",\"producers\":" + list(out) + "}";
    }
  }

  static String consume(String topic, String group) throws Exception {
    Map<TopicPartition, Long> ends;
    try (Admin admin = admin()) {
      ends = ends(admin, partitions(admin, topic));
    }
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(group)) {
      consumer.subscribe(List.of(topic));
      List<String> records = readToEnd(consumer, ends);
      consumer.commitSync();
      Map<Integer, Long> committed = new HashMap<>();
      for (var e : consumer.committed(ends.keySet()).entrySet())
        committed.put(e.getKey().partition(), e.getValue() == null ? -1L : e.getValue().offset());
      return "{\"records\":" + list(records) + ",\"committed\":" + offsets(committed) + "}";
    }
  }

  static String read(String topic) throws Exception {
    Map<TopicPartition, Long> ends;
    try (Admin admin = admin()) {
      ends = ends(admin, partitions(admin, topic));
    }
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(null)) {
      consumer.assign(ends.keySet());
      consumer.seekToBeginning(ends.keySet());
      return "{\"records\":" + list(readToEnd(consumer, ends)) + "}";
    }
  }

  static Map<TopicPartition, Long> ends(Admin admin, List<TopicPartition> tps) throws Exception {
    return listOffsets(admin, tps, OffsetSpec.latest());
  }

  static Map<TopicPartition, Long> listOffsets(Admin admin, List<TopicPartition> tps, OffsetSpec spec)
      throws Exception {
    Map<TopicPartition, OffsetSpec> query = new HashMap<>();
    for (TopicPartition tp : tps) query.put(tp, spec);
    Map<TopicPartition, Long> out = new HashMap<>();
    for (var e : admin.listOffsets(query).all().get().entrySet()) out.put(e.getKey(), e.getValue().offset());
    return out;
  }

  static Map<Integer, Long> byPartition(Map<TopicPartition, Long> m) {
    Map<Integer, Long> out = new HashMap<>();
    for (var e : m.entrySet()) out.put(e.getKey().partition(), e.getValue());
    return out;
  }

  static String offsets(String topic, long timestamp) throws Exception {
    try (Admin admin = admin()) {
      List<TopicPartition> tps = partitions(admin, topic);
      Map<TopicPartition, OffsetSpec> query = new HashMap<>();
      for (TopicPartition tp : tps) query.put(tp, OffsetSpec.forTimestamp(timestamp));
      Map<Integer, Long> byTime = new HashMap<>();
      Map<Integer, Long> byTimeTs = new HashMap<>();
      for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e :
          admin.listOffsets(query).all().get().entrySet()) {
        byTime.put(e.getKey().partition(), e.getValue().offset());
        byTimeTs.put(e.getKey().partition(), e.getValue().timestamp());
      }
      // The consumer's own lookup (ListOffsets from the consumer's fetcher) must agree.
      Map<Integer, Long> consumerByTime = new HashMap<>();
      try (KafkaConsumer<byte[], byte[]> consumer = consumer(null)) {
        Map<TopicPartition, Long> q = new HashMap<>();
        for (TopicPartition tp : tps) q.put(tp, timestamp);
        for (var e : consumer.offsetsForTimes(q).entrySet())
          consumerByTime.put(e.getKey().partition(), e.getValue() == null ? -1L : e.getValue().offset());
      }
      return "{\"earliest\":" + offsets(byPartition(listOffsets(admin, tps, OffsetSpec.earliest())))
          + ",\"latest\":" + offsets(byPartition(listOffsets(admin, tps, OffsetSpec.latest())))
          + ",\"byTime\":" + offsets(byTime) + ",\"byTimeTimestamp\":" + offsets(byTimeTs)
          + ",\"consumerByTime\":" + offsets(consumerByTime) + "}";
    }
  }

  static String committed(String topic, String group) throws Exception {
    try (Admin admin = admin()) {
      Map<Integer, Long> committed = new HashMap<>();
      for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet())
        if (e.getKey().topic().equals(topic)) committed.put(e.getKey().partition(), e.getValue().offset());
      String state = admin.describeConsumerGroups(List.of(group)).all().get().get(group).groupState().toString();
      return producers(topic, "\"committed\":" + offsets(committed) + ",\"groupState\":" + str(state));
    }
  }

  public static void main(String[] args) throws Exception {
    Properties version = new Properties();
    try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      version.load(in);
    }
    System.out.println("{\"client\":\"java\",\"version\":" + str(version.getProperty("version")) + "}");
    String out = switch (args[0]) {
      case "admin" -> admin(args[1]);
      case "produce" -> produce(args[1], Integer.parseInt(args[2]));
      case "idempotent" -> idempotent(args[1], Integer.parseInt(args[2]));
      case "more" -> more(args[1], Integer.parseInt(args[2]));
      case "consume" -> consume(args[1], args[2]);
      case "read" -> read(args[1]);
      case "offsets" -> offsets(args[1], Long.parseLong(args[2]));
      case "committed" -> committed(args[1], args[2]);
      default -> throw new IllegalArgumentException("unknown command " + args[0]);
    };
    System.out.println(out);
  }
}
