package sluice.nexmark.flink;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The Flink side of bench/nexmark: runs the queries of {@link Queries} over the ported
 * generator as a source inside the job, on a local mini-cluster in this JVM, with
 * checkpoints to a directory, and prints one line per query in the Sluice driver's format
 * (crates/sluice-stream/examples/nexmark.rs):
 *
 * <pre>
 * query= events= seconds= events_per_second= cpu_seconds= events_per_cpu_second=
 * output_rows= output_digest= checkpoints= parallelism= object_reuse=
 * </pre>
 *
 * <p>seconds: from job submission to the job's result (the mini-cluster is started before,
 * outside the figure). cpu_seconds: the JVM process's CPU time over the same span (every
 * thread: tasks, mini-cluster, JIT compiler, GC). checkpoints: completed checkpoints, from
 * the job's archived checkpoint statistics.
 *
 * <p>{@code --dump-json N} prints the first N events as JSON lines (the form of
 * {@code Event::to_json}) instead, to compare the generator with Sluice's.
 */
public final class Driver {
    private static final List<String> QUERIES =
            Arrays.asList("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q11", "q12");

    /**
     * Not Nexmark queries, for checks: `q4-winning-bids` (q4's inner query alone) and
     * `source` (every event straight into the counting sink: the cost of generating the
     * events in the source and emitting them, which every query's figure includes).
     */
    private static final List<String> EXTRA_QUERIES = Arrays.asList("q4-winning-bids", "source");

    private Driver() {}

    static final class Options {
        List<String> queries;
        long events = 1_000_000;
        long seed = 0;
        long eventsPerSecond = 10_000;
        long checkpointIntervalMs = 10_000;
        Path checkpointDir = Paths.get(System.getProperty("java.io.tmpdir"),
                "sluice-nexmark-flink-checkpoints");
        int parallelism = 1;
        boolean objectReuse = true;
        long dumpJson = -1;
        boolean digest = false;
    }

    private static String usage() {
        return "usage: Driver --query q0|q1|q2|q3|q4|q5|q7|q8|q11|q12|all --events N"
                + " [--events-per-second R] [--seed S] [--checkpoint-interval-ms MS]"
                + " [--checkpoint-dir DIR] [--parallelism P] [--object-reuse true|false]"
                + " [--source memory] [--digest] | --dump-json N [--seed S] [--events-per-second R]";
    }

