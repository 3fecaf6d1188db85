# The Apache Kafka version the tools under tools/kafka/ install and run (override with KAFKA_VERSION).
# 4.4.0 was the newest 4.x on Maven Central when the golden fixtures were captured.
: "${KAFKA_VERSION:=4.4.0}"
export KAFKA_VERSION
