//! The client's configuration: Kafka's client keys and defaults (the Java client's
//! `AdminClientConfig`), so settings carry over from Kafka tools.

use std::time::Duration;

/// Settings shared by every connection a [`Client`](crate::Client) opens.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `bootstrap.servers`: `host:port` addresses tried in order to find the cluster.
    pub bootstrap_servers: Vec<String>,
    /// `client.id`: sent in every request header, for the broker's logs and quotas.
    pub client_id: String,
    /// `request.timeout.ms`: how long to wait for the response to one request before
    /// failing it and closing its connection.
    pub request_timeout_ms: u64,
    /// `socket.connection.setup.timeout.ms`: how long a TCP connect may take.
    pub socket_connection_setup_timeout_ms: u64,
    /// `max.in.flight.requests.per.connection`: requests sent on one connection and not
    /// yet answered; more wait for a slot.
    pub max_in_flight_requests_per_connection: usize,
    /// The largest response frame accepted (Sluice's bound; Kafka's clients have none
    /// for admin responses). A larger size prefix closes the connection.
    pub response_max_bytes: usize,
}

impl ClientConfig {
    /// Kafka's defaults with the given `bootstrap.servers`.
    pub fn new(bootstrap_servers: impl IntoIterator<Item = impl Into<String>>) -> ClientConfig {
        ClientConfig {
            bootstrap_servers: bootstrap_servers.into_iter().map(Into::into).collect(),
            ..ClientConfig::default()
        }
    }

    pub(crate) fn connection_setup_timeout(&self) -> Duration {
        Duration::from_millis(self.socket_connection_setup_timeout_ms)
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            bootstrap_servers: Vec::new(),
            client_id: "sluice-client".to_string(),
            request_timeout_ms: 30_000,
            socket_connection_setup_timeout_ms: 10_000,
            max_in_flight_requests_per_connection: 5,
            response_max_bytes: 100 * 1024 * 1024,
        }
    }
}
