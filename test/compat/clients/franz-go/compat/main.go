// franz-go (kgo, kadm) against Weir, for test/compat/franz-go.test.ts. One command a run; it prints
// one JSON object on its last line. The records follow test/compat/client-matrix.ts (keys, values,
// headers, timestamps). Env: BOOTSTRAP; SCRAM_USER and SCRAM_PASSWORD (SCRAM-SHA-512) and
// TLS_CA (a PEM file: TLS, the server verified against it) for a secured listener.
//
//	compat admin <prefix>
//	compat produce <topic> <partitions>     every codec, the default producer (idempotent, acks=all)
//	compat idempotent <topic> <count>       one partition, many batches in flight
//	compat more <topic> <count>             plain records (keys more-<i>), the default producer
//	compat consume <topic> <group>          ConsumerGroup member until the end offsets, then commit
//	compat read <topic>                     group-less (ConsumePartitions), start to end offsets
//	compat offsets <topic> <timestamp>      kadm start, end and after-milli offsets; kgo AfterMilli
//	compat committed <topic> <group>        kadm FetchOffsets, DescribeGroups, DescribeProducers
//	compat transact <in> <out> <group> <id> GroupTransactSession consume-transform-produce (txn.go)
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const (
	perCodec = 30
	baseTs   = int64(1_600_000_000_000)
)

var (
	bootstrap = envOr("BOOTSTRAP", "127.0.0.1:9092")
	codecs    = []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
)

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

var started = time.Now()

// trace notes a step on stderr, with the time since the start (the test shows stderr on failure).
func trace(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%6d ms  %s\n", time.Since(started).Milliseconds(), fmt.Sprintf(format, args...))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// --- the records of client-matrix.ts -----------------------------------------------------------

func key(codec string, i int) []byte { return []byte(fmt.Sprintf("k-%s-%d", codec, i)) }

func value(codec string, i int) []byte {
	text := fmt.Sprintf("%s-%d:%s", codec, i, strings.Repeat("weir-compat-", 8))
	return append([]byte(text), 0, 0xff, byte(i))
}

func record(topic string, c, i int) *kgo.Record {
	codec := codecs[c].name
	return &kgo.Record{
		Topic:     topic,
		Key:       key(codec, i),
		Value:     value(codec, i),
		Timestamp: time.UnixMilli(baseTs + int64(c)*1000 + int64(i)),
		Headers: []kgo.RecordHeader{
			{Key: "codec", Value: []byte(codec)},
			{Key: "index", Value: []byte(strconv.Itoa(i))},
			{Key: "bin", Value: []byte{0, 0xff, byte(i)}},
		},
	}
}

// --- JSON out ----------------------------------------------------------------------------------

type readRecord struct {
	Partition  int32       `json:"partition"`
	Offset     int64       `json:"offset"`
	Key        string      `json:"key"`
	Value      string      `json:"value"`
	Headers    [][2]string `json:"headers"`
	Timestamp  int64       `json:"timestamp"`
	ProducerID int64       `json:"producerId"`
}

func toJSON(r *kgo.Record) readRecord {
	headers := make([][2]string, 0, len(r.Headers))
	for _, h := range r.Headers {
		headers = append(headers, [2]string{h.Key, hex.EncodeToString(h.Value)})
	}
	return readRecord{r.Partition, r.Offset, hex.EncodeToString(r.Key), hex.EncodeToString(r.Value), headers,
		r.Timestamp.UnixMilli(), r.ProducerID}
}

type byPartition map[string]int64

func listed(o kadm.ListedOffsets, topic string) byPartition {
	out := byPartition{}
	o.Each(func(l kadm.ListedOffset) {
		if l.Topic == topic {
			must(l.Err)
			out[strconv.Itoa(int(l.Partition))] = l.Offset
		}
	})
	return out
}

// --- clients -----------------------------------------------------------------------------------

// security is the SASL and TLS the environment asks for (none by default).
func security() []kgo.Opt {
	var opts []kgo.Opt
	if user := os.Getenv("SCRAM_USER"); user != "" {
		auth := scram.Auth{User: user, Pass: os.Getenv("SCRAM_PASSWORD")}
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	}
	if ca := os.Getenv("TLS_CA"); ca != "" {
		pem, err := os.ReadFile(ca)
		must(err)
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			must(fmt.Errorf("no certificate in %s", ca))
		}
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	return opts
}

func client(opts ...kgo.Opt) *kgo.Client {
	base := append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID("weir-franz-go")}, security()...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	must(err)
	return cl
}

