// peers-client: the benchmark driver of bench/peers for the systems that are not Kafka-compatible:
// Redis Streams (a raw RESP pipeline), NATS JetStream (the official nats.go client: async publish
// with many acks in flight, a pull consumer) and RabbitMQ Streams (the stream-protocol client); and
// franz-go for Kafka and Weir alike (-system kafka, kafka.go: the `franz` client).
//
//	peers-client -system redis|nats|rabbit|kafka -mode produce|consume -addr 127.0.0.1:PORT \
//	    -stream NAME -n RECORDS -size BYTES [-rate RECORDS_PER_S]
//	    [-acks 1|all] [-inflight N] [-fetch partition|record|poll-records|iter] [-pools] [-crc=false] [-ttfb]   (kafka)
//
// produce: sends n records of size bytes as fast as it can (rate 0) or at a fixed rate, and times
// each record from its send to its ack (the server's confirmation). consume: reads n records from
// the start of the stream. Prints one JSON line: n, bytes, seconds, p50 and p99 (ms, produce only);
// kafka adds first_s and start_s (seconds from the first record / send and from the process start:
// "seconds" is first_s), cpu_s (this process's user + system CPU) and rss (its peak, bytes); its
// consume also fetches, fetch_s and fetch_bytes (Fetch responses, their summed round trips, bytes).
// It only ever connects to the address it is given (loopback in bench/peers).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"time"
)

type result struct {
	N       int      `json:"n"`
	Bytes   int64    `json:"bytes"`
	Seconds float64  `json:"seconds"`
	P50     *float64 `json:"p50,omitempty"`
	P99     *float64 `json:"p99,omitempty"`
	FirstS  *float64 `json:"first_s,omitempty"`
	StartS  *float64 `json:"start_s,omitempty"`
	CPU     *float64 `json:"cpu_s,omitempty"`
	RSS     int64    `json:"rss,omitempty"`
	// kafka consume: Fetch responses read, the sum of their round trips (request written to
	// response read) and their bytes.
	Fetches    int64    `json:"fetches,omitempty"`
	FetchS     *float64 `json:"fetch_s,omitempty"`
	FetchBytes int64    `json:"fetch_bytes,omitempty"`
	// kafka consume -ttfb: the summed times from writing each Fetch to its response's first byte.
	FirstByteS *float64 `json:"first_byte_s,omitempty"`
}

type options struct {
	addr   string
	stream string
	n      int
	size   int
	rate   float64
}

// latencies collects produce-to-ack times.
type latencies struct{ xs []time.Duration }

func (l *latencies) add(d time.Duration) { l.xs = append(l.xs, d) }

func (l *latencies) fill(r *result) {
	if len(l.xs) == 0 {
		return
	}
	sort.Slice(l.xs, func(i, j int) bool { return l.xs[i] < l.xs[j] })
	q := func(f float64) *float64 {
		i := int(f * float64(len(l.xs)))
		if i >= len(l.xs) {
			i = len(l.xs) - 1
		}
		ms := float64(l.xs[i].Nanoseconds()) / 1e6
		return &ms
	}
	r.P50, r.P99 = q(0.5), q(0.99)
}

// pacer releases records at a fixed rate (one burst per millisecond), or all at once for rate 0.
type pacer struct {
	start time.Time
	rate  float64
}

// allow returns how many more records may be sent now, given sent so far (blocks until >= 1).
func (p pacer) allow(sent, n int) int {
	if p.rate <= 0 {
		return n - sent
	}
	for {
		due := int(time.Since(p.start).Seconds()*p.rate) + 1
		if due > n {
			due = n
		}
		if due > sent {
			return due - sent
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func value(size int) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = 'x'
	}
	return v
}

func main() {
	system := flag.String("system", "", "redis | nats | rabbit | kafka")
	mode := flag.String("mode", "", "produce | consume | create")
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:6379", "server address")
	flag.StringVar(&o.stream, "stream", "bench", "stream name")
	flag.IntVar(&o.n, "n", 1000, "records")
	flag.IntVar(&o.size, "size", 100, "record value bytes")
	flag.Float64Var(&o.rate, "rate", 0, "records/s (0: as fast as possible)")
	var k kafkaOptions
	flag.StringVar(&k.acks, "acks", "1", "kafka produce: 1 | all")
	flag.IntVar(&k.inflight, "inflight", 5, "kafka produce: produce requests in flight per broker")
	flag.StringVar(&k.fetch, "fetch", "partition", "kafka consume: partition | record | poll-records | iter")
	flag.BoolVar(&k.pools, "pools", false, "kafka consume: kgo.WithPools with a record-slice pool")
	flag.BoolVar(&k.crc, "crc", true, "kafka consume: check fetched batches' CRC-32C")
	flag.BoolVar(&k.ttfb, "ttfb", false, "kafka consume: time each Fetch's first response byte (first_byte_s)")
	flag.Parse()
	// PEERS_CPUPROFILE=FILE: a Go CPU profile of the run (experiments; `go tool pprof -top`).
	if f := os.Getenv("PEERS_CPUPROFILE"); f != "" {
		out, err := os.Create(f)
		if err == nil && pprof.StartCPUProfile(out) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	var r result
	var err error
	switch *system + " " + *mode {
	case "redis produce":
		r, err = redisProduce(o)
	case "redis consume":
		r, err = redisConsume(o)
	case "nats create":
		err = natsCreate(o)
	case "nats produce":
		r, err = natsProduce(o)
	case "nats consume":
		r, err = natsConsume(o)
	case "rabbit create":
		err = rabbitCreate(o)
	case "rabbit produce":
		r, err = rabbitProduce(o)
	case "rabbit consume":
		r, err = rabbitConsume(o)
	case "kafka produce":
		r, err = kafkaProduce(o, k)
	case "kafka consume":
		r, err = kafkaConsume(o, k)
	default:
		err = fmt.Errorf("unknown -system %q -mode %q", *system, *mode)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "peers-client:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

func splitAddr(addr string) (string, int) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			port := 0
			for _, c := range addr[i+1:] {
				port = port*10 + int(c-'0')
			}
			return addr[:i], port
		}
	}
	return addr, 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
