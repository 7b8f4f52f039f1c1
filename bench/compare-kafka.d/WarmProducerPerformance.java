// kafka-producer-perf-test twice in one JVM, for bench/compare-kafka's latency run.
//
//   java -cp "compat/kafka/libs/*" bench/compare-kafka.d/WarmProducerPerformance.java \
//        WARMUP_RECORDS <kafka-producer-perf-test arguments, with --num-records N>
//
// A fresh perf-test JVM interprets the producer's code for its first seconds and falls
// behind a fixed --throughput; the records queued meanwhile then show up as seconds of
// latency in the percentiles, whichever broker it talks to. So this runs Kafka's
// ProducerPerformance (the class behind kafka-producer-perf-test) first for
// WARMUP_RECORDS records, then again with the given arguments: a new producer, the
// same warmed-up JVM. Only the second summary line is the measurement.
import java.util.Arrays;

import org.apache.kafka.tools.ProducerPerformance;

public class WarmProducerPerformance {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: WarmProducerPerformance WARMUP_RECORDS <producer-perf-test args>");
            System.exit(2);
        }
        String[] measured = Arrays.copyOfRange(args, 1, args.length);
        String[] warmup = measured.clone();
        for (int i = 0; i + 1 < warmup.length; i++) {
            if (warmup[i].equals("--num-records")) {
                warmup[i + 1] = args[0];
            }
        }
        System.out.println("# warm-up run (not the measurement)");
        ProducerPerformance.main(warmup);
        System.out.println("# measured run");
        ProducerPerformance.main(measured);
    }
}
