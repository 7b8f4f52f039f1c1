// The partition Apache Kafka's Java producer (kafka-clients, its default partitioner:
// murmur2 of the key) picks for each key: sends one record per key of KEYS_FILE (hex, one
// a line; an empty line is the empty key) to TOPIC and prints "INDEX<TAB>PARTITION" from
// each RecordMetadata. compat/client compares these with the native producer's choices.
//
//   java -cp 'compat/kafka/libs/*' compat/client/JavaPartitions.java BOOTSTRAP TOPIC KEYS_FILE

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaPartitions {
    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[2]), StandardCharsets.US_ASCII);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props,
                new ByteArraySerializer(), new ByteArraySerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < lines.size(); i++) {
                byte[] key = unhex(lines.get(i).trim());
                byte[] value = Integer.toString(i).getBytes(StandardCharsets.US_ASCII);
                sent.add(producer.send(new ProducerRecord<>(args[1], key, value)));
            }
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < sent.size(); i++) {
                out.append(i).append('\t').append(sent.get(i).get().partition()).append('\n');
            }
            System.out.print(out);
        }
    }

    private static byte[] unhex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}
