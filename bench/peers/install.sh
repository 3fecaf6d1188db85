#!/usr/bin/env bash
# Installs what `npm run bench:peers` needs besides Weir and Apache Kafka (tools/kafka/install.sh):
# Debian's redis-server, nats-server and rabbitmq-server (their packaged services are never used:
# bench/peers/peers.ts starts each as its own child process on loopback), kcat, librdkafka-dev (the
# headers of the librdkafka kcat links) for bench/peers/rdkafka-perf.c, built with cc -O2 into
# .cache/peers/rdkafka-perf-HASH, and the Go client driver for Redis, NATS JetStream, RabbitMQ
# Streams and (franz-go) Kafka and Weir (bench/peers/client), built into .cache/peers/peers-client-HASH.
# HASH is a digest of the sources: .cache is shared by every worktree of this machine, so that a
# run from one checkout never uses (or overwrites) a binary built from another's sources. Prints
# the two paths on stdout (RDKAFKA_PERF=..., PEERS_CLIENT=...; peers.ts reads them), progress on
# stderr. Idempotent; not part of CI (benchmarks never are).
#
#   bench/peers/install.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache="$root/.cache/peers"
mkdir -p "$cache"

missing=""
for p in redis-server nats-server rabbitmq-server kcat librdkafka-dev time; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install.sh: apt-get install$missing" >&2
  [ "$(id -u)" = 0 ] || { echo "install.sh: run as root (apt-get)" >&2; exit 1; }
  apt-get update -qq >&2
  # bench/peers/peers.ts runs its own instances on free loopback ports; where the packages' own
  # services start (no policy-rc.d), they are left alone: nothing here uses their default ports.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
fi

"$root/tools/kafka/install.sh" >/dev/null

# The librdkafka (C) client, one binary per source digest (built once; a temp name, then mv, so
# that a concurrent run never sees half a file).
csum=$(sha256sum "$here/rdkafka-perf.c" | cut -c1-16)
cbin="$cache/rdkafka-perf-$csum"
if [ ! -x "$cbin" ]; then
  cc -O2 -Wall -o "$cbin.tmp.$$" "$here/rdkafka-perf.c" -lrdkafka >&2
  mv "$cbin.tmp.$$" "$cbin"
fi

command -v go >/dev/null || { echo "install.sh: Go is required to build bench/peers/client" >&2; exit 1; }
sum=$(cat "$here/client/"*.go "$here/client/go.mod" "$here/client/go.sum" | sha256sum | cut -c1-16)
bin="$cache/peers-client-$sum"
if [ ! -x "$bin" ]; then
  (cd "$here/client" && go build -trimpath -o "$bin.tmp.$$" .) >&2
  mv "$bin.tmp.$$" "$bin"
fi
echo "install.sh: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), nats-server $(nats-server --version 2>&1 | sed 's/.*v//'), rabbitmq-server $(dpkg-query -W -f='${Version}' rabbitmq-server), librdkafka $(dpkg-query -W -f='${Version}' librdkafka1) (kcat, rdkafka-perf), peers-client built" >&2
echo "RDKAFKA_PERF=$cbin"
echo "PEERS_CLIENT=$bin"
