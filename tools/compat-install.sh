#!/usr/bin/env bash
# Installs or builds the clients of the compat matrix (test/compat/{java-client,franz-go,
# confluent-kafka}.test.ts) into .cache/compat/. Idempotent: each part is redone only when its
# sources or pinned versions change (a stamp beside its output). tools/test-deps.sh (the first step
# of npm test) runs it with no argument; each test runs it for its own client, and fails (does not
# skip) when it cannot.
#
#   tools/compat-install.sh                   # all three
#   tools/compat-install.sh java              # prints the classpath on its last line
#   tools/compat-install.sh franz-go          # prints the binary
#   tools/compat-install.sh confluent-kafka   # prints the venv's python
#   tools/compat-install.sh kafka-streams     # Kafka Streams 4.0.0 (Maven Central) and
#                                             # StreamsWordCount.java; prints the classpath
#   tools/compat-install.sh capture-venv      # the Python venv of tools/capture (kafka-python,
#                                             # confluent-kafka), which the kafka-python and
#                                             # Python group tests use; prints its python
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
clients="$root/test/compat/clients"
cache="$root/.cache/compat"
mkdir -p "$cache"

need() { command -v "$1" >/dev/null || { echo "compat-install.sh: $1 is required ($2)" >&2; exit 1; }; }
# A digest of files and extra words: what a stamp records.
digest() { { cat "$@"; echo "${extra:-}"; } | sha256sum | cut -d' ' -f1; }

java_client() {
  need javac "a JDK 17+"
  local libs out stamp want
  libs=$("$root/tools/kafka/install.sh" | tail -n 1)
  out="$cache/java-classes"
  stamp="$out/.stamp"
  want=$(extra="$libs $(javac -version 2>&1)" digest "$clients/java/CompatMatrix.java" "$clients/java/TxnScenario.java")
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    javac -Xlint:all -Werror -d "$out.tmp" -cp "$libs/*" "$clients/java/CompatMatrix.java" "$clients/java/TxnScenario.java" >&2
    echo "$want" >"$out.tmp/.stamp"
    rm -rf "$out"
    mv "$out.tmp" "$out"
    echo "compat-install.sh: compiled CompatMatrix.java and TxnScenario.java against $libs" >&2
  fi
  echo "$out:$libs/*"
}

# Kafka Streams (its jar and runtime dependencies, rocksdbjni among them, from Maven Central) beside
# the Kafka jars of install.sh, which bring the log4j binding; StreamsWordCount.java compiled against
# both (test/faults/streams-exactly-once.test.ts).
kafka_streams() {
  need javac "a JDK 17+"
  need mvn "Maven (apt-get install maven)"
  local libs version slibs out stamp want
  version=4.0.0
  libs=$(KAFKA_VERSION=$version "$root/tools/kafka/install.sh" | tail -n 1)
  slibs="$root/.cache/kafka-streams/$version/libs"
  if [ ! -f "$slibs/.installed" ]; then
    mkdir -p "$slibs.pom"
    cat >"$slibs.pom/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>weir.tools</groupId>
  <artifactId>kafka-streams-libs</artifactId>
  <version>$version</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
    rm -rf "$slibs.tmp"
    mvn -q -B -Dstyle.color=never -f "$slibs.pom/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$slibs.tmp" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2
    touch "$slibs.tmp/.installed"
    rm -rf "$slibs"
    mv "$slibs.tmp" "$slibs"
    echo "compat-install.sh: Kafka Streams $version, $(ls "$slibs" | wc -l) jars in $slibs" >&2
  fi
  out="$cache/streams-classes"
  stamp="$out/.stamp"
  want=$(extra="$libs $slibs $(javac -version 2>&1)" digest "$clients/java/StreamsWordCount.java")
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    javac -Xlint:all -Werror -d "$out.tmp" -cp "$slibs/*" "$clients/java/StreamsWordCount.java" >&2
    echo "$want" >"$out.tmp/.stamp"
    rm -rf "$out"
    mv "$out.tmp" "$out"
    echo "compat-install.sh: compiled StreamsWordCount.java against $slibs" >&2
  fi
  echo "$out:$slibs/*:$libs/*"
}

franz_go() {
  need go "Go 1.26+; modules come from the Go module proxy"
  local dir="$clients/franz-go" bin="$cache/franz-go-compat" want
  want=$(extra="$(go version) -buildvcs=false" digest "$dir/go.mod" "$dir/go.sum" "$dir"/compat/*.go)
  if [ ! -x "$bin" ] || [ ! -f "$bin.stamp" ] || [ "$(cat "$bin.stamp")" != "$want" ]; then
    (cd "$dir" && go build -buildvcs=false -o "$bin.tmp" ./compat) >&2
    mv "$bin.tmp" "$bin"
    echo "$want" >"$bin.stamp"
    echo "compat-install.sh: built $bin ($(go version))" >&2
  fi
  echo "$bin"
}

confluent_kafka() {
  need python3 "Python 3.9+ with venv"
  local venv="$cache/pyvenv" requirements="$clients/python/matrix-requirements.txt" want
  want=$(extra="$(python3 --version 2>&1)" digest "$requirements")
  if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.stamp" ] || [ "$(cat "$venv/.stamp")" != "$want" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
    echo "$want" >"$venv/.stamp"
    echo "compat-install.sh: $("$venv/bin/python" -c 'import confluent_kafka as c; print("confluent-kafka", c.__version__, "librdkafka", c.libversion()[0])') in $venv" >&2
  fi
  echo "$venv/bin/python"
}

# The venv tools/capture makes (tools/capture/clients.ts, pythonVenv: same path, same stamp), so
# that kafka-python-data-path and groups-python-kcat find it (npm test installs it, through
# tools/test-deps.sh).
capture_venv() {
  need python3 "Python 3.9+ with venv"
  local venv="$root/.cache/capture/venv" requirements="$clients/python/requirements.txt"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
  fi
  if [ ! -f "$venv/.requirements" ] || ! cmp -s "$requirements" "$venv/.requirements"; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
    cp "$requirements" "$venv/.requirements"
    echo "compat-install.sh: installed $requirements into $venv" >&2
  fi
  echo "$venv/bin/python"
}

case "${1:-all}" in
  java) java_client ;;
  franz-go) franz_go ;;
  kafka-streams) kafka_streams ;;
  confluent-kafka) confluent_kafka ;;
  capture-venv) capture_venv ;;
  all)
    java_client >/dev/null
    franz_go >/dev/null
    kafka_streams >/dev/null
    confluent_kafka >/dev/null
    capture_venv >/dev/null
    echo "compat-install.sh: the Java client, franz-go, Kafka Streams, confluent-kafka and the capture venv are ready" >&2
    ;;
  *) echo "usage: compat-install.sh [java|franz-go|kafka-streams|confluent-kafka|capture-venv|all]" >&2; exit 2 ;;
esac
