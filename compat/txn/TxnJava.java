// Kafka transactions with the Java client (kafka-clients from compat/kafka/libs).
//
//   javac -cp 'compat/kafka/libs/*' -d CLASSES compat/txn/TxnJava.java
//   java -cp 'CLASSES:compat/kafka/libs/*' TxnJava eos BOOTSTRAP SUITE      (suite eos-java)
//   java -cp 'CLASSES:compat/kafka/libs/*' TxnJava zombie BOOTSTRAP SUITE   (suite zombie)
//   java -cp ... TxnJava processor BOOTSTRAP IN OUT GROUP TXN_ID INSTANCE HOLD_AT
//                                             (the EOS processor, a child of "eos")
//   EOS_PROCESSOR=path java ... TxnJava eos BOOTSTRAP eos-rust
//                                             (the same driver and checks, with another
//                                             client's processor: Sluice's Rust client)
//
// eos: the exactly-once consume-transform-produce loop of the guide (transactional.id,
//   read_committed consumer, enable.auto.commit=false, sendOffsetsToTransaction with
//   consumer.groupMetadata(), commitTransaction, abortTransaction on an exception) runs as
//   a separate JVM ("processor") over an input topic of N records in 3 partitions. It aborts
//   every 5th transaction on purpose. The driver SIGKILLs it three times mid-run (twice while
//   it holds an open transaction whose records and offsets were already sent, once right
//   after a commit) and starts it again with the same transactional.id and
//   group.instance.id; the 4th run finishes the input. Then: a read_committed consumer of the
//   output sees every transformed input exactly once; the group's committed offsets are the
//   input's end offsets; a read_uncommitted consumer sees more (the aborted transactions).
// zombie: two producers with one transactional.id: the second's initTransactions fences
//   the first. (A) its next commitTransaction throws ProducerFencedException; (B) its next
//   send fails (Kafka: INVALID_PRODUCER_EPOCH, the Java client's InvalidProducerEpochException,
//   or ProducerFencedException), then commit fails and abortTransaction throws
//   ProducerFencedException; (C) the same in a transaction begun after the fence. Nothing the
//   first wrote after the fence becomes visible to read_committed; the second's commits do.
// Prints "PASS SUITE: <check>" / "FAIL SUITE: <check>: <reason>"; exits 1 if any failed.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnJava {
    static final int T = 10; // seconds: bound on a client call
    static final String RUN = UUID.randomUUID().toString().substring(0, 6);
    static final int N = 3000; // input records (eos)
    static final int IN_PARTS = 3;
    static final int ABORT_EVERY = 5;
    static String bootstrap;
    static String suite;
    static int failed = 0;
    static final List<Process> children = new ArrayList<>();

    interface Body { void run() throws Exception; }

    static class Fail extends Exception {
        Fail(String m) { super(m); }
    }

    static boolean check(String name, Body body) {
        long t = System.nanoTime();
        try {
            body.run();
            System.out.printf("PASS %s: %s (%.1fs)%n", suite, name, (System.nanoTime() - t) / 1e9);
            System.out.flush();
            return true;
        } catch (Throwable e) {
            Throwable c = e;
            if (c instanceof ExecutionException && c.getCause() != null) c = c.getCause();
            String msg = c instanceof Fail ? c.getMessage() : c.getClass().getSimpleName() + ": " + c.getMessage();
            if (!(c instanceof Fail)) {
                for (StackTraceElement el : c.getStackTrace()) {
                    if (el.getClassName().startsWith("TxnJava")) {
                        msg += " (at line " + el.getLineNumber() + ")";
                        break;
                    }
                }
            }
            fail(name, msg);
            return false;
        } finally {
            for (Process p : children) p.destroyForcibly();
            children.clear();
        }
    }

    static void fail(String name, String reason) {
        failed++;
        String r = String.valueOf(reason).replaceAll("\\s+", " ");
        if (r.length() > 700) r = r.substring(0, 700) + "...";
        System.out.println("FAIL " + suite + ": " + name + ": " + r);
        System.out.flush();
    }

    static void skip(String name, String dep) { fail(name, "skipped (depends on " + dep + ")"); }

    static void expect(Object got, Object want, String what) throws Fail {
        if (!java.util.Objects.equals(got, want)) throw new Fail(what + ": got " + got + ", expected " + want);
    }

    static String name(String prefix) { return prefix + "-" + RUN; }

    // -- clients -------------------------------------------------------------------------

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
        return Admin.create(p);
    }

    static void createTopic(String topic, int parts) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(topic, parts, (short) 1))).all().get(T + 2, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
            while (true) {
                try {
                    var d = a.describeTopics(List.of(topic)).allTopicNames().get(T, TimeUnit.SECONDS).get(topic);
                    if (d.partitions().size() == parts && d.partitions().stream().allMatch(x -> x.leader() != null)) return;
                } catch (ExecutionException e) {
                    // not known yet
                }
                if (System.nanoTime() > deadline) throw new Fail("topic " + topic + " not ready");
                Thread.sleep(100);
            }
        }
    }

    static Properties producerProps(String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, T * 1000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, T * 1000 + 2000);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        if (txnId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        }
        return p;
    }

    static KafkaProducer<String, String> producer(String txnId) {
        return new KafkaProducer<>(producerProps(txnId), new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> reader(String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** Every record of topic (all partitions, from the beginning up to the end offsets the
     * consumer reports: the LSO for read_committed, the high watermark otherwise). */
    static List<ConsumerRecord<String, String>> readAll(String topic, String isolation) throws Exception {
        try (KafkaConsumer<String, String> c = reader(isolation)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (var pi : c.partitionsFor(topic, Duration.ofSeconds(T))) tps.add(new TopicPartition(topic, pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(T));
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) if (c.position(tp, Duration.ofSeconds(T)) < end.get(tp)) done = false;
                if (done) return out;
                if (System.nanoTime() > deadline) {
                    Map<Integer, Long> pos = new TreeMap<>();
                    for (TopicPartition tp : tps) pos.put(tp.partition(), c.position(tp));
                    throw new Fail(isolation + " read of " + topic + " stuck at positions " + pos + ", end offsets " + end);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) out.add(r);
            }
        }
    }

    static List<String> values(List<ConsumerRecord<String, String>> rs) {
        List<String> v = new ArrayList<>();
        for (var r : rs) v.add(r.value());
        return v;
    }

    // -- eos: the processor (a child JVM) --------------------------------------------------

    static String transform(String v) { return "t(" + v + ")"; }

    /** Thrown to abort a transaction on purpose. */
    static class DeliberateAbort extends Exception {
        DeliberateAbort(int txn) { super("deliberate abort of transaction " + txn); }
    }

    static void processor(String[] a) throws Exception {
        bootstrap = a[1];
        String in = a[2], out = a[3], group = a[4], txnId = a[5], instance = a[6];
        int holdAt = Integer.parseInt(a[7]);
        // stdin closed: finish the current transaction and exit
        final boolean[] stop = {false};
        Thread stdin = new Thread(() -> {
            try { while (System.in.read() >= 0) { } } catch (Exception e) { /* closed */ }
            synchronized (stop) { stop[0] = true; }
        });
        stdin.setDaemon(true);
        stdin.start();

        Properties producerProps = producerProps(txnId);
        Properties consumerProps = new Properties();
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // static membership: the restarted processor takes over its SIGKILLed predecessor's
        // place at once instead of waiting for its session to time out
        consumerProps.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        consumerProps.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
        consumerProps.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
        consumerProps.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
        consumerProps.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        consumerProps.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        consumerProps.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);

        KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer());

        producer.initTransactions();
        System.out.println("ready");
        consumer.subscribe(List.of(in));
        int txn = 0;
        while (true) {
            synchronized (stop) { if (stop[0]) break; }
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (records.isEmpty()) continue;
            txn++;
            producer.beginTransaction();
            try {
                for (ConsumerRecord<String, String> record : records) {
                    producer.send(new ProducerRecord<>(out, record.key(), transform(record.value())));
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition partition : records.partitions()) {
                    List<ConsumerRecord<String, String>> partRecords = records.records(partition);
                    long lastOffset = partRecords.get(partRecords.size() - 1).offset();
                    offsets.put(partition, new OffsetAndMetadata(lastOffset + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (txn == holdAt) {
                    // leave this transaction open, its records and offsets sent, and wait for
                    // the SIGKILL
                    producer.flush();
                    System.out.println("holding " + txn + " " + records.count());
                    Thread.sleep(600_000);
                }
                if (txn % ABORT_EVERY == 0) throw new DeliberateAbort(txn);
                producer.commitTransaction();
                System.out.println("committed " + txn + " " + records.count());
            } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                System.out.println("fatal " + e);
                System.exit(3);
            } catch (Exception e) {
                producer.abortTransaction();
                // The fix the guide's loop needs: after an abort the consumer's position is
                // already past the records of the aborted transaction, so the next poll()
                // would skip them and their outputs would never be written (lost, not
                // exactly once). Seek every assigned partition back to its committed offset
                // (the end of the last committed transaction).
                Set<TopicPartition> assigned = consumer.assignment();
                Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
                for (TopicPartition tp : assigned) {
                    OffsetAndMetadata om = committed.get(tp);
                    if (om != null) consumer.seek(tp, om.offset());
                    else consumer.seekToBeginning(List.of(tp));
                }
                System.out.println("aborted " + txn + " " + (e instanceof DeliberateAbort ? "deliberate" : e.toString()));
            }
        }
        consumer.close(Duration.ofSeconds(5));
        producer.close(Duration.ofSeconds(5));
        System.out.println("closed");
    }

    // -- eos: the driver -------------------------------------------------------------------

    /** A processor JVM; its stdout lines are queued. */
    static class Proc {
        final Process p;
        final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        final List<String> seen = new ArrayList<>();
        int committed = 0, aborted = 0;

        Proc(String in, String out, String group, String txnId, String instance, int holdAt) throws Exception {
            List<String> cmd = new ArrayList<>();
            String external = System.getenv("EOS_PROCESSOR");
            if (external != null && !external.isEmpty()) {
                // Another client's processor speaking the same lines (suite eos-rust: Sluice's
                // native client, crates/sluice-client/examples/transactional_processor.rs).
                cmd.add(external);
            } else {
                String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
                cmd.addAll(List.of(java, "-Xms32m", "-Xmx256m", "-XX:TieredStopAtLevel=1",
                        "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xshare:auto"));
                String log4j = System.getProperty("log4j2.configurationFile");
                if (log4j != null) cmd.add("-Dlog4j2.configurationFile=" + log4j);
                cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "TxnJava", "processor"));
            }
            cmd.addAll(List.of(bootstrap, in, out, group, txnId, instance, String.valueOf(holdAt)));
            p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            children.add(p);
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) lines.add(line);
                } catch (Exception e) {
                    // gone
                }
                lines.add("EOF");
            });
            t.setDaemon(true);
            t.start();
        }

        /** Waits for a line starting with prefix (counting commits/aborts on the way). */
        String await(String prefix, int secs) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(secs);
            while (true) {
                long left = deadline - System.nanoTime();
                String l = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
                if (l == null) throw new Fail("processor: no '" + prefix + "' line within " + secs + "s (last lines " + tail() + ")");
                seen.add(l);
                if (l.startsWith("committed ")) committed++;
                if (l.startsWith("aborted ")) aborted++;
                if (l.startsWith("fatal ") || l.equals("EOF")) throw new Fail("processor ended: " + tail());
                if (l.startsWith(prefix)) return l;
            }
        }

        String tail() { return seen.subList(Math.max(0, seen.size() - 4), seen.size()).toString(); }

        void kill() throws Exception {
            p.destroyForcibly(); // SIGKILL
            p.waitFor(5, TimeUnit.SECONDS);
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

    static void eos() throws Exception {
        String in = name("eos-in"), out = name("eos-out"), group = name("eos-group"), txnId = name("eos-processor");
        String instance = name("eos-instance");
        Map<Integer, Long> inputEnd = new TreeMap<>();
        final List<String> kills = new ArrayList<>();
        final int[] totals = {0, 0};
        boolean ran = check("processor (separate " + (System.getenv("EOS_PROCESSOR") == null ? "JVM" : "process") + ") SIGKILLed 3 times mid-run and restarted, finishes the " + N + " inputs", () -> {
            createTopic(in, IN_PARTS);
            createTopic(out, IN_PARTS);
            try (KafkaProducer<String, String> p = producer(null)) {
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                for (int n = 0; n < N; n++) fs.add(p.send(new ProducerRecord<>(in, n % IN_PARTS, "k" + n, "v" + n)));
                for (var f : fs) {
                    RecordMetadata md = f.get(T + 2, TimeUnit.SECONDS);
                    inputEnd.merge(md.partition(), md.offset() + 1, Math::max);
                }
            }
            // run 1: killed holding transaction 7 open (its records and offsets sent)
            Proc p1 = new Proc(in, out, group, txnId, instance, 7);
            String h = p1.await("holding ", 40);
            p1.kill();
            kills.add("run 1 holding open txn " + h.split(" ")[1] + " after " + p1.committed + " commits");
            totals[0] += p1.committed; totals[1] += p1.aborted;
            // run 2: killed right after its 4th commit (somewhere in the next transaction)
            Proc p2 = new Proc(in, out, group, txnId, instance, -1);
            for (int i = 0; i < 4; i++) p2.await("committed ", 40);
            p2.kill();
            kills.add("run 2 after " + p2.committed + " commits");
            totals[0] += p2.committed; totals[1] += p2.aborted;
            // run 3: killed holding transaction 3 open
            Proc p3 = new Proc(in, out, group, txnId, instance, 3);
            p3.await("holding ", 40);
            p3.kill();
            kills.add("run 3 holding open txn 3 after " + p3.committed + " commits");
            totals[0] += p3.committed; totals[1] += p3.aborted;
            // run 4: to the end of the input
            Proc p4 = new Proc(in, out, group, txnId, instance, -1);
            p4.await("ready", 30);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(45);
            Map<Integer, Long> got = Map.of();
            while (System.nanoTime() < deadline) {
                got = groupOffsets(group, in);
                if (got.equals(inputEnd)) break;
                Thread.sleep(250);
            }
            if (!got.equals(inputEnd)) {
                throw new Fail("run 4 did not finish: the group's committed offsets " + got + " (input end offsets "
                        + inputEnd + "); processor lines: " + p4.tail() + " / " + p4.lines.size() + " queued");
            }
            p4.p.getOutputStream().close(); // ask it to stop
            p4.await("closed", 20);
            totals[0] += p4.committed; totals[1] += p4.aborted;
            if (totals[1] == 0) throw new Fail("no transaction was aborted on purpose");
            System.out.println("# eos: " + kills + "; " + totals[0] + " commits, " + totals[1] + " aborts in total");
        });
        if (!ran) {
            skip("read_committed output: each of the " + N + " inputs transformed exactly once", "the processor runs");
            skip("group's committed offsets = input end offsets", "the processor runs");
            skip("read_uncommitted sees the aborted transactions' records too", "the processor runs");
            return;
        }
        final List<String> committedValues = new ArrayList<>();
        check("read_committed output: each of the " + N + " inputs transformed exactly once", () -> {
            committedValues.addAll(values(readAll(out, "read_committed")));
            Map<String, Integer> count = new HashMap<>();
            for (String v : committedValues) count.merge(v, 1, Integer::sum);
            List<String> dupes = new ArrayList<>(), missing = new ArrayList<>(), strange = new ArrayList<>();
            Set<String> want = new HashSet<>();
            for (int n = 0; n < N; n++) want.add(transform("v" + n));
            for (var e : count.entrySet()) {
                if (!want.contains(e.getKey())) strange.add(e.getKey());
                else if (e.getValue() > 1) dupes.add(e.getKey() + " x" + e.getValue());
            }
            for (int n = 0; n < N; n++) if (!count.containsKey(transform("v" + n))) missing.add("v" + n);
            if (!dupes.isEmpty() || !missing.isEmpty() || !strange.isEmpty()) {
                throw new Fail(committedValues.size() + " records; duplicates " + dupes.size() + " " + head(dupes)
                        + "; missing " + missing.size() + " " + head(missing) + "; unexpected " + head(strange));
            }
            expect(committedValues.size(), N, "records read_committed");
        });
        check("group's committed offsets = input end offsets", () -> expect(groupOffsets(group, in), inputEnd,
                "committed offsets of " + group));
        check("read_uncommitted sees the aborted transactions' records too", () -> {
            List<String> all = values(readAll(out, "read_uncommitted"));
            if (committedValues.isEmpty()) committedValues.addAll(values(readAll(out, "read_committed")));
            if (all.size() <= committedValues.size()) {
                throw new Fail("read_uncommitted " + all.size() + " records, read_committed " + committedValues.size()
                        + ": the aborted transactions' records are not there");
            }
            Set<String> want = new HashSet<>();
            for (int n = 0; n < N; n++) want.add(transform("v" + n));
            List<String> strange = new ArrayList<>();
            for (String v : all) if (!want.contains(v)) strange.add(v);
            if (!strange.isEmpty()) throw new Fail("read_uncommitted: unexpected values " + head(strange));
            System.out.println("# eos: read_uncommitted " + all.size() + " records, read_committed " + committedValues.size());
        });
    }

    static String head(List<String> l) {
        List<String> s = new ArrayList<>(l);
        s.sort(null);
        return s.size() > 8 ? s.subList(0, 8) + "..." : s.toString();
    }

    // -- zombie ----------------------------------------------------------------------------

    /** What a call threw, unwrapped from ExecutionException/KafkaException wrappers. */
    static Throwable thrown(Body b) {
        try {
            b.run();
            return null;
        } catch (Throwable e) {
            return e;
        }
    }

    static String describe(Throwable e) {
        if (e == null) return "no exception";
        StringBuilder s = new StringBuilder(e.getClass().getName() + ": " + e.getMessage());
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) s.append(" / caused by ").append(c.getClass().getName());
        return s.toString();
    }

    /** The class of what b threw (unwrapped from ExecutionException), or "no exception". */
    static String errClass(Throwable e) {
        if (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        return e == null ? "no exception" : e.getClass().getSimpleName();
    }

    static void expectFenced(Throwable e, String what) throws Fail {
        if (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        if (!(e instanceof ProducerFencedException)) throw new Fail(what + ": expected ProducerFencedException, got " + describe(e));
    }

    /** Kafka answers a Produce with an old epoch with INVALID_PRODUCER_EPOCH (the Java client's
     * abortable InvalidProducerEpochException, KIP-588), an AddPartitionsToTxn or EndTxn with
     * PRODUCER_FENCED (ProducerFencedException, fatal). */
    static void expectFencedOrOldEpoch(Throwable e, String what) throws Fail {
        if (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        if (!(e instanceof ProducerFencedException) && !(e instanceof InvalidProducerEpochException)) {
            throw new Fail(what + ": expected ProducerFencedException or InvalidProducerEpochException, got " + describe(e));
        }
    }

    static void zombie() throws Exception {
        // A: the zombie's next call is commitTransaction
        check("fenced mid-transaction: the first's commitTransaction throws ProducerFencedException; only the second's commits are visible", () -> {
            String topic = name("zombie-a"), txnId = name("zombie-a");
            createTopic(topic, 1);
            KafkaProducer<String, String> p1 = producer(txnId);
            KafkaProducer<String, String> p2 = producer(txnId);
            try {
                p1.initTransactions();
                p1.beginTransaction();
                p1.send(new ProducerRecord<>(topic, 0, "k", "first-1")).get(T, TimeUnit.SECONDS);
                p2.initTransactions(); // fences p1 (and aborts its open transaction)
                expectFenced(thrown(p1::commitTransaction), "p1.commitTransaction() after the fence");
                expectFenced(thrown(p1::beginTransaction), "p1.beginTransaction() after that");
                p2.beginTransaction();
                p2.send(new ProducerRecord<>(topic, 0, "k", "second-1"));
                p2.commitTransaction();
                p2.beginTransaction();
                p2.send(new ProducerRecord<>(topic, 0, "k", "second-2"));
                p2.commitTransaction();
                expect(values(readAll(topic, "read_committed")), List.of("second-1", "second-2"), "read_committed values");
                List<String> raw = values(readAll(topic, "read_uncommitted"));
                if (!raw.contains("first-1")) throw new Fail("read_uncommitted " + raw + " lacks first-1 (written before the fence)");
            } finally {
                p1.close(Duration.ZERO);
                p2.close(Duration.ofSeconds(5));
            }
        });
        // B: the zombie's next call is a send into its open transaction
        check("fenced mid-transaction: the first's send and commit fail, its abort throws ProducerFencedException; its records never visible", () -> {
            String topic = name("zombie-b"), txnId = name("zombie-b");
            createTopic(topic, 1);
            KafkaProducer<String, String> p1 = producer(txnId);
            KafkaProducer<String, String> p2 = producer(txnId);
            try {
                p1.initTransactions();
                p1.beginTransaction();
                p1.send(new ProducerRecord<>(topic, 0, "k", "first-1")).get(T, TimeUnit.SECONDS);
                p2.initTransactions();
                Throwable send = thrown(() -> p1.send(new ProducerRecord<>(topic, 0, "k", "first-2")).get(T, TimeUnit.SECONDS));
                expectFencedOrOldEpoch(send, "p1.send() after the fence");
                Throwable commit = thrown(p1::commitTransaction);
                expectFencedOrOldEpoch(commit, "p1.commitTransaction() after the failed send");
                expectFenced(thrown(p1::abortTransaction), "p1.abortTransaction() after that");
                p2.beginTransaction();
                p2.send(new ProducerRecord<>(topic, 0, "k", "second-1"));
                p2.commitTransaction();
                expect(values(readAll(topic, "read_committed")), List.of("second-1"), "read_committed values");
                System.out.println("# zombie: send after the fence: " + errClass(send) + ", commit: " + errClass(commit)
                        + ", abort: ProducerFencedException; read_uncommitted " + values(readAll(topic, "read_uncommitted")));
            } finally {
                p1.close(Duration.ZERO);
                p2.close(Duration.ofSeconds(5));
            }
        });
        // C: the zombie is fenced between two transactions
        check("fenced between transactions: the first's next transaction fails (ProducerFencedException at the latest on abort); nothing of it visible", () -> {
            String topic = name("zombie-c"), txnId = name("zombie-c");
            createTopic(topic, 1);
            KafkaProducer<String, String> p1 = producer(txnId);
            KafkaProducer<String, String> p2 = producer(txnId);
            try {
                p1.initTransactions();
                p1.beginTransaction();
                p1.send(new ProducerRecord<>(topic, 0, "k", "first-1"));
                p1.commitTransaction();
                p2.initTransactions();
                p1.beginTransaction();
                Throwable send = thrown(() -> p1.send(new ProducerRecord<>(topic, 0, "k", "first-2")).get(T, TimeUnit.SECONDS));
                expectFencedOrOldEpoch(send, "p1.send() in a new transaction after the fence");
                Throwable commit = thrown(p1::commitTransaction);
                expectFencedOrOldEpoch(commit, "p1.commitTransaction() after the failed send");
                expectFenced(thrown(p1::abortTransaction), "p1.abortTransaction() after that");
                p2.beginTransaction();
                p2.send(new ProducerRecord<>(topic, 0, "k", "second-1"));
                p2.commitTransaction();
                expect(values(readAll(topic, "read_committed")), List.of("first-1", "second-1"), "read_committed values");
                System.out.println("# zombie: send in a new transaction after the fence: " + errClass(send) + ", commit: " + errClass(commit));
            } finally {
                p1.close(Duration.ZERO);
                p2.close(Duration.ofSeconds(5));
            }
        });
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("processor")) {
            try {
                processor(args);
            } catch (Throwable e) {
                // the driver reports this line
                System.out.println("fatal " + e.getClass().getName() + ": " + e.getMessage());
                System.out.flush();
                System.exit(3);
            }
            System.exit(0);
        }
        if (args.length < 3) {
            System.err.println("usage: TxnJava eos|zombie BOOTSTRAP SUITE");
            System.exit(2);
        }
        bootstrap = args[1];
        suite = args[2];
        Runtime.getRuntime().addShutdownHook(new Thread(() -> { for (Process p : children) p.destroyForcibly(); }));
        switch (args[0]) {
            case "eos": eos(); break;
            case "zombie": zombie(); break;
            default: System.err.println("unknown mode " + args[0]); System.exit(2);
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
