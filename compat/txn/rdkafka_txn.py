#!/usr/bin/env python3
"""librdkafka (confluent-kafka) transactions: the guide's orders / inventory / notifications
example.

    python3 compat/txn/rdkafka_txn.py BOOTSTRAP [SUITE]

Setup: an input topic `requests` (1 partition) with 6 records req-0..req-5; a consumer of
group G (read_committed, enable.auto.commit=false) reads them. For request i a
transactional producer begins a transaction, writes order-created-i and order-paid-i to
`orders` (3 partitions, partition i%3), stock-reserved-i to `inventory` and email-queued-i
to `notifications` (1 partition each), calls send_offsets_to_transaction(offset i+1,
consumer_group_metadata()), and commits it, except requests 2 and 5, whose transactions
are aborted (after a flush: abort_transaction() would purge unsent records).
Checks (suite "rdkafka-txn"):
  loop        the six transactions run; after each, G's committed offset (OffsetFetch with
              require_stable) is that of the last committed transaction: 1,2,2,4,5,5
  committed   read_committed consumers of the three topics see exactly the committed
              transactions' records (values per partition, in order)
  uncommitted read_uncommitted consumers see all six transactions' records, in order, and
              no control records: each record's offset is followed by one marker offset
              (inventory: offsets 0,2,4,6,8,10)
  fenced      two producers with one transactional.id: the second's init_transactions
              fences the first, whose commit_transaction fails with a fatal error
              (_FENCED / PRODUCER_FENCED / INVALID_PRODUCER_EPOCH); read_committed sees
              only the second's records
"""

import sys
import time

from txncommon import (T, KafkaError, Consumer, TopicPartition, committed, create_topic, kafka_error, name,
                       plain_produce, read, read_topics, txn_producer, values_by_partition)
from checklib import Checks, CheckFailed, expect, main_guard

BOOTSTRAP = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
checks = Checks(sys.argv[2] if len(sys.argv) > 2 else "rdkafka-txn")
REQ, ORDERS, INV, NOTE = name("requests"), name("orders"), name("inventory"), name("notifications")
GROUP = name("order-processor")
N = 6
ABORTED = {2, 5}


def txn_records(i):
    """[(topic, partition, value)] of transaction i."""
    return [(ORDERS, i % 3, "order-created-%d" % i), (ORDERS, i % 3, "order-paid-%d" % i),
            (INV, 0, "stock-reserved-%d" % i), (NOTE, 0, "email-queued-%d" % i)]


def expected(txns):
    """{topic: {partition: [values]}} of the transactions txns, in order."""
    out = {ORDERS: {}, INV: {}, NOTE: {}}
    for i in txns:
        for t, p, v in txn_records(i):
            out[t].setdefault(p, []).append(v)
    return out


def loop():
    for t, parts in ((REQ, 1), (ORDERS, 3), (INV, 1), (NOTE, 1)):
        create_topic(BOOTSTRAP, t, parts)
    plain_produce(BOOTSTRAP, REQ, ["req-%d" % i for i in range(N)])
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP,
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                  "fetch.wait.max.ms": 100, "log_level": 3})
    p = txn_producer(BOOTSTRAP, name("order-txn"))
    try:
        c.subscribe([REQ])
        p.init_transactions(T)
        got, last_committed, seen = 0, None, []
        deadline = time.monotonic() + 30
        while got < N:
            if time.monotonic() > deadline:
                raise CheckFailed("consumed %d of %d requests in 30s" % (got, N))
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                raise CheckFailed("consumer: %s" % m.error())
            i = got
            expect(m.value().decode(), "req-%d" % i, "request %d" % i)
            p.begin_transaction()
            for t, part, v in txn_records(i):
                p.produce(t, key=("key%d" % i).encode(), value=v.encode(), partition=part)
            p.send_offsets_to_transaction([TopicPartition(REQ, 0, m.offset() + 1)],
                                          c.consumer_group_metadata(), T)
            if i in ABORTED:
                # abort_transaction() purges what librdkafka has not sent yet: flush first,
                # so that the aborted records are in the log (read_uncommitted sees them)
                if p.flush(T):
                    raise CheckFailed("transaction %d: records not delivered" % i)
                p.abort_transaction(T)
            else:
                p.commit_transaction(T)
                last_committed = m.offset() + 1
            off = committed(BOOTSTRAP, GROUP, REQ)[0]
            seen.append(off)
            if off != last_committed:
                raise CheckFailed("after transaction %d (%s): committed offset %r, expected %r "
                                  "(so far %r)" % (i, "aborted" if i in ABORTED else "committed",
                                                   off, last_committed, seen))
            got += 1
        expect(seen, [1, 2, 2, 4, 5, 5], "committed offsets after each transaction")
    finally:
        c.close()


