// Kafka's Java consumer through a leader failover (compat/cluster/jepsen.py, scenario
// "failover"). No consumer group: assign() every partition of TOPIC, seekToBeginning, poll.
//
//   java -cp 'compat/kafka/libs/*' compat/cluster/FailoverConsumer.java \
//        BOOTSTRAP TOPIC EXPECTED_FILE TIMEOUT_MS
//
// Prints "R <partition> <offset> <value>" for every record it reads, in the order it
// reads them. Once EXPECTED_FILE exists (one integer value a line, written atomically by
// the harness when its producer is done) it stops as soon as it has read every value
// in it: prints "DONE <n seen>" and exits 0. Prints "TIMEOUT <n missing>" and exits 1
// after TIMEOUT_MS. An offset reset (out of range) is printed as "S reset <partition>"
// and the partition is read again from the beginning: a new session for the checker.

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FailoverConsumer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Path expectedFile = Paths.get(args[2]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[3]);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "2000");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        Set<String> seen = new HashSet<>();
        Set<String> expected = null;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            while (tps.isEmpty() && System.currentTimeMillis() < deadline) {
                try {
                    List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(5));
                    if (infos != null) {
                        for (PartitionInfo i : infos) tps.add(new TopicPartition(topic, i.partition()));
                    }
                } catch (Exception e) {
                    System.err.println("partitionsFor: " + e);
                    Thread.sleep(500);
                }
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> recs;
                try {
                    recs = c.poll(Duration.ofMillis(200));
                } catch (OffsetOutOfRangeException e) {
                    for (TopicPartition tp : e.partitions()) {
                        System.out.println("S reset " + tp.partition());
                    }
                    c.seekToBeginning(e.partitions());
                    continue;
                } catch (Exception e) {
                    System.err.println("poll: " + e);
                    Thread.sleep(200);
                    continue;
                }
                StringBuilder sb = new StringBuilder();
                for (ConsumerRecord<String, String> r : recs) {
                    sb.append("R ").append(r.partition()).append(' ').append(r.offset()).append(' ')
                      .append(r.value()).append('\n');
                    seen.add(r.value());
                }
                if (sb.length() > 0) {
                    System.out.print(sb);
                    System.out.flush();
                }
                if (expected == null && Files.exists(expectedFile)) {
                    expected = new HashSet<>();
                    for (String line : Files.readAllLines(expectedFile)) {
                        if (!line.isBlank()) expected.add(line.trim());
                    }
                }
                if (expected != null && seen.containsAll(expected)) {
                    System.out.println("DONE " + seen.size());
                    System.out.flush();
                    return;
                }
            }
        }
        int missing = 0;
        if (expected != null) {
            for (String v : expected) if (!seen.contains(v)) missing++;
        }
        System.out.println("TIMEOUT " + (expected == null ? "no-expected-file" : String.valueOf(missing)));
        System.out.flush();
        System.exit(1);
    }
}
