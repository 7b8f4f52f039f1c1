// OffsetCommit / OffsetFetch rate of the Java KafkaConsumer, for bench/groups.
//
//   java -cp "compat/kafka/libs/*" bench/groups.d/CommitBench.java \
//        BOOTSTRAP TOPIC PARTITIONS OP COUNT THREADS WARMUP GROUP_PREFIX
//
// THREADS threads, each with its own KafkaConsumer in its own group (GROUP_PREFIX-tN,
// a simple consumer: assign() of every partition of TOPIC, no subscribe, no
// generation), enable.auto.commit=false. Each thread first does WARMUP operations
// (not timed), then all start together and each does COUNT operations:
//   commit100  commitSync(map of all PARTITIONS partitions -> offset i): one OffsetCommit
//              request with PARTITIONS offsets per call
//   commit1    commitSync(one partition -> offset i), partition i % PARTITIONS
//   fetch      committed(set of all PARTITIONS partitions): one OffsetFetch per call
// Prints RESULT {"ops":..,"seconds":..,"ops_per_sec":..,"offsets_per_sec":..,
// "p50_ms":..,"p99_ms":..}; ops = calls summed over the threads; seconds = from the
// common start to the last thread's end; latency percentiles over every call.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class CommitBench {
    public static void main(String[] args) throws Exception {
        if (args.length < 8) {
            System.err.println("usage: CommitBench BOOTSTRAP TOPIC PARTITIONS OP COUNT THREADS WARMUP GROUP_PREFIX");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1], op = args[3], prefix = args[7];
        int partitions = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[4]);
        int threads = Integer.parseInt(args[5]);
        int warmup = Integer.parseInt(args[6]);
        if (!op.equals("commit100") && !op.equals("commit1") && !op.equals("fetch")) {
            System.err.println("OP: commit100 | commit1 | fetch");
            System.exit(2);
        }
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
        Set<TopicPartition> tpSet = new HashSet<>(tps);

        CyclicBarrier ready = new CyclicBarrier(threads + 1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        long[][] lat = new long[threads][count];
        long[] ends = new long[threads];
        String[] errors = new String[threads];
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int ti = t;
            Thread th = new Thread(() -> {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("group.id", prefix + "-t" + ti);
                p.put("client.id", prefix + "-t" + ti);
                p.put("key.deserializer", ByteArrayDeserializer.class.getName());
                p.put("value.deserializer", ByteArrayDeserializer.class.getName());
                p.put("enable.auto.commit", "false");
                boolean waited = false;
                try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
                    c.assign(tps);
                    Map<TopicPartition, OffsetAndMetadata> all = new HashMap<>();
                    for (TopicPartition tp : tps) all.put(tp, new OffsetAndMetadata(1));
                    c.commitSync(all, Duration.ofSeconds(30));   // so that fetch finds offsets
                    long i = 2;
                    for (int w = 0; w < warmup; w++, i++) once(c, op, tps, tpSet, i, Duration.ofSeconds(30));
                    waited = true;
                    ready.await();
                    for (int k = 0; k < count; k++, i++) {
                        long s = System.nanoTime();
                        once(c, op, tps, tpSet, i, Duration.ofSeconds(30));
                        lat[ti][k] = System.nanoTime() - s;
                    }
                    ends[ti] = System.nanoTime();
                } catch (Throwable e) {
                    errors[ti] = e.toString();
                    ends[ti] = System.nanoTime();
                    if (!waited) {
                        try { ready.await(); } catch (Exception ignored) { }
                    }
                } finally {
                    try { done.await(); } catch (Exception ignored) { }
                }
            }, "committer-" + t);
            th.setDaemon(true);
            ts.add(th);
            th.start();
        }
        ready.await();
        long start = System.nanoTime();
        done.await();
        for (int t = 0; t < threads; t++) {
            if (errors[t] != null) {
                System.out.println("ERROR thread " + t + ": " + errors[t]);
                System.exit(1);
            }
        }
        long end = Arrays.stream(ends).max().getAsLong();
        long[] flat = new long[threads * count];
        for (int t = 0; t < threads; t++) System.arraycopy(lat[t], 0, flat, t * count, count);
        Arrays.sort(flat);
        double secs = (end - start) / 1e9;
        long ops = (long) threads * count;
        int per = op.equals("commit1") ? 1 : partitions;
        System.out.printf("RESULT {\"ops\":%d,\"seconds\":%.3f,\"ops_per_sec\":%.1f,\"offsets_per_sec\":%.1f,"
                + "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f}%n",
            ops, secs, ops / secs, ops * per / secs,
            flat[(int) (flat.length * 0.50)] / 1e6, flat[Math.min(flat.length - 1, (int) (flat.length * 0.99))] / 1e6,
            flat[flat.length - 1] / 1e6);
    }

    static void once(KafkaConsumer<byte[], byte[]> c, String op, List<TopicPartition> tps,
                     Set<TopicPartition> tpSet, long i, Duration timeout) {
        switch (op) {
            case "commit100": {
                Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
                OffsetAndMetadata o = new OffsetAndMetadata(i);
                for (TopicPartition tp : tps) m.put(tp, o);
                c.commitSync(m, timeout);
                break;
            }
            case "commit1":
                c.commitSync(Map.of(tps.get((int) (i % tps.size())), new OffsetAndMetadata(i)), timeout);
                break;
            default:
                Map<TopicPartition, OffsetAndMetadata> got = c.committed(tpSet, timeout);
                if (got.size() != tpSet.size()) throw new IllegalStateException("committed() returned " + got.size() + " partitions");
                for (OffsetAndMetadata v : got.values()) {
                    if (v == null) throw new IllegalStateException("committed() returned no offset for a partition");
                }
        }
    }
}
