#!/usr/bin/env bash
# Runs one of Apache Kafka's command-line tools from the jars that install.sh fetched, by class name
# or by the name of its script in Kafka's bin/ folder.
#
#   tools/kafka/tool.sh kafka-topics --bootstrap-server 127.0.0.1:9092 --list
#   tools/kafka/tool.sh org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 --list
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: tool.sh <ClassName|kafka-script-name> args..." >&2; exit 2; }
libs=$("$here/install.sh" 2>/dev/null | tail -n 1)

name=$1
shift
case "$name" in
  kafka-topics) class=org.apache.kafka.tools.TopicCommand ;;
  kafka-leader-election) class=org.apache.kafka.tools.LeaderElectionCommand ;;
  kafka-console-producer) class=org.apache.kafka.tools.ConsoleProducer ;;
  kafka-console-consumer) class=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
  kafka-consumer-groups) class=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
  kafka-configs) class=org.apache.kafka.tools.ConfigCommand ;;
  kafka-acls) class=org.apache.kafka.tools.AclCommand ;;
  kafka-metadata-quorum) class=org.apache.kafka.tools.MetadataQuorumCommand ;;
  kafka-get-offsets) class=org.apache.kafka.tools.GetOffsetShell ;;
  kafka-cluster) class=org.apache.kafka.tools.ClusterTool ;;
  kafka-features) class=org.apache.kafka.tools.FeatureCommand ;;
  kafka-log-dirs) class=org.apache.kafka.tools.LogDirsCommand ;;
  kafka-transactions) class=org.apache.kafka.tools.TransactionsCommand ;;
  kafka-reassign-partitions) class=org.apache.kafka.tools.reassign.ReassignPartitionsCommand ;;
  kafka-storage) class=kafka.tools.StorageTool ;;
  kafka-server-start) class=kafka.Kafka ;;
  *.*) class=$name ;;
  *) echo "tool.sh: unknown tool '$name' (give a class name)" >&2; exit 2 ;;
esac

exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dlog4j2.configurationFile="$here/log4j2-tools.properties" \
  -cp "$libs/*" "$class" "$@"