    private static Options parse(String[] args) {
        Options options = new Options();
        String query = null;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("--help") || flag.equals("-h")) {
                throw new IllegalArgumentException(usage());
            }
            if (flag.equals("--q4-ordered-ties")) {
                Queries.q4OrderedTies = true;
                continue;
            }
            if (flag.equals("--digest")) {
                options.digest = true;
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(flag + " needs a value\n" + usage());
            }
            String value = args[++i];
            switch (flag) {
                case "--query": query = value; break;
                case "--events": options.events = number(flag, value); break;
                case "--seed": options.seed = number(flag, value); break;
                case "--events-per-second": options.eventsPerSecond = number(flag, value); break;
                case "--checkpoint-interval-ms":
                    options.checkpointIntervalMs = number(flag, value);
                    break;
                case "--checkpoint-dir": options.checkpointDir = Paths.get(value); break;
                case "--parallelism": options.parallelism = (int) number(flag, value); break;
                case "--object-reuse": options.objectReuse = Boolean.parseBoolean(value); break;
                case "--dump-json": options.dumpJson = number(flag, value); break;
                case "--source":
                    if (!value.equals("memory")) {
                        throw new IllegalArgumentException(
                                "only the in-job generator source exists: --source memory");
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + flag + "\n" + usage());
            }
        }
        if (options.dumpJson >= 0) {
            return options;
        }
        if (query == null) {
            throw new IllegalArgumentException(usage());
        }
        if (query.equals("all")) {
            options.queries = QUERIES;
        } else if (QUERIES.contains(query) || EXTRA_QUERIES.contains(query)) {
            options.queries = List.of(query);
        } else {
            throw new IllegalArgumentException("unknown query " + query + "\n" + usage());
        }
        if (options.events <= 0) {
            throw new IllegalArgumentException("--events must be positive");
        }
        if (options.checkpointIntervalMs <= 0) {
            throw new IllegalArgumentException("--checkpoint-interval-ms must be positive");
        }
        if (options.parallelism <= 0) {
            throw new IllegalArgumentException("--parallelism must be positive");
        }
        return options;
    }

    private static long number(String flag, String text) {
        try {
            return Long.parseLong(text.replace("_", ""));
        } catch (NumberFormatException error) {
            throw new IllegalArgumentException(flag + " " + text + ": not a number");
        }
    }

    /** Event number to event, inside the source (DataGeneratorSource's index-based source). */
    static final class EventFunction implements GeneratorFunction<Long, Event> {
        private static final long serialVersionUID = 1L;
        private final NexmarkGenerator generator;

        EventFunction(NexmarkGenerator generator) {
            this.generator = generator;
        }

        @Override
        public Event map(Long eventNumber) {
            return generator.eventAt(eventNumber);
        }
    }

    private static GeneratorConfig generatorConfig(Options options) {
        GeneratorConfig config = new GeneratorConfig();
        config.seed = options.seed;
        config.maxEvents = options.events;
        config.eventsPerSecond = options.eventsPerSecond;
        return config;
    }

    /** CPU seconds of this process (all threads). */
    private static double processCpuSeconds() {
        java.lang.management.OperatingSystemMXBean bean =
                ManagementFactory.getOperatingSystemMXBean();
        if (bean instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) bean).getProcessCpuTime() / 1e9;
        }
        try {
            String stat = Files.readString(Paths.get("/proc/self/stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0;
        } catch (IOException | RuntimeException error) {
            return Double.NaN;
        }
    }

    private static void deleteRecursively(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            List<Path> all = new ArrayList<>();
            paths.forEach(all::add);
            for (int i = all.size() - 1; i >= 0; i--) {
                Files.deleteIfExists(all.get(i));
            }
        }
    }

    private static String runQuery(String query, Options options) throws Exception {
        Path checkpointRoot = options.checkpointDir.resolve(query).toAbsolutePath();
        deleteRecursively(checkpointRoot);
        Files.createDirectories(checkpointRoot);

        Configuration conf = new Configuration();
        conf.set(CoreOptions.DEFAULT_PARALLELISM, options.parallelism);
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, options.parallelism);
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL,
                Duration.ofMillis(options.checkpointIntervalMs));
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpointRoot.toUri().toString());
        // In-heap keyed state, as Sluice's in-memory state (Flink Nexmark's published runs
        // use RocksDB).
        conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        // The job ends when its input ends, as Sluice's execute returns: finished tasks do
        // not wait for one more checkpoint (up to an interval of idle time otherwise).
        conf.set(CheckpointingOptions.ENABLE_CHECKPOINTS_AFTER_TASKS_FINISH, false);
        conf.set(PipelineOptions.AUTO_WATERMARK_INTERVAL, Duration.ofMillis(200));
        conf.set(PipelineOptions.OBJECT_REUSE, options.objectReuse);
        conf.set(PipelineOptions.NAME, "nexmark-" + query);

        MiniClusterConfiguration clusterConfig = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(options.parallelism)
                .build();
        CountingSink.ROWS.set(0);
        CountingSink.DIGEST.set(0);
        try (MiniCluster cluster = new MiniCluster(clusterConfig)) {
            cluster.start();

            StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
            env.setParallelism(options.parallelism);
            NexmarkGenerator generator = new NexmarkGenerator(generatorConfig(options));
            DataGeneratorSource<Event> source = new DataGeneratorSource<>(
                    new EventFunction(generator), options.events, RateLimiterStrategy.noOp(),
                    TypeInformation.of(Event.class));
            DataStream<Event> events = env.fromSource(
                    source,
                    WatermarkStrategy.<Event>forMonotonousTimestamps()
                            .withTimestampAssigner((event, previous) -> event.timestamp()),
                    "nexmark-generator");
            Queries.add(query, events, new CountingSink<>(options.digest));
            JobGraph jobGraph = env.getStreamGraph().getJobGraph();

            if (System.getenv("NEXMARK_DEBUG") != null) {
                System.err.println("checkpointing: " + jobGraph.getCheckpointingSettings()
                        .getCheckpointCoordinatorConfiguration());
            }
            double cpuBefore = processCpuSeconds();
            long started = System.nanoTime();
            JobID jobId = cluster.submitJob(jobGraph).get().getJobID();
            JobResult result = cluster.requestJobResult(jobId).get();
            double seconds = (System.nanoTime() - started) / 1e9;
            double cpuSeconds = processCpuSeconds() - cpuBefore;
            if (!result.isSuccess()) {
                result.toJobExecutionResult(Driver.class.getClassLoader());
                throw new IllegalStateException(query + ": job did not succeed");
            }
            String checkpoints = "-";
            ArchivedExecutionGraph graph = cluster.getArchivedExecutionGraph(jobId).get();
            CheckpointStatsSnapshot stats = graph.getCheckpointStatsSnapshot();
            if (stats != null) {
                checkpoints = Long.toString(stats.getCounts().getNumberOfCompletedCheckpoints());
                if (System.getenv("NEXMARK_DEBUG") != null) {
                    for (var checkpoint : stats.getHistory().getCheckpoints()) {
                        System.err.println("checkpoint " + checkpoint.getCheckpointId() + " "
                                + checkpoint.getStatus() + " trigger="
                                + checkpoint.getTriggerTimestamp() + " duration_ms="
                                + checkpoint.getEndToEndDuration() + " bytes="
                                + checkpoint.getStateSize() + " type="
                                + checkpoint.getProperties().getCheckpointType());
                    }
                    System.err.println("submitted=" + System.currentTimeMillis());
                }
            }
            long rows = CountingSink.ROWS.get();
            String digest = options.digest
                    ? String.format("%016x", CountingSink.DIGEST.get()) : "-";
            double count = options.events;
            String perCpu = cpuSeconds > 0 && !Double.isNaN(cpuSeconds)
                    ? String.format(Locale.ROOT, "%.0f", count / cpuSeconds) : "-";
            return String.format(Locale.ROOT,
                    "query=%s events=%d seconds=%.3f events_per_second=%.0f cpu_seconds=%.2f"
                            + " events_per_cpu_second=%s output_rows=%d output_digest=%s checkpoints=%s"
                            + " parallelism=%d object_reuse=%b",
                    query, options.events, seconds, count / seconds, cpuSeconds, perCpu, rows,
                    digest, checkpoints, options.parallelism, options.objectReuse);
        } finally {
            deleteRecursively(checkpointRoot);
        }
    }

    private static void dumpJson(Options options) {
        GeneratorConfig config = generatorConfig(options);
        config.maxEvents = Math.max(options.dumpJson, 1);
        NexmarkGenerator generator = new NexmarkGenerator(config);
        StringBuilder out = new StringBuilder(1 << 20);
        for (long n = 0; n < options.dumpJson; n++) {
            out.append(NexmarkGenerator.toJson(generator.eventAt(n))).append('\n');
            if (out.length() > (1 << 20) - 4096) {
                System.out.print(out);
                out.setLength(0);
            }
        }
        System.out.print(out);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = parse(args);
        } catch (IllegalArgumentException error) {
            System.err.println(error.getMessage());
            System.exit(2);
            return;
        }
        if (options.dumpJson >= 0) {
            dumpJson(options);
            return;
        }
        for (String query : options.queries) {
            System.out.println(runQuery(query, options));
            System.out.flush();
        }
        System.exit(0);
    }
}
