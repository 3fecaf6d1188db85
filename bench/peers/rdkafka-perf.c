/*
 * rdkafka-perf: librdkafka as fast as it goes, for bench/peers (the "librdkafka (C)" client), so that
 * Weir and Apache Kafka are measured with the same program and settings. kcat formats and writes
 * every record it consumes (~1.2-1.3 M records/s here, while the broker idled), this counts them.
 *
 *   rdkafka-perf consume BOOTSTRAP TOPIC N [callback|batch]
 *   rdkafka-perf produce BOOTSTRAP TOPIC N SIZE ACKS [TXN_RECORDS]
 *
 * consume: every partition of TOPIC from its first offset, no group (nothing joined or committed),
 * kcat's fetch settings (bench/peers/peers.ts kcatConsume); counts records and value bytes and exits
 * after N. `callback` (the default) is kcat's own API, the legacy simple consumer
 * (rd_kafka_consume_start_queue + rd_kafka_consume_callback_queue, which rdkafka.h calls faster than
 * its batch and single-message calls); `batch` is rd_kafka_assign + rd_kafka_consume_batch_queue on
 * the consumer queue.
 * produce: N records of SIZE bytes ('r' repeated: the same values as peers.ts's kcat file, one
 * buffer in memory that librdkafka references, no copy) with rd_kafka_produce in a tight loop
 * (polling on a full queue), kcat's producer settings (bench/kcat-producer.ts), then waits for every
 * delivery report; fails on any delivery error. With TXN_RECORDS > 0 the producer is transactional
 * (a transactional.id of its own, init_transactions before the clock starts) and commits a
 * transaction every TXN_RECORDS records (rd_kafka_commit_transaction waits for their delivery).
 *
 * Prints one JSON line: n, bytes, "first_s" (consume: from the first record received to the Nth;
 * produce: from the first produce call to the last delivery report), "start_s" (from the start of
 * this process, i.e. including client setup, connection and metadata: comparable to kcat's figure,
 * which peers.ts times from outside), and the librdkafka version it runs with.
 * RDKAFKA_PERF_CONFIG="k=v,..." adds librdkafka settings (experiments only; peers.ts sets none). Built by
 * bench/peers/install.sh with `cc -O2` against Debian's librdkafka-dev (the library kcat uses).
 */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t_start;
static double t_first;
static long long target;
static long long count;
static long long bytes;
static long long errors;
static char errstr[512];

static void die(const char *what) {
  fprintf(stderr, "rdkafka-perf: %s\n", what);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v) {
  if (rd_kafka_conf_set(conf, k, v, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) die(errstr);
}

/* RDKAFKA_PERF_CONFIG="k=v,k=v": extra librdkafka settings, for experiments (e.g. debug=fetch). */
static void extra_config(rd_kafka_conf_t *conf) {
  const char *env = getenv("RDKAFKA_PERF_CONFIG");
  if (env == NULL || *env == '\0') return;
  char *copy = strdup(env);
  for (char *kv = strtok(copy, ","); kv != NULL; kv = strtok(NULL, ",")) {
    char *eq = strchr(kv, '=');
    if (eq == NULL) die("RDKAFKA_PERF_CONFIG: expected k=v,k=v");
    *eq = '\0';
    set(conf, kv, eq + 1);
  }
  free(copy);
}

static void report(double t_end) {
  printf("{\"n\":%lld,\"bytes\":%lld,\"first_s\":%.6f,\"start_s\":%.6f,\"librdkafka\":\"%s\"}\n", count,
         bytes, t_end - t_first, t_end - t_start, rd_kafka_version_str());
}

/* ------------------------------------------------------------------------------------------ */
/* consume                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void on_message(rd_kafka_message_t *m, void *opaque) {
  (void)opaque;
  if (m->err) {
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
    fprintf(stderr, "rdkafka-perf: consume error: %s\n", rd_kafka_message_errstr(m));
    errors++;
    return;
  }
  if (count == 0) t_first = now();
  count++;
  bytes += (long long)m->len;
}

/* The partition count of a topic, from the cluster's metadata (waits up to 10 s for it). */
static int partitions_of(rd_kafka_t *rk, rd_kafka_topic_t *rkt) {
  const struct rd_kafka_metadata *md;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
  if (err) die(rd_kafka_err2str(err));
  if (md->topic_cnt != 1 || md->topics[0].err) die("topic not found in metadata");
  int n = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  return n;
}

static int consume(const char *bootstrap, const char *topic, const char *mode) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstrap);
  /* kcat -C's settings in bench/peers/peers.ts (kcatConsume). */
  set(conf, "fetch.max.bytes", "52428800");
  set(conf, "fetch.message.max.bytes", "10485760");
  set(conf, "queued.max.messages.kbytes", "1048576");
  set(conf, "enable.auto.commit", "false");
  set(conf, "enable.auto.offset.store", "false");
  set(conf, "group.id", "rdkafka-perf"); /* required by the consumer handle; never joined */
  extra_config(conf);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == NULL) die(errstr);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  int parts = partitions_of(rk, rkt);
  const int batch = strcmp(mode, "batch") == 0;
  rd_kafka_queue_t *q;
  if (batch) {
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
      rd_kafka_topic_partition_list_add(list, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_resp_err_t err = rd_kafka_assign(rk, list);
    if (err) die(rd_kafka_err2str(err));
    rd_kafka_topic_partition_list_destroy(list);
    q = rd_kafka_queue_get_consumer(rk);
  } else {
    q = rd_kafka_queue_new(rk);
    for (int p = 0; p < parts; p++)
      if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, q) == -1)
        die(rd_kafka_err2str(rd_kafka_last_error()));
  }
  enum { MAX = 10000 };
  static rd_kafka_message_t *msgs[MAX];
  double idle_since = now();
  while (count < target) {
    long long before = count;
    if (batch) {
      ssize_t got = rd_kafka_consume_batch_queue(q, 1000, msgs, MAX);
      if (got < 0) die(rd_kafka_err2str(rd_kafka_last_error()));
      for (ssize_t i = 0; i < got; i++) {
        on_message(msgs[i], NULL);
        rd_kafka_message_destroy(msgs[i]);
      }
    } else if (rd_kafka_consume_callback_queue(q, 1000, on_message, NULL) < 0) {
      die(rd_kafka_err2str(rd_kafka_last_error()));
    }
    if (errors > 0) die("consume errors");
    double t = now();
    if (count > before) idle_since = t;
    else if (t - idle_since > 30) {
      fprintf(stderr, "rdkafka-perf: nothing for 30 s after %lld of %lld records\n", count, target);
      return 1;
    }
  }
  double t_end = now();
  report(t_end);
  fflush(stdout);
  /* Leave without closing: stopping the fetchers and the handle is not part of the figure. */
  _exit(0);
}

