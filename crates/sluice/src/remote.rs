//! What the CLI's cluster commands share: a runtime and an admin connection to the
//! cluster at `--bootstrap-server`.

use anyhow::Context;
use sluice_client::{Admin, ClientConfig};

/// Runs `command` with an admin client connected to `bootstrap_servers`, on a
/// single-threaded runtime (a CLI command is one conversation with the cluster).
pub fn with_admin<T>(
    bootstrap_servers: &[String],
    client_id: &str,
    command: impl AsyncFnOnce(&Admin) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let config = ClientConfig {
            client_id: client_id.to_string(),
            ..ClientConfig::new(bootstrap_servers.iter().cloned())
        };
        let admin = Admin::connect(config).await.with_context(|| {
            format!(
                "cannot reach the cluster at {}",
                bootstrap_servers.join(",")
            )
        })?;
        command(&admin).await
    })
}
