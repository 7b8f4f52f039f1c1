package dev.sluice.compat.opensearch;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * One OpenSearch 2.19 node in this JVM: a real Elasticsearch-API server (REST on
 * 127.0.0.1:PORT) for the Elasticsearch sink's tests, without a distribution tarball.
 *
 * <p>Usage: {@code EmbeddedOpenSearch PORT DIR}. DIR holds the node's home and data.
 * Prints {@code opensearch ready on http://127.0.0.1:PORT} once the HTTP port answers,
 * and closes the node on SIGTERM or SIGINT (exit 0).
 *
 * <p>It starts the node through {@link Node}'s protected constructor, which takes the
 * plugins to load from the classpath (Netty4 for HTTP and transport; a distribution
 * loads it from modules/). It does not go through OpenSearch's {@code Bootstrap}, so no
 * security manager is installed and no bootstrap checks run (those live in Bootstrap's
 * override of {@code validateNodeBeforeAcceptingRequests}; Node's own is a no-op). A
 * single-node, loopback-only node would skip the production checks anyway.
 */
public final class EmbeddedOpenSearch {
    private EmbeddedOpenSearch() {}

    /** Node's protected constructor is the supported way to load classpath plugins. */
    private static final class ClasspathPluginNode extends Node {
        ClasspathPluginNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: EmbeddedOpenSearch PORT DIR");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        Path home = Paths.get(args[1]).toAbsolutePath();
        for (String sub : List.of("config", "data", "logs", "modules", "plugins")) {
            Files.createDirectories(home.resolve(sub));
        }

        Settings settings = Settings.builder()
            .put("cluster.name", "sluice-test")
            .put("node.name", "sluice-test-node")
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("network.host", "127.0.0.1")
            .put("http.port", port)
            // Any free port: nothing connects to the transport of a single node.
            .put("transport.port", 0)
            .put("discovery.type", "single-node")
            // A test machine's disk may be fuller than the default watermarks allow.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("logger.level", "WARN")
            .build();

        LogConfigurator.configureWithoutConfig(settings);
        Environment environment =
            InternalSettingsPreparer.prepareEnvironment(settings, Collections.emptyMap(), null, () -> "sluice-test-node");
        Node node = new ClasspathPluginNode(environment, List.of(Netty4Plugin.class));

        // SIGTERM (and SIGINT) close the node and exit 0: a test harness stopping it is
        // the normal end, not a crash. A JVM shutdown hook alone would exit 143.
        CountDownLatch stopRequested = new CountDownLatch(1);
        for (String signal : List.of("TERM", "INT")) {
            sun.misc.Signal.handle(new sun.misc.Signal(signal), s -> stopRequested.countDown());
        }

        node.start();
        node.start();
        String url = "http://127.0.0.1:" + port;
        waitForHttp(url, 60_000);
        System.out.println("opensearch ready on " + url);
        System.out.flush();
        stopRequested.await();
        node.close();
        if (!node.awaitClose(20, TimeUnit.SECONDS)) {
            System.err.println("opensearch did not close within 20 s");
            System.exit(1);
        }
        System.exit(0);
    }

    private static void waitForHttp(String url, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Exception last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                HttpURLConnection connection = (HttpURLConnection) new URL(url + "/").openConnection();
                connection.setConnectTimeout(1000);
                connection.setReadTimeout(5000);
                int status = connection.getResponseCode();
                connection.disconnect();
                if (status == 200) {
                    return;
                }
                last = new IOException("HTTP " + status);
            } catch (IOException e) {
                last = e;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("opensearch's HTTP port did not answer within " + timeoutMs + " ms", last);
    }
}
