//! Sluice's schema registry on a real in-process broker, for converter tests. A test file
//! includes it beside the broker's test harness:
//!
//! ```ignore
//! #[path = "../../sluice-broker/tests/common/mod.rs"]
//! mod common;
//! #[path = "support/registry.rs"]
//! mod registry;
//! ```
#![allow(dead_code)] // each test file uses its own part

use std::future::Future;
use std::sync::Arc;

use sluice_connect::Props;
use sluice_connect::converters::{Converter, converter};
use sluice_connect::data::{Schema, SchemaRef, Struct, Type, Value};
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

/// Runs a future to its end on a runtime of its own, from any thread (a test's runtime
/// or none).
pub fn on_runtime<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    })
    .join()
    .unwrap()
}

/// The registry's answer to `GET {path}`, as text.
pub fn get(url: &str, path: &str) -> String {
    let url = format!("{url}{path}");
    on_runtime(async move { reqwest::get(url).await.unwrap().text().await.unwrap() })
}

/// The registry's answer to `GET /subjects/{subject}/versions`, as text.
pub fn versions(url: &str, subject: &str) -> String {
    get(url, &format!("/subjects/{subject}/versions"))
}

/// The converter `class` for the key or the value, against the registry at `url`, with
/// `extra` settings (unprefixed, as `value.converter.` strips them).
pub fn registry_converter(
    class: &str,
    url: &str,
    extra: &[(&str, &str)],
    is_key: bool,
) -> Box<dyn Converter> {
    let mut props: Props = [("schema.registry.url".to_string(), url.to_string())].into();
    for (k, v) in extra {
        props.insert(k.to_string(), v.to_string());
    }
    let config_key = if is_key {
        "key.converter"
    } else {
        "value.converter"
    };
    converter(class, &props, is_key, config_key).unwrap()
}

/// The Connect schema the converter tests write: a struct with an optional field and a
/// decimal.
pub fn order() -> SchemaRef {
    Arc::new(
        Schema::new(Type::Struct)
            .named("shop.Order")
            .field("id", Schema::new(Type::Int64))
            .field("note", Schema::new(Type::String).optional())
            .field("price", Schema::decimal(2)),
    )
}

/// An order of [`order`], `note` null when none.
pub fn an_order(note: Option<&str>) -> Value {
    let mut value = Struct::new(order());
    value.put("id", Value::Int64(7)).unwrap();
    value
        .put(
            "note",
            note.map_or(Value::Null, |n| Value::String(n.into())),
        )
        .unwrap();
    value.put("price", Value::Bytes(vec![0x04, 0xd2])).unwrap();
    Value::Struct(value)
}
