// Decodes Kafka v2 record batches with the Apache Kafka Java client's own record
// classes and prints one JSON object per record (one per line).
//
//   java -cp 'compat/kafka/libs/*' compat/java/DecodeBatches.java FILE [FILE...]
//       FILE: concatenated v2 record batches (e.g. a segment's .log file).
//       Every batch must pass ensureValid() (size + CRC32C) and the structural
//       checks below; otherwise a message goes to stderr and the exit code is 1.
//       With several files each line also has "file".
//       --lenient (first arg) skips the checks that a compacted log may break
//       (record offsets/count contiguous within a batch).
//
//   java -cp 'compat/kafka/libs/*' compat/java/DecodeBatches.java \
//        --consume BOOTSTRAP COUNT TOPIC [TOPIC...]
//       Reads COUNT records from partition 0 of each TOPIC, from the beginning,
//       with KafkaConsumer (check.crcs=true); each line also has "topic".
//
// Per-record fields: offset, timestamp, timestamp_type, key, value (UTF-8 or
// null), headers ([[key, value-or-null], ...]); in file mode also batch_base_offset,
// batch_last_offset, compression (none|gzip|snappy|lz4|zstd), producer_id,
// producer_epoch, base_sequence, is_transactional, is_control, partition_leader_epoch.

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class DecodeBatches {
    static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    static void fail(String msg) {
        OUT.flush();
        System.err.println("DecodeBatches: INVALID: " + msg);
        System.exit(1);
    }

    static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String utf8(ByteBuffer buf) {
        if (buf == null) return null;
        byte[] a = new byte[buf.remaining()];
        buf.duplicate().get(a);
        return new String(a, StandardCharsets.UTF_8);
    }

    static String utf8(byte[] a) {
        return a == null ? null : new String(a, StandardCharsets.UTF_8);
    }

    static String headers(Header[] hs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < hs.length; i++) {
            if (i > 0) b.append(',');
            b.append('[').append(str(hs[i].key())).append(',').append(str(utf8(hs[i].value()))).append(']');
        }
        return b.append(']').toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 4 && args[0].equals("--consume")) {
            consume(args);
        } else if (args.length >= 1) {
            boolean lenient = args[0].equals("--lenient");
            int first = lenient ? 1 : 0;
            if (first >= args.length) usage();
            boolean multi = args.length - first > 1;
            for (int i = first; i < args.length; i++) decodeFile(args[i], multi, lenient);
        } else {
            usage();
        }
        OUT.flush();
    }

    static void usage() {
        System.err.println("usage: DecodeBatches [--lenient] FILE [FILE...]\n"
                + "       DecodeBatches --consume BOOTSTRAP COUNT TOPIC [TOPIC...]");
        System.exit(2);
    }

    static void decodeFile(String path, boolean multi, boolean lenient) throws Exception {
        byte[] data = Files.readAllBytes(Paths.get(path));
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(data));
        String filePrefix = multi ? "\"file\":" + str(path) + "," : "";
        long position = 0;
        int batchIndex = 0;
        for (MutableRecordBatch batch : records.batches()) {
            String where = path + ": batch #" + batchIndex + " at byte " + position
                    + " (base offset " + batch.baseOffset() + ")";
            if (batch.magic() != RecordBatch.MAGIC_VALUE_V2)
                fail(where + ": magic " + batch.magic() + ", expected 2");
            try {
                batch.ensureValid();
            } catch (RuntimeException e) {
                fail(where + ": " + e);
            }
            Integer count = batch.countOrNull();
            long expectedOffset = batch.baseOffset();
            long maxTs = RecordBatch.NO_TIMESTAMP;
            int n = 0;
            StringBuilder lines = new StringBuilder();
            try {
                for (Record r : batch) {
                    r.ensureValid();
                    if (!lenient && r.offset() != expectedOffset)
                        fail(where + ": record " + n + " has offset " + r.offset() + ", expected " + expectedOffset);
                    expectedOffset = r.offset() + 1;
                    maxTs = Math.max(maxTs, r.timestamp());
                    n++;
                    lines.append('{').append(filePrefix)
                        .append("\"offset\":").append(r.offset())
                        .append(",\"timestamp\":").append(r.timestamp())
                        .append(",\"timestamp_type\":").append(str(batch.timestampType().name))
                        .append(",\"key\":").append(str(utf8(r.key())))
                        .append(",\"value\":").append(str(utf8(r.value())))
                        .append(",\"headers\":").append(headers(r.headers()))
                        .append(",\"batch_base_offset\":").append(batch.baseOffset())
                        .append(",\"batch_last_offset\":").append(batch.lastOffset())
                        .append(",\"compression\":").append(str(batch.compressionType().name))
                        .append(",\"producer_id\":").append(batch.producerId())
                        .append(",\"producer_epoch\":").append(batch.producerEpoch())
                        .append(",\"base_sequence\":").append(batch.baseSequence())
                        .append(",\"is_transactional\":").append(batch.isTransactional())
                        .append(",\"is_control\":").append(batch.isControlBatch())
                        .append(",\"partition_leader_epoch\":").append(batch.partitionLeaderEpoch())
                        .append("}\n");
                }
            } catch (RuntimeException e) {
                fail(where + ": cannot decode records: " + e);
            }
            if (count == null || count != n)
                fail(where + ": header says " + count + " records, decoded " + n);
            if (n == 0)
                fail(where + ": empty batch");
            if (!lenient && expectedOffset - 1 != batch.lastOffset())
                fail(where + ": last record offset " + (expectedOffset - 1)
                        + " != batch last offset " + batch.lastOffset());
            if (batch.timestampType() == org.apache.kafka.common.record.TimestampType.CREATE_TIME
                    && batch.maxTimestamp() != maxTs)
                fail(where + ": batch max timestamp " + batch.maxTimestamp()
                        + " != max record timestamp " + maxTs);
            OUT.print(lines);
            position += batch.sizeInBytes();
            batchIndex++;
        }
        if (position != data.length)
            fail(path + ": " + (data.length - position) + " trailing bytes after " + batchIndex
                    + " batches at byte " + position + " (truncated or garbage batch)");
        if (batchIndex == 0)
            fail(path + ": no record batches");
    }

    static void consume(String[] args) {
        String bootstrap = args[1];
        long count = Long.parseLong(args[2]);
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 3; i < args.length; i++) tps.add(new TopicPartition(args[i], 0));
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "sluice-compat-java-consumer");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Map<String, Long> got = new HashMap<>();
        long deadline = System.currentTimeMillis() + 60_000;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long total = 0;
            while (total < count * tps.size()) {
                if (System.currentTimeMillis() > deadline)
                    fail("consume timed out: got " + got + ", want " + count + " per topic");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    long seen = got.merge(r.topic(), 1L, Long::sum);
                    if (seen > count) continue;
                    total++;
                    OUT.append('{')
                        .append("\"topic\":").append(str(r.topic()))
                        .append(",\"offset\":").append(String.valueOf(r.offset()))
                        .append(",\"timestamp\":").append(String.valueOf(r.timestamp()))
                        .append(",\"timestamp_type\":").append(str(r.timestampType().name))
                        .append(",\"key\":").append(str(utf8(r.key())))
                        .append(",\"value\":").append(str(utf8(r.value())))
                        .append(",\"headers\":").append(headers(r.headers().toArray()))
                        .append("}\n");
                }
            }
        }
    }
}