TOPICS = {ORDERS: 3, INV: 1, NOTE: 1}


def read_all(isolation, want):
    """{topic: [(partition, offset, value)]} of the three topics."""
    n = sum(len(v) for t in want.values() for v in t.values())
    recs = read_topics(BOOTSTRAP, TOPICS, isolation, n)
    return {t: [(p, o, v) for tt, p, o, v in recs if tt == t] for t in TOPICS}


def check_committed():
    want = expected([i for i in range(N) if i not in ABORTED])
    got = read_all("read_committed", want)
    for t in TOPICS:
        expect(values_by_partition(got[t]), want[t], "read_committed %s values per partition" % t)


def check_uncommitted():
    want = expected(range(N))
    got = read_all("read_uncommitted", want)
    for t, parts in TOPICS.items():
        recs = got[t]
        expect(values_by_partition(recs), want[t], "read_uncommitted %s values per partition" % t)
        # every transaction ends with one control record (a marker) per partition: the
        # offsets the consumer sees step over exactly those
        for part in range(parts):
            offs = [o for p, o, _ in recs if p == part]
            per_txn = 2 if t == ORDERS else 1
            want_offs = [k * (per_txn + 1) + j for k in range(len(offs) // per_txn)
                         for j in range(per_txn)]
            expect(offs, want_offs, "read_uncommitted %s/%d offsets (markers skipped)" % (t, part))


FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def fenced():
    topic, tid = name("rd-zombie"), name("rd-zombie")
    create_topic(BOOTSTRAP, topic)
    p1 = txn_producer(BOOTSTRAP, tid)
    p2 = txn_producer(BOOTSTRAP, tid)
    p1.init_transactions(T)
    p1.begin_transaction()
    p1.produce(topic, value=b"first-1", partition=0)
    if p1.flush(T):
        raise CheckFailed("first-1 not delivered")
    p2.init_transactions(T)
    try:
        p1.produce(topic, value=b"first-2", partition=0)
        p1.commit_transaction(T)
        raise CheckFailed("the fenced producer's commit_transaction succeeded")
    except CheckFailed:
        raise
    except Exception as e:  # noqa: BLE001
        err = kafka_error(e)
        if err is None or err.code() not in FENCED_CODES or not err.fatal():
            raise CheckFailed("commit_transaction of the fenced producer: expected a fatal "
                              "_FENCED error, got %s: %s (fatal=%s)" % (
                                  type(e).__name__, e, err.fatal() if err else None))
    p2.begin_transaction()
    p2.produce(topic, value=b"second-1", partition=0)
    p2.commit_transaction(T)
    got = [v for _, _, v in read(BOOTSTRAP, topic, "read_committed", 1)]
    expect(got, ["second-1"], "read_committed values")


def main():
    checks.run("6 transactions over orders/inventory/notifications (2 aborted) with "
               "send_offsets_to_transaction; committed offset after each = last committed", loop)
    checks.run("read_committed consumers see exactly the committed transactions' records",
               check_committed, deps=[list(checks.status)[0]])
    checks.run("read_uncommitted consumers see committed and aborted records, no control "
               "records (offsets step over the markers)", check_uncommitted,
               deps=[list(checks.status)[0]])
    checks.run("fenced: a 2nd producer's init_transactions fences the 1st; its commit fails "
               "fatally (_FENCED); only the 2nd's records visible", fenced)


if __name__ == "__main__":
    sys.exit(main_guard(checks, main))
