package main

// Redis Streams over a raw RESP pipeline: XADD commands are written in batches while a reader
// takes their replies in order (up to `window` commands in flight); XREAD COUNT reads the stream
// back from 0-0, one reply at a time (each request names the last id of the previous reply).

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

const redisWindow = 50_000
const redisBatch = 1000
const redisReadCount = 10_000

func redisDial(addr string) (net.Conn, *bufio.Reader, *bufio.Writer, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, bufio.NewReaderSize(c, 1<<20), bufio.NewWriterSize(c, 1<<20), nil
}

func respCommand(w *bufio.Writer, args ...[]byte) {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		w.WriteByte('$')
		w.WriteString(strconv.Itoa(len(a)))
		w.WriteString("\r\n")
		w.Write(a)
		w.WriteString("\r\n")
	}
}

// respLine reads one line without its CRLF (a view into the reader's buffer).
func respLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("short RESP line")
	}
	return line[:len(line)-2], nil
}

func respInt(b []byte) int {
	n := 0
	neg := false
	for i, c := range b {
		if i == 0 && c == '-' {
			neg = true
			continue
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// respSkip reads one whole reply and discards it; it returns the reply's first line.
func respSkip(r *bufio.Reader) error {
	line, err := respLine(r)
	if err != nil {
		return err
	}
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return fmt.Errorf("redis: %s", line[1:])
	case '$':
		n := respInt(line[1:])
		if n < 0 {
			return nil
		}
		_, err = r.Discard(n + 2)
		return err
	case '*':
		n := respInt(line[1:])
		for i := 0; i < n; i++ {
			if err := respSkip(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("redis: unexpected reply %q", line)
}

// respBulk reads a bulk string reply into a fresh slice.
func respBulk(r *bufio.Reader) ([]byte, error) {
	line, err := respLine(r)
	if err != nil {
		return nil, err
	}
	if line[0] != '$' {
		return nil, fmt.Errorf("redis: expected a bulk string, got %q", line)
	}
	n := respInt(line[1:])
	b := make([]byte, n+2)
	if _, err := readFull(r, b); err != nil {
		return nil, err
	}
	return b[:n], nil
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	got := 0
	for got < len(b) {
		k, err := r.Read(b[got:])
		got += k
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func respArrayLen(r *bufio.Reader) (int, error) {
	line, err := respLine(r)
	if err != nil {
		return 0, err
	}
	if line[0] == '-' {
		return 0, fmt.Errorf("redis: %s", line[1:])
	}
	if line[0] != '*' {
		return 0, fmt.Errorf("redis: expected an array, got %q", line)
	}
	return respInt(line[1:]), nil
}

func redisProduce(o options) (result, error) {
	c, r, w, err := redisDial(o.addr)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	v := value(o.size)
	xadd, key, star, field := []byte("XADD"), []byte(o.stream), []byte("*"), []byte("v")
	sentAt := make([]time.Time, o.n)
	acked := make(chan int, 1024)
	done := make(chan error, 1)
	var lat latencies
	go func() {
		for i := 0; i < o.n; i++ {
			if err := respSkip(r); err != nil {
				done <- err
				return
			}
			lat.add(time.Since(sentAt[i]))
			if i%redisBatch == redisBatch-1 || i == o.n-1 {
				acked <- i + 1
			}
		}
		done <- nil
	}()
	start := time.Now()
	p := pacer{start, o.rate}
	sent, ack := 0, 0
	for sent < o.n {
		k := p.allow(sent, o.n)
		if k > redisBatch {
			k = redisBatch
		}
		for sent+k-ack > redisWindow {
			ack = <-acked
		}
		now := time.Now()
		for j := 0; j < k; j++ {
			sentAt[sent+j] = now
			respCommand(w, xadd, key, star, field, v)
		}
		if err := w.Flush(); err != nil {
			return result{}, err
		}
		sent += k
	}
	if err := <-done; err != nil {
		return result{}, err
	}
	res := result{N: o.n, Bytes: int64(o.n) * int64(o.size), Seconds: time.Since(start).Seconds()}
	lat.fill(&res)
	return res, nil
}

func redisConsume(o options) (result, error) {
	c, r, w, err := redisDial(o.addr)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	start := time.Now()
	last := []byte("0-0")
	got := 0
	var nbytes int64
	count := []byte(strconv.Itoa(redisReadCount))
	for got < o.n {
		respCommand(w, []byte("XREAD"), []byte("COUNT"), count, []byte("STREAMS"), []byte(o.stream), last)
		if err := w.Flush(); err != nil {
			return result{}, err
		}
		// *1 -> *2 [key, *N [ *2 [id, *2 [field, value]] ]]
		streams, err := respArrayLen(r)
		if err != nil {
			return result{}, err
		}
		if streams <= 0 {
			if time.Since(start) > 120*time.Second {
				break
			}
			continue
		}
		if _, err := respArrayLen(r); err != nil {
			return result{}, err
		}
		if err := respSkip(r); err != nil { // the key
			return result{}, err
		}
		entries, err := respArrayLen(r)
		if err != nil {
			return result{}, err
		}
		for i := 0; i < entries; i++ {
			if _, err := respArrayLen(r); err != nil {
				return result{}, err
			}
			id, err := respBulk(r)
			if err != nil {
				return result{}, err
			}
			fields, err := respArrayLen(r)
			if err != nil {
				return result{}, err
			}
			for f := 0; f < fields; f += 2 {
				if err := respSkip(r); err != nil {
					return result{}, err
				}
				line, err := respLine(r)
				if err != nil {
					return result{}, err
				}
				n := respInt(line[1:])
				if _, err := r.Discard(n + 2); err != nil {
					return result{}, err
				}
				nbytes += int64(n)
			}
			last = id
			got++
		}
	}
	return result{N: got, Bytes: nbytes, Seconds: time.Since(start).Seconds()}, nil
}
