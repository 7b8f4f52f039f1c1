/* librdkafka producer load generator for bench/client (C, no Python in the loop).
 *
 *   rdkafka_perf BOOTSTRAP TOPIC RECORDS VALUE_BYTES [-X key=value ...]
 *
 * Sends RECORDS records of VALUE_BYTES bytes (no key; the same value pattern as
 * client_compat perf) with rd_kafka_producev (RD_KAFKA_MSG_F_COPY) as fast as librdkafka
 * takes them (on QUEUE_FULL it polls 1 ms and retries), then rd_kafka_flush; the clock runs
 * from the first produce to the end of the flush. Prints one line
 * `RESULT {"records": ..., "seconds": ..., "records_per_s": ..., "mb_per_s": ...,
 * "acked": ..., "failed": ..., "peak_rss_kib": ..., "librdkafka": "..."}` (MB = 10^6
 * bytes of values) and exits 1 if any record failed.
 *
 * Built by bench/client with the system's librdkafka-dev headers against the librdkafka
 * the confluent-kafka wheel bundles (the same library version the Python producer uses):
 *   gcc -O2 -o rdkafka_perf rdkafka_perf.c -l:<bundled .so> -Wl,-rpath,<its dir>
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long acked = 0, failed = 0;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk; (void)opaque;
    if (m->err) {
        if (failed < 5) fprintf(stderr, "rdkafka_perf: delivery failed: %s\n", rd_kafka_err2str(m->err));
        failed++;
    } else {
        acked++;
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    char err[512];
    if (argc < 5) {
        fprintf(stderr, "usage: rdkafka_perf BOOTSTRAP TOPIC RECORDS VALUE_BYTES [-X key=value ...]\n");
        return 2;
    }
    long records = atol(argv[3]);
    size_t size = (size_t)atol(argv[4]);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "queue.buffering.max.messages", "1000000", err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "rdkafka_perf: %s\n", err);
        return 2;
    }
    for (int i = 5; i < argc; i++) {
        if (strcmp(argv[i], "-X") != 0 || i + 1 >= argc) { fprintf(stderr, "rdkafka_perf: bad argument %s\n", argv[i]); return 2; }
        char *kv = argv[++i], *eq = strchr(kv, '=');
        if (!eq) { fprintf(stderr, "rdkafka_perf: -X expects key=value\n"); return 2; }
        *eq = 0;
        if (rd_kafka_conf_set(conf, kv, eq + 1, err, sizeof err) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "rdkafka_perf: %s\n", err);
            return 2;
        }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) { fprintf(stderr, "rdkafka_perf: %s\n", err); return 1; }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[2], NULL);
    const struct rd_kafka_metadata *md;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "rdkafka_perf: no metadata for %s\n", argv[2]);
        return 1;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    /* the value pattern of client_compat perf */
    char *pool = malloc(size + 4096);
    for (size_t i = 0; i < size + 4096; i++) pool[i] = 'a' + (char)((i * 7919 + i / 13) % 26);
    double start = now();
    for (long i = 0; i < records;) {
        size_t off = (size_t)(i * 61) % 4096;
        rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(argv[2]),
                                                  RD_KAFKA_V_VALUE(pool + off, size),
                                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                                  RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) { rd_kafka_poll(rk, 1); continue; }
        if (e) { fprintf(stderr, "rdkafka_perf: produce: %s\n", rd_kafka_err2str(e)); return 1; }
        i++;
        if (i % 1000 == 0) rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 120000);
    double seconds = now() - start;
    long left = rd_kafka_outq_len(rk);
    printf("RESULT {\"records\": %ld, \"value_bytes\": %zu, \"seconds\": %.3f, \"records_per_s\": %.0f, "
           "\"mb_per_s\": %.2f, \"acked\": %ld, \"failed\": %ld, \"undelivered\": %ld, \"peak_rss_kib\": %ld, "
           "\"librdkafka\": \"%s\"}\n",
           records, size, seconds, records / seconds, records * (double)size / seconds / 1e6, acked,
           failed, left, peak_rss_kib(), rd_kafka_version_str());
    rd_kafka_destroy(rk);
    free(pool);
    return (failed || left || acked != records) ? 1 : 0;
}
