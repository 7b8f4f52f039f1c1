// Transactional (or idempotent) produce throughput of the Java KafkaProducer, for bench/txn.
//
//   javac -cp "compat/kafka/libs/*" -d CLASSES bench/txn.d/TxnBench.java
//   java -cp "CLASSES:compat/kafka/libs/*" TxnBench \
//        BOOTSTRAP TOPIC PARTITIONS MODE TXN_SIZE RECORDS WARMUP_RECORDS VALUE_SIZE ID
//
// One KafkaProducer: acks=all, enable.idempotence=true, linger.ms=5, batch.size and
// everything else the defaults; no key, a value of VALUE_SIZE random letters (as
// kafka-producer-perf-test makes them). Record i of the run goes to partition
// i % PARTITIONS of TOPIC (the counter runs on across transactions, so a transaction of
// at least PARTITIONS records writes to every partition).
//
//   MODE=txn         transactional.id=ID; initTransactions(), then transactions of
//                    TXN_SIZE records each: beginTransaction(), TXN_SIZE x send(),
//                    commitTransaction().
//   MODE=idempotent  no transactional.id (client.id=ID): RECORDS x send(), then flush().
//
// First WARMUP_RECORDS records (not timed) in the same way with the same producer, then
// RECORDS records, timed: from the first send to the return of the last
// commitTransaction() (idempotent: of flush()). Commit latency = the time one
// commitTransaction() call takes (it flushes the transaction's last batches, then
// EndTxn). RECORDS and WARMUP_RECORDS are rounded down to whole transactions.
//
// After close(), a read_committed and a read_uncommitted consumer's endOffsets() of the
// partitions: the high watermarks (summed) must equal the records produced plus one
// commit marker per partition per transaction, and the last stable offsets must equal the
// high watermarks (no transaction left open). bench/txn checks that.
//
// Prints RESULT {"records":..,"txns":..,"seconds":..,"records_per_sec":..,"mb_per_sec":..,
// "commit_p50_ms":..,"commit_p99_ms":..,"commit_max_ms":..,"txn_p50_ms":..,"init_ms":..,
// "hw_sum":..,"lso_sum":..,"expected_offsets":..} (instead of the last three
// "offsets_error":".." if endOffsets() failed); MB = 2^20 bytes of record values, as
// kafka-producer-perf-test counts. If the producer fails: "ERROR ...", exit status 1.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnBench {
    static String topic;
    static int partitions;
    static long seq = 0;                // records sent so far by this producer
    static byte[] value;
    static final AtomicReference<Exception> sendError = new AtomicReference<>();
    static final Callback CALLBACK = (md, e) -> {
        if (e != null) sendError.compareAndSet(null, e);
    };

    public static void main(String[] args) throws Exception {
        if (args.length < 9) {
            System.err.println("usage: TxnBench BOOTSTRAP TOPIC PARTITIONS MODE TXN_SIZE RECORDS "
                + "WARMUP_RECORDS VALUE_SIZE ID");
            System.exit(2);
        }
        String bootstrap = args[0];
        topic = args[1];
        partitions = Integer.parseInt(args[2]);
        String mode = args[3];
        int txnSize = Integer.parseInt(args[4]);
        long records = Long.parseLong(args[5]);
        long warmup = Long.parseLong(args[6]);
        int valueSize = Integer.parseInt(args[7]);
        String id = args[8];
        boolean txn = mode.equals("txn");
        if (!txn && !mode.equals("idempotent")) {
            System.err.println("MODE: txn | idempotent");
            System.exit(2);
        }
        if (txn && txnSize < 1) {
            System.err.println("TXN_SIZE must be at least 1 for MODE=txn");
            System.exit(2);
        }
        int txns = 0, warmupTxns = 0;
        if (txn) {
            txns = (int) (records / txnSize);
            warmupTxns = (int) (warmup / txnSize);
            records = (long) txns * txnSize;
            warmup = (long) warmupTxns * txnSize;
        }
        value = new byte[valueSize];
        Random random = new Random(0);
        for (int i = 0; i < valueSize; i++) value[i] = (byte) (random.nextInt(26) + 65);

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", id);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        if (txn) p.put("transactional.id", id);

        long[] commitNs = new long[Math.max(txns, 1)];
        long[] txnNs = new long[Math.max(txns, 1)];
        double initMs = 0, secs;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            if (txn) {
                long t0 = System.nanoTime();
                producer.initTransactions();
                initMs = (System.nanoTime() - t0) / 1e6;
                transactions(producer, warmupTxns, txnSize, null, null);
                long start = System.nanoTime();
                transactions(producer, txns, txnSize, commitNs, txnNs);
                secs = (System.nanoTime() - start) / 1e9;
            } else {
                stream(producer, warmup);
                long start = System.nanoTime();
                stream(producer, records);
                secs = (System.nanoTime() - start) / 1e9;
            }
        } catch (Exception e) {
            e.printStackTrace(System.out);
            System.out.println("ERROR " + e);   // last: bench/txn reports the last lines
            System.exit(1);
            return;
        }

        // The log: high watermarks and last stable offsets of the partitions.
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
        long hw = -1, lso = -1;
        String offsetsError = null;
        try {
            hw = endOffsets(bootstrap, tps, "read_uncommitted");
            lso = endOffsets(bootstrap, tps, "read_committed");
        } catch (Exception e) {
            offsetsError = e.toString();
        }
        long expected = records + warmup;
        if (txn) expected += (long) (txns + warmupTxns) * Math.min(txnSize, partitions);

        StringBuilder out = new StringBuilder("RESULT {");
        out.append(String.format("\"records\":%d,\"txns\":%d,\"seconds\":%.3f,\"records_per_sec\":%.1f,"
                + "\"mb_per_sec\":%.2f", records, txns, secs, records / secs,
            records * (double) valueSize / (1 << 20) / secs));
        if (txn && txns > 0) {
            Arrays.sort(commitNs);
            Arrays.sort(txnNs);
            out.append(String.format(",\"commit_p50_ms\":%.3f,\"commit_p99_ms\":%.3f,\"commit_max_ms\":%.3f,"
                    + "\"txn_p50_ms\":%.3f,\"init_ms\":%.1f", pct(commitNs, 0.50), pct(commitNs, 0.99),
                commitNs[txns - 1] / 1e6, pct(txnNs, 0.50), initMs));
        }
        if (offsetsError != null) {
            out.append(",\"offsets_error\":\"")
               .append(offsetsError.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " "))
               .append("\"}");
        } else {
            out.append(String.format(",\"hw_sum\":%d,\"lso_sum\":%d,\"expected_offsets\":%d}", hw, lso, expected));
        }
        System.out.println(out);
    }

    static double pct(long[] sorted, double q) {
        return sorted[Math.min(sorted.length - 1, (int) (sorted.length * q))] / 1e6;
    }

    static ProducerRecord<byte[], byte[]> next() {
        return new ProducerRecord<>(topic, (int) (seq++ % partitions), null, value);
    }

    static void checkSends() throws Exception {
        Exception e = sendError.get();
        if (e != null) throw new Exception("a send failed: " + e, e);
    }

    static void transactions(KafkaProducer<byte[], byte[]> producer, int count, int size,
                             long[] commitNs, long[] txnNs) throws Exception {
        for (int t = 0; t < count; t++) {
            long b = System.nanoTime();
            producer.beginTransaction();
            for (int i = 0; i < size; i++) producer.send(next(), CALLBACK);
            long c = System.nanoTime();
            producer.commitTransaction();
            long e = System.nanoTime();
            checkSends();
            if (commitNs != null) {
                commitNs[t] = e - c;
                txnNs[t] = e - b;
            }
        }
    }

    static void stream(KafkaProducer<byte[], byte[]> producer, long count) throws Exception {
        for (long i = 0; i < count; i++) producer.send(next(), CALLBACK);
        producer.flush();
        checkSends();
    }

    static long endOffsets(String bootstrap, List<TopicPartition> tps, String isolation) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", isolation);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
            long sum = 0;
            for (Long v : ends.values()) sum += v;
            return sum;
        }
    }
}
