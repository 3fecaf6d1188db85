package main

// RabbitMQ Streams with the stream-protocol Go client: BatchSend of ~64 KB frames with up to
// rabbitWindow (2000) messages unconfirmed (each confirmation's publishing id names its record: ids
// are 1, 2, ... for an unnamed producer), and a consumer from the first offset (CRC check off, as
// librdkafka's default check.crcs=false). Tuned here: the client's default 8 KB socket buffers make
// the server's sends stall on a window smaller than loopback's MSS (a chunk per ~0.5 s), hence 4 MB;
// more than ~4000 unconfirmed messages made confirms fall to ~10k/s against RabbitMQ 3.10.
// RABBIT_WINDOW, RABBIT_FRAME_BYTES, RABBIT_CREDITS, RABBIT_SEND=1 (Send instead of BatchSend) and
// RABBIT_CRC=1 override these.

import (
	"os"
	"sync"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/message"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"
)

var rabbitWindow = envInt("RABBIT_WINDOW", 2000)
var rabbitFrameBytes = envInt("RABBIT_FRAME_BYTES", 64<<10)
var rabbitSend = os.Getenv("RABBIT_SEND") == "1"
var rabbitCredits = envInt("RABBIT_CREDITS", 10)

func rabbitEnv(addr string) (*stream.Environment, error) {
	host, port := splitAddr(addr)
	return stream.NewEnvironment(stream.NewEnvironmentOptions().
		SetHost(host).SetPort(port).SetUser("guest").SetPassword("guest").
		SetMaxProducersPerClient(1).SetMaxConsumersPerClient(1).
		SetReadBuffer(4 << 20).SetWriteBuffer(4 << 20))
}

func rabbitCreate(o options) error {
	env, err := rabbitEnv(o.addr)
	if err != nil {
		return err
	}
	defer env.Close()
	return env.DeclareStream(o.stream, stream.NewStreamOptions())
}

func rabbitProduce(o options) (result, error) {
	env, err := rabbitEnv(o.addr)
	if err != nil {
		return result{}, err
	}
	defer env.Close()
	producer, err := env.NewProducer(o.stream, stream.NewProducerOptions())
	if err != nil {
		return result{}, err
	}
	confirms := producer.NotifyPublishConfirmation()
	sentAt := make([]time.Time, o.n)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	confirmed, failed := 0, 0
	var lat latencies
	go func() {
		for batch := range confirms {
			now := time.Now()
			mu.Lock()
			for _, c := range batch {
				if !c.IsConfirmed() {
					failed++
				} else if i := int(c.GetPublishingId()) - 1; i >= 0 && i < o.n {
					lat.add(now.Sub(sentAt[i]))
				}
				confirmed++
			}
			cond.Broadcast()
			mu.Unlock()
		}
	}()
	v := value(o.size)
	perFrame := max(1, rabbitFrameBytes/(o.size+64))
	batch := make([]message.StreamMessage, 0, perFrame)
	start := time.Now()
	p := pacer{start, o.rate}
	sent := 0
	for sent < o.n {
		k := min(p.allow(sent, o.n), perFrame)
		mu.Lock()
		for sent+k-confirmed > rabbitWindow {
			cond.Wait()
		}
		mu.Unlock()
		batch = batch[:0]
		now := time.Now()
		for j := 0; j < k; j++ {
			sentAt[sent+j] = now
			batch = append(batch, amqp.NewMessage(v))
		}
		if rabbitSend {
			for _, m := range batch {
				if err := producer.Send(m); err != nil {
					return result{}, err
				}
			}
		} else if err := producer.BatchSend(batch); err != nil {
			return result{}, err
		}
		sent += k
	}
	deadline := time.Now().Add(120 * time.Second)
	mu.Lock()
	for confirmed < o.n && time.Now().Before(deadline) {
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
	}
	seconds := time.Since(start).Seconds()
	res := result{N: confirmed - failed, Bytes: int64(confirmed-failed) * int64(o.size), Seconds: seconds}
	lat.fill(&res)
	mu.Unlock()
	_ = producer.Close()
	return res, nil
}

func rabbitConsume(o options) (result, error) {
	env, err := rabbitEnv(o.addr)
	if err != nil {
		return result{}, err
	}
	defer env.Close()
	var mu sync.Mutex
	got := 0
	var nbytes int64
	done := make(chan struct{})
	start := time.Now()
	handler := func(_ stream.ConsumerContext, m *amqp.Message) {
		mu.Lock()
		got++
		nbytes += int64(len(m.GetData()))
		if got == o.n {
			close(done)
		}
		mu.Unlock()
	}
	consumer, err := env.NewConsumer(o.stream, handler, stream.NewConsumerOptions().
		SetOffset(stream.OffsetSpecification{}.First()).SetCRCCheck(os.Getenv("RABBIT_CRC") == "1").SetInitialCredits(int16(rabbitCredits)))
	if err != nil {
		return result{}, err
	}
	select {
	case <-done:
	case <-time.After(120 * time.Second):
	}
	seconds := time.Since(start).Seconds()
	_ = consumer.Close()
	mu.Lock()
	defer mu.Unlock()
	return result{N: got, Bytes: nbytes, Seconds: seconds}, nil
}
