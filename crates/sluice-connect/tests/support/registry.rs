//! Sluice's schema registry on a real in-process broker, for converter tests. A test file
//! includes it beside the broker's test harness:
//!
//! ```ignore
//! #[path = "../../sluice-broker/tests/common/mod.rs"]
//! mod common;
//! #[path = "support/registry.rs"]
//! mod registry;
//! ```

use sluice_registry::server::{RegistryConfig, start};

use crate::common::TestNode;

/// A broker and the registry over it, on a runtime thread of their own (the converter
/// is synchronous and may be called from any runtime, or none); answers the URL.
pub fn registry() -> String {
    let (sender, url) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
            let mut config = RegistryConfig::new(
                vec![node.address.to_string()],
                "127.0.0.1:0".parse().unwrap(),
            );
            config.store.replication_factor = 1;
            let registry = start(config).await.expect("the registry starts");
            sender.send(registry.url()).unwrap();
            // Serve until the test process ends.
            std::future::pending::<()>().await;
            drop((registry, node));
        });
    });
    url.recv().unwrap()
}

/// The registry's answer to `GET /subjects/{subject}/versions`, as text.
pub fn versions(url: &str, subject: &str) -> String {
    let url = format!("{url}/subjects/{subject}/versions");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move { reqwest::get(url).await.unwrap().text().await.unwrap() })
    })
    .join()
    .unwrap()
}
