#!/usr/bin/env bash
# Installs what `npm test` needs beyond `npm ci`, so that the README's two commands work on a fresh
# machine: the first step of `npm test`, also runnable alone.
#
#   - Java 17+ (JDK), Maven, Go 1.21+, Python 3 with venv, kcat, iproute2, Prometheus and Chromium: Debian packages through
#     apt-get when missing and running as root; otherwise it says exactly what to install and fails.
#   - Apache Kafka 4.4.0 (Kafka's tools and Java client are compat peers) and 4.0.0 (the differential
#     tests' reference broker) from Maven Central (tools/kafka/install.sh).
#   - The compat clients: the Java client program, franz-go, confluent-kafka and the capture venv
#     with kafka-python (tools/compat-install.sh).
#
# Idempotent, everything under .cache/. A stamp (.cache/test-deps.stamp) records a digest of the
# install scripts, the clients' pinned sources and the tools found; when it matches and every output
# is there, nothing runs (a few ms). Each install script also keeps its own stamp, and the tests that
# use a client run its part again themselves, so a stale stamp here never hides a missing client.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache"
stamp="$cache/test-deps.stamp"
clients="$root/test/compat/clients"

# Files whose outputs must exist for the stamp to count.
outputs=(
  "$cache/kafka/4.4.0/.installed"
  "$cache/kafka/4.0.0/.installed"
  "$cache/compat/java-classes/.stamp"
  "$cache/compat/franz-go-compat"
  "$cache/compat/pyvenv/bin/python"
  "$cache/capture/venv/bin/python"
)
commands=(java javac mvn go python3 kcat ip prometheus chromium)

# What the stamp records: the scripts that install, the clients' pinned inputs, and where each tool
# resolves to (an upgraded JDK, Go or Python usually moves its real path).
digest() {
  local c
  {
    cat "$root/tools/test-deps.sh" "$root/tools/compat-install.sh" "$root/tools/kafka/install.sh" "$root/tools/kafka/version.sh" \
      "$clients/java/CompatMatrix.java" "$clients/franz-go/go.mod" "$clients/franz-go/go.sum" \
      "$clients"/franz-go/compat/*.go "$clients/python/requirements.txt" \
      "$clients/python/matrix-requirements.txt"
    for c in "${commands[@]}"; do
      readlink -f "$(command -v "$c")"
    done
  } | sha256sum | cut -d' ' -f1
}

installed() {
  local c f
  for c in "${commands[@]}"; do command -v "$c" >/dev/null || return 1; done
  for f in "${outputs[@]}"; do [ -e "$f" ] || return 1; done
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(digest)" ]
}

if installed; then exit 0; fi

say() { echo "test-deps.sh: $*" >&2; }

# What is missing, one line each: what it is, then the Debian package that provides it.
missing() {
  { command -v java && command -v javac; } >/dev/null || echo "a JDK 17+|default-jdk-headless"
  command -v mvn >/dev/null || echo "Maven|maven"
  command -v go >/dev/null || echo "Go 1.21+|golang-go"
  command -v python3 >/dev/null || echo "Python 3|python3"
  python3 -c 'import ensurepip, venv' 2>/dev/null || echo "Python's venv|python3-venv"
  command -v kcat >/dev/null || echo "kcat|kcat"
  command -v ip >/dev/null || echo "iproute2's ip|iproute2"
  command -v prometheus >/dev/null || echo "Prometheus|prometheus"
  command -v chromium >/dev/null || echo "Chromium (the console's browser tests)|chromium"
}

mapfile -t lacking < <(missing)
if [ "${#lacking[@]}" -gt 0 ]; then
  names=$(printf '%s\n' "${lacking[@]}" | cut -d'|' -f1 | paste -sd, - | sed 's/,/, /g')
  mapfile -t packages < <(printf '%s\n' "${lacking[@]}" | cut -d'|' -f2)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing ${packages[*]} (apt-get) for $names"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  else
    say "npm test needs $names, not found here. Install them and run npm test again;"
    say "  on Debian or Ubuntu: sudo apt-get install ${packages[*]}"
    exit 1
  fi
fi

# go.mod asks for a newer Go than some distributions ship; from 1.21 on, the go command fetches the
# toolchain go.mod names by itself (GOTOOLCHAIN=auto).
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "$go_minor" -lt 21 ] 2>/dev/null; then
  say "$(go version) is too old: franz-go's client needs Go 1.21+ (which fetches the toolchain go.mod"
  say "  names itself); install one from https://go.dev/dl/ (Debian bookworm: golang-1.2x from backports)"
  exit 1
fi
java_major=$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')
if [ "$java_major" -lt 17 ] 2>/dev/null; then
  say "$(javac -version 2>&1) is too old: Kafka 4 needs a JDK 17+ (Debian: apt-get install default-jdk-headless)"
  exit 1
fi

"$root/tools/kafka/install.sh" >/dev/null
KAFKA_VERSION=4.0.0 "$root/tools/kafka/install.sh" >/dev/null
"$root/tools/compat-install.sh" all

mkdir -p "$cache"
digest >"$stamp"
say "everything npm test needs is installed"
