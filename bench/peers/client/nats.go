package main

// NATS JetStream with the official nats.go client: a file-storage stream, PublishAsync with up to
// natsMaxPending acks in flight (each ack's stream sequence names the record it confirms: one
// producer on a fresh stream), and a pull consumer (AckNone, like a Kafka consumer that commits
// nothing) reading from the first message.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const natsMaxPending = 20_000

func natsConnect(addr string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect("nats://"+addr, nats.ReconnectBufSize(64<<20))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

func natsCreate(o options) error {
	nc, js, err := natsConnect(o.addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      o.stream,
		Subjects:  []string{o.stream},
		Storage:   jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy,
		Replicas:  1,
	})
	return err
}

func natsProduce(o options) (result, error) {
	sentAt := make([]time.Time, o.n)
	var mu sync.Mutex
	var lat latencies
	onAck := func(_ jetstream.JetStream, _ *nats.Msg, ack *jetstream.PubAck) {
		i := int(ack.Sequence) - 1
		if i >= 0 && i < o.n {
			d := time.Since(sentAt[i])
			mu.Lock()
			lat.add(d)
			mu.Unlock()
		}
	}
	var failed error
	onErr := func(_ jetstream.JetStream, _ *nats.Msg, err error) {
		mu.Lock()
		failed = err
		mu.Unlock()
	}
	nc, js, err := natsConnect(o.addr,
		jetstream.WithPublishAsyncMaxPending(natsMaxPending),
		jetstream.WithPublishAsyncAckHandler(onAck),
		jetstream.WithPublishAsyncErrHandler(onErr))
	if err != nil {
		return result{}, err
	}
	defer nc.Close()
	v := value(o.size)
	start := time.Now()
	p := pacer{start, o.rate}
	sent := 0
	for sent < o.n {
		k := p.allow(sent, o.n)
		for j := 0; j < k; j++ {
			sentAt[sent+j] = time.Now()
			for {
				_, err := js.PublishAsync(o.stream, v)
				if err == nil {
					break
				}
				// natsMaxPending acks outstanding for longer than the stall wait: wait for them.
				if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
					return result{}, err
				}
				sentAt[sent+j] = time.Now()
			}
		}
		sent += k
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(120 * time.Second):
	}
	seconds := time.Since(start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return result{}, failed
	}
	res := result{N: len(lat.xs), Bytes: int64(len(lat.xs)) * int64(o.size), Seconds: seconds}
	lat.fill(&res)
	return res, nil
}

func natsConsume(o options) (result, error) {
	nc, js, err := natsConnect(o.addr)
	if err != nil {
		return result{}, err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	start := time.Now()
	cons, err := js.CreateOrUpdateConsumer(ctx, o.stream, jetstream.ConsumerConfig{
		AckPolicy:     jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return result{}, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(10_000))
	if err != nil {
		return result{}, err
	}
	defer it.Stop()
	got := 0
	var nbytes int64
	for got < o.n && time.Since(start) < 120*time.Second {
		m, err := it.Next()
		if err != nil {
			return result{}, err
		}
		nbytes += int64(len(m.Data()))
		got++
	}
	return result{N: got, Bytes: nbytes, Seconds: time.Since(start).Seconds()}, nil
}
