package main

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestRespCommandEncodesBulkStrings(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	respCommand(w, []byte("XADD"), []byte("s"), []byte("*"), []byte("v"), []byte("ab"))
	w.Flush()
	want := "*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nv\r\n$2\r\nab\r\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// An XREAD reply as Redis 7 sends it: one stream with two entries of one field each.
const xreadReply = "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n" +
	"*2\r\n$15\r\n1700000000000-0\r\n*2\r\n$1\r\nv\r\n$3\r\nabc\r\n" +
	"*2\r\n$15\r\n1700000000000-1\r\n*2\r\n$1\r\nv\r\n$2\r\nde\r\n"

func TestRespSkipReadsWholeNestedReplies(t *testing.T) {
	r := bufio.NewReader(strings.NewReader(xreadReply + "+OK\r\n:42\r\n$-1\r\n-ERR no\r\n"))
	for i, wantErr := range []bool{false, false, false, false, true} {
		err := respSkip(r)
		if (err != nil) != wantErr {
			t.Fatalf("reply %d: err %v, want error %v", i, err, wantErr)
		}
	}
	if err := respSkip(r); err == nil {
		t.Fatal("read past the end without an error")
	}
}

func TestRespArrayLenAndBulkWalkAnXreadReply(t *testing.T) {
	r := bufio.NewReader(strings.NewReader(xreadReply))
	mustLen := func(want int) {
		t.Helper()
		n, err := respArrayLen(r)
		if err != nil || n != want {
			t.Fatalf("array len %d (%v), want %d", n, err, want)
		}
	}
	mustLen(1)
	mustLen(2)
	key, err := respBulk(r)
	if err != nil || string(key) != "s" {
		t.Fatalf("key %q (%v)", key, err)
	}
	mustLen(2)
	var ids, values []string
	for i := 0; i < 2; i++ {
		mustLen(2)
		id, err := respBulk(r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(id))
		mustLen(2)
		if _, err := respBulk(r); err != nil {
			t.Fatal(err)
		}
		v, err := respBulk(r)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, string(v))
	}
	if strings.Join(ids, ",") != "1700000000000-0,1700000000000-1" || strings.Join(values, ",") != "abc,de" {
		t.Fatalf("ids %v values %v", ids, values)
	}
}

func TestRespIntAndSplitAddr(t *testing.T) {
	if respInt([]byte("-12")) != -12 || respInt([]byte("305")) != 305 {
		t.Fatal("respInt")
	}
	if h, p := splitAddr("127.0.0.1:6379"); h != "127.0.0.1" || p != 6379 {
		t.Fatalf("splitAddr: %s %d", h, p)
	}
}