// admin is a kadm client whose cached metadata (ListTopics) is at most 100 ms old, not 5 s, so that
// it sees a topic deleted right away.
func admin() *kadm.Client { return kadm.NewClient(client(kgo.MetadataMinAge(100 * time.Millisecond))) }

func errorName(err error) string {
	if err == nil {
		return "none"
	}
	var k *kerr.Error
	if errors.As(err, &k) {
		return k.Message
	}
	return err.Error()
}

func topicNames(ctx context.Context, adm *kadm.Client) []string {
	topics, err := adm.ListTopics(ctx)
	must(err)
	names := topics.Names()
	sort.Strings(names)
	return names
}

// readUntil polls until every partition's next offset reached its end; start gives where a
// partition begins when nothing is read from it.
func readUntil(ctx context.Context, cl *kgo.Client, start, end byPartition) []readRecord {
	next := byPartition{}
	for p, o := range start {
		next[p] = o
	}
	out := []readRecord{}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		done := true
		for p, e := range end {
			if next[p] < e {
				done = false
			}
		}
		if done {
			return out
		}
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			must(fmt.Errorf("not at the end offsets %v within 60 s (at %v)", end, next))
		}
		fetches.EachError(func(t string, p int32, err error) { must(fmt.Errorf("fetch %s-%d: %w", t, p, err)) })
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, toJSON(r))
			next[strconv.Itoa(int(r.Partition))] = r.Offset + 1
		})
	}
}

// --- commands ----------------------------------------------------------------------------------

func adminCommand(ctx context.Context, prefix string) any {
	adm := admin()
	defer adm.Close()
	a, b := prefix+"-a", prefix+"-b"
	compact := "compact"
	_, err := adm.CreateTopic(ctx, 3, -1, nil, a)
	must(err)
	_, err = adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, b)
	must(err)
	trace("created %s and %s", a, b)
	_, again := adm.CreateTopic(ctx, 3, -1, nil, a)
	trace("created %s again: %v", a, again)
	listedNames := topicNames(ctx, adm)
	described, err := adm.ListTopics(ctx, a)
	must(err)
	partitions := [][4]int{}
	for _, p := range described[a].Partitions.Sorted() {
		partitions = append(partitions, [4]int{int(p.Partition), int(p.Leader), len(p.Replicas), len(p.ISR)})
	}
	trace("listed and described")
	retention := "86400000"
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, a)
	must(err)
	for _, r := range altered {
		must(r.Err)
	}
	// The change is committed when AlterConfigs answers, but the broker that answers a describe
	// applies metadata on its own (in a cluster, maybe not yet): read until it shows, as for the
	// partitions below.
	values := map[string]string{}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		configs, err := adm.DescribeTopicConfigs(ctx, a, b)
		must(err)
		for _, rc := range configs {
			must(rc.Err)
			for _, c := range rc.Configs {
				if (rc.Name == a && c.Key == "retention.ms") || (rc.Name == b && c.Key == "cleanup.policy") {
					values[rc.Name] = c.MaybeValue()
				}
			}
		}
		if values[a] == retention {
			break
		}
	}
	trace("altered and described configs")
	grown, err := adm.UpdatePartitions(ctx, 5, a)
	must(err)
	must(grown[a].Err)
	partitionsAfter := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		d, err := adm.ListTopics(ctx, a)
		must(err)
		partitionsAfter = len(d[a].Partitions)
		if partitionsAfter == 5 {
			break
		}
	}
	trace("%s has %d partitions", a, partitionsAfter)
	deleted, err := adm.DeleteTopics(ctx, b)
	must(err)
	must(deleted[b].Err)
	afterDelete := topicNames(ctx, adm)
	for deadline := time.Now().Add(10 * time.Second); contains(afterDelete, b) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		afterDelete = topicNames(ctx, adm)
	}
	trace("deleted %s", b)
	gone, err := adm.ListTopics(ctx, b)
	must(err)
	return map[string]any{
		"again": errorName(again), "listed": listedNames, "partitions": partitions, "retention": values[a],
		"cleanup": values[b], "partitionsAfter": partitionsAfter, "listedAfterDelete": afterDelete,
		"describeDeleted": errorName(gone[b].Err),
	}
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