/* ------------------------------------------------------------------------------------------ */
/* produce                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static long long delivered;
static double t_last_dr;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    if (errors++ == 0) fprintf(stderr, "rdkafka-perf: delivery error: %s\n", rd_kafka_err2str(m->err));
    return;
  }
  delivered++;
  bytes += (long long)m->len;
  t_last_dr = now();
}

static void txn_check(rd_kafka_error_t *e, const char *what) {
  if (e == NULL) return;
  fprintf(stderr, "rdkafka-perf: %s: %s\n", what, rd_kafka_error_string(e));
  exit(1);
}

static int produce(const char *bootstrap, const char *topic, long long size, const char *acks,
                   long long txn) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstrap);
  /* kcat -P's settings (bench/kcat-producer.ts). */
  set(conf, "acks", acks);
  set(conf, "linger.ms", "5");
  set(conf, "batch.size", "1000000");
  set(conf, "batch.num.messages", "100000");
  set(conf, "queue.buffering.max.messages", "2000000");
  set(conf, "queue.buffering.max.kbytes", "2097151");
  if (txn > 0) {
    char id[64];
    snprintf(id, sizeof id, "rdkafka-perf-%d", (int)getpid());
    set(conf, "transactional.id", id);
  }
  extra_config(conf);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) die(errstr);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  char *value = malloc((size_t)size);
  if (value == NULL) die("out of memory");
  memset(value, 'r', (size_t)size);
  if (txn > 0) txn_check(rd_kafka_init_transactions(rk, 30000), "init_transactions");
  t_first = now();
  int open = 0;
  for (long long i = 0; i < target;) {
    if (txn > 0 && !open) {
      txn_check(rd_kafka_begin_transaction(rk), "begin_transaction");
      open = 1;
    }
    /* No RD_KAFKA_MSG_F_COPY: librdkafka references the one buffer, which outlives every send. */
    if (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, 0, value, (size_t)size, NULL, 0, NULL) == -1) {
      rd_kafka_resp_err_t err = rd_kafka_last_error();
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) die(rd_kafka_err2str(err));
      rd_kafka_poll(rk, 10);
      continue;
    }
    i++;
    if ((i & 0xffff) == 0) rd_kafka_poll(rk, 0);
    if (txn > 0 && (i % txn == 0 || i == target)) {
      txn_check(rd_kafka_commit_transaction(rk, 60000), "commit_transaction");
      open = 0;
    }
  }
  rd_kafka_resp_err_t err = rd_kafka_flush(rk, 120000);
  if (err) die(rd_kafka_err2str(err));
  if (errors > 0 || delivered != target) {
    fprintf(stderr, "rdkafka-perf: %lld of %lld delivered, %lld errors\n", delivered, target, errors);
    return 1;
  }
  count = delivered;
  report(t_last_dr);
  fflush(stdout);
  _exit(0);
}

int main(int argc, char **argv) {
  t_start = now();
  signal(SIGPIPE, SIG_IGN);
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "consume") == 0) {
    target = atoll(argv[4]);
    return consume(argv[2], argv[3], argc == 6 ? argv[5] : "callback");
  }
  if ((argc == 7 || argc == 8) && strcmp(argv[1], "produce") == 0) {
    target = atoll(argv[4]);
    return produce(argv[2], argv[3], atoll(argv[5]), argv[6], argc == 8 ? atoll(argv[7]) : 0);
  }
  fprintf(stderr,
          "usage: rdkafka-perf consume BOOTSTRAP TOPIC N [callback|batch]\n"
          "       rdkafka-perf produce BOOTSTRAP TOPIC N SIZE ACKS [TXN_RECORDS]\n");
  return 2;
}
