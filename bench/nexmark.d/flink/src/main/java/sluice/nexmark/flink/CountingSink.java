package sluice.nexmark.flink;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * A sink that only counts rows (the Rust driver's `CountingSink`) and, with `digest`, adds
 * up the rows' {@link Digest}s. The mini-cluster runs in the driver's JVM, so the writers
 * add to static counters (when Flink flushes them at checkpoints and end of input, and on
 * close).
 */
public final class CountingSink<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;
    static final AtomicLong ROWS = new AtomicLong();
    static final AtomicLong DIGEST = new AtomicLong();

    private final boolean digest;

    public CountingSink(boolean digest) {
        this.digest = digest;
    }

    @Override
    public SinkWriter<T> createWriter(WriterInitContext context) {
        return new Writer<>(digest);
    }

    private static final class Writer<T> implements SinkWriter<T> {
        private final boolean digest;
        private long rows;
        private long sum;

        Writer(boolean digest) {
            this.digest = digest;
        }

        @Override
        public void write(T element, Context context) {
            rows++;
            if (digest) {
                sum += Digest.of(element);
            }
        }

        @Override
        public void flush(boolean endOfInput) {
            publish();
        }

        @Override
        public void close() {
            publish();
        }

        private void publish() {
            ROWS.addAndGet(rows);
            DIGEST.addAndGet(sum);
            rows = 0;
            sum = 0;
        }
    }
}
