import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams word count with processing.guarantee=exactly_once_v2 (test/faults/streams-exactly-once.test.ts):
 * lines of INPUT split into words, re-keyed by word through a repartition topic, counted in an
 * in-memory store (so that a restarted instance rebuilds it from the changelog, read_committed), the
 * counts written to OUTPUT. Runs until killed; prints each state change as "STATE <new>".
 *
 * Environment: BOOTSTRAP, APP_ID, STATE_DIR, INPUT, OUTPUT, REPLICATION (of the internal topics).
 */
public final class StreamsWordCount {
  private StreamsWordCount() {}

  public static void main(String[] args) throws InterruptedException {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, System.getenv("APP_ID"));
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, System.getenv("BOOTSTRAP"));
    p.put(StreamsConfig.STATE_DIR_CONFIG, Path.of(System.getenv("STATE_DIR")).toString());
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.parseInt(System.getenv("REPLICATION")));
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    // A killed instance's member leaves the group after this, not Kafka's 45 s default.
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
    // The rebalance a restarted instance starts waits this long (Streams' default 300 s) for the
    // killed instance's member to rejoin.
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG), 15000);
    // A transaction the killed instance left open is aborted by the coordinator after this, if a
    // restarted instance does not fence it first.
    p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10000);
    p.put(StreamsConfig.producerPrefix(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG), 60000);

    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(System.getenv("INPUT"), Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
        .map((k, word) -> KeyValue.pair(word, word))
        .groupByKey(Grouped.with("words", Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .to(System.getenv("OUTPUT"), Produced.with(Serdes.String(), Serdes.Long()));

    KafkaStreams streams = new KafkaStreams(builder.build(), p);
    CountDownLatch dead = new CountDownLatch(1);
    streams.setStateListener((now, before) -> {
      System.out.println("STATE " + now);
      if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) dead.countDown();
    });
    streams.setUncaughtExceptionHandler(e -> {
      System.out.println("EXCEPTION " + e);
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
    streams.start();
    dead.await();
  }
}
