package main

// Kafka and Weir through franz-go (github.com/twmb/franz-go, kgo), the `franz` client of
// bench/peers, with the settings of the other Kafka clients there (bench/kcat-producer.ts, kcat -C
// in peers.ts): nothing per record but what the client does itself and a count.
//
// produce: n records of size bytes, each a kgo.Record over one shared value buffer ('r' repeated,
// as rdkafka-perf), Produce in a tight loop (it blocks while MaxBufferedRecords are buffered), then
// Flush; timed from the first Produce call to the end of Flush (every promise called). linger 5 ms,
// batches of up to 1,000,000 bytes (under Kafka's default message.max.bytes, 1,048,588), no
// compression, no idempotence, up to 2,000,000 records buffered and -inflight (5, as the Java client's
// max.in.flight.requests.per.connection in peers.ts) produce requests in flight.
// With -rate, records go out at that rate (linger 1 ms, as bench/broker-client.py's fixed-rate
// producer) and each is timed from its Produce call (the record's Timestamp, which the client sets)
// to its promise: p50 and p99.
//
// consume: every partition of the topic from its first offset, no group (ConsumeTopics: the direct
// consumer; nothing joined or committed), fetch max 50 MB, 10 MB per partition; counts records and
// value bytes until n. -fetch picks how records are taken from the client (see consumeLoop), -pools
// adds kgo.WithPools with a record-slice pool (each record is Recycled once counted), -crc=false
// skips the client's CRC-32C check of fetched batches (librdkafka's check.crcs is off by default).
// Timed from the first record received ("first_s") and from the process start ("start_s"), as
// bench/peers/rdkafka-perf.c.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// processStart: package variables are initialised before main, as early as this program can tell.
var processStart = time.Now()

type kafkaOptions struct {
	acks     string // "1" or "all"
	inflight int    // produce requests in flight per broker
	fetch    string // consume: "partition", "record", "poll-records", "iter"
	pools    bool
	ttfb     bool
	crc      bool
}

func kafkaSeeds(addr string) kgo.Opt {
	return kgo.SeedBrokers(strings.Split(addr, ",")...)
}

// cpuSeconds is this process's user + system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// maxRSS is this process's peak resident set in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

func kafkaFill(r *result, first, end time.Time) {
	f := end.Sub(first).Seconds()
	s := end.Sub(processStart).Seconds()
	r.Seconds = f
	r.FirstS = &f
	r.StartS = &s
	c := cpuSeconds()
	r.CPU = &c
	r.RSS = maxRSS()
}

func kafkaProduce(o options, k kafkaOptions) (result, error) {
	acks := kgo.LeaderAck()
	switch k.acks {
	case "1":
	case "all", "-1":
		acks = kgo.AllISRAcks()
	default:
		return result{}, fmt.Errorf("-acks %q: expected 1 or all", k.acks)
	}
	linger := 5 * time.Millisecond
	if o.rate > 0 {
		linger = time.Millisecond
	}
	cl, err := kgo.NewClient(
		kafkaSeeds(o.addr),
		kgo.DefaultProduceTopic(o.stream),
		kgo.RequiredAcks(acks),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(linger),
		kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(2_000_000),
		kgo.MaxProduceRequestsInflightPerBroker(k.inflight),
	)
	if err != nil {
		return result{}, err
	}
	ctx := context.Background()
	// Metadata first, so that the figure starts at the first send (as rdkafka-perf's, whose
	// rd_kafka_produce only queues while the client connects).
	if err := cl.Ping(ctx); err != nil {
		return result{}, err
	}
	v := make([]byte, o.size)
	for i := range v {
		v[i] = 'r'
	}
	var delivered, failed atomic.Int64
	var firstErr atomic.Value
	var lat latencies
	var latMu sync.Mutex
	timed := o.rate > 0
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			if failed.Add(1) == 1 {
				firstErr.Store(err)
			}
			return
		}
		delivered.Add(1)
		if timed {
			d := time.Since(r.Timestamp)
			latMu.Lock()
			lat.add(d)
			latMu.Unlock()
		}
	}
	start := time.Now()
	p := pacer{start, o.rate}
	for sent := 0; sent < o.n; {
		for k := p.allow(sent, o.n); k > 0; k-- {
			cl.Produce(ctx, &kgo.Record{Value: v}, promise)
			sent++
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return result{}, err
	}
	end := time.Now()
	if failed.Load() > 0 {
		return result{}, fmt.Errorf("%d of %d records failed, the first: %v", failed.Load(), o.n, firstErr.Load())
	}
	res := result{N: int(delivered.Load()), Bytes: delivered.Load() * int64(o.size)}
	kafkaFill(&res, start, end)
	latMu.Lock()
	lat.fill(&res)
	latMu.Unlock()
	return res, nil
}

