// The Java client's transactions (kafka-clients 4.x KafkaProducer with a transactional.id,
// KafkaConsumer with isolation.level, Admin) for test/compat/transactions-clients.test.ts. One run
// does every scenario (one JVM start) and prints one JSON object on its last line; every client call
// is bounded (max.block.ms, default.api.timeout.ms, Future.get timeouts), so that a broker that does
// not serve transactions fails a step with the client's exception, never hangs.
// Env: BOOTSTRAP.
//
//   java TxnScenario all <prefix>
//     <prefix>-a, <prefix>-b (3 partitions each): one committed and one aborted transaction over all
//       six partitions, read back read_committed and read_uncommitted
//     <prefix>-fence: a second producer with the same transactional.id fences the first
//     <prefix>-timeout: a transaction left open past transaction.timeout.ms=3000 is aborted
//     <prefix>-in -> <prefix>-out: consume-transform-produce with sendOffsetsToTransaction
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class TxnScenario {
  static final String BOOTSTRAP = System.getenv().getOrDefault("BOOTSTRAP", "127.0.0.1:9092");
  static final long STEP_S = 20;

  static String q(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  static String list(List<String> items) {
    List<String> quoted = new ArrayList<>();
    for (String s : items) quoted.add(q(s));
    return "[" + String.join(",", quoted) + "]";
  }

  static void step(String what) {
    System.out.println("@@step " + what);
  }

  static KafkaProducer<String, String> producer(String txnId, int timeoutMs) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000);
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    if (timeoutMs > 0) p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
    return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
  }

  static KafkaConsumer<String, String> consumer(String isolation, String group) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
    p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
  }

  static List<TopicPartition> partitions(String... topics) {
    List<TopicPartition> out = new ArrayList<>();
    for (String t : topics) for (int p = 0; p < 3; p++) out.add(new TopicPartition(t, p));
    return out;
  }

  /** Every record from the beginning to the end offsets of this isolation level: "topic/p/offset/key=value". */
  static List<String> readAll(String isolation, List<TopicPartition> tps) {
    try (KafkaConsumer<String, String> c = consumer(isolation, null)) {
      c.assign(tps);
      c.seekToBeginning(tps);
      Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(STEP_S));
      List<String> out = new ArrayList<>();
      long deadline = System.currentTimeMillis() + STEP_S * 1000;
      for (;;) {
        boolean done = true;
        for (TopicPartition tp : tps) if (c.position(tp, Duration.ofSeconds(STEP_S)) < end.get(tp)) done = false;
        if (done) break;
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException(isolation + ": end offsets not reached");
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          out.add(r.topic() + "/" + r.partition() + "/" + r.offset() + "/" + r.key() + "=" + r.value());
        }
      }
      out.sort(null);
      return out;
    }
  }

  static String offsets(Admin admin, List<TopicPartition> tps, IsolationLevel level) throws Exception {
    Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
    for (TopicPartition tp : tps) ask.put(tp, OffsetSpec.latest());
    var res = admin.listOffsets(ask, new ListOffsetsOptions(level)).all().get(STEP_S, TimeUnit.SECONDS);
    TreeMap<String, Long> out = new TreeMap<>();
    for (var e : res.entrySet()) out.put(e.getKey().toString(), e.getValue().offset());
    StringBuilder b = new StringBuilder("{");
    for (var e : out.entrySet()) b.append(b.length() > 1 ? "," : "").append(q(e.getKey())).append(":").append(e.getValue());
    return b.append("}").toString();
  }

  static String causeName(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) if (c instanceof ProducerFencedException) return c.getClass().getSimpleName();
    return t.getClass().getSimpleName() + ": " + t.getMessage();
  }

  public static void main(String[] args) throws Exception {
    String prefix = args[1];
    String a = prefix + "-a", b = prefix + "-b", fence = prefix + "-fence", timeout = prefix + "-timeout";
    String in = prefix + "-in", out = prefix + "-out", group = prefix + "-g";
    Properties ap = new Properties();
    ap.put("bootstrap.servers", BOOTSTRAP);
    ap.put("default.api.timeout.ms", 15_000);
    ap.put("request.timeout.ms", 10_000);
    StringBuilder json = new StringBuilder("{");
    try (Admin admin = Admin.create(ap)) {
      step("create topics");
      List<NewTopic> topics = new ArrayList<>();
      for (String t : List.of(a, b, fence, timeout, in, out)) topics.add(new NewTopic(t, 3, (short) -1));
      admin.createTopics(topics).all().get(STEP_S, TimeUnit.SECONDS);

      step("commit and abort over 2 topics x 3 partitions");
      try (KafkaProducer<String, String> p = producer(prefix + "-tx", 0)) {
        p.initTransactions();
        p.beginTransaction();
        for (TopicPartition tp : partitions(a, b)) p.send(new ProducerRecord<>(tp.topic(), tp.partition(), "c-" + tp, "committed"));
        p.commitTransaction();
        p.beginTransaction();
        for (TopicPartition tp : partitions(a, b)) p.send(new ProducerRecord<>(tp.topic(), tp.partition(), "x-" + tp, "aborted"));
        p.flush();
        p.abortTransaction();
      }
      json.append(q("committedRead")).append(":").append(list(readAll("read_committed", partitions(a, b))));
      json.append(",").append(q("uncommittedRead")).append(":").append(list(readAll("read_uncommitted", partitions(a, b))));
      json.append(",").append(q("endCommitted")).append(":").append(offsets(admin, partitions(a, b), IsolationLevel.READ_COMMITTED));

      step("fencing");
      String fenced;
      try (KafkaProducer<String, String> first = producer(prefix + "-fence-tx", 0)) {
        first.initTransactions();
        first.beginTransaction();
        first.send(new ProducerRecord<>(fence, 0, "first-0", "first")).get(STEP_S, TimeUnit.SECONDS);
        try (KafkaProducer<String, String> second = producer(prefix + "-fence-tx", 0)) {
          second.initTransactions();
          try {
            first.commitTransaction();
            fenced = "none";
          } catch (Exception e) {
            fenced = causeName(e);
          }
          second.beginTransaction();
          second.send(new ProducerRecord<>(fence, 2, "second-2", "second"));
          second.commitTransaction();
        }
      }
      json.append(",").append(q("fenced")).append(":").append(q(fenced));
      json.append(",").append(q("fenceRead")).append(":").append(list(readAll("read_committed", partitions(fence))));

      step("a transaction past transaction.timeout.ms");
      KafkaProducer<String, String> open = producer(prefix + "-timeout-tx", 3000);
      open.initTransactions();
      open.beginTransaction();
      for (TopicPartition tp : partitions(timeout)) open.send(new ProducerRecord<>(timeout, tp.partition(), "t-" + tp, "open"));
      open.flush();
      String lsoBefore = offsets(admin, partitions(timeout), IsolationLevel.READ_COMMITTED);
      long deadline = System.currentTimeMillis() + 40_000;
      String lso, hw;
      for (;;) {
        lso = offsets(admin, partitions(timeout), IsolationLevel.READ_COMMITTED);
        hw = offsets(admin, partitions(timeout), IsolationLevel.READ_UNCOMMITTED);
        if (lso.equals(hw) || System.currentTimeMillis() > deadline) break;
        Thread.sleep(200);
      }
      open.close(Duration.ZERO);
      json.append(",").append(q("timeoutLsoBefore")).append(":").append(lsoBefore);
      json.append(",").append(q("timeoutLso")).append(":").append(lso);
      json.append(",").append(q("timeoutEnd")).append(":").append(hw);
      json.append(",").append(q("timeoutRead")).append(":").append(list(readAll("read_committed", partitions(timeout))));

      step("consume-transform-produce");
      Properties plain = new Properties();
      plain.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
      plain.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
      plain.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000);
      plain.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
      try (KafkaProducer<String, String> p = new KafkaProducer<>(plain, new StringSerializer(), new StringSerializer())) {
        for (int i = 0; i < 9; i++) p.send(new ProducerRecord<>(in, i % 3, "in-" + i, "v" + i)).get(STEP_S, TimeUnit.SECONDS);
      }
      int processed = 0;
      try (KafkaConsumer<String, String> c = consumer("read_committed", group);
          KafkaProducer<String, String> p = producer(prefix + "-ctp-tx", 0)) {
        p.initTransactions();
        c.subscribe(List.of(in));
        long until = System.currentTimeMillis() + 40_000;
        while (processed < 9) {
          if (System.currentTimeMillis() > until) throw new IllegalStateException("consume-transform-produce: " + processed + " of 9");
          var records = c.poll(Duration.ofMillis(200));
          if (records.isEmpty()) continue;
          p.beginTransaction();
          Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
          for (ConsumerRecord<String, String> r : records) {
            p.send(new ProducerRecord<>(out, r.partition(), r.key(), r.value().toUpperCase()));
            next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            processed++;
          }
          p.sendOffsetsToTransaction(next, c.groupMetadata());
          p.commitTransaction();
        }
      }
      var committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(STEP_S, TimeUnit.SECONDS);
      TreeMap<String, Long> co = new TreeMap<>();
      for (var e : committed.entrySet()) co.put(e.getKey().toString(), e.getValue().offset());
      StringBuilder cb = new StringBuilder("{");
      for (var e : co.entrySet()) cb.append(cb.length() > 1 ? "," : "").append(q(e.getKey())).append(":").append(e.getValue());
      json.append(",").append(q("groupCommitted")).append(":").append(cb.append("}"));
      json.append(",").append(q("ctpRead")).append(":").append(list(readAll("read_committed", partitions(out))));
    }
    System.out.println(json.append("}"));
    System.out.flush();
    System.exit(0);
  }

  private TxnScenario() {}
}
