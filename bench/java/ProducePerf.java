import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's producer as fast as it goes, for bench/transactions.ts: N records of SIZE bytes
 * (one shared value) to TOPIC with acks=all and idempotence, sent in a tight loop; with TXN_RECORDS
 * greater than 0 it is transactional (initTransactions before the clock starts) and commits every
 * TXN_RECORDS records. Prints one JSON line: n, bytes, first_s (from the first send to the last
 * acknowledgement or commit). Fails on any send error.
 *
 *   java -cp CLASSPATH ProducePerf BOOTSTRAP TOPIC N SIZE TXN_RECORDS
 */
public final class ProducePerf {
  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: ProducePerf BOOTSTRAP TOPIC N SIZE TXN_RECORDS");
      System.exit(2);
    }
    String topic = args[1];
    long n = Long.parseLong(args[2]);
    int size = Integer.parseInt(args[3]);
    long txn = Long.parseLong(args[4]);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
    p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Long.toString(268435456L));
    if (txn > 0) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-perf-" + ProcessHandle.current().pid());
    byte[] value = new byte[size];
    Arrays.fill(value, (byte) 'r');
    AtomicLong failed = new AtomicLong();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      if (txn > 0) producer.initTransactions();
      long start = System.nanoTime();
      for (long i = 0; i < n; ) {
        if (txn > 0) producer.beginTransaction();
        long end = txn > 0 ? Math.min(n, i + txn) : n;
        for (; i < end; i++) {
          producer.send(
              new ProducerRecord<>(topic, value),
              (md, e) -> {
                if (e != null && failed.getAndIncrement() == 0) System.err.println("send failed: " + e);
              });
        }
        if (txn > 0) producer.commitTransaction();
      }
      producer.flush();
      double seconds = (System.nanoTime() - start) / 1e9;
      if (failed.get() > 0) {
        System.err.println(failed.get() + " sends failed");
        System.exit(1);
      }
      System.out.printf("{\"n\":%d,\"bytes\":%d,\"first_s\":%.6f}%n", n, n * size, seconds);
    }
  }
}