type sentRecord struct {
	Key       string `json:"key"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
}

func more(ctx context.Context, topic string, count int) any {
	producer := client()
	defer producer.Close()
	records := make([]*kgo.Record, 0, count)
	for i := 0; i < count; i++ {
		b := []byte(fmt.Sprintf("more-%d", i))
		records = append(records, &kgo.Record{Topic: topic, Key: b, Value: b})
	}
	results := producer.ProduceSync(ctx, records...)
	must(results.FirstErr())
	sent := []sentRecord{}
	for _, r := range results {
		sent = append(sent, sentRecord{hex.EncodeToString(r.Record.Key), r.Record.Partition, r.Record.Offset, r.Record.Timestamp.UnixMilli()})
	}
	return map[string]any{"sent": sent}
}

func produce(ctx context.Context, topic string, partitions int) any {
	adm := admin()
	_, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	must(err)
	adm.Close()
	sent := []sentRecord{}
	for c, codec := range codecs {
		// The defaults (idempotent, acks=all, the sticky key partitioner) but the codec.
		producer := client(kgo.ProducerBatchCompression(codec.codec), kgo.ProducerLinger(50*time.Millisecond))
		records := make([]*kgo.Record, 0, perCodec)
		for i := 0; i < perCodec; i++ {
			records = append(records, record(topic, c, i))
		}
		results := producer.ProduceSync(ctx, records...)
		must(results.FirstErr())
		for _, r := range results {
			sent = append(sent, sentRecord{hex.EncodeToString(r.Record.Key), r.Record.Partition, r.Record.Offset, r.Record.Timestamp.UnixMilli()})
		}
		producer.Close()
	}
	return map[string]any{"sent": sent}
}

func idempotent(ctx context.Context, topic string, count int) any {
	adm := admin()
	defer adm.Close()
	_, err := adm.CreateTopic(ctx, 1, -1, nil, topic)
	must(err)
	// Idempotent by default, with 5 requests in flight (Kafka 1+); small batches, so that many are.
	producer := client(kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(512), kgo.RequiredAcks(kgo.AllISRAcks()))
	offsets := make([]int64, count)
	done := make(chan struct{}, count)
	for i := 0; i < count; i++ {
		i := i
		producer.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprintf("i%d", i)), Value: []byte(fmt.Sprintf("v%d", i))},
			func(r *kgo.Record, err error) {
				must(err)
				offsets[i] = r.Offset
				done <- struct{}{}
			})
	}
	for i := 0; i < count; i++ {
		<-done
	}
	producer.Close()
	return map[string]any{"offsets": offsets, "producers": producers(ctx, adm, topic)}
}

func producers(ctx context.Context, adm *kadm.Client, topic string) []map[string]any {
	described, err := adm.DescribeProducers(ctx, topicSet(ctx, adm, topic))
	must(err)
	out := []map[string]any{}
	described.EachPartition(func(p kadm.DescribedProducersPartition) {
		must(p.Err)
		for _, s := range p.ActiveProducers.Sorted() {
			out = append(out, map[string]any{"partition": p.Partition, "producerId": s.ProducerID, "epoch": s.ProducerEpoch, "lastSequence": s.LastSequence})
		}
	})
	return out
}

func topicSet(ctx context.Context, adm *kadm.Client, topic string) kadm.TopicsSet {
	d, err := adm.ListTopics(ctx, topic)
	must(err)
	return d.TopicsSet()
}

func ends(ctx context.Context, adm *kadm.Client, topic string) byPartition {
	o, err := adm.ListEndOffsets(ctx, topic)
	must(err)
	return listed(o, topic)
}

func committedOffsets(ctx context.Context, adm *kadm.Client, group, topic string) byPartition {
	// kadm returns a coordinator error as it comes (no retry): COORDINATOR_NOT_AVAILABLE while a
	// new __consumer_offsets is being created and loaded, as from Kafka. Retry those, as an app does.
	var fetched kadm.OffsetResponses
	var err error
	for try := 0; ; try++ {
		fetched, err = adm.FetchOffsets(ctx, group)
		if err == nil {
			err = fetched.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || try == 50 {
			break
		}
		trace("FetchOffsets %s: %v; retrying", group, err)
		time.Sleep(100 * time.Millisecond)
	}
	must(err)
	out := byPartition{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[strconv.Itoa(int(o.Partition))] = o.At
		}
	})
	return out
}

func consume(ctx context.Context, topic, group string) any {
	adm := admin()
	defer adm.Close()
	end := ends(ctx, adm, topic)
	start := committedOffsets(ctx, adm, group, topic)
	for p := range end {
		if _, ok := start[p]; !ok {
			start[p] = 0
		}
	}
	cl := client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())
	records := readUntil(ctx, cl, start, end)
	must(cl.CommitUncommittedOffsets(ctx))
	cl.LeaveGroup()
	cl.Close()
	return map[string]any{"records": records, "committed": committedOffsets(ctx, adm, group, topic)}
}

func read(ctx context.Context, topic string) any {
	adm := admin()
	defer adm.Close()
	end := ends(ctx, adm, topic)
	start := byPartition{}
	assign := map[int32]kgo.Offset{}
	for p := range end {
		n, _ := strconv.Atoi(p)
		assign[int32(n)] = kgo.NewOffset().AtStart()
		start[p] = 0
	}
	cl := client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	defer cl.Close()
	return map[string]any{"records": readUntil(ctx, cl, start, end)}
}

func offsets(ctx context.Context, topic string, ts int64) any {
	adm := admin()
	defer adm.Close()
	starts, err := adm.ListStartOffsets(ctx, topic)
	must(err)
	after, err := adm.ListOffsetsAfterMilli(ctx, ts, topic)
	must(err)
	byTimeTs := byPartition{}
	after.Each(func(l kadm.ListedOffset) { byTimeTs[strconv.Itoa(int(l.Partition))] = l.Timestamp })
	// The consumer's own lookup: start each partition after the millisecond; the first record read.
	end := ends(ctx, adm, topic)
	assign := map[int32]kgo.Offset{}
	for p := range end {
		n, _ := strconv.Atoi(p)
		assign[int32(n)] = kgo.NewOffset().AfterMilli(ts)
	}
	cl := client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	defer cl.Close()
	consumerByTime := byPartition{}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(consumerByTime) < len(end) && waitCtx.Err() == nil {
		cl.PollFetches(waitCtx).EachRecord(func(r *kgo.Record) {
			p := strconv.Itoa(int(r.Partition))
			if _, ok := consumerByTime[p]; !ok {
				consumerByTime[p] = r.Offset
			}
		})
	}
	return map[string]any{"earliest": listed(starts, topic), "latest": end, "byTime": listed(after, topic),
		"byTimeTimestamp": byTimeTs, "consumerByTime": consumerByTime}
}

func committed(ctx context.Context, topic, group string) any {
	adm := admin()
	defer adm.Close()
	described, err := adm.DescribeGroups(ctx, group)
	must(err)
	return map[string]any{"committed": committedOffsets(ctx, adm, group, topic), "groupState": described[group].State,
		"producers": producers(ctx, adm, topic)}
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func main() {
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)
	must(out.Encode(map[string]string{"client": "franz-go", "version": version()}))
	args := os.Args[1:]
	number := func(s string) int {
		n, err := strconv.Atoi(s)
		must(err)
		return n
	}
	var result any
	switch args[0] {
	case "admin":
		result = adminCommand(ctx, args[1])
	case "produce":
		result = produce(ctx, args[1], number(args[2]))
	case "idempotent":
		result = idempotent(ctx, args[1], number(args[2]))
	case "more":
		result = more(ctx, args[1], number(args[2]))
	case "consume":
		result = consume(ctx, args[1], args[2])
	case "read":
		result = read(ctx, args[1])
	case "offsets":
		ts, err := strconv.ParseInt(args[2], 10, 64)
		must(err)
		result = offsets(ctx, args[1], ts)
	case "committed":
		result = committed(ctx, args[1], args[2])
	case "transact":
		result = transact(ctx, args[1], args[2], args[3], args[4])
	default:
		must(fmt.Errorf("unknown command %s", args[0]))
	}
	must(out.Encode(result))
}
