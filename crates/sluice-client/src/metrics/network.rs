//! The network metrics of a client's connections (the Java client's `Selector` metrics
//! in `<client>-metrics`): bytes and requests sent, bytes and responses received.
//! Recorded once per request or response frame by the connection's writer and reader
//! tasks.

use std::sync::Arc;

use super::{Metrics, Sensor};

pub(crate) struct NetworkSensors {
    bytes_sent: Arc<Sensor>,
    bytes_received: Arc<Sensor>,
}

impl NetworkSensors {
    /// The sensors in `group` (`producer-metrics`, `consumer-metrics`).
    pub(crate) fn new(metrics: &Metrics, group: &str) -> NetworkSensors {
        let bytes_sent = metrics
            .sensor("bytes-sent", group, &[])
            .meter(
                (
                    "outgoing-byte-rate",
                    "The number of outgoing bytes sent to all servers per second",
                ),
                (
                    "outgoing-byte-total",
                    "The total number of outgoing bytes sent to all servers",
                ),
            )
            .count_meter(
                ("request-rate", "The number of requests sent per second"),
                ("request-total", "The total number of requests sent"),
            )
            .avg("request-size-avg", "The average size of requests sent.")
            .max("request-size-max", "The maximum size of any request sent.")
            .build();
        let bytes_received = metrics
            .sensor("bytes-received", group, &[])
            .meter(
                (
                    "incoming-byte-rate",
                    "The number of bytes read off all sockets per second",
                ),
                (
                    "incoming-byte-total",
                    "The total number of bytes read off all sockets",
                ),
            )
            .count_meter(
                (
                    "response-rate",
                    "The number of responses received per second",
                ),
                ("response-total", "The total number of responses received"),
            )
            .build();
        NetworkSensors {
            bytes_sent,
            bytes_received,
        }
    }

    /// A request frame of `bytes` (size prefix included) was written.
    pub(crate) fn request_sent(&self, bytes: usize) {
        self.bytes_sent.record(bytes as f64);
    }

    /// A response frame of `bytes` (size prefix included) was read.
    pub(crate) fn response_received(&self, bytes: usize) {
        self.bytes_received.record(bytes as f64);
    }
}
