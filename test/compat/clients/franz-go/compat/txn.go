package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// transact is consume-transform-produce with kgo.GroupTransactSession: a group member of `group`
// on `in` (read_committed, from the start) copies each record to `out` with its value upper-cased,
// its input offsets committed in the same transaction. The first transaction that holds records is
// aborted on purpose (the session rewinds to the committed offsets, so they are read again); the
// others commit, until every record up to the input's end offsets is committed. Prints how many
// transactions committed and aborted (the test reads the group's offsets once the markers are in:
// until then OffsetFetch does not list a partition whose only offset is pending, as Kafka's).
func transact(ctx context.Context, in, out, group, txid string) any {
	adm := admin()
	defer adm.Close()
	end := ends(ctx, adm, in)
	base := append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ClientID("weir-franz-go-txn")},
		security()...)
	sess, err := kgo.NewGroupTransactSession(append(base,
		kgo.TransactionalID(txid),
		kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
	)...)
	must(err)
	defer sess.Close()
	// next[p]: the offset after the last record of partition p a committed transaction copied.
	next := byPartition{}
	done := func() bool {
		for p, e := range end {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	committed, aborted := 0, 0
	steps := []string{}
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for !done() {
		fetches := sess.PollFetches(waitCtx)
		if waitCtx.Err() != nil {
			must(errors.New("timed out before every input record was copied"))
		}
		fetches.EachError(func(t string, p int32, err error) { trace("fetch %s/%d: %v", t, p, err) })
		if fetches.NumRecords() == 0 {
			continue
		}
		must(sess.Begin())
		last := byPartition{}
		fetches.EachRecord(func(r *kgo.Record) {
			res := sess.ProduceSync(waitCtx, &kgo.Record{Topic: out, Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))})
			must(res.FirstErr())
			last[strconv.Itoa(int(r.Partition))] = r.Offset + 1
		})
		try := kgo.TryCommit
		if committed+aborted == 0 {
			try = kgo.TryAbort
		}
		ok, err := sess.End(waitCtx, try)
		must(err)
		if ok {
			committed++
			for p, o := range last {
				next[p] = o
			}
		} else {
			aborted++
		}
		steps = append(steps, fmt.Sprintf("committed=%v %v", ok, last))
	}
	return map[string]any{"committedTxns": committed, "abortedTxns": aborted, "steps": steps}
}
