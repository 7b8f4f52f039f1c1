// Kafka Streams word count with processing.guarantee=exactly_once_v2, SIGKILLed and
// restarted mid-run; its output table must equal a batch count of its input.
//
//   javac -cp 'compat/streams/libs/*' -d CLASSES compat/streams/StreamsWordCount.java
//   java -cp 'CLASSES:compat/streams/libs/*' StreamsWordCount check BOOTSTRAP WORKDIR SUITE
//   java -cp ... StreamsWordCount app BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR THREADS
//                                      (the Streams application, a child JVM of "check")
//
// check: creates the input topic (4 partitions) and the output topic (4 partitions);
//   produces the first half of a deterministic input (LINES lines of 1-6 words from a
//   vocabulary of VOCAB words, java.util.Random(SEED); acks=all, idempotent) and counts
//   its words (the batch count); then
//   run 1: starts the app (a separate JVM, state dir A) and SIGKILLs it once it has
//          committed part of the first half (the group's committed input offsets);
//   run 2: starts it again with the same application.id and state dir A, produces the
//          second half while it runs (paced), and SIGKILLs it once it has committed part
//          of the second half but not all of it;
//   run 3: starts it with a new, empty state dir B (its store is restored from the
//          changelog topic; a new transactional.id, so run 2's open transaction is only
//          aborted by the coordinator's transaction.timeout.ms) and lets it finish.
//   Then a read_committed consumer of the output topic: the last value per word (the
//   output table) equals the batch count for every word, with no word missing or extra;
//   and, since the store's cache is off (every update is emitted), each word's committed
//   values are exactly 1, 2, ..., n: every input word counted once across the kills.
//   The group's committed offsets on the input equal its end offsets; the repartition and
//   changelog topics exist and carry records, the changelog is cleanup.policy=compact
//   (DescribeConfigs); ListTransactions shows the app's transactional.ids.
// Prints "PASS SUITE: <check>" / "FAIL SUITE: <check>: <reason>" and "# ..." notes; exits 1
// if any check failed.

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsWordCount {
    static final int T = 15; // seconds: bound on one admin call
    static final int LINES = 20000; // input lines, in two halves
    static final int VOCAB = 400; // distinct words drawn from
    static final long SEED = 20250101L;
    static final int PARTS = 4; // input and output partitions
    static final int THREADS = 2; // num.stream.threads
    static final String RUN = UUID.randomUUID().toString().substring(0, 6);
    static final String REPARTITION_NAME = "words"; // Grouped.as: <app>-words-repartition
    static final String STORE_NAME = "counts"; // Materialized.as: <app>-counts-changelog

    static String bootstrap;
    static String suite;
    static Path work;
    static int failed = 0;
    static final List<Process> children = new CopyOnWriteArrayList<>();

    // -- the application --------------------------------------------------------------------

    /** The word splitter of the app and of the batch count. */
    static List<String> words(String line) {
        List<String> out = new ArrayList<>();
        for (String w : line.toLowerCase(Locale.ROOT).split("\\W+")) if (!w.isEmpty()) out.add(w);
        return out;
    }

    static Topology topology(String input, String output) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, Long> counts = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(StreamsWordCount::words)
            .groupBy((key, word) -> word, Grouped.with(REPARTITION_NAME, Serdes.String(), Serdes.String()))
            .count(Materialized.as(STORE_NAME));
        counts.toStream().to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static int app(String[] a) throws Exception {
        String bs = a[1], appId = a[2], input = a[3], output = a[4], stateDir = a[5];
        int threads = Integer.parseInt(a[6]);
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
        // STREAMS_GUARANTEE=at_least_once: a self-test of the checks (duplicates after a SIGKILL)
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            System.getenv().getOrDefault("STREAMS_GUARANTEE", StreamsConfig.EXACTLY_ONCE_V2));
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        // purge consumed repartition records (DeleteRecords) every second, not every 30 s
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
        // no record cache: every count update goes to the output (checked as 1, 2, ..., n)
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        KafkaStreams streams = new KafkaStreams(topology(input, output), p);
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Throwable> error = new AtomicReference<>();
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + before + " -> " + now);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) done.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            error.set(e);
            System.out.println("ERROR " + e);
            System.out.flush();
            e.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            done.countDown();
        }));
        streams.start();
        done.await();
        streams.close(Duration.ofSeconds(10));
        return error.get() == null ? 0 : 1;
    }

    // -- checks -----------------------------------------------------------------------------

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
                    if (el.getClassName().startsWith("StreamsWordCount")) {
                        msg += " (at line " + el.getLineNumber() + ")";
                        break;
                    }
                }
            }
            fail(name, msg);
            return false;
        }
    }

    static void fail(String name, String reason) {
        failed++;
        String r = String.valueOf(reason).replaceAll("\\s+", " ");
        if (r.length() > 900) r = r.substring(0, 900) + "...";
        System.out.println("FAIL " + suite + ": " + name + ": " + r);
        System.out.flush();
    }

    static void skip(String name, String dep) { fail(name, "skipped (depends on " + dep + ")"); }

    static void note(String s) {
        System.out.println("# " + s);
        System.out.flush();
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, T * 1000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, T * 1000);
        return Admin.create(p);
    }

    static void createTopic(Admin a, String topic, int parts) throws Exception {
        a.createTopics(List.of(new NewTopic(topic, parts, (short) 1))).all().get(T, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(T);
        while (true) {
            try {
                TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get(T, TimeUnit.SECONDS).get(topic);
                if (d.partitions().size() == parts && d.partitions().stream().allMatch(x -> x.leader() != null)) return;
            } catch (ExecutionException e) {
                // not known yet
            }
            if (System.nanoTime() > deadline) throw new Fail("topic " + topic + " not ready after " + T + " s");
            Thread.sleep(100);
        }
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> l = new ArrayList<>();
        for (int i = 0; i < n; i++) l.add(new TopicPartition(topic, i));
        return l;
    }

    /** The group's committed offsets summed over the topic's partitions (-1: none). */
    static long committedSum(Admin a, String group, String topic) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> m = a.listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata().get(T, TimeUnit.SECONDS);
        long sum = 0;
        boolean any = false;
        for (var e : m.entrySet()) {
            if (e.getKey().topic().equals(topic) && e.getValue() != null) {
                sum += e.getValue().offset();
                any = true;
            }
        }
        return any ? sum : -1;
    }

    static Map<TopicPartition, Long> committed(Admin a, String group, String topic) throws Exception {
        Map<TopicPartition, Long> out = new TreeMap<>((x, y) -> Integer.compare(x.partition(), y.partition()));
        for (var e : a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(T, TimeUnit.SECONDS).entrySet()) {
            if (e.getKey().topic().equals(topic) && e.getValue() != null) out.put(e.getKey(), e.getValue().offset());
        }
        return out;
    }

    static Map<TopicPartition, Long> endOffsets(Admin a, String topic, int n) throws Exception {
        Map<TopicPartition, OffsetSpec> q = new HashMap<>();
        for (TopicPartition tp : partitions(topic, n)) q.put(tp, OffsetSpec.latest());
        Map<TopicPartition, Long> out = new TreeMap<>((x, y) -> Integer.compare(x.partition(), y.partition()));
        for (var e : a.listOffsets(q).all().get(T, TimeUnit.SECONDS).entrySet()) out.put(e.getKey(), e.getValue().offset());
        return out;
    }

    static Map<TopicPartition, Long> startOffsets(Admin a, String topic, int n) throws Exception {
        Map<TopicPartition, OffsetSpec> q = new HashMap<>();
        for (TopicPartition tp : partitions(topic, n)) q.put(tp, OffsetSpec.earliest());
        Map<TopicPartition, Long> out = new TreeMap<>((x, y) -> Integer.compare(x.partition(), y.partition()));
        for (var e : a.listOffsets(q).all().get(T, TimeUnit.SECONDS).entrySet()) out.put(e.getKey(), e.getValue().offset());
        return out;
    }

    static void waitFor(String what, int seconds, Supplier<String> state, Cond cond) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!cond.ok()) {
            if (System.nanoTime() > deadline) throw new Fail(what + " not within " + seconds + " s: " + state.get());
            Thread.sleep(100);
        }
    }

    interface Cond { boolean ok() throws Exception; }

    // -- the input ---------------------------------------------------------------------------

    static List<String> inputLines() {
        Random r = new Random(SEED);
        String[] vocab = new String[VOCAB];
        for (int i = 0; i < VOCAB; i++) {
            StringBuilder w = new StringBuilder();
            int len = 3 + r.nextInt(6);
            for (int j = 0; j < len; j++) w.append((char) ('a' + r.nextInt(26)));
            vocab[i] = w.toString() + i; // distinct
        }
        String[] seps = {" ", "  ", ", ", ". ", "; ", " - "};
        List<String> lines = new ArrayList<>(LINES);
        for (int i = 0; i < LINES; i++) {
            int n = 1 + r.nextInt(6);
            StringBuilder line = new StringBuilder();
            for (int j = 0; j < n; j++) {
                if (j > 0) line.append(seps[r.nextInt(seps.length)]);
                // skewed: a few words are frequent, most are rare
                int k = (int) (VOCAB * Math.pow(r.nextDouble(), 2.5));
                String w = vocab[Math.min(k, VOCAB - 1)];
                line.append(r.nextInt(5) == 0 ? w.toUpperCase(Locale.ROOT) : w);
            }
            lines.add(line.toString());
        }
        return lines;
    }

    static KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** Sends lines[from, to) with key "line-i"; paced: a pause of pauseMs every `every` lines. */
    static void produce(KafkaProducer<String, String> pr, String topic, List<String> lines, int from, int to,
                        int every, long pauseMs) throws Exception {
        List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
        for (int i = from; i < to; i++) {
            fs.add(pr.send(new ProducerRecord<>(topic, "line-" + i, lines.get(i))));
            if (every > 0 && (i - from + 1) % every == 0) {
                pr.flush();
                Thread.sleep(pauseMs);
            }
        }
        pr.flush();
        for (var f : fs) f.get(30, TimeUnit.SECONDS);
    }

    // -- the app as a child JVM ----------------------------------------------------------------

    static class App {
        final int n;
        final Process proc;
        final List<String> lines = new CopyOnWriteArrayList<>();

        App(int n, String appId, String input, String output, Path stateDir) throws Exception {
            this.n = n;
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<String> cmd = new ArrayList<>(List.of(java, "-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC", "-XX:-UsePerfData"));
            String log4j = System.getProperty("log4j2.configurationFile");
            if (log4j != null) cmd.add("-Dlog4j2.configurationFile=" + log4j);
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "StreamsWordCount", "app", bootstrap,
                appId, input, output, stateDir.toString(), String.valueOf(THREADS)));
            File err = work.resolve("app-run" + n + ".err").toFile();
            proc = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(err)).start();
            children.add(proc);
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
                    String l;
                    while ((l = r.readLine()) != null) lines.add(l);
                } catch (Exception e) {
                    // the child died
                }
            });
            t.setDaemon(true);
            t.start();
        }

        boolean running() {
            return lines.stream().anyMatch(l -> l.endsWith("-> RUNNING"));
        }

        String states() {
            return lines.stream().filter(l -> l.startsWith("STATE ")).map(l -> l.substring(l.lastIndexOf(' ') + 1))
                .collect(Collectors.joining(" -> "));
        }

        String describe() {
            String states = lines.stream().map(l -> l.startsWith("STATE ") ? l.substring(l.lastIndexOf(' ') + 1) : l)
                .collect(Collectors.joining(", "));
            return "run " + n + (proc.isAlive() ? " alive" : " exited " + proc.exitValue()) + ", states: [" + states
                + "], stderr: " + tail(work.resolve("app-run" + n + ".err"), 500);
        }

        void kill() throws Exception {
            proc.destroyForcibly(); // SIGKILL
            proc.waitFor(10, TimeUnit.SECONDS);
        }

        void stop() throws Exception {
            proc.destroy(); // SIGTERM: the shutdown hook closes Streams
            if (!proc.waitFor(20, TimeUnit.SECONDS)) kill();
        }
    }

    static String tail(Path p, int n) {
        try {
            String s = Files.readString(p, StandardCharsets.UTF_8);
            // the interesting part of a Java log: skip stack frames
            s = Arrays.stream(s.split("\n")).filter(l -> !l.trim().startsWith("at ")).collect(Collectors.joining(" | "));
            return s.length() > n ? "..." + s.substring(s.length() - n) : s;
        } catch (Exception e) {
            return "(no stderr)";
        }
    }

    // -- the output ------------------------------------------------------------------------------

    /** Reads the whole output topic with read_committed (or read_uncommitted) up to its end. */
    static List<ConsumerRecord<String, Long>> readOutput(String topic, boolean committed, int seconds) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, committed ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        List<ConsumerRecord<String, Long>> out = new ArrayList<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> tps = partitions(topic, PARTS);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(T)); // the LSO for read_committed
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (tps.stream().anyMatch(tp -> c.position(tp, Duration.ofSeconds(T)) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new Fail("reading " + topic + " (" + (committed ? "read_committed" : "read_uncommitted")
                        + ") did not reach " + end + " within " + seconds + " s; got " + out.size() + " records");
                }
                for (var r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out;
    }

    static long countRecords(String topic, int parts) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        long n = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = partitions(topic, parts);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(T));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (tps.stream().anyMatch(tp -> c.position(tp, Duration.ofSeconds(T)) < end.get(tp))) {
                if (System.nanoTime() > deadline) throw new Fail("reading " + topic + " did not reach " + end);
                n += c.poll(Duration.ofMillis(200)).count();
            }
        }
        return n;
    }

    /** Differences between a table and the expected one, at most `max` listed. */
    static String diff(Map<String, Long> got, Map<String, Long> want, int max) {
        List<String> d = new ArrayList<>();
        int missing = 0, extra = 0, wrong = 0;
        for (var e : want.entrySet()) {
            Long g = got.get(e.getKey());
            if (g == null) {
                missing++;
                if (d.size() < max) d.add(e.getKey() + ": missing (expected " + e.getValue() + ")");
            } else if (!g.equals(e.getValue())) {
                wrong++;
                if (d.size() < max) d.add(e.getKey() + ": " + g + " (expected " + e.getValue() + ")");
            }
        }
        for (var e : got.entrySet()) {
            if (!want.containsKey(e.getKey())) {
                extra++;
                if (d.size() < max) d.add(e.getKey() + ": " + e.getValue() + " (not in the input)");
            }
        }
        if (missing + extra + wrong == 0) return "";
        return wrong + " wrong, " + missing + " missing, " + extra + " extra: " + String.join("; ", d);
    }

    // -- the suite ----------------------------------------------------------------------------------

    static int checkSuite(String[] a) throws Exception {
        bootstrap = a[1];
        work = Path.of(a[2]);
        suite = a[3];
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Process p : children) p.destroyForcibly();
        }));
        String input = "wc-input-" + RUN, output = "wc-output-" + RUN, appId = "wc-" + RUN;
        String repartition = appId + "-" + REPARTITION_NAME + "-repartition";
        String changelog = appId + "-" + STORE_NAME + "-changelog";
        Path stateA = work.resolve("state-a"), stateB = work.resolve("state-b");
        List<String> lines = inputLines();
        int half = LINES / 2;
        Map<String, Long> expected = new TreeMap<>();
        long totalWords = 0;
        for (String l : lines) for (String w : words(l)) { expected.merge(w, 1L, Long::sum); totalWords++; }
        final long total = totalWords;
        note("app " + appId + ", input " + input + " (" + PARTS + " partitions), output " + output + ", "
            + THREADS + " stream threads, work dir " + work);

        try (Admin admin = admin(); KafkaProducer<String, String> pr = producer()) {
            boolean ok = check("create the input and output topics (" + PARTS + " partitions each)", () -> {
                createTopic(admin, input, PARTS);
                createTopic(admin, output, PARTS);
            });
            ok = ok && check("produce the first half: " + half + " lines (acks=all, idempotent); the whole input: "
                + LINES + " lines, " + total + " words, " + expected.size() + " distinct", () -> {
                produce(pr, input, lines, 0, half, 0, 0);
                Map<TopicPartition, Long> end = endOffsets(admin, input, PARTS);
                long sum = end.values().stream().mapToLong(Long::longValue).sum();
                if (sum != half) throw new Fail("input end offsets " + end + " sum to " + sum + ", expected " + half);
            });
            if (!ok) return 1;

            // run 1: state dir A; SIGKILL after part of the first half was committed
            long[] atKill1 = {-1};
            App[] run = new App[3];
            boolean ok1 = check("run 1 (state dir A) processes part of the input and is SIGKILLed mid-run", () -> {
                run[0] = new App(1, appId, input, output, stateA);
                long[] c = {-1};
                waitFor("run 1 committing a quarter of the first half", 60, () -> "committed " + c[0] + "; " + run[0].describe(), () -> {
                    if (!run[0].proc.isAlive()) throw new Fail("the app exited: " + run[0].describe());
                    c[0] = committedSum(admin, appId, input);
                    return c[0] >= half / 4; // a quarter of what there is so far
                });
                run[0].kill();
                atKill1[0] = committedSum(admin, appId, input);
                note("run 1 SIGKILLed with " + atKill1[0] + " of " + half + " produced lines committed (all " + LINES
                    + " lines: " + half + " more to come)");
                note("run 1's Streams states before the kill: " + run[0].states());
                if (atKill1[0] >= LINES) throw new Fail("run 1 had processed the whole input");
            });
            if (!ok1) {
                if (run[0] != null) run[0].kill();
                for (String s : List.of("run 2", "run 3", "output table", "exactly once per word", "group offsets",
                    "internal topics", "repartition purge", "transactions")) skip(s, "run 1");
                return 1;
            }

            // run 2: same state dir; the second half is produced while it runs; SIGKILL mid-run
            long[] atKill2 = {-1};
            long[] kill2At = {0};
            boolean ok2 = check("run 2 (same application.id, same state dir A) resumes, the second half is "
                + "produced meanwhile, and it is SIGKILLed mid-run", () -> {
                run[1] = new App(2, appId, input, output, stateA);
                AtomicReference<Throwable> perr = new AtomicReference<>();
                Thread prod = new Thread(() -> {
                    try {
                        produce(pr, input, lines, half, LINES, 500, 150);
                    } catch (Throwable e) {
                        perr.set(e);
                    }
                });
                long[] c = {-1};
                waitFor("run 2 committing past run 1's offsets", 60, () -> "committed " + c[0] + "; " + run[1].describe(), () -> {
                    if (!run[1].proc.isAlive()) throw new Fail("the app exited: " + run[1].describe());
                    c[0] = committedSum(admin, appId, input);
                    return c[0] > atKill1[0] || (c[0] == half && run[1].running());
                });
                prod.start();
                waitFor("run 2 committing part of the second half", 60, () -> "committed " + c[0] + "; " + run[1].describe(), () -> {
                    if (!run[1].proc.isAlive()) throw new Fail("the app exited: " + run[1].describe());
                    if (perr.get() != null) throw new Fail("producing the second half: " + perr.get());
                    c[0] = committedSum(admin, appId, input);
                    return c[0] > half;
                });
                run[1].kill();
                kill2At[0] = System.nanoTime();
                atKill2[0] = committedSum(admin, appId, input);
                prod.join(60000);
                if (perr.get() != null) throw new Fail("producing the second half: " + perr.get());
                long sum = endOffsets(admin, input, PARTS).values().stream().mapToLong(Long::longValue).sum();
                if (sum != LINES) throw new Fail("input end offsets sum to " + sum + ", expected " + LINES);
                note("run 2's Streams states before the kill: " + run[1].states());
                note("run 2 SIGKILLed with " + atKill2[0] + " of " + LINES + " lines committed");
                if (atKill2[0] >= LINES) throw new Fail("run 2 had processed the whole input before the kill");
            });
            if (!ok2) {
                if (run[1] != null) run[1].kill();
                for (String s : List.of("run 3", "output table", "exactly once per word", "group offsets",
                    "internal topics", "repartition purge", "transactions")) skip(s, "run 2");
                return 1;
            }

            // run 3: an empty state dir B: the store is restored from the changelog
            Map<String, Long> table = new HashMap<>();
            Map<String, List<Long>> seqs = new HashMap<>();
            boolean ok3 = check("run 3 (same application.id, new empty state dir B: the store restored from the "
                + "changelog) processes the rest: the output table (read_committed, last value per word) reaches "
                + "the batch count", () -> {
                run[2] = new App(3, appId, input, output, stateB);
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
                p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
                p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
                try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
                    List<TopicPartition> tps = partitions(output, PARTS);
                    c.assign(tps);
                    c.seekToBeginning(tps);
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                    long n = 0;
                    while (true) {
                        for (var r : c.poll(Duration.ofMillis(300))) {
                            n++;
                            table.put(r.key(), r.value());
                            seqs.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                        }
                        String d = diff(table, expected, 8);
                        if (d.isEmpty()) break;
                        String over = table.entrySet().stream()
                            .filter(e -> e.getValue() > expected.getOrDefault(e.getKey(), 0L))
                            .limit(8).map(e -> e.getKey() + "=" + e.getValue() + " (expected "
                                + expected.getOrDefault(e.getKey(), 0L) + ")")
                            .collect(Collectors.joining(", "));
                        if (!over.isEmpty()) throw new Fail("counted too many (duplicates): " + over + "; " + d);
                        if (!run[2].proc.isAlive()) throw new Fail("the app exited: " + run[2].describe() + "; table: " + d);
                        if (System.nanoTime() > deadline) {
                            throw new Fail("not within 90 s: " + d + "; " + n + " output records read; committed input offsets "
                                + committedSum(admin, appId, input) + " of " + LINES + "; " + run[2].describe());
                        }
                    }
                    note(String.format("output table complete %.1f s after run 2's SIGKILL: %d words, %d committed output records",
                        (System.nanoTime() - kill2At[0]) / 1e9, table.size(), n));
                }
                note("run 3's Streams states: " + run[2].states());
            });
            if (!ok3) {
                if (run[2] != null) run[2].kill();
                skip("output table", "run 3");
                skip("exactly once per word", "run 3");
            } else {
                // the app is idle now; let it commit, stop it cleanly and read everything again
                check("group " + appId + ": committed offsets on the input equal its end offsets", () -> {
                    Map<TopicPartition, Long> end = endOffsets(admin, input, PARTS);
                    Map<TopicPartition, Long>[] got = new Map[1];
                    waitFor("committed = end offsets", 20, () -> "committed " + got[0] + ", end " + end, () -> {
                        got[0] = committed(admin, appId, input);
                        return got[0].equals(end);
                    });
                });
                check("run 3 stops cleanly on SIGTERM (KafkaStreams.close)", () -> {
                    run[2].stop();
                    if (run[2].proc.exitValue() != 0 && run[2].proc.exitValue() != 143) {
                        throw new Fail("exit " + run[2].proc.exitValue() + ": " + run[2].describe());
                    }
                });
                List<ConsumerRecord<String, Long>> all = new ArrayList<>();
                boolean okr = check("output table: a new read_committed consumer of the whole output topic: the last "
                    + "value per word equals the batch count for all " + expected.size() + " words, none missing or extra", () -> {
                    all.addAll(readOutput(output, true, 60));
                    Map<String, Long> t = new HashMap<>();
                    for (var r : all) t.put(r.key(), r.value());
                    String d = diff(t, expected, 10);
                    if (!d.isEmpty()) throw new Fail(d);
                });
                if (okr) {
                    check("exactly once per word: with the cache off each word's committed output values are 1, 2, ..., "
                        + "n in order (no count lost, repeated or skipped across the kills); " + total + " records in all", () -> {
                        Map<String, Long> next = new HashMap<>();
                        List<String> bad = new ArrayList<>();
                        int nbad = 0;
                        for (var r : all) {
                            long want = next.getOrDefault(r.key(), 0L) + 1;
                            if (r.value() != want) {
                                nbad++;
                                if (bad.size() < 8) bad.add(r.key() + " at " + r.topic() + "-" + r.partition() + "@"
                                    + r.offset() + ": " + r.value() + " after " + (want - 1));
                            }
                            next.put(r.key(), r.value());
                        }
                        if (nbad > 0) throw new Fail(nbad + " out of sequence: " + String.join("; ", bad));
                        if (all.size() != total) throw new Fail(all.size() + " output records, expected " + total);
                    });
                    try {
                        long uncommitted = readOutput(output, false, 60).size();
                        note("read_uncommitted sees " + uncommitted + " output records, read_committed " + all.size()
                            + " (the difference: records of aborted transactions)");
                    } catch (Exception e) {
                        note("read_uncommitted read failed: " + e);
                    }
                } else {
                    skip("exactly once per word", "output table");
                }
            }

            check("internal topics: " + repartition + " (" + PARTS + " partitions, end offsets >= the word count) and " + changelog
                + " (cleanup.policy=compact, with records) exist", () -> {
                Set<String> names = admin.listTopics().names().get(T, TimeUnit.SECONDS);
                Set<String> mine = new TreeSet<>();
                for (String s : names) if (s.startsWith(appId)) mine.add(s);
                note("the app's internal topics: " + mine);
                if (!names.contains(repartition)) throw new Fail("no topic " + repartition + " (the app's: " + mine + ")");
                if (!names.contains(changelog)) throw new Fail("no topic " + changelog + " (the app's: " + mine + ")");
                Map<String, TopicDescription> d = admin.describeTopics(List.of(repartition, changelog)).allTopicNames()
                    .get(T, TimeUnit.SECONDS);
                int rp = d.get(repartition).partitions().size(), cp = d.get(changelog).partitions().size();
                if (rp != PARTS) throw new Fail(repartition + " has " + rp + " partitions, expected " + PARTS);
                if (cp != PARTS) throw new Fail(changelog + " has " + cp + " partitions, expected " + PARTS);
                ConfigResource cr = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
                ConfigResource rr = new ConfigResource(ConfigResource.Type.TOPIC, repartition);
                Map<ConfigResource, Config> cfg = admin.describeConfigs(List.of(cr, rr)).all().get(T, TimeUnit.SECONDS);
                String cpol = cfg.get(cr).get("cleanup.policy") == null ? null : cfg.get(cr).get("cleanup.policy").value();
                String rpol = cfg.get(rr).get("cleanup.policy") == null ? null : cfg.get(rr).get("cleanup.policy").value();
                if (!"compact".equals(cpol)) throw new Fail(changelog + " cleanup.policy=" + cpol + ", expected compact");
                if (!"delete".equals(rpol)) throw new Fail(repartition + " cleanup.policy=" + rpol + ", expected delete");
                long rn = countRecords(repartition, PARTS), cn = countRecords(changelog, PARTS);
                note(repartition + ": " + rn + " committed records left (one per word, " + total + " words, less those "
                    + "purged once consumed); " + changelog + ": " + cn + " committed records");
                if (cn == 0) throw new Fail(changelog + " has no committed records");
                long rend = endOffsets(admin, repartition, PARTS).values().stream().mapToLong(Long::longValue).sum();
                if (rend < total) throw new Fail(repartition + " end offsets sum to " + rend + ", fewer than the " + total + " words");
            });

            check("repartition purge: Streams deleted consumed records of " + repartition
                + " (DeleteRecords): its log start offsets moved up, to no more than the group's committed offsets", () -> {
                Map<TopicPartition, Long> start = startOffsets(admin, repartition, PARTS);
                Map<TopicPartition, Long> comm = committed(admin, appId, repartition);
                note(repartition + ": log start offsets " + start + ", committed " + comm);
                if (start.values().stream().allMatch(o -> o == 0)) throw new Fail("all log start offsets are 0: " + start);
                for (var e : start.entrySet()) {
                    Long c = comm.get(e.getKey());
                    if (c == null || e.getValue() > c) {
                        throw new Fail(e.getKey() + ": log start offset " + e.getValue() + " beyond the committed offset " + c);
                    }
                }
            });

            check("transactions: ListTransactions shows the app's transactional.ids (" + appId + "-<process id>-<thread>)", () -> {
                Collection<TransactionListing> l = admin.listTransactions(new ListTransactionsOptions()).all()
                    .get(T, TimeUnit.SECONDS);
                List<String> ids = l.stream().map(TransactionListing::transactionalId).filter(s -> s.startsWith(appId + "-"))
                    .sorted().collect(Collectors.toList());
                note("transactional.ids: " + ids);
                if (ids.isEmpty()) throw new Fail("none starts with " + appId + "- among " + l.size() + " listed");
            });
        } finally {
            for (Process p : children) p.destroyForcibly();
        }
        return failed == 0 ? 0 : 1;
    }

    public static void main(String[] a) throws Exception {
        int rc;
        switch (a.length > 0 ? a[0] : "") {
            case "app": rc = app(a); break;
            case "check": rc = checkSuite(a); break;
            default:
                System.err.println("usage: StreamsWordCount check BOOTSTRAP WORKDIR SUITE | app BOOTSTRAP APP_ID IN OUT STATE_DIR THREADS");
                rc = 2;
        }
        System.exit(rc);
    }
}
