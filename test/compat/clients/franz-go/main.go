// franz-go (kgo, kadm) scenario for the golden capture (tools/capture/run-all.ts): admin, produce in
// every codec, a classic, a KIP-848 and a share group, a transaction, offsets. Prints
// `@@step <slug> <note>` before each step so the proxy can label the exchanges.
// Env: BOOTSTRAP, TOPIC, GROUP.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const perCodec = 3

var (
	bootstrap = env("BOOTSTRAP", "127.0.0.1:9092")
	topic     = env("TOPIC", "golden-franz-go")
	group     = env("GROUP", "golden-franz-go-group")
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
	total = perCodec * len(codecs)
	// filler is compressible, so that every codec's batch is smaller compressed and sent compressed.
	filler = strings.Repeat("weir-golden-", 6)
)

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func step(slug, note string) {
	fmt.Printf("@@step %s %s\n", slug, note)
	time.Sleep(150 * time.Millisecond)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// tolerate reports an error that the scenario expects or can live without.
func tolerate(what string, err error) {
	if err != nil {
		fmt.Printf("%s: %v\n", what, err)
	}
}

func client(id string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ClientID(id)}, opts...)...)
	must(err)
	return cl
}

func consumeAll(ctx context.Context, cl *kgo.Client) int {
	seen := 0
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for seen < total && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		seen += fetches.NumRecords()
	}
	return seen
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
	fmt.Printf("@@version franz-go %s\n", version())
	adminClient := client("golden-franz-go-admin")
	defer adminClient.Close()
	admin := kadm.NewClient(adminClient)

	step("admin-create-topic", fmt.Sprintf("CreateTopics %s, 3 partitions, replication 1", topic))
	_, err := admin.CreateTopic(ctx, 3, 1, nil, topic)
	must(err)
	step("admin-create-topic-again", fmt.Sprintf("CreateTopics %s again: TOPIC_ALREADY_EXISTS", topic))
	_, err = admin.CreateTopic(ctx, 3, 1, nil, topic)
	tolerate("create again", err)
	step("admin-list-topics", "ListTopics (Metadata of all topics)")
	_, err = admin.ListTopics(ctx)
	must(err)
	step("admin-describe-cluster", "ListBrokers, BrokerMetadata, ApiVersions of every broker")
	_, err = admin.ListBrokers(ctx)
	must(err)
	_, err = admin.ApiVersions(ctx)
	must(err)
	step("admin-describe-configs", fmt.Sprintf("DescribeTopicConfigs %s, DescribeBrokerConfigs 1", topic))
	_, err = admin.DescribeTopicConfigs(ctx, topic)
	must(err)
	_, err = admin.DescribeBrokerConfigs(ctx, 1)
	must(err)
	step("admin-alter-configs", fmt.Sprintf("AlterTopicConfigs %s retention.ms=86400000 (IncrementalAlterConfigs)", topic))
	retention := "86400000"
	_, err = admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, topic)
	must(err)

	for index, c := range codecs {
		partition := int32(index % 3)
		step("produce-"+c.name, fmt.Sprintf("Produce one batch of %d records to %s-%d, compression %s, acks all, idempotent, keys k0..k%d, values %s-<i>:weir-golden-x6, headers trace=<codec>-<i> and source=franz-go", perCodec, topic, partition, c.name, perCodec-1, c.name))
		producer := client("golden-franz-go-producer-"+c.name, kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(20*time.Millisecond),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		records := make([]*kgo.Record, 0, perCodec)
		for i := 0; i < perCodec; i++ {
			records = append(records, &kgo.Record{
				Topic:     topic,
				Partition: partition,
				Key:       []byte(fmt.Sprintf("k%d", i)),
				Value:     []byte(fmt.Sprintf("%s-%d:%s", c.name, i, filler)),
				Headers: []kgo.RecordHeader{
					{Key: "trace", Value: []byte(fmt.Sprintf("%s-%d", c.name, i))},
					{Key: "source", Value: []byte("franz-go")},
				},
			})
		}
		must(producer.ProduceSync(ctx, records...).FirstErr())
		producer.Close()
	}

	step("consume-classic", fmt.Sprintf("classic consumer group %s reads %d records from the beginning (JoinGroup, SyncGroup, Fetch)", group, total))
	classic := client("golden-franz-go-consumer", kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.HeartbeatInterval(500*time.Millisecond))
	fmt.Printf("classic consumed %d\n", consumeAll(ctx, classic))
	step("consume-classic-commit", "CommitUncommittedOffsets (OffsetCommit)")
	must(classic.CommitUncommittedOffsets(ctx))
	step("consume-classic-heartbeat", "idle 1.5 s in the group: Heartbeat")
	time.Sleep(1500 * time.Millisecond)
	step("consume-classic-leave", "LeaveGroup, Close")
	classic.LeaveGroup()
	classic.Close()

	group848 := group + "-848"
	step("consume-consumer-protocol", fmt.Sprintf("KIP-848 consumer group %s reads %d records (ConsumerGroupHeartbeat)", group848, total))
	next := client("golden-franz-go-consumer-848", kgo.ConsumerGroup(group848), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	fmt.Printf("consumer-protocol consumed %d\n", consumeAll(ctx, next))
	step("consume-consumer-protocol-commit", "CommitUncommittedOffsets")
	must(next.CommitUncommittedOffsets(ctx))
	step("consume-consumer-protocol-leave", "LeaveGroup: ConsumerGroupHeartbeat with epoch -1")
	next.LeaveGroup()
	next.Close()

	share := group + "-share"
	step("share-group-config", fmt.Sprintf("IncrementalAlterConfigs GROUP %s share.auto.offset.reset=earliest", share))
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	resource := kmsg.NewIncrementalAlterConfigsRequestResource()
	resource.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	resource.ResourceName = share
	entry := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	entry.Name = "share.auto.offset.reset"
	earliest := "earliest"
	entry.Value = &earliest
	entry.Op = kmsg.IncrementalAlterConfigOpSet
	resource.Configs = append(resource.Configs, entry)
	alter.Resources = append(alter.Resources, resource)
	_, err = alter.RequestWith(ctx, adminClient)
	tolerate("share group config", err)
	step("share-group", fmt.Sprintf("share group %s reads the records (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge)", share))
	shared := client("golden-franz-go-share", kgo.ShareGroup(share), kgo.ConsumeTopics(topic))
	shareCtx, cancelShare := context.WithTimeout(ctx, 20*time.Second)
	seen := 0
	for seen < total && shareCtx.Err() == nil {
		seen += shared.PollFetches(shareCtx).NumRecords()
	}
	cancelShare()
	fmt.Printf("share group consumed %d\n", seen)
	step("share-group-leave", "Close: ShareAcknowledge of the last poll, ShareGroupHeartbeat with epoch -1")
	shared.Close()

	step("transaction", fmt.Sprintf("transactional producer golden-franz-go-txn: 2 records to %s-0, commit", topic))
	txn := client("golden-franz-go-txn-producer", kgo.TransactionalID("golden-franz-go-txn"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(txn.BeginTransaction())
	must(txn.ProduceSync(ctx, &kgo.Record{Key: []byte("txn-k0"), Value: []byte("txn-0")}, &kgo.Record{Key: []byte("txn-k1"), Value: []byte("txn-1")}).FirstErr())
	must(txn.EndTransaction(ctx, kgo.TryCommit))
	txn.Close()

	step("admin-list-offsets", fmt.Sprintf("ListStartOffsets, ListEndOffsets, ListMaxTimestampOffsets, ListOffsetsAfterMilli of %s", topic))
	_, err = admin.ListStartOffsets(ctx, topic)
	must(err)
	_, err = admin.ListEndOffsets(ctx, topic)
	must(err)
	_, err = admin.ListMaxTimestampOffsets(ctx, topic)
	must(err)
	_, err = admin.ListOffsetsAfterMilli(ctx, time.Now().Add(-time.Minute).UnixMilli(), topic)
	must(err)
	step("admin-groups", fmt.Sprintf("ListGroups, DescribeGroups %s, DescribeConsumerGroups %s, FetchOffsets, DescribeShareGroups %s", group, group848, share))
	_, err = admin.ListGroups(ctx)
	must(err)
	_, err = admin.DescribeGroups(ctx, group)
	must(err)
	_, err = admin.DescribeConsumerGroups(ctx, group848)
	tolerate("describe consumer groups", err)
	_, err = admin.FetchOffsets(ctx, group)
	must(err)
	_, err = admin.DescribeShareGroups(ctx, share)
	tolerate("describe share groups", err)
	step("admin-transactions", "ListTransactions, DescribeTransactions golden-franz-go-txn, DescribeProducers")
	_, err = admin.ListTransactions(ctx, nil, nil)
	tolerate("list transactions", err)
	_, err = admin.DescribeTransactions(ctx, "golden-franz-go-txn")
	tolerate("describe transactions", err)
	_, err = admin.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	tolerate("describe producers", err)
	step("admin-offset-for-leader-epoch", fmt.Sprintf("OffsetForLeaderEpoch %s-0 epoch 0", topic))
	epochs := kadm.OffsetForLeaderEpochRequest{}
	epochs.Add(topic, 0, 0)
	_, err = admin.OffsetForLeaderEpoch(ctx, epochs)
	tolerate("offset for leader epoch", err)
	step("admin-describe-log-dirs", "DescribeAllLogDirs")
	_, err = admin.DescribeAllLogDirs(ctx, nil)
	tolerate("describe log dirs", err)
	step("admin-describe-acls", "DescribeACLs: no authorizer, SECURITY_DISABLED")
	_, err = admin.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().Topics().Groups().Clusters().TransactionalIDs().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	tolerate("describe acls", err)
	step("admin-describe-client-quotas", "DescribeClientQuotas (all)")
	_, err = admin.DescribeClientQuotas(ctx, false, nil)
	tolerate("describe client quotas", err)
	step("admin-elect-leaders", fmt.Sprintf("ElectLeaders preferred %s", topic))
	_, err = admin.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	tolerate("elect leaders", err)
	step("admin-delete-records", fmt.Sprintf("DeleteRecords %s-0 before offset 1", topic))
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1})
	_, err = admin.DeleteRecords(ctx, offsets)
	tolerate("delete records", err)
	step("admin-delete-offsets", fmt.Sprintf("DeleteOffsets of group %s for %s", group, topic))
	_, err = admin.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
	tolerate("delete offsets", err)
	step("admin-create-partitions", fmt.Sprintf("CreatePartitions %s +1", topic))
	_, err = admin.CreatePartitions(ctx, 1, topic)
	tolerate("create partitions", err)
	step("admin-delete-groups", fmt.Sprintf("DeleteGroups %s, %s, %s", group, group848, share))
	_, err = admin.DeleteGroups(ctx, group, group848, share)
	tolerate("delete groups", err)
	step("admin-delete-topic", fmt.Sprintf("DeleteTopics %s", topic))
	_, err = admin.DeleteTopics(ctx, topic)
	must(err)
	fmt.Println("@@done")
}
