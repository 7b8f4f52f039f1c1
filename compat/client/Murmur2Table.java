// Prints the table crates/sluice-client/tests/fixtures/murmur2_partitions.tsv: for each
// key (hex bytes) and partition count, the partition Apache Kafka's Java client picks for
// a keyed record (BuiltInPartitioner.partitionForKey: Utils.toPositive(Utils.murmur2(key))
// % numPartitions). Sluice's producer must pick the same partition for every row.
//
// Run (from the repository root; fetch-kafka.sh prints the libs directory):
//   LIBS=$(compat/kafka/fetch-kafka.sh)
//   CP="$LIBS/kafka-clients-4.1.1.jar:$LIBS/slf4j-api-1.7.36.jar"
//   javac -cp "$CP" -d /tmp/murmur2 compat/client/Murmur2Table.java
//   java -cp "$CP:/tmp/murmur2" Murmur2Table \
//     > crates/sluice-client/tests/fixtures/murmur2_partitions.tsv

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.kafka.common.utils.Utils;

public class Murmur2Table {
    public static void main(String[] args) {
        List<byte[]> keys = new ArrayList<>();
        keys.add(new byte[0]);
        for (String ascii : new String[] {"a", "ab", "abc", "abcd", "abcde", "key", "order-1",
                "order-2", "user-42", "hello world", "The quick brown fox jumps over the lazy dog",
                "0", "1", "-1", "kafka", "sluice"}) {
            keys.add(ascii.getBytes(StandardCharsets.US_ASCII));
        }
        for (String utf8 : new String[] {"é", "日本語", "東京リージョン", "😀", "Grüße",
                "Ελληνικά", "中文键"}) {
            keys.add(utf8.getBytes(StandardCharsets.UTF_8));
        }
        keys.add(new byte[] {0});
        keys.add(new byte[] {(byte) 0xff});
        keys.add(new byte[] {(byte) 0x80, 0, 0, 0});
        keys.add(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
        keys.add(new byte[] {1, 2, 3, 4, 5, 6, 7});
        // Fixed seed: the table is reproducible.
        Random random = new Random(20261130L);
        for (int length : new int[] {1, 2, 3, 5, 8, 13, 16, 31, 64, 100, 257, 1000}) {
            byte[] key = new byte[length];
            random.nextBytes(key);
            keys.add(key);
        }
        StringBuilder longAscii = new StringBuilder();
        for (int i = 0; i < 60; i++) {
            longAscii.append("long-key-").append(i).append(';');
        }
        keys.add(longAscii.toString().getBytes(StandardCharsets.US_ASCII));

        int[] partitionCounts = {1, 2, 3, 6, 7, 12, 16, 50, 100, 1000};
        System.out.println("# key_hex\tpartition_count\tjava_partition\t(murmur2_hex)");
        for (byte[] key : keys) {
            int hash = Utils.murmur2(key);
            for (int count : partitionCounts) {
                int partition = Utils.toPositive(hash) % count;
                System.out.println(hex(key) + "\t" + count + "\t" + partition + "\t"
                        + String.format("%08x", hash));
            }
        }
    }

    private static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            out.append(String.format("%02x", b & 0xff));
        }
        return out.toString();
    }
}