// fetchTimes is a kgo.HookBrokerE2E that adds up the fetch round trips: from writing a Fetch
// request to having read its whole response (the broker's turnaround and the transfer), what the
// client waits for; the rest of a consume is the client's own decoding and the application.
type fetchTimes struct {
	n     atomic.Int64
	nanos atomic.Int64
	bytes atomic.Int64
}

func (f *fetchTimes) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != 1 || e2e.Err() != nil { // 1: Fetch
		return
	}
	f.n.Add(1)
	f.nanos.Add(int64(e2e.DurationE2E()))
	f.bytes.Add(int64(e2e.BytesRead))
}

// firstBytes (-ttfb) wraps the client's connections and times each Fetch request, from its write
// to the first byte of its response: the broker's turnaround before it starts sending, apart from
// the transfer that follows. franz-go writes each request with one Write and keeps one request at a
// time on a fetch connection.
type firstBytes struct {
	n     atomic.Int64
	nanos atomic.Int64
}

type timedConn struct {
	net.Conn
	fb   *firstBytes
	sent atomic.Int64 // UnixNano of the Fetch request written and not yet answered, or 0
}

func (c *timedConn) Write(b []byte) (int, error) {
	if len(b) >= 6 && binary.BigEndian.Uint16(b[4:6]) == 1 { // size, then the api key; 1: Fetch
		c.sent.Store(time.Now().UnixNano())
	}
	return c.Conn.Write(b)
}

func (c *timedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		if t := c.sent.Swap(0); t != 0 {
			c.fb.n.Add(1)
			c.fb.nanos.Add(time.Now().UnixNano() - t)
		}
	}
	return n, err
}

func (fb *firstBytes) dialer() kgo.Opt {
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &timedConn{Conn: c, fb: fb}, nil
	})
}

// recordPool is a kgo.PoolRecords: the record slices franz-go decodes each fetched batch into,
// reused once every record of a batch is Recycled.
type recordPool struct{ p sync.Pool }

func (rp *recordPool) GetRecords(n int) []kgo.Record {
	if s, ok := rp.p.Get().(*[]kgo.Record); ok && cap(*s) >= n {
		return (*s)[:n]
	}
	return make([]kgo.Record, n)
}

func (rp *recordPool) PutRecords(s []kgo.Record) {
	s = s[:cap(s)]
	rp.p.Put(&s)
}

func kafkaConsume(o options, k kafkaOptions) (result, error) {
	var ft fetchTimes
	opts := []kgo.Opt{
		kafkaSeeds(o.addr),
		kgo.WithHooks(&ft),
		kgo.ConsumeTopics(o.stream),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(52_428_800),
		kgo.FetchMaxPartitionBytes(10_485_760),
	}
	if k.pools {
		opts = append(opts, kgo.WithPools(&recordPool{}))
	}
	if !k.crc {
		opts = append(opts, kgo.DisableFetchCRCValidation())
	}
	var fb firstBytes
	if k.ttfb {
		opts = append(opts, fb.dialer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, err
	}
	var (
		count int
		bytes int64
		first time.Time
	)
	recycle := k.pools
	onRecord := func(r *kgo.Record) {
		count++
		bytes += int64(len(r.Value))
		if recycle {
			r.Recycle()
		}
	}
	idleSince := time.Now()
	for count < o.n {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var fs kgo.Fetches
		if k.fetch == "poll-records" {
			fs = cl.PollRecords(ctx, 10_000)
		} else {
			fs = cl.PollFetches(ctx)
		}
		cancel()
		if fs.IsClientClosed() {
			return result{}, errors.New("client closed")
		}
		var ferr error
		fs.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("fetch %s[%d]: %w", topic, partition, err)
			}
		})
		if ferr != nil {
			return result{}, ferr
		}
		before := count
		if count == 0 && !fs.Empty() {
			first = time.Now()
		}
		switch k.fetch {
		case "partition", "poll-records":
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				for _, r := range p.Records {
					onRecord(r)
				}
			})
		case "record":
			fs.EachRecord(onRecord)
		case "iter":
			for r := range fs.RecordsAll() {
				onRecord(r)
			}
		default:
			return result{}, fmt.Errorf("-fetch %q: expected partition, record, poll-records or iter", k.fetch)
		}
		now := time.Now()
		if count > before {
			idleSince = now
		} else if now.Sub(idleSince) > 30*time.Second {
			return result{}, fmt.Errorf("nothing for 30 s after %d of %d records", count, o.n)
		}
	}
	end := time.Now()
	res := result{N: count, Bytes: bytes}
	kafkaFill(&res, first, end)
	fetchS := float64(ft.nanos.Load()) / 1e9
	res.Fetches, res.FetchS, res.FetchBytes = ft.n.Load(), &fetchS, ft.bytes.Load()
	if k.ttfb {
		ttfb := float64(fb.nanos.Load()) / 1e9
		res.FirstByteS = &ttfb
	}
	// Not closed: stopping the fetchers is not part of the figure (main exits right after).
	return res, nil
}
