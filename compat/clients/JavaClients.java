// Kafka's Java client (kafka-clients from compat/kafka/libs) against a broker, in one JVM.
//
//   java -cp 'compat/kafka/libs/*' compat/clients/JavaClients.java BOOTSTRAP
//
// Admin: createTopics, describeTopics (DescribeTopicPartitions), describeCluster,
// listOffsets, describeLogDirs, deleteRecords. KafkaProducer with its DEFAULT settings
// (idempotence on, so InitProducerId; acks=all) - only timeouts are shortened so that a
// failure is bounded - sending records with keys, headers and explicit timestamps, one
// producer per compression codec. KafkaConsumer without a group (assign() +
// seekToBeginning, no commits) reads everything back; beginningOffsets, endOffsets,
// offsetsForTimes. Every value is compared exactly. Prints one line per check,
// "PASS java: <check>" or "FAIL java: <check>: <reason>"; exits 1 if any failed.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClients {
    static final int T = 8; // seconds: bound on every client call
    static final int PARTITIONS = 3;
    static final int COUNT = 30;
    static final String TOPIC = "java-t";
    static final String CODEC_TOPIC = "java-codecs";
    static final String PIPELINE_TOPIC = "java-pipelined";
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int PER_CODEC = 10;
    static final long BASE_TS = (System.currentTimeMillis() / 1000) * 1000 - 200_000;

    static final String DELIVERED = "(java-t records delivered)";
    static String bootstrap;
    static final Map<String, Boolean> status = new LinkedHashMap<>();
    static int failed = 0;

    interface Body { void run() throws Exception; }

    static class Fail extends Exception {
        Fail(String m) { super(m); }
    }

    static void check(String name, List<String> deps, Body body) {
        for (String d : deps) {
            if (!status.getOrDefault(d, false)) {
                report(name, false, "skipped (depends on " + d + ")", 0);
                return;
            }
        }
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
                    if (el.getClassName().startsWith("JavaClients")) {
                        msg += " (at line " + el.getLineNumber() + ")";
                        break;
                    }
                }
            }
            report(name, false, msg, 0);
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
        if (!java.util.Objects.equals(got, want)) {
            throw new Fail(what + ": got " + got + ", expected " + want);
        }
    }

    static <V> V get(Future<V> f) throws Exception {
        return f.get(T + 2, TimeUnit.SECONDS);
    }

    // -- records -------------------------------------------------------------------------

    /** Record i of TOPIC: partition i % 3, key, value, headers, timestamp. */
    static ProducerRecord<String, String> record(int i) {
        String key = i == 3 ? null : "jk-" + i;
        String value = i == 8 ? null : "jv-" + i + "-" + "z".repeat(i * 3);
        List<Header> headers = new ArrayList<>();
        if (i % 3 == 1) {
            headers.add(new RecordHeader("a", ("1-" + i).getBytes()));
            headers.add(new RecordHeader("b", null));
        } else if (i % 3 == 2) {
            headers.add(new RecordHeader("a", "x".getBytes()));
            headers.add(new RecordHeader("a", "y".getBytes()));
        }
        return new ProducerRecord<>(TOPIC, i % PARTITIONS, BASE_TS + i * 10 + (i % 2), key, value, headers);
    }

    static ProducerRecord<String, String> codecRecord(int codec, int j) {
        List<Header> headers = List.of(new RecordHeader("codec", CODECS[codec].getBytes()));
        return new ProducerRecord<>(CODEC_TOPIC, 0, BASE_TS + codec * 1000 + j,
                "c-" + CODECS[codec] + "-" + j, CODECS[codec] + " value " + j + " " + "abc".repeat(j + 5), headers);
    }

    static String show(String topic, int partition, long offset, long ts, TimestampType tt,
                       String key, String value, Iterable<Header> headers) {
        StringBuilder h = new StringBuilder();
        for (Header x : headers) {
            h.append(x.key()).append('=').append(x.value() == null ? "null" : new String(x.value())).append(';');
        }
        return topic + "/" + partition + "@" + offset + " ts=" + ts + " " + tt + " key=" + key + " value=" + value + " headers=" + h;
    }

    /** Expected consumer view: "topic/p@offset ..." lines grouped per partition. */
    static Map<TopicPartition, List<String>> expected() {
        Map<TopicPartition, List<String>> out = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) out.put(new TopicPartition(TOPIC, p), new ArrayList<>());
        for (int i = 0; i < COUNT; i++) {
            ProducerRecord<String, String> r = record(i);
            List<String> l = out.get(new TopicPartition(TOPIC, r.partition()));
            l.add(show(TOPIC, r.partition(), l.size(), r.timestamp(), TimestampType.CREATE_TIME, r.key(), r.value(), r.headers()));
        }
        List<String> c = new ArrayList<>();
        for (int k = 0; k < CODECS.length; k++) {
            for (int j = 0; j < PER_CODEC; j++) {
                ProducerRecord<String, String> r = codecRecord(k, j);
                c.add(show(CODEC_TOPIC, 0, c.size(), r.timestamp(), TimestampType.CREATE_TIME, r.key(), r.value(), r.headers()));
            }
        }
        out.put(new TopicPartition(CODEC_TOPIC, 0), c);
        return out;
    }

    // -- clients ---------------------------------------------------------------------------

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
        return Admin.create(p);
    }

    static KafkaProducer<String, String> producer(String compression) {
        return producer(compression, Map.of());
    }

    static KafkaProducer<String, String> producer(String compression, Map<String, Object> extra) {
        Properties p = new Properties();
        p.putAll(extra);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // defaults otherwise (enable.idempotence=true, acks=all); only bound the waits
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, T * 1000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, T * 1000 + 2000);
        if (compression != null) p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"); // and no group.id
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static Map<TopicPartition, List<String>> consumeAll(Set<TopicPartition> tps) throws Exception {
        Map<TopicPartition, List<String>> got = new HashMap<>();
        for (TopicPartition tp : tps) got.put(tp, new ArrayList<>());
        try (KafkaConsumer<String, String> c = consumer()) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(T));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T * 2);
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp, Duration.ofSeconds(T)) < end.get(tp)) done = false;
                }
                if (done) break;
                if (System.nanoTime() > deadline) {
                    Map<String, Integer> counts = new TreeMap<>();
                    got.forEach((k, v) -> counts.put(k.toString(), v.size()));
                    throw new Fail("not at the end offsets " + end + " in time; got " + counts);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.get(new TopicPartition(r.topic(), r.partition())).add(
                            show(r.topic(), r.partition(), r.offset(), r.timestamp(), r.timestampType(), r.key(), r.value(), r.headers()));
                }
            }
        }
        return got;
    }

    static void compare(Map<TopicPartition, List<String>> got, Map<TopicPartition, List<String>> want) throws Fail {
        List<String> errors = new ArrayList<>();
        for (Map.Entry<TopicPartition, List<String>> e : want.entrySet()) {
            List<String> g = got.getOrDefault(e.getKey(), List.of());
            List<String> w = e.getValue();
            for (int i = 0; i < Math.max(g.size(), w.size()); i++) {
                String a = i < g.size() ? g.get(i) : "(none)";
                String b = i < w.size() ? w.get(i) : "(none)";
                if (!a.equals(b)) {
                    errors.add("got " + a + ", expected " + b);
                    break;
                }
            }
        }
        if (!errors.isEmpty()) throw new Fail(String.join("; ", errors.subList(0, Math.min(4, errors.size()))));
    }

    // -- checks ----------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9092";
        String host = bootstrap.substring(0, bootstrap.lastIndexOf(':'));
        int port = Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
        Map<TopicPartition, List<String>> consumed = new HashMap<>();
        String create = "Admin createTopics";
        String produce = "KafkaProducer defaults (idempotent) with keys, headers, timestamps";
        String consume = "KafkaConsumer assign + seekToBeginning (no group)";

        try (Admin admin = admin()) {
            check(create, List.of(), () -> {
                get(admin.createTopics(List.of(
                        new NewTopic(TOPIC, PARTITIONS, (short) 1),
                        new NewTopic(PIPELINE_TOPIC, PARTITIONS, (short) 1),
                        new NewTopic(CODEC_TOPIC, 1, (short) 1).configs(Map.of("compression.type", "producer")))).all());
            });

            check("Admin describeTopics", List.of(create), () -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (true) {
                    try {
                        TopicDescription d = get(admin.describeTopics(List.of(TOPIC)).allTopicNames()).get(TOPIC);
                        expect(d.name(), TOPIC, "name");
                        expect(d.isInternal(), false, "isInternal");
                        if (d.topicId() == null || d.topicId().equals(org.apache.kafka.common.Uuid.ZERO_UUID)) {
                            throw new Fail("no topic id: " + d.topicId());
                        }
                        List<String> parts = new ArrayList<>();
                        for (TopicPartitionInfo p : d.partitions()) {
                            parts.add(p.partition() + " leader=" + (p.leader() == null ? null : p.leader().id())
                                    + " replicas=" + p.replicas().stream().map(Node::id).collect(Collectors.toList())
                                    + " isr=" + p.isr().stream().map(Node::id).collect(Collectors.toList())
                                    + " elr=" + (p.elr() == null ? null : p.elr().stream().map(Node::id).collect(Collectors.toList()))
                                    + " lastKnownElr=" + (p.lastKnownElr() == null ? null : p.lastKnownElr().stream().map(Node::id).collect(Collectors.toList())));
                        }
                        List<String> want = new ArrayList<>();
                        for (int i = 0; i < PARTITIONS; i++) want.add(i + " leader=1 replicas=[1] isr=[1] elr=[] lastKnownElr=[]");
                        expect(parts, want, "partitions");
                        Node leader = d.partitions().get(0).leader();
                        expect(leader.host() + ":" + leader.port(), host + ":" + port, "leader address");
                        break;
                    } catch (Fail e) {
                        if (System.nanoTime() > deadline) throw e;
                        Thread.sleep(100);
                    }
                }
            });

            check("Admin describeCluster", List.of(), () -> {
                DescribeClusterResult r = admin.describeCluster();
                List<String> nodes = get(r.nodes()).stream().map(n -> n.id() + "@" + n.host() + ":" + n.port()).collect(Collectors.toList());
                expect(nodes, List.of("1@" + host + ":" + port), "nodes");
                expect(get(r.controller()).id(), 1, "controller id");
                String id = get(r.clusterId());
                if (id == null || id.length() != 22) throw new Fail("clusterId: " + id);
            });

            check(produce, List.of(create), () -> {
                try (KafkaProducer<String, String> p = producer(null)) {
                    List<Future<RecordMetadata>> fs = new ArrayList<>();
                    for (int i = 0; i < COUNT; i++) fs.add(p.send(record(i)));
                    p.flush();
                    List<RecordMetadata> mds = new ArrayList<>();
                    for (Future<RecordMetadata> f : fs) mds.add(get(f));
                    status.put(DELIVERED, true); // the consumer checks can run
                    for (int i = 0; i < COUNT; i++) {
                        RecordMetadata md = mds.get(i);
                        ProducerRecord<String, String> r = record(i);
                        expect(md.partition() + "@" + md.offset() + " ts=" + md.timestamp(),
                                r.partition() + "@" + (i / PARTITIONS) + " ts=" + r.timestamp(), "record " + i + " metadata");
                    }
                }
            });

            for (int k = 0; k < CODECS.length; k++) {
                final int codec = k;
                List<String> deps = k == 0 ? List.of(create) : List.of(create, "KafkaProducer compression.type=" + CODECS[k - 1]);
                check("KafkaProducer compression.type=" + CODECS[k], deps, () -> {
                    try (KafkaProducer<String, String> p = producer(CODECS[codec])) {
                        List<Future<RecordMetadata>> fs = new ArrayList<>();
                        for (int j = 0; j < PER_CODEC; j++) fs.add(p.send(codecRecord(codec, j)));
                        p.flush();
                        for (int j = 0; j < PER_CODEC; j++) {
                            expect(get(fs.get(j)).offset(), (long) codec * PER_CODEC + j, "offset of " + CODECS[codec] + " record " + j);
                        }
                    }
                });
            }

            // Many small batches in flight on one connection (max.in.flight.requests 5, the
            // default): the broker must handle a connection's requests in order, as Kafka
            // does, or the idempotent producer's batches land out of order.
            check("KafkaProducer pipelined (batch.size=300): 600 records keep their order", List.of(create), () -> {
                TopicPartition tp0 = new TopicPartition(PIPELINE_TOPIC, 0);
                try (KafkaProducer<String, String> p = producer(null, Map.of(ProducerConfig.BATCH_SIZE_CONFIG, 300, ProducerConfig.LINGER_MS_CONFIG, 0))) {
                    List<Future<RecordMetadata>> fs = new ArrayList<>();
                    for (int i = 0; i < 600; i++) {
                        fs.add(p.send(new ProducerRecord<>(PIPELINE_TOPIC, i % PARTITIONS, "k" + i, "pipelined record " + i)));
                    }
                    p.flush();
                    List<String> bad = new ArrayList<>();
                    for (int i = 0; i < 600; i++) {
                        RecordMetadata md = get(fs.get(i));
                        if (md.partition() != i % PARTITIONS || md.offset() != i / PARTITIONS) {
                            bad.add("record " + i + " at " + md.partition() + "@" + md.offset() + " (expected " + (i % PARTITIONS) + "@" + (i / PARTITIONS) + ")");
                        }
                    }
                    if (!bad.isEmpty()) throw new Fail(bad.size() + " records at the wrong offset, e.g. " + String.join("; ", bad.subList(0, Math.min(3, bad.size()))));
                }
                Set<TopicPartition> tps = new java.util.HashSet<>();
                for (int p = 0; p < PARTITIONS; p++) tps.add(new TopicPartition(PIPELINE_TOPIC, p));
                Map<TopicPartition, List<String>> got = consumeAll(tps);
                for (TopicPartition tp : tps) {
                    List<String> g = got.get(tp);
                    for (int j = 0; j < g.size(); j++) {
                        int i = j * PARTITIONS + tp.partition();
                        if (!g.get(j).contains("@" + j + " ") || !g.get(j).contains("key=k" + i + " value=pipelined record " + i + " ")) {
                            throw new Fail("consumed " + g.get(j) + ", expected record " + i + " at offset " + j);
                        }
                    }
                    expect(g.size(), 600 / PARTITIONS, "records in " + tp);
                }
            });

            List<String> allProduced = new ArrayList<>(List.of(DELIVERED));
            for (String c : CODECS) allProduced.add("KafkaProducer compression.type=" + c);
            check(consume, allProduced, () -> {
                Map<TopicPartition, List<String>> want = expected();
                Map<TopicPartition, List<String>> got = consumeAll(want.keySet());
                consumed.putAll(got);
                compare(got, want);
            });

            check("KafkaConsumer beginningOffsets / endOffsets / offsetsForTimes", List.of(DELIVERED), () -> {
                try (KafkaConsumer<String, String> c = consumer()) {
                    List<TopicPartition> tps = new ArrayList<>();
                    for (int p = 0; p < PARTITIONS; p++) tps.add(new TopicPartition(TOPIC, p));
                    Map<TopicPartition, Long> zero = new HashMap<>(), ten = new HashMap<>();
                    for (TopicPartition tp : tps) { zero.put(tp, 0L); ten.put(tp, (long) COUNT / PARTITIONS); }
                    expect(c.beginningOffsets(tps, Duration.ofSeconds(T)), zero, "beginningOffsets");
                    expect(c.endOffsets(tps, Duration.ofSeconds(T)), ten, "endOffsets");
                    // partition 2 holds records 2, 5, 8, ... at offsets 0, 1, 2, ...
                    Map<TopicPartition, Long> q = new HashMap<>();
                    q.put(tps.get(0), record(12).timestamp());       // exact: offset 4
                    q.put(tps.get(1), record(13).timestamp() - 1);  // just before: offset 4
                    q.put(tps.get(2), record(29).timestamp() + 1);  // after everything: null
                    Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(q, Duration.ofSeconds(T));
                    Map<Integer, String> got = new TreeMap<>();
                    r.forEach((tp, v) -> got.put(tp.partition(), v == null ? "null" : v.offset() + "@" + v.timestamp()));
                    Map<Integer, String> want = new TreeMap<>(Map.of(0, "4@" + record(12).timestamp(),
                            1, "4@" + record(13).timestamp(), 2, "null"));
                    expect(got, want, "offsetsForTimes {partition: offset@timestamp}");
                }
            });

            // seek() with a leader epoch makes the consumer validate its position with
            // OffsetsForLeaderEpoch before fetching (KIP-320)
            check("KafkaConsumer seek with leader epoch (OffsetsForLeaderEpoch validation)", List.of(consume), () -> {
                TopicPartition tp = new TopicPartition(TOPIC, 0);
                try (KafkaConsumer<String, String> c = consumer()) {
                    c.assign(List.of(tp));
                    c.seek(tp, new org.apache.kafka.clients.consumer.OffsetAndMetadata(3, java.util.Optional.of(0), ""));
                    List<String> got = new ArrayList<>();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                    while (got.size() < 7 && System.nanoTime() < deadline) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            got.add(show(r.topic(), r.partition(), r.offset(), r.timestamp(), r.timestampType(), r.key(), r.value(), r.headers())
                                    + " epoch=" + r.leaderEpoch().orElse(-1));
                        }
                    }
                    List<String> want = new ArrayList<>();
                    for (String w : expected().get(tp).subList(3, 10)) want.add(w + " epoch=0");
                    expect(got, want, "records from offset 3");
                }
                // a position past the end of epoch 0: the consumer detects "truncation"
                try (KafkaConsumer<String, String> c = consumer()) {
                    c.assign(List.of(tp));
                    c.seek(tp, new org.apache.kafka.clients.consumer.OffsetAndMetadata(15, java.util.Optional.of(0), ""));
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
                    while (true) {
                        try {
                            c.poll(Duration.ofMillis(200));
                        } catch (org.apache.kafka.clients.consumer.LogTruncationException e) {
                            expect(e.divergentOffsets().get(tp).offset(), 10L, "divergent offset");
                            expect(e.divergentOffsets().get(tp).leaderEpoch(), java.util.Optional.of(0), "divergent epoch");
                            break;
                        }
                        if (System.nanoTime() > deadline) throw new Fail("no LogTruncationException for offset 15 in epoch 0 (end offset 10)");
                    }
                }
            });

            check("Admin listOffsets (earliest/latest/timestamp/maxTimestamp)", List.of(DELIVERED), () -> {
                TopicPartition tp = new TopicPartition(TOPIC, 1);
                Map<String, OffsetSpec> specs = new LinkedHashMap<>();
                specs.put("earliest", OffsetSpec.earliest());
                specs.put("latest", OffsetSpec.latest());
                specs.put("forTimestamp", OffsetSpec.forTimestamp(record(7).timestamp()));
                specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
                Map<String, String> got = new LinkedHashMap<>();
                for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
                    ListOffsetsResult.ListOffsetsResultInfo info = get(admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp));
                    got.put(e.getKey(), e.getKey().equals("maxTimestamp") ? info.offset() + "@" + info.timestamp() : String.valueOf(info.offset()));
                }
                Map<String, String> want = new LinkedHashMap<>();
                want.put("earliest", "0");
                want.put("latest", "10");
                want.put("forTimestamp", "2");
                want.put("maxTimestamp", "9@" + record(28).timestamp());
                expect(got, want, "listOffsets java-t/1");
            });

            check("Admin describeLogDirs", List.of(DELIVERED), () -> {
                Map<Integer, Map<String, LogDirDescription>> all = get(admin.describeLogDirs(List.of(1)).allDescriptions());
                expect(all.keySet(), Set.of(1), "brokers");
                Map<String, LogDirDescription> dirs = all.get(1);
                expect(dirs.size(), 1, "log dirs of broker 1 (" + dirs.keySet() + ")");
                LogDirDescription d = dirs.values().iterator().next();
                expect(d.error(), null, "log dir error");
                Set<String> mine = new TreeSet<>();
                for (Map.Entry<TopicPartition, ReplicaInfo> e : d.replicaInfos().entrySet()) {
                    TopicPartition tp = e.getKey();
                    if (!tp.topic().equals(TOPIC)) continue;
                    ReplicaInfo ri = e.getValue();
                    if (ri.size() <= 0) throw new Fail(tp + " size " + ri.size());
                    mine.add(tp + " lag=" + ri.offsetLag() + " future=" + ri.isFuture());
                }
                expect(mine, new TreeSet<>(List.of("java-t-0 lag=0 future=false", "java-t-1 lag=0 future=false",
                        "java-t-2 lag=0 future=false")), "java-t replicas");
                if (!d.totalBytes().isPresent() || !d.usableBytes().isPresent()
                        || d.totalBytes().getAsLong() < d.usableBytes().getAsLong() || d.usableBytes().getAsLong() <= 0) {
                    throw new Fail("totalBytes " + d.totalBytes() + " usableBytes " + d.usableBytes());
                }
            });

            check("Admin deleteRecords", List.of(consume), () -> {
                TopicPartition tp = new TopicPartition(CODEC_TOPIC, 0);
                long low = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(12))).lowWatermarks().get(tp)).lowWatermark();
                expect(low, 12L, "low watermark");
                Map<TopicPartition, List<String>> got = consumeAll(Set.of(tp));
                List<String> want = expected().get(tp);
                compare(got, Map.of(tp, want.subList(12, want.size())));
            });
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
