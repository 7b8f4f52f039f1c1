//! TLS certificates reloaded on a dynamic config change (Kafka's
//! `kafka-configs --alter --entity-type brokers --entity-name <id>` of
//! `listener.name.<l>.ssl.keystore.*`/`truststore.*`): checked when altered, then
//! applied to new connections by a metadata publisher. Apart from [`crate::tls`] because
//! it works on the whole broker configuration, which itself holds the TLS settings.

use std::sync::Arc;

use crate::config::BrokerConfig;
use crate::tls::{DYNAMIC_SSL_KEYS, ListenerTls, listener_tls};

/// `listener.name.<l>.<key>` with a key of [`DYNAMIC_SSL_KEYS`]: the listener (lower
/// case) and the key.
pub fn dynamic_ssl_key(key: &str) -> Option<(String, &str)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, name) = rest.split_once('.')?;
    DYNAMIC_SSL_KEYS
        .iter()
        .find(|k| **k == name)
        .map(|k| (listener.to_lowercase(), *k))
}

/// A TLS listener's overrides in a broker's dynamic configs, in the form
/// [`BrokerConfig::with_listener_values`] takes.
fn overrides_of(
    listener: &str,
    layer: Option<&std::collections::BTreeMap<String, String>>,
) -> Vec<(String, String)> {
    let lower = listener.to_lowercase();
    layer
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let (l, name) = dynamic_ssl_key(key)?;
            (l == lower).then(|| (format!("listener.name.{l}.{name}"), value.clone()))
        })
        .collect()
}

/// Checks a broker's dynamic configs as they would be after an alteration: every TLS
/// listener they touch must build (the files exist and read, the key matches its chain).
/// `Err` is the message for INVALID_CONFIG.
pub fn validate_dynamic(
    config: &BrokerConfig,
    layer: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    let settings = config.settings();
    for key in layer.keys() {
        let Some((listener, _)) = dynamic_ssl_key(key) else {
            continue;
        };
        let Some((name, tls)) = settings
            .listeners
            .tls
            .iter()
            .find(|(name, _)| name.to_lowercase() == listener)
        else {
            return Err(format!(
                "Invalid dynamic configuration {key}: listener {listener} is not an SSL or \
                 SASL_SSL listener of this broker"
            ));
        };
        let overlay = config.with_listener_values(overrides_of(name, Some(layer)));
        listener_tls(&overlay, name, tls.protocol).map_err(|error| {
            format!("Validation of dynamic config update of SSLFactory failed: {error}")
        })?;
    }
    Ok(())
}

/// Each TLS listener's settings in force, replaced when the node's dynamic broker configs
/// change a listener's `ssl.*` keys (a [`crate::image::MetadataPublisher`]): connections
/// accepted after the change handshake with the new certificates; open ones keep theirs.
pub struct TlsListeners {
    config: BrokerConfig,
    listeners: std::collections::BTreeMap<String, TlsListener>,
}

struct TlsListener {
    current: tokio::sync::watch::Sender<Arc<ListenerTls>>,
    /// The dynamic overrides the current settings were built with.
    applied: std::sync::Mutex<Vec<(String, String)>>,
}

impl TlsListeners {
    pub fn new(config: &BrokerConfig) -> TlsListeners {
        TlsListeners {
            config: config.clone(),
            listeners: config
                .settings()
                .listeners
                .tls
                .iter()
                .map(|(name, tls)| {
                    (
                        name.clone(),
                        TlsListener {
                            current: tokio::sync::watch::Sender::new(tls.clone()),
                            applied: Default::default(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// The settings of `listener` as they change; `None` for a listener without TLS.
    pub fn subscribe(
        &self,
        listener: &str,
    ) -> Option<tokio::sync::watch::Receiver<Arc<ListenerTls>>> {
        self.listeners.get(listener).map(|l| l.current.subscribe())
    }

    /// Rebuilds the listeners whose overrides in `layer` (the node's dynamic broker
    /// configs) changed.
    pub fn apply(&self, layer: Option<&std::collections::BTreeMap<String, String>>) {
        for (name, listener) in &self.listeners {
            let overrides = overrides_of(name, layer);
            let mut applied = listener.applied.lock().unwrap_or_else(|p| p.into_inner());
            if *applied == overrides {
                continue;
            }
            let protocol = listener.current.borrow().protocol;
            let overlay = self.config.with_listener_values(overrides.clone());
            match listener_tls(&overlay, name, protocol) {
                Ok(Some(tls)) => {
                    tracing::info!(listener = %name, "TLS settings reloaded after a dynamic config change");
                    listener.current.send_replace(Arc::new(tls));
                }
                Ok(None) => {}
                // Checked when altered; a file changed or removed since keeps the old.
                Err(error) => {
                    tracing::warn!(listener = %name, %error, "TLS settings not reloaded; keeping the previous ones");
                }
            }
            *applied = overrides;
        }
    }
}

impl crate::image::MetadataPublisher for TlsListeners {
    fn publish(&self, image: &Arc<sluice_metadata::MetadataImage>) {
        self.apply(image.configs(
            sluice_metadata::BROKER_RESOURCE,
            &self.config.node_id().to_string(),
        ));
    }
}
