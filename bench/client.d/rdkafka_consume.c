/* librdkafka consumer load generator for bench/client (C, no Python in the loop).
 *
 *   rdkafka_consume BOOTSTRAP TOPIC PARTITIONS RECORDS [-X key=value ...]
 *
 * Assigns partitions 0..PARTITIONS-1 of TOPIC at RD_KAFKA_OFFSET_BEGINNING with
 * rd_kafka_assign (no subscribe, so no group join; librdkafka's high-level consumer needs
 * a group.id to exist, so a placeholder is set and nothing is committed:
 * enable.auto.commit=false, enable.auto.offset.store=false), then rd_kafka_consumer_poll
 * in a loop until RECORDS records arrived. One metadata request for TOPIC comes first
 * (without it librdkafka knows no leader at assign and retries its ListOffsets only after
 * a 500 ms timer); the clock runs from the assign to the last record, as in client_compat
 * consume-perf (startup_s: the time to the first record).
 * Prints one line `RESULT {json}` (records, value bytes, seconds, records/s, MB/s = 10^6
 * bytes of values per second, peak RSS) and exits 1 unless exactly RECORDS arrived.
 *
 * Built by bench/client like rdkafka_perf.c, against the librdkafka confluent-kafka bundles.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static int set(rd_kafka_conf_t *conf, const char *k, const char *v) {
    char err[512];
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "rdkafka_consume: %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    char err[512];
    if (argc < 5) {
        fprintf(stderr, "usage: rdkafka_consume BOOTSTRAP TOPIC PARTITIONS RECORDS [-X key=value ...]\n");
        return 2;
    }
    int partitions = atoi(argv[3]);
    long records = atol(argv[4]);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (set(conf, "bootstrap.servers", argv[1]) || set(conf, "group.id", "bench-client-unused") ||
        set(conf, "enable.auto.commit", "false") || set(conf, "enable.auto.offset.store", "false"))
        return 2;
    for (int i = 5; i < argc; i++) {
        if (strcmp(argv[i], "-X") != 0 || i + 1 >= argc) { fprintf(stderr, "rdkafka_consume: bad argument %s\n", argv[i]); return 2; }
        char *kv = argv[++i], *eq = strchr(kv, '=');
        if (!eq) { fprintf(stderr, "rdkafka_consume: -X expects key=value\n"); return 2; }
        *eq = 0;
        if (set(conf, kv, eq + 1)) return 2;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) { fprintf(stderr, "rdkafka_consume: %s\n", err); return 1; }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[2], NULL);
    const struct rd_kafka_metadata *md;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "rdkafka_consume: no metadata for %s\n", argv[2]);
        return 1;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; p++)
        rd_kafka_topic_partition_list_add(list, argv[2], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    double begun = now();
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) { fprintf(stderr, "rdkafka_consume: assign: %s\n", rd_kafka_err2str(e)); return 1; }
    long count = 0, errors = 0;
    unsigned long long bytes = 0;
    double started = 0, last = now();
    while (count < records) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
        if (!m) {
            if (now() - last > 30) { fprintf(stderr, "rdkafka_consume: no record for 30 s after %ld of %ld\n", count, records); break; }
            continue;
        }
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (errors++ < 5) fprintf(stderr, "rdkafka_consume: %s\n", rd_kafka_message_errstr(m));
            }
        } else {
            if (!count) started = now();
            count++;
            bytes += m->len;
            last = now();
        }
        rd_kafka_message_destroy(m);
    }
    double ended = now();
    if (!count) started = ended;
    double seconds = ended - begun;
    printf("RESULT {\"records\": %ld, \"value_bytes_total\": %llu, \"seconds\": %.3f, \"startup_s\": %.3f, "
           "\"records_per_s\": %.0f, \"mb_per_s\": %.2f, \"errors\": %ld, \"peak_rss_kib\": %ld, "
           "\"librdkafka\": \"%s\"}\n",
           count, bytes, seconds, started - begun, count / seconds, bytes / seconds / 1e6, errors,
           peak_rss_kib(), rd_kafka_version_str());
    fflush(stdout);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return count == records ? 0 : 1;
}
