// Rebalance times of one consumer group, for bench/groups.
//
//   java -cp "compat/kafka/libs/*" bench/groups.d/GroupRebalance.java \
//        BOOTSTRAP TOPIC PARTITIONS MEMBERS MODE REPS WARMUP_REPS
//
// MODE: range | cooperative-sticky (group.protocol=classic with that assignor, client
// heartbeat.interval.ms=100) | consumer (group.protocol=consumer, KIP-848; the heartbeat
// interval is the broker's group.consumer.heartbeat.interval.ms, and the assignor the
// broker's default).
//
// Each repetition uses a fresh group id and MEMBERS KafkaConsumers, one per thread, in
// this JVM. Every consumer is constructed before its clock starts. Each member thread
// subscribes to TOPIC and polls (poll(20 ms)) until told to close. The rebalance listener
// keeps every member's assignment (added on onPartitionsAssigned, removed on
// onPartitionsRevoked / onPartitionsLost), the generation it was assigned in
// (groupMetadata().generationId()) and the time of the callback.
//
// "Stable" means: every live member's assignment is known, the assignments are
// disjoint, they cover all PARTITIONS partitions, and their sizes differ by at most 1
// (range, cooperative-sticky and KIP-848's uniform assignor all balance one topic that
// way). For the classic protocol also: every live member's last onPartitionsAssigned
// came in the same generation, newer than the one before the step (i.e. every member's
// onPartitionsAssigned of the new generation has fired). A member of a KIP-848 group
// whose assignment does not change gets no callback, so for MODE=consumer the
// assignment condition alone is used. The time of a step ends at the last callback
// that made the group stable.
//
//   join:  MEMBERS consumers subscribe at once; from then until stable.
//   add:   one more member subscribes; from its subscribe() until stable again.
//   leave: that member close()s; from the call until the remaining MEMBERS are stable.
//
// Prints one line per repetition: RESULT {"rep":..,"warmup":..,"join_ms":..,"add_ms":..,
// "leave_ms":..} or RESULT {"rep":..,"error":"..."}; warm-up repetitions are not meant to
// be reported. Exits 1 if a measured repetition failed.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupRebalance {
    static final Object LOCK = new Object();
    static long lastChange = 0;   // nanoTime of the last callback of a live member

    static String bootstrap, topic, mode;
    static int partitions;

    static final class Member implements Runnable {
        final int index;
        final String groupId;
        final CountDownLatch constructed = new CountDownLatch(1);
        final CountDownLatch go = new CountDownLatch(1);
        final Thread thread;
        volatile boolean closeRequested = false;
        volatile long subscribeNanos = 0;
        volatile long closeNanos = 0;
        volatile String failure = null;
        // guarded by LOCK
        boolean live = true;
        boolean everAssigned = false;
        final Set<TopicPartition> owned = new HashSet<>();
        int gen = -1;

        Member(int index, String groupId) {
            this.index = index;
            this.groupId = groupId;
            this.thread = new Thread(this, "member-" + index);
            this.thread.setDaemon(true);
        }

        public void run() {
            KafkaConsumer<byte[], byte[]> consumer;
            try {
                consumer = new KafkaConsumer<>(props(groupId, index));
            } catch (Throwable t) {
                failure = "construct: " + t;
                constructed.countDown();
                return;
            }
            constructed.countDown();
            try {
                go.await();
                ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                        long now = System.nanoTime();
                        synchronized (LOCK) {
                            if (!live) return;
                            owned.removeAll(parts);
                            lastChange = now;
                            LOCK.notifyAll();
                        }
                    }

                    public void onPartitionsLost(Collection<TopicPartition> parts) {
                        onPartitionsRevoked(parts);
                    }

                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        long now = System.nanoTime();
                        int g = consumer.groupMetadata().generationId();
                        synchronized (LOCK) {
                            if (!live) return;
                            owned.addAll(parts);
                            gen = g;
                            everAssigned = true;
                            lastChange = now;
                            LOCK.notifyAll();
                        }
                    }
                };
                subscribeNanos = System.nanoTime();
                consumer.subscribe(List.of(topic), listener);
                while (!closeRequested) {
                    consumer.poll(Duration.ofMillis(20));
                }
            } catch (Throwable t) {
                failure = "poll: " + t;
                synchronized (LOCK) {
                    LOCK.notifyAll();
                }
            } finally {
                synchronized (LOCK) {
                    live = false;
                    owned.clear();
                }
                closeNanos = System.nanoTime();
                try {
                    consumer.close(Duration.ofSeconds(10));
                } catch (Throwable t) {
                    if (failure == null) failure = "close: " + t;
                }
            }
        }
    }

    static Properties props(String groupId, int index) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", groupId);
        p.put("client.id", groupId + "-m" + index);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        if (mode.equals("consumer")) {
            p.put("group.protocol", "consumer");
        } else {
            p.put("group.protocol", "classic");
            p.put("heartbeat.interval.ms", "100");
            p.put("session.timeout.ms", "45000");
            p.put("partition.assignment.strategy", mode.equals("range")
                ? "org.apache.kafka.clients.consumer.RangeAssignor"
                : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        }
        return p;
    }

    /** Under LOCK: null if the live members are stable (newer than minGen), else why not. */
    static String unstable(List<Member> members, int minGen) {
        Set<TopicPartition> all = new HashSet<>();
        int total = 0, min = Integer.MAX_VALUE, max = 0, gen = -2;
        boolean sameGen = true;
        int live = 0;
        for (Member m : members) {
            if (m.failure != null) return "member " + m.index + " failed: " + m.failure;
            if (!m.live) continue;
            live++;
            if (!m.everAssigned) return "member " + m.index + " has no assignment yet";
            all.addAll(m.owned);
            total += m.owned.size();
            min = Math.min(min, m.owned.size());
            max = Math.max(max, m.owned.size());
            if (gen == -2) gen = m.gen;
            else if (gen != m.gen) sameGen = false;
        }
        if (all.size() != total) return "overlapping assignments";
        if (all.size() != partitions) return all.size() + " of " + partitions + " partitions assigned";
        if (max - min > 1) return "unbalanced (" + min + ".." + max + " per member)";
        if (!mode.equals("consumer")) {
            if (!sameGen) return "members in different generations";
            if (gen <= minGen) return "still generation " + gen;
        }
        return null;
    }

    static String describe(List<Member> members) {
        StringBuilder sb = new StringBuilder();
        for (Member m : members) {
            if (!m.live) continue;
            sb.append(" m").append(m.index).append(":").append(m.owned.size())
              .append("@g").append(m.gen);
        }
        return sb.toString().trim();
    }

    static int maxGen(List<Member> members) {
        int g = -1;
        for (Member m : members) if (m.live) g = Math.max(g, m.gen);
        return g;
    }

    /** Waits until stable; returns the time of the last callback, in nanoTime. */
    static long awaitStable(List<Member> members, int minGen, long timeoutMs, String step)
            throws Exception {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        synchronized (LOCK) {
            while (true) {
                String why = unstable(members, minGen);
                if (why == null) return lastChange;
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    throw new Exception(step + ": not stable after " + timeoutMs + " ms: " + why
                        + " [" + describe(members) + "]");
                }
                LOCK.wait(Math.min(left, 50));
            }
        }
    }

    static void closeAll(List<Member> members) throws InterruptedException {
        for (Member m : members) m.closeRequested = true;
        for (Member m : members) {
            m.go.countDown();
            m.thread.join(30_000);
        }
    }

    static String json(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 7) {
            System.err.println("usage: GroupRebalance BOOTSTRAP TOPIC PARTITIONS MEMBERS MODE REPS WARMUP_REPS");
            System.exit(2);
        }
        bootstrap = args[0];
        topic = args[1];
        partitions = Integer.parseInt(args[2]);
        int n = Integer.parseInt(args[3]);
        mode = args[4];
        int reps = Integer.parseInt(args[5]);
        int warmups = Integer.parseInt(args[6]);
        long timeoutMs = 60_000;
        boolean failed = false;
        String run = UUID.randomUUID().toString().substring(0, 8);

        for (int rep = 0; rep < warmups + reps; rep++) {
            boolean warmup = rep < warmups;
            String group = "bench-groups-" + mode + "-" + run + "-" + rep;
            List<Member> members = new ArrayList<>();
            StringBuilder out = new StringBuilder();
            out.append("{\"rep\":").append(rep - warmups).append(",\"warmup\":").append(warmup)
               .append(",\"group\":").append(json(group));
            try {
                for (int i = 0; i < n; i++) members.add(new Member(i, group));
                for (Member m : members) m.thread.start();
                for (Member m : members) m.constructed.await();
                for (Member m : members) {
                    if (m.failure != null) throw new Exception("member " + m.index + ": " + m.failure);
                }
                // (a) join
                long t0 = System.nanoTime();
                for (Member m : members) m.go.countDown();
                long t1 = awaitStable(members, -1, timeoutMs, "join");
                out.append(",\"join_ms\":").append(String.format("%.1f", (t1 - t0) / 1e6));
                int gen;
                synchronized (LOCK) { gen = maxGen(members); }
                out.append(",\"join_gen\":").append(gen);
                Thread.sleep(300);

                // (b) an 11th member
                Member extra = new Member(n, group);
                members.add(extra);
                extra.thread.start();
                extra.constructed.await();
                if (extra.failure != null) throw new Exception("extra member: " + extra.failure);
                synchronized (LOCK) { gen = maxGen(members); }
                extra.go.countDown();
                long t2;
                while ((t2 = extra.subscribeNanos) == 0) Thread.onSpinWait();
                long t3 = awaitStable(members, gen, timeoutMs, "add");
                out.append(",\"add_ms\":").append(String.format("%.1f", (t3 - t2) / 1e6));
                synchronized (LOCK) { gen = maxGen(members); }
                out.append(",\"add_gen\":").append(gen);
                Thread.sleep(300);

                // (c) it leaves
                extra.closeRequested = true;
                long t4;
                while ((t4 = extra.closeNanos) == 0) Thread.onSpinWait();
                long t5 = awaitStable(members, gen, timeoutMs, "leave");
                out.append(",\"leave_ms\":").append(String.format("%.1f", (t5 - t4) / 1e6));
                synchronized (LOCK) { gen = maxGen(members); }
                out.append(",\"leave_gen\":").append(gen);
            } catch (Exception e) {
                out.append(",\"error\":").append(json(e.getMessage() == null ? e.toString() : e.getMessage()));
                if (!warmup) failed = true;
            } finally {
                closeAll(members);
            }
            out.append("}");
            System.out.println("RESULT " + out);
            System.out.flush();
        }
        System.exit(failed ? 1 : 0);
    }
}
