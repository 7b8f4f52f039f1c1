// Kafka's Java consumer (kafka-clients from compat/kafka/libs) in consumer groups.
//
//   java -cp 'compat/kafka/libs/*' compat/groups/GroupsJava.java BOOTSTRAP
//
// Checks (suite "java"), each on its own 6-partition topic and group:
//   cooperative-sticky    2 members (3+3), a 3rd joins: the partitions revoked
//                         (onPartitionsRevoked) are exactly those that moved, 0 < n < 6
//   eager (range)         the same with RangeAssignor: all 6 partitions revoked
//   mixed group           2 Java + 2 librdkafka (compat/groups/member.py) consumers with the
//                         range assignor: one generation, disjoint, complete, sizes 1,1,2,2
//   commitSync            explicit offsets of what was consumed, then commitSync() of the
//                         positions: committed() and Admin listConsumerGroupOffsets agree
//   commitAsync           with a callback: the callback's offsets, committed()
//   auto-commit           enable.auto.commit: listConsumerGroupOffsets = consumed
//   KIP-848 migration     2 classic members + 1 group.protocol=consumer member: upgraded
//                         (type Consumer, 2/2/2); when it leaves, downgraded (Classic, 3/3)
//   KIP-848               group.protocol=consumer: one member gets all 6 partitions; a 2nd
//                         joins: the first sees a revocation, a new member epoch; 3/3,
//                         disjoint, complete; the 30 records are consumed
// Prints "PASS java: <check>" / "FAIL java: <check>: <reason>"; exits 1 if any failed.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GroupsJava {
    static final int T = 10; // seconds: bound on a client call
    static final int P = 6;
    static final String RUN = UUID.randomUUID().toString().substring(0, 6);
    static String bootstrap;
    static Path here;
    static final Map<String, Boolean> status = new LinkedHashMap<>();
    static int failed = 0;
    static final List<Process> children = new ArrayList<>();

    interface Body { void run() throws Exception; }

    static class Fail extends Exception {
        Fail(String m) { super(m); }
    }

    static void check(String name, Body body) {
        long t = System.nanoTime();
        try {
            body.run();
            report(name, true, "", System.nanoTime() - t);
        } catch (Throwable e) {
            Throwable c = e;
            if (c instanceof ExecutionException && c.getCause() != null) c = c.getCause();
            String msg = c instanceof Fail ? c.getMessage() : c.getClass().getSimpleName() + ": " + c.getMessage();
            if (!(c instanceof Fail)) {
                for (StackTraceElement el : e.getStackTrace()) {
                    if (el.getClassName().startsWith("GroupsJava")) {
                        msg += " (at line " + el.getLineNumber() + ")";
                        break;
                    }
                }
            }
            report(name, false, msg, 0);
        } finally {
            for (Process p : children) p.destroyForcibly();
            children.clear();
        }
    }

    static void report(String name, boolean ok, String reason, long nanos) {
        status.put(name, ok);
        if (ok) {
            System.out.printf("PASS java: %s (%.1fs)%n", name, nanos / 1e9);
        } else {
            failed++;
            String r = String.valueOf(reason).replaceAll("\\s+", " ");
            if (r.length() > 600) r = r.substring(0, 600) + "...";
            System.out.println("FAIL java: " + name + ": " + r);
        }
        System.out.flush();
    }

    static void expect(Object got, Object want, String what) throws Fail {
        if (!java.util.Objects.equals(got, want)) throw new Fail(what + ": got " + got + ", expected " + want);
    }

    static String name(String prefix) { return prefix + "-" + RUN; }

    static Set<Integer> all() {
        Set<Integer> s = new TreeSet<>();
        for (int p = 0; p < P; p++) s.add(p);
        return s;
    }

    // -- setup ---------------------------------------------------------------------------

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
        return Admin.create(p);
    }

    static void createTopic(String topic) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(topic, P, (short) 1))).all().get(T + 2, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (true) {
                try {
                    var d = a.describeTopics(List.of(topic)).allTopicNames().get(T, TimeUnit.SECONDS).get(topic);
                    if (d.partitions().size() == P && d.partitions().stream().allMatch(x -> x.leader() != null)) return;
                } catch (ExecutionException e) {
                    // not known yet
                }
                if (System.nanoTime() > deadline) throw new Fail("topic " + topic + " not ready");
                Thread.sleep(100);
            }
        }
    }

    static void produce(String topic, int perPartition, String tag) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, T * 1000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, T * 1000 + 2000);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < perPartition; i++) {
                for (int q = 0; q < P; q++) fs.add(pr.send(new ProducerRecord<>(topic, q, "k" + i, tag + "-" + q + "-" + i)));
            }
            for (var f : fs) f.get(T + 2, TimeUnit.SECONDS);
        }
    }

    static Map<Integer, Long> groupOffsets(String group, String topic) throws Exception {
        try (Admin a = admin()) {
            Map<TopicPartition, OffsetAndMetadata> m = a.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(T + 2, TimeUnit.SECONDS);
            Map<Integer, Long> out = new TreeMap<>();
            for (var e : m.entrySet()) {
                if (e.getKey().topic().equals(topic) && e.getValue() != null) out.put(e.getKey().partition(), e.getValue().offset());
            }
            return out;
        }
    }

    // -- members -------------------------------------------------------------------------

    interface M {
        String name();
        Set<Integer> assignment();
        Integer gen();
        void poll();
        void close();
    }

    /** A Java consumer recording its rebalance callbacks and records. */
    static class JMember implements M, ConsumerRebalanceListener {
        final String name;
        final String topic;
        final KafkaConsumer<String, String> c;
        final Set<Integer> assignment = new TreeSet<>();
        final List<String> events = new ArrayList<>(); // "assign [..]" / "revoke [..]" / "lost [..]"
        final Set<Integer> revokedSince = new TreeSet<>();
        final Map<Integer, Long> next = new TreeMap<>(); // partition -> last consumed offset + 1
        int records = 0;
        boolean kip848;

        JMember(String name, String group, String topic, Map<String, Object> extra) {
            this.name = name;
            this.topic = topic;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
            p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
            p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
            kip848 = "consumer".equals(extra.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG));
            if (!kip848) {
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
                p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 30000);
            }
            p.putAll(extra);
            c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
            c.subscribe(List.of(topic), this);
        }

        public String name() { return name; }
        public Set<Integer> assignment() { return assignment; }
        public Integer gen() { return c.groupMetadata().generationId(); }

        static List<Integer> parts(Collection<TopicPartition> ps) {
            List<Integer> l = new ArrayList<>();
            for (TopicPartition tp : ps) l.add(tp.partition());
            l.sort(null);
            return l;
        }

        @Override public void onPartitionsAssigned(Collection<TopicPartition> ps) {
            assignment.addAll(parts(ps));
            events.add("assign " + parts(ps));
        }
        @Override public void onPartitionsRevoked(Collection<TopicPartition> ps) {
            assignment.removeAll(parts(ps));
            revokedSince.addAll(parts(ps));
            events.add("revoke " + parts(ps));
        }
        @Override public void onPartitionsLost(Collection<TopicPartition> ps) {
            assignment.removeAll(parts(ps));
            events.add("lost " + parts(ps));
        }

        public void poll() {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(50))) {
                records++;
                next.merge(r.partition(), r.offset() + 1, Math::max);
            }
        }

        public void close() {
            try { c.close(Duration.ofSeconds(5)); } catch (Exception e) { /* best effort */ }
        }
    }

    static final Pattern EV = Pattern.compile("\"ev\": \"(\\w+)\"");
    static final Pattern GEN = Pattern.compile("\"gen\": (-?\\d+)");
    static final Pattern PARTS = Pattern.compile("\"parts\": \\[([^\\]]*)\\]");

    /** A librdkafka consumer in a child process (member.py), read through its JSON lines. */
    static class RdMember implements M {
        final String name;
        final Process proc;
        final Set<Integer> assignment = new TreeSet<>();
        volatile Integer gen = null;
        volatile Integer liveGen = null;
        volatile String error = null;

        RdMember(String name, String group, String topic, String strategy) throws Exception {
            this.name = name;
            String spec = "{\"bootstrap\": \"" + bootstrap + "\", \"group\": \"" + group + "\", \"topic\": \""
                    + topic + "\", \"name\": \"" + name + "\", \"conf\": {\"partition.assignment.strategy\": \""
                    + strategy + "\"}}";
            proc = new ProcessBuilder("python3", here.resolve("member.py").toString(), spec)
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            children.add(proc);
            Thread t = new Thread(this::read);
            t.setDaemon(true);
            t.start();
        }

        void read() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    Matcher e = EV.matcher(line);
                    if (!e.find()) continue;
                    String ev = e.group(1);
                    Matcher g = GEN.matcher(line);
                    Integer gv = g.find() ? Integer.valueOf(g.group(1)) : null;
                    Set<Integer> ps = new TreeSet<>();
                    Matcher pm = PARTS.matcher(line);
                    if (pm.find()) {
                        for (String s : pm.group(1).split(",")) if (!s.isBlank()) ps.add(Integer.valueOf(s.trim()));
                    }
                    synchronized (this) {
                        switch (ev) {
                            case "assign": assignment.clear(); assignment.addAll(ps); gen = gv; liveGen = gv; break;
                            case "revoke": case "lost": assignment.clear(); break;
                            case "gen": liveGen = gv; break;
                            case "error": error = line; break;
                            default: break;
                        }
                    }
                }
            } catch (Exception e) {
                error = e.toString();
            }
        }

        public String name() { return name; }
        public synchronized Set<Integer> assignment() { return new TreeSet<>(assignment); }
        public Integer gen() { return java.util.Objects.equals(gen, liveGen) ? gen : null; }
        public void poll() {}
        public void close() {
            try {
                proc.getOutputStream().close();
                if (!proc.waitFor(8, TimeUnit.SECONDS)) proc.destroyForcibly();
            } catch (Exception e) {
                proc.destroyForcibly();
            }
        }
    }

    static String state(List<? extends M> ms) {
        StringBuilder b = new StringBuilder();
        for (M m : ms) b.append(m.name()).append(" gen=").append(m.gen()).append(" parts=").append(m.assignment()).append("; ");
        return b.toString();
    }

    static Map<String, Set<Integer>> snapshot(List<? extends M> ms) {
        Map<String, Set<Integer>> out = new TreeMap<>();
        for (M m : ms) out.put(m.name(), new TreeSet<>(m.assignment()));
        return out;
    }

    /** Disjoint and complete; throws with the assignments otherwise. */
    static void disjointComplete(Map<String, Set<Integer>> a) throws Fail {
        Set<Integer> seen = new TreeSet<>();
        int total = 0;
        for (Set<Integer> s : a.values()) { seen.addAll(s); total += s.size(); }
        if (total != seen.size() || !seen.equals(all())) throw new Fail("assignments not disjoint and complete: " + a);
    }

    static boolean isComplete(List<? extends M> ms, boolean sameGen) {
        Set<Integer> seen = new TreeSet<>();
        int total = 0;
        Set<Integer> gens = new HashSet<>();
        for (M m : ms) {
            seen.addAll(m.assignment());
            total += m.assignment().size();
            gens.add(m.gen());
        }
        if (sameGen && (gens.size() != 1 || gens.contains(null) || gens.contains(-1))) return false;
        return total == P && seen.equals(all());
    }

    /** Poll every Java member (round robin) until cond holds; then for settleMs more, and cond must still hold. */
    static void pollUntil(List<? extends M> ms, int seconds, long settleMs, BooleanSupplier cond, Supplier<String> what) throws Fail {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            for (M m : ms) m.poll();
            if (cond.getAsBoolean()) {
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settleMs);
                while (System.nanoTime() < end) for (M m : ms) m.poll();
                if (cond.getAsBoolean()) return;
            }
            if (System.nanoTime() > deadline) throw new Fail(what.get() + " (after " + seconds + "s): " + state(ms));
            if (ms.stream().noneMatch(m -> m instanceof JMember)) {
                try { Thread.sleep(50); } catch (InterruptedException e) { throw new RuntimeException(e); }
            }
        }
    }

    static void closeAll(List<? extends M> ms) {
        for (M m : ms) m.close();
    }

    // -- checks --------------------------------------------------------------------------

    static void joinThird(boolean coop) throws Exception {
        String tag = coop ? "jco" : "jea";
        String topic = name(tag), group = name("g" + tag);
        createTopic(topic);
        produce(topic, 5, tag);
        Map<String, Object> conf = Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                (coop ? CooperativeStickyAssignor.class : RangeAssignor.class).getName());
        List<JMember> ms = new ArrayList<>();
        try {
            JMember a = new JMember(tag + "-a", group, topic, conf);
            JMember b = new JMember(tag + "-b", group, topic, conf);
            ms.add(a);
            ms.add(b);
            pollUntil(ms, 30, 300, () -> isComplete(ms, true), () -> "2 members not stable");
            Map<String, Set<Integer>> before = snapshot(ms);
            expect(before.values().stream().map(Set::size).sorted().toList(), List.of(3, 3), "2-member assignment " + before);
            a.revokedSince.clear();
            b.revokedSince.clear();
            JMember c = new JMember(tag + "-c", group, topic, conf);
            ms.add(c);
            pollUntil(ms, 30, 500, () -> isComplete(ms, true) && c.assignment.size() == 2, () -> "3 members not stable");
            Map<String, Set<Integer>> after = snapshot(ms);
            disjointComplete(after);
            expect(after.values().stream().map(Set::size).sorted().toList(), List.of(2, 2, 2), "3-member assignment " + after);
            Set<Integer> revoked = new TreeSet<>(a.revokedSince);
            revoked.addAll(b.revokedSince);
            if (!before.get(a.name).containsAll(a.revokedSince) || !before.get(b.name).containsAll(b.revokedSince))
                throw new Fail("revoked partitions not owned before: a " + a.revokedSince + " b " + b.revokedSince + " before " + before);
            Set<Integer> moved = new TreeSet<>();
            for (String m : before.keySet()) for (int p : before.get(m)) if (!after.get(m).contains(p)) moved.add(p);
            if (coop) {
                expect(revoked, moved, "revoked partitions (before " + before + ", after " + after + ")");
                if (revoked.isEmpty() || revoked.size() >= P) throw new Fail("revoked " + revoked + ": expected some but not all");
                expect(after.get(c.name), moved, "the new member's partitions");
            } else {
                expect(revoked, all(), "revoked partitions (eager)");
            }
        } finally {
            closeAll(ms);
        }
    }

    static void mixed() throws Exception {
        String topic = name("jmix"), group = name("gjmix");
        createTopic(topic);
        List<M> ms = new ArrayList<>();
        try {
            Map<String, Object> conf = Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
            ms.add(new JMember("mix-java-1", group, topic, conf));
            ms.add(new RdMember("mix-rdkafka-1", group, topic, "range"));
            ms.add(new JMember("mix-java-2", group, topic, conf));
            ms.add(new RdMember("mix-rdkafka-2", group, topic, "range"));
            pollUntil(ms, 40, 500, () -> isComplete(ms, true), () -> "mixed group not stable");
            Map<String, Set<Integer>> got = snapshot(ms);
            disjointComplete(got);
            expect(got.values().stream().map(Set::size).sorted().toList(), List.of(1, 1, 2, 2), "assignment sizes " + got);
            for (var e : got.entrySet()) {
                List<Integer> l = new ArrayList<>(e.getValue());
                if (l.get(l.size() - 1) - l.get(0) != l.size() - 1) throw new Fail("range assignment of " + e.getKey() + " not contiguous: " + got);
            }
        } finally {
            closeAll(ms);
        }
    }

    static Map<Integer, Long> committed(JMember m) {
        Set<TopicPartition> tps = new HashSet<>();
        for (int p = 0; p < P; p++) tps.add(new TopicPartition(m.topic, p));
        Map<Integer, Long> out = new TreeMap<>();
        for (var e : m.c.committed(tps, Duration.ofSeconds(T)).entrySet()) {
            if (e.getValue() != null) out.put(e.getKey().partition(), e.getValue().offset());
        }
        return out;
    }

    static Map<Integer, Long> tens() {
        Map<Integer, Long> m = new TreeMap<>();
        for (int p = 0; p < P; p++) m.put(p, 10L);
        return m;
    }

    static void commitSync() throws Exception {
        String topic = name("jcs"), group = name("gjcs");
        createTopic(topic);
        produce(topic, 5, "a");
        JMember m = new JMember("jcs", group, topic, Map.of());
        try {
            pollUntil(List.of(m), 30, 0, () -> m.records > 0, () -> "nothing consumed");
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            for (var e : m.next.entrySet()) offs.put(new TopicPartition(topic, e.getKey()), new OffsetAndMetadata(e.getValue()));
            Map<Integer, Long> want = new TreeMap<>(m.next);
            m.c.commitSync(offs, Duration.ofSeconds(T));
            expect(committed(m), want, "committed() after commitSync(consumed offsets)");
            expect(groupOffsets(group, topic), want, "listConsumerGroupOffsets after commitSync(consumed offsets)");
            produce(topic, 5, "b");
            pollUntil(List.of(m), 30, 0, () -> m.records >= 60, () -> "not all 60 records consumed: " + m.records);
            expect(m.next, tens(), "consumed");
            m.c.commitSync(Duration.ofSeconds(T));
            expect(committed(m), tens(), "committed() after commitSync()");
            expect(groupOffsets(group, topic), tens(), "listConsumerGroupOffsets after commitSync()");
        } finally {
            m.close();
        }
    }

    static void commitAsync() throws Exception {
        String topic = name("jca"), group = name("gjca");
        createTopic(topic);
        produce(topic, 10, "a");
        JMember m = new JMember("jca", group, topic, Map.of());
        try {
            pollUntil(List.of(m), 30, 0, () -> m.records >= 60, () -> "not all 60 records consumed: " + m.records);
            expect(m.next, tens(), "consumed");
            AtomicReference<String> cb = new AtomicReference<>();
            m.c.commitAsync((offsets, ex) -> {
                Map<Integer, Long> o = new TreeMap<>();
                offsets.forEach((k, v) -> o.put(k.partition(), v.offset()));
                cb.set(ex == null ? o.toString() : "error " + ex);
            });
            pollUntil(List.of(m), T, 0, () -> cb.get() != null, () -> "no commitAsync callback");
            expect(cb.get(), tens().toString(), "commitAsync callback");
            expect(committed(m), tens(), "committed()");
            expect(groupOffsets(group, topic), tens(), "listConsumerGroupOffsets");
        } finally {
            m.close();
        }
    }

    static void autoCommit() throws Exception {
        String topic = name("jac"), group = name("gjac");
        createTopic(topic);
        produce(topic, 10, "a");
        JMember m = new JMember("jac", group, topic, Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true",
                ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, 300));
        try {
            pollUntil(List.of(m), 30, 0, () -> m.records >= 60, () -> "not all 60 records consumed: " + m.records);
            expect(m.next, tens(), "consumed");
            AtomicReference<Map<Integer, Long>> last = new AtomicReference<>();
            pollUntil(List.of(m), T, 0, () -> {
                try {
                    last.set(groupOffsets(group, topic));
                } catch (Exception e) {
                    last.set(null);
                }
                return tens().equals(last.get());
            }, () -> "listConsumerGroupOffsets " + last.get() + ", expected " + tens());
            expect(committed(m), tens(), "committed()");
        } finally {
            m.close();
        }
    }

    static void kip848() throws Exception {
        String topic = name("j848"), group = name("gj848");
        createTopic(topic);
        produce(topic, 5, "a");
        Map<String, Object> conf = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        List<JMember> ms = new ArrayList<>();
        try {
            JMember a = new JMember("k848-a", group, topic, conf);
            ms.add(a);
            pollUntil(ms, 30, 300, () -> a.assignment.equals(all()), () -> "the first member did not get all 6 partitions");
            int epoch1 = a.gen();
            JMember b = new JMember("k848-b", group, topic, conf);
            ms.add(b);
            pollUntil(ms, 40, 500, () -> isComplete(ms, false) && !a.assignment.isEmpty() && !b.assignment.isEmpty(),
                    () -> "no split after a 2nd member joined");
            Map<String, Set<Integer>> got = snapshot(ms);
            disjointComplete(got);
            expect(got.values().stream().map(Set::size).sorted().toList(), List.of(3, 3), "assignment sizes " + got);
            if (!a.events.stream().anyMatch(e -> e.startsWith("revoke"))) throw new Fail("the first member saw no revocation: " + a.events);
            if (a.gen() <= epoch1) throw new Fail("member epoch did not advance: " + epoch1 + " -> " + a.gen());
            if (a.records + b.records < 30) throw new Fail("consumed " + (a.records + b.records) + " of 30 records");
        } finally {
            closeAll(ms);
        }
    }

    static String groupType(String group) throws Exception {
        try (Admin a = admin()) {
            return a.describeConsumerGroups(List.of(group)).all().get(T + 2, TimeUnit.SECONDS)
                    .get(group).type().toString();
        }
    }

    /** KIP-848's online migration: 2 classic members, then a consumer-protocol member
     *  joins (the group becomes a consumer group, all three share the partitions), then it
     *  leaves (the group is classic again, the two split everything). */
    static void migration() throws Exception {
        String topic = name("jmig"), group = name("gjmig");
        createTopic(topic);
        produce(topic, 5, "m");
        Map<String, Object> classic = Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        List<JMember> ms = new ArrayList<>();
        try {
            ms.add(new JMember("mig-classic-a", group, topic, classic));
            ms.add(new JMember("mig-classic-b", group, topic, classic));
            pollUntil(ms, 30, 300, () -> isComplete(ms, true), () -> "2 classic members not stable");
            expect(groupType(group), "Classic", "group type with classic members");
            JMember c = new JMember("mig-consumer-c", group, topic, Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"));
            ms.add(c);
            pollUntil(ms, 45, 1500, () -> isComplete(ms, false) && ms.stream().allMatch(m -> m.assignment.size() == 2),
                    () -> "no 2/2/2 split after a consumer-protocol member joined");
            disjointComplete(snapshot(ms));
            expect(groupType(group), "Consumer", "group type after the upgrade");
            ms.remove(c);
            c.close();
            pollUntil(ms, 45, 1500, () -> isComplete(ms, true) && ms.stream().allMatch(m -> m.assignment.size() == 3),
                    () -> "no 3/3 split after the consumer-protocol member left");
            disjointComplete(snapshot(ms));
            expect(groupType(group), "Classic", "group type after the downgrade");
        } finally {
            closeAll(ms);
        }
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9092";
        here = Path.of(System.getProperty("groups.dir", "compat/groups")).toAbsolutePath();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> { for (Process p : children) p.destroyForcibly(); }));
        check("cooperative-sticky: a 3rd member joins, only moved partitions revoked", () -> joinThird(true));
        check("eager (RangeAssignor): a 3rd member joins, all partitions revoked", () -> joinThird(false));
        check("mixed group: 2 Java + 2 librdkafka consumers (range) split 6 partitions", GroupsJava::mixed);
        check("commitSync: committed offsets = consumed", GroupsJava::commitSync);
        check("commitAsync with callback", GroupsJava::commitAsync);
        check("auto-commit: committed offsets = consumed", GroupsJava::autoCommit);
        check("KIP-848 group.protocol=consumer: 1 member gets 6, 2 members split", GroupsJava::kip848);
        check("KIP-848 online migration: classic group upgraded by a consumer-protocol member, downgraded when it leaves", GroupsJava::migration);
        System.exit(failed == 0 ? 0 : 1);
    }
}
