// Two Java producers sending without pause while their cluster is restarted node by node, for
// test/support/rolling-restart.ts: "noretry" never retries (retries=0, acks=all, no idempotence),
// so every failed send is one a client without retries would have seen; "default" is
// KafkaProducer's defaults (idempotent, acks=all, retries until delivery.timeout.ms). Run as a
// source file against Kafka's jars (java -cp '<libs>/*' RollingProducer.java ...). Env: BOOTSTRAP.
//
//   java RollingProducer.java create <topic> <partitions>   RF 3, min.insync.replicas 2
//   java RollingProducer.java produce <topic> <intervalMs>  each producer sends record i to
//       partition i % n every intervalMs until a line "stop" (or EOF) on stdin; then everything is
//       read back from the start: each acknowledged record must be there, at the offset its ack
//       named, and the default producer's records once each.
//
// produce prints "acked <n> failed <n>" (both producers) every 500 ms, "fail <producer> <ms>
// <partition> <exception>: <message>" for each failed send as it fails (ms since the first send),
// and one JSON object last: per producer the counts, errors by exception, acknowledged records
// lost, duplicates, and the longest time a partition went without an acknowledgement.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class RollingProducer {
  static final String BOOTSTRAP = System.getenv().getOrDefault("BOOTSTRAP", "127.0.0.1:9092");
  /** Set once stdin says stop. */
  static volatile boolean stopping;

  static String str(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : String.valueOf(s).toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static Properties common(String clientId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", BOOTSTRAP);
    p.put("client.id", clientId);
    return p;
  }

  static void create(String topic, int partitions) throws Exception {
    try (Admin admin = Admin.create(common("rolling-admin"))) {
      NewTopic t = new NewTopic(topic, partitions, (short) 3).configs(Map.of("min.insync.replicas", "2"));
      admin.createTopics(List.of(t)).all().get();
    }
    System.out.println("{\"created\":" + str(topic) + "}");
  }

  /** What a send's callback reported: its partition and offset, or the exception. */
  record Outcome(int partition, long offset, String error) {}

  /** One producer and what became of its sends. */
  static final class Stream {
    final String name;
    final KafkaProducer<byte[], byte[]> producer;
    final long started;
    final Map<Long, Outcome> outcomes = new ConcurrentHashMap<>();
    final AtomicLong acked = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final Map<String, Long> errors = new ConcurrentHashMap<>();
    /** Per partition: when it was last acknowledged, and the longest wait between two. */
    final Map<Integer, Long> lastAckMs = new ConcurrentHashMap<>();
    final Map<Integer, Long> maxGapMs = new ConcurrentHashMap<>();
    long sent;

    Stream(String name, Properties extra, long started) {
      this.name = name;
      this.started = started;
      Properties p = common("rolling-" + name);
      p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
      p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
      p.putAll(extra);
      this.producer = new KafkaProducer<>(p);
    }

    String value(long seq) {
      return name + "-" + seq;
    }

    void send(String topic, int partitions) {
      final long seq = sent++;
      final int partition = (int) (seq % partitions);
      byte[] value = value(seq).getBytes(StandardCharsets.UTF_8);
      producer.send(new ProducerRecord<>(topic, partition, null, value), (md, e) -> {
        long now = System.currentTimeMillis();
        if (e == null) {
          acked.incrementAndGet();
          outcomes.put(seq, new Outcome(md.partition(), md.offset(), null));
          Long last = lastAckMs.put(partition, now);
          if (last != null) maxGapMs.merge(partition, now - last, Math::max);
        } else {
          failed.incrementAndGet();
          String exception = e.getClass().getSimpleName();
          errors.merge(exception, 1L, Long::sum);
          outcomes.put(seq, new Outcome(partition, -1, exception));
          System.out.println("fail " + name + " " + (now - started) + " " + partition + " " + exception + ": "
              + e.getMessage());
        }
      });
    }

    String summary(String topic, Map<TopicPartition, Map<Long, String>> read) {
      long lost = 0;
      List<String> lostSamples = new ArrayList<>();
      for (var e : new TreeMap<>(outcomes).entrySet()) {
        Outcome o = e.getValue();
        if (o.error() != null) continue;
        String got = read.getOrDefault(new TopicPartition(topic, o.partition()), Map.of()).get(o.offset());
        if (!value(e.getKey()).equals(got)) {
          lost++;
          if (lostSamples.size() < 20)
            lostSamples.add(str(value(e.getKey()) + " acked at " + o.partition() + "/" + o.offset() + ", read " + got));
        }
      }
      Map<String, Long> copies = new HashMap<>();
      for (var m : read.values())
        for (String v : m.values()) if (v.startsWith(name + "-")) copies.merge(v, 1L, Long::sum);
      long duplicates = 0;
      for (long n : copies.values()) duplicates += n - 1;
      List<String> errorList = new ArrayList<>();
      for (var e : new TreeMap<>(errors).entrySet()) errorList.add(str(e.getKey()) + ":" + e.getValue());
      List<String> gaps = new ArrayList<>();
      for (var e : new TreeMap<>(maxGapMs).entrySet()) gaps.add(str(e.getKey().toString()) + ":" + e.getValue());
      return str(name) + ":{\"sent\":" + sent + ",\"acked\":" + acked.get() + ",\"failed\":" + failed.get()
          + ",\"errors\":{" + String.join(",", errorList) + "},\"lost\":" + lost + ",\"lostSamples\":["
          + String.join(",", lostSamples) + "],\"duplicates\":" + duplicates + ",\"read\":" + copies.size()
          + ",\"ackGapMsMax\":{" + String.join(",", gaps) + "}}";
    }
  }

  static void produce(String topic, long intervalMs) throws Exception {
    Thread stdin = new Thread(() -> {
      try {
        var in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) if (line.trim().equals("stop")) break;
      } catch (java.io.IOException e) {
        // EOF or a closed pipe: stop as well.
      }
      stopping = true;
    });
    stdin.setDaemon(true);
    stdin.start();
    long started = System.currentTimeMillis();
    Properties noRetry = new Properties();
    noRetry.put(ProducerConfig.ACKS_CONFIG, "all");
    noRetry.put(ProducerConfig.RETRIES_CONFIG, "0");
    noRetry.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
    List<Stream> streams =
        List.of(new Stream("noretry", noRetry, started), new Stream("default", new Properties(), started));
    int partitions = streams.get(0).producer.partitionsFor(topic).size();
    long nextProgress = started + 500;
    while (!stopping) {
      for (Stream s : streams) s.send(topic, partitions);
      long now = System.currentTimeMillis();
      if (now >= nextProgress) {
        long acked = 0;
        long failed = 0;
        for (Stream s : streams) {
          acked += s.acked.get();
          failed += s.failed.get();
        }
        System.out.println("acked " + acked + " failed " + failed);
        nextProgress = now + 500;
      }
      if (intervalMs > 0) Thread.sleep(intervalMs);
    }
    for (Stream s : streams) s.producer.close();
    long sendMs = System.currentTimeMillis() - started;
    // Read everything back from the start.
    Map<TopicPartition, Map<Long, String>> read = new HashMap<>();
    Properties c = common("rolling-reader");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
      long deadline = System.currentTimeMillis() + 60_000;
      for (;;) {
        boolean done = true;
        for (var e : ends.entrySet()) if (consumer.position(e.getKey()) < e.getValue()) done = false;
        if (done) break;
        if (System.currentTimeMillis() > deadline) throw new Exception("not at the end offsets " + ends + " in 60 s");
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          read.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), k -> new HashMap<>())
              .put(r.offset(), new String(r.value(), StandardCharsets.UTF_8));
        }
      }
    }
    List<String> out = new ArrayList<>();
    for (Stream s : streams) out.add(s.summary(topic, read));
    System.out.println("{\"sendMs\":" + sendMs + "," + String.join(",", out) + "}");
  }

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "create" -> create(args[1], Integer.parseInt(args[2]));
      case "produce" -> produce(args[1], Long.parseLong(args[2]));
      default -> throw new IllegalArgumentException("unknown command " + args[0]);
    }
    System.exit(0);
  }
}
