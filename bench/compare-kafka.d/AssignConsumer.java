// Consumer throughput without a consumer group, for bench/compare-kafka.
//
//   java -cp "compat/kafka/libs/*" bench/compare-kafka.d/AssignConsumer.java \
//        BOOTSTRAP TOPIC RECORDS [IDLE_TIMEOUT_MS]
//
// Kafka's kafka-consumer-perf-test (ConsumerPerformance) subscribes through a group, so
// it needs a group coordinator. This does the same work with assign(): it assigns every
// partition of TOPIC, seeks to the beginning and polls until RECORDS records have been
// read, with the consumer settings kafka-consumer-perf-test uses (1 MiB per partition
// per fetch, a 2 MiB socket receive buffer). Bytes are key + value bytes, as in
// kafka-consumer-perf-test. The clock starts before assign() (after the metadata
// lookup) and stops at the last record. Prints one line of key=value pairs; exits 1
// when fewer records arrived (IDLE_TIMEOUT_MS without a record, default 10000).
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class AssignConsumer {
    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: AssignConsumer BOOTSTRAP TOPIC RECORDS [IDLE_TIMEOUT_MS]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        long want = Long.parseLong(args[2]);
        long idleTimeoutMs = args.length > 3 ? Long.parseLong(args[3]) : 10000;

        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "compare-kafka-assign-consumer");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("max.partition.fetch.bytes", "1048576");
        props.put("receive.buffer.bytes", "2097152");

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : infos) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            long start = System.nanoTime();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long records = 0;
            long bytes = 0;
            long lastRecord = System.nanoTime();
            long end = start;
            while (records < want) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                if (batch.isEmpty()) {
                    if ((now - lastRecord) / 1_000_000 > idleTimeoutMs) {
                        break;
                    }
                    continue;
                }
                lastRecord = now;
                for (ConsumerRecord<byte[], byte[]> record : batch) {
                    records++;
                    if (record.key() != null) {
                        bytes += record.key().length;
                    }
                    if (record.value() != null) {
                        bytes += record.value().length;
                    }
                }
                end = System.nanoTime();
            }
            double seconds = (end - start) / 1e9;
            System.out.printf("records=%d bytes=%d seconds=%.3f records_per_sec=%.1f mb_per_sec=%.2f%n",
                records, bytes, seconds, records / seconds, bytes / seconds / (1024.0 * 1024.0));
            if (records < want) {
                System.err.printf("AssignConsumer: only %d of %d records within the %d ms idle timeout%n",
                    records, want, idleTimeoutMs);
                System.exit(1);
            }
        }
    }
}
