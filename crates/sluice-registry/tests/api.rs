//! The registry's REST API against a real in-process broker: registration, lookups, reads
//! by id, deletes, compatibility, config and mode, Confluent's error codes, and the state
//! rebuilt from `_schemas` by a new instance.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use common::TestNode;
use serde_json::{Value, json};
use sluice_registry::server::{RegistryConfig, RunningRegistry, start};

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

const ORDER_V1: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;
/// v1 plus two fields with defaults (one a nullable union): BACKWARD compatible.
const ORDER_V2: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"currency","type":"string","default":"USD"},{"name":"note","type":["null","string"],"default":null}]}"#;
/// v1 plus a field without a default: not BACKWARD compatible.
const ORDER_NO_DEFAULT: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"customer","type":"string"}]}"#;

/// v1 without `amount`: an old reader of `amount` (no default) cannot read it (FORWARD).
const ORDER_ID_ONLY: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#;

struct Harness {
    node: TestNode,
    registry: RunningRegistry,
    http: reqwest::Client,
}

impl Harness {
    async fn start() -> Harness {
        let node = TestNode::start(&[("group.initial.rebalance.delay.ms", "0")]).await;
        let registry = start_registry(&node).await;
        Harness {
            node,
            registry,
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        call(&self.http, &self.registry.url(), method, path, body).await
    }

    async fn register(&self, subject: &str, schema: &str) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(json!({ "schema": schema })),
        )
        .await
    }
}

async fn start_registry(node: &TestNode) -> RunningRegistry {
    let mut config = RegistryConfig::new(
        vec![node.address.to_string()],
        "127.0.0.1:0".parse().unwrap(),
    );
    config.store.replication_factor = 1;
    start(config).await.expect("the registry starts")
}

async fn call(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http.request(method.parse().unwrap(), format!("{base}{path}"));
    if let Some(body) = body {
        request = request
            .header("content-type", CONTENT_TYPE)
            .body(body.to_string());
    }
    let response = request.send().await.expect("the registry answers");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    assert_eq!(
        content_type.as_deref(),
        Some(CONTENT_TYPE),
        "{path}: {text}"
    );
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

fn error_code(body: &Value) -> i64 {
    body["error_code"].as_i64().unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_look_up_and_read_back() {
    let h = Harness::start().await;
    assert_eq!(
        h.register("orders-value", ORDER_V1).await,
        (200, json!({"id": 1}))
    );
    // The same schema with other whitespace is the same schema: no new version.
    let spaced =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(ORDER_V1).unwrap()).unwrap();
    assert_eq!(
        h.register("orders-value", &spaced).await,
        (200, json!({"id": 1}))
    );
    // The same schema under another subject reuses its id.
    assert_eq!(
        h.register("archive-value", ORDER_V1).await,
        (200, json!({"id": 1}))
    );
    assert_eq!(
        h.register("orders-value", ORDER_V2).await,
        (200, json!({"id": 2}))
    );

    let cases: &[(&str, Value)] = &[
        ("/subjects", json!(["archive-value", "orders-value"])),
        ("/subjects?subjectPrefix=ord", json!(["orders-value"])),
        ("/subjects/orders-value/versions", json!([1, 2])),
        (
            "/subjects/orders-value/versions/1",
            json!({"subject": "orders-value", "version": 1, "id": 1, "schema": ORDER_V1}),
        ),
        (
            "/subjects/orders-value/versions/latest",
            json!({"subject": "orders-value", "version": 2, "id": 2, "schema": ORDER_V2}),
        ),
        ("/schemas/ids/1", json!({ "schema": ORDER_V1 })),
        (
            "/schemas/ids/1/subjects",
            json!(["archive-value", "orders-value"]),
        ),
        (
            "/schemas/ids/1/versions",
            json!([{"subject": "archive-value", "version": 1}, {"subject": "orders-value", "version": 1}]),
        ),
        ("/schemas/types", json!(["JSON", "PROTOBUF", "AVRO"])),
        ("/config", json!({"compatibilityLevel": "BACKWARD"})),
        ("/mode", json!({"mode": "READWRITE"})),
        ("/contexts", json!(["."])),
    ];
    for (path, want) in cases {
        assert_eq!(
            h.call("GET", path, None).await,
            (200, want.clone()),
            "GET {path}"
        );
    }
    // The raw schema routes answer the schema itself.
    let (status, raw) = h
        .call("GET", "/subjects/orders-value/versions/2/schema", None)
        .await;
    assert_eq!(
        (status, raw),
        (200, serde_json::from_str::<Value>(ORDER_V2).unwrap())
    );

    let (status, found) = h
        .call(
            "POST",
            "/subjects/orders-value",
            Some(json!({ "schema": spaced })),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        (found["id"].clone(), found["version"].clone()),
        (json!(1), json!(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compatibility_levels_decide_registration() {
    let h = Harness::start().await;
    h.register("orders-value", ORDER_V1).await;

    // BACKWARD (the default): a new field needs a default.
    let (status, body) = h.register("orders-value", ORDER_NO_DEFAULT).await;
    assert_eq!((status, error_code(&body)), (409, 409), "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("customer"),
        "{body}"
    );
    let (status, body) = h
        .call(
            "POST",
            "/compatibility/subjects/orders-value/versions/latest?verbose=true",
            Some(json!({ "schema": ORDER_NO_DEFAULT })),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["is_compatible"], json!(false));
    assert!(!body["messages"].as_array().unwrap().is_empty(), "{body}");
    let (_, body) = h
        .call(
            "POST",
            "/compatibility/subjects/orders-value/versions/latest",
            Some(json!({ "schema": ORDER_V2 })),
        )
        .await;
    assert_eq!(body, json!({"is_compatible": true}));

    // NONE for this subject lets it through; FORWARD then refuses removing a field
    // without a default.
    assert_eq!(
        h.call(
            "PUT",
            "/config/orders-value",
            Some(json!({"compatibility": "NONE"}))
        )
        .await,
        (200, json!({"compatibility": "NONE"}))
    );
    assert_eq!(
        h.register("orders-value", ORDER_NO_DEFAULT).await,
        (200, json!({"id": 2}))
    );
    assert_eq!(
        h.call(
            "PUT",
            "/config/orders-value",
            Some(json!({"compatibility": "FORWARD"}))
        )
        .await
        .0,
        200
    );
    // (A schema the subject already holds is answered with its id, unchecked, as in
    // Confluent: v1 here would pass. A new one that drops fields the latest version reads
    // without defaults does not.)
    assert_eq!(
        h.register("orders-value", ORDER_V1).await,
        (200, json!({"id": 1}))
    );
    let (status, body) = h.register("orders-value", ORDER_ID_ONLY).await;
    assert_eq!((status, error_code(&body)), (409, 409), "{body}");

    assert_eq!(
        h.call("GET", "/config/orders-value", None).await,
        (200, json!({"compatibilityLevel": "FORWARD"}))
    );
    assert_eq!(
        h.call("GET", "/config/other?defaultToGlobal=true", None)
            .await,
        (200, json!({"compatibilityLevel": "BACKWARD"}))
    );
    assert_eq!(
        error_code(&h.call("GET", "/config/other", None).await.1),
        40408
    );
    assert_eq!(
        h.call("DELETE", "/config/orders-value", None).await,
        (200, json!({"compatibilityLevel": "FORWARD"}))
    );
    assert_eq!(
        h.call(
            "PUT",
            "/config",
            Some(json!({"compatibility": "full_transitive"}))
        )
        .await,
        (200, json!({"compatibility": "FULL_TRANSITIVE"}))
    );
    assert_eq!(
        h.call("GET", "/config", None).await,
        (200, json!({"compatibilityLevel": "FULL_TRANSITIVE"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_and_permanent_deletes() {
    let h = Harness::start().await;
    h.register("s", ORDER_V1).await;
    h.register("s", ORDER_V2).await;

    // Permanent needs a soft delete first; a soft delete twice is an error.
    assert_eq!(
        error_code(
            &h.call("DELETE", "/subjects/s/versions/1?permanent=true", None)
                .await
                .1
        ),
        40407
    );
    assert_eq!(
        h.call("DELETE", "/subjects/s/versions/1", None).await,
        (200, json!(1))
    );
    assert_eq!(
        error_code(&h.call("DELETE", "/subjects/s/versions/1", None).await.1),
        40406
    );
    assert_eq!(
        h.call("GET", "/subjects/s/versions", None).await,
        (200, json!([2]))
    );
    assert_eq!(
        h.call("GET", "/subjects/s/versions?deleted=true", None)
            .await,
        (200, json!([1, 2]))
    );
    assert_eq!(
        h.call("GET", "/subjects/s/versions/1?deleted=true", None)
            .await
            .0,
        200
    );
    assert_eq!(
        h.call("DELETE", "/subjects/s/versions/1?permanent=true", None)
            .await,
        (200, json!(1))
    );
    assert_eq!(
        h.call("GET", "/subjects/s/versions?deleted=true", None)
            .await,
        (200, json!([2]))
    );
    // Id 1 had no other user: gone. Id 2 stays until its version goes.
    assert_eq!(
        error_code(&h.call("GET", "/schemas/ids/1", None).await.1),
        40403
    );

    // The subject: soft, then soft again (40404), permanent.
    assert_eq!(
        error_code(&h.call("DELETE", "/subjects/s?permanent=true", None).await.1),
        40405
    );
    assert_eq!(
        h.call("DELETE", "/subjects/s", None).await,
        (200, json!([2]))
    );
    assert_eq!(
        error_code(&h.call("DELETE", "/subjects/s", None).await.1),
        40404
    );
    assert_eq!(h.call("GET", "/subjects", None).await, (200, json!([])));
    assert_eq!(
        h.call("GET", "/subjects?deleted=true", None).await,
        (200, json!(["s"]))
    );
    assert_eq!(
        h.call("GET", "/subjects?deletedOnly=true", None).await,
        (200, json!(["s"]))
    );
    assert_eq!(
        h.call("DELETE", "/subjects/s?permanent=true", None).await,
        (200, json!([2]))
    );
    assert_eq!(
        h.call("GET", "/subjects?deleted=true", None).await,
        (200, json!([]))
    );
    assert_eq!(
        error_code(&h.call("GET", "/subjects/s/versions", None).await.1),
        40401
    );

    // A new registration after deletes takes a new id (ids are never reused).
    assert_eq!(h.register("s", ORDER_V1).await, (200, json!({"id": 3})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_confluent_codes() {
    let h = Harness::start().await;
    h.register("s", ORDER_V1).await;
    let cases: &[(&str, &str, Option<Value>, u16, i64)] = &[
        ("GET", "/subjects/nope/versions", None, 404, 40401),
        ("GET", "/subjects/s/versions/9", None, 404, 40402),
        ("GET", "/schemas/ids/999", None, 404, 40403),
        (
            "POST",
            "/subjects/s",
            Some(json!({"schema": r#""int""#})),
            404,
            40403,
        ),
        (
            "POST",
            "/subjects/nope",
            Some(json!({"schema": ORDER_V1})),
            404,
            40401,
        ),
        ("GET", "/subjects/s/versions/0", None, 422, 42202),
        ("GET", "/subjects/s/versions/abc", None, 422, 42202),
        (
            "POST",
            "/subjects/s/versions",
            Some(json!({"schema": "{not json"})),
            422,
            42201,
        ),
        (
            "POST",
            "/subjects/s/versions",
            Some(json!({"schema": r#"{"type":"nosuchtype"}"#})),
            422,
            42201,
        ),
        (
            "POST",
            "/subjects/s/versions",
            Some(json!({"schema": ORDER_V1, "schemaType": "XML"})),
            422,
            42201,
        ),
        (
            "POST",
            "/subjects/t/versions",
            Some(
                json!({"schema": ORDER_V1, "references": [{"name": "x", "subject": "missing", "version": 1}]}),
            ),
            422,
            42201,
        ),
        (
            "PUT",
            "/config",
            Some(json!({"compatibility": "SIDEWAYS"})),
            422,
            42203,
        ),
        (
            "PUT",
            "/mode",
            Some(json!({"mode": "WRITEONLY"})),
            422,
            42204,
        ),
        ("PUT", "/mode", Some(json!({"mode": "IMPORT"})), 422, 42205),
        ("GET", "/mode/s", None, 404, 40409),
        ("GET", "/no/such/route", None, 404, 404),
    ];
    for (method, path, body, status, code) in cases {
        let (got_status, got) = h.call(method, path, body.clone()).await;
        assert_eq!(
            (got_status, error_code(&got)),
            (*status, *code),
            "{method} {path}: {got}"
        );
        assert!(
            got["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{got}"
        );
    }

    // READONLY refuses writes with 42205 and still serves reads.
    assert_eq!(
        h.call("PUT", "/mode/s", Some(json!({"mode": "READONLY"})))
            .await,
        (200, json!({"mode": "READONLY"}))
    );
    let (status, body) = h.register("s", ORDER_V2).await;
    assert_eq!((status, error_code(&body)), (422, 42205), "{body}");
    assert_eq!(
        h.call("GET", "/subjects/s/versions", None).await,
        (200, json!([1]))
    );
    assert_eq!(
        h.call("DELETE", "/mode/s", None).await,
        (200, json!({"mode": "READONLY"}))
    );
    assert_eq!(h.register("s", ORDER_V2).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_instance_rebuilds_the_state_from_schemas() {
    let h = Harness::start().await;
    h.register("a", ORDER_V1).await;
    h.register("a", ORDER_V2).await;
    h.register("b", ORDER_V1).await;
    h.call("PUT", "/config/b", Some(json!({"compatibility": "NONE"})))
        .await;
    h.call("DELETE", "/subjects/a/versions/2", None).await;
    let Harness {
        node,
        registry,
        http,
    } = h;
    registry.shutdown().await;

    let second = start_registry(&node).await;
    let base = second.url();
    assert_eq!(
        call(&http, &base, "GET", "/subjects", None).await,
        (200, json!(["a", "b"]))
    );
    assert_eq!(
        call(&http, &base, "GET", "/subjects/a/versions", None).await,
        (200, json!([1]))
    );
    assert_eq!(
        call(&http, &base, "GET", "/config/b", None).await,
        (200, json!({"compatibilityLevel": "NONE"}))
    );
    // The next id continues after the highest one in the log.
    let (_, body) = call(
        &http,
        &base,
        "POST",
        "/subjects/c/versions",
        Some(json!({"schema": ORDER_NO_DEFAULT})),
    )
    .await;
    assert_eq!(body, json!({"id": 3}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_mode_keeps_given_ids_and_versions() {
    let h = Harness::start().await;
    assert_eq!(
        h.call("PUT", "/mode", Some(json!({"mode": "IMPORT"})))
            .await,
        (200, json!({"mode": "IMPORT"}))
    );
    let (status, body) = h
        .call(
            "POST",
            "/subjects/imported/versions",
            Some(json!({"schema": ORDER_V1, "id": 100, "version": 7})),
        )
        .await;
    assert_eq!((status, body), (200, json!({"id": 100})));
    // An id already holding another schema cannot be overwritten.
    let (status, body) = h
        .call(
            "POST",
            "/subjects/other/versions",
            Some(json!({"schema": ORDER_V2, "id": 100, "version": 1})),
        )
        .await;
    assert_eq!((status, error_code(&body)), (422, 42207), "{body}");
    h.call("PUT", "/mode", Some(json!({"mode": "READWRITE"})))
        .await;
    assert_eq!(
        h.call("GET", "/subjects/imported/versions", None).await,
        (200, json!([7]))
    );
    // Ids assigned after an import continue above the imported ones.
    assert_eq!(
        h.register("fresh", ORDER_NO_DEFAULT).await,
        (200, json!({"id": 101}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_resolve_and_protect_what_they_name() {
    let h = Harness::start().await;
    let address = r#"{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}"#;
    let customer = r#"{"type":"record","name":"Customer","namespace":"com.example","fields":[{"name":"name","type":"string"},{"name":"address","type":"com.example.Address"}]}"#;
    assert_eq!(
        h.register("address", address).await,
        (200, json!({"id": 1}))
    );
    let references = json!([{"name": "com.example.Address", "subject": "address", "version": 1}]);
    // Without the reference the type is unknown.
    assert_eq!(error_code(&h.register("customer", customer).await.1), 42201);
    let (status, body) = h
        .call(
            "POST",
            "/subjects/customer/versions",
            Some(json!({"schema": customer, "references": references})),
        )
        .await;
    assert_eq!((status, body), (200, json!({"id": 2})));
    // Stored as Avro's Java `Schema.toString()` writes it (Confluent's canonical string):
    // a name in the enclosing namespace is written relative to it.
    let stored = customer.replace("\"com.example.Address\"", "\"Address\"");
    assert_eq!(
        h.call("GET", "/subjects/customer/versions/1", None).await,
        (
            200,
            json!({"subject": "customer", "version": 1, "id": 2, "references": references, "schema": stored})
        )
    );
    assert_eq!(
        h.call("GET", "/schemas/ids/2", None).await,
        (200, json!({"references": references, "schema": stored}))
    );
    assert_eq!(
        h.call("GET", "/subjects/address/versions/1/referencedby", None)
            .await,
        (200, json!([2]))
    );
    // A referenced version cannot be deleted (42206), soft or permanent.
    let (status, body) = h.call("DELETE", "/subjects/address/versions/1", None).await;
    assert_eq!((status, error_code(&body)), (422, 42206), "{body}");
    assert_eq!(
        error_code(&h.call("DELETE", "/subjects/address", None).await.1),
        42206
    );
    // Once the referrer is gone, it can.
    h.call("DELETE", "/subjects/customer", None).await;
    assert_eq!(
        h.call("DELETE", "/subjects/address", None).await,
        (200, json!([1]))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalize_and_listing_schemas_and_readonly_override() {
    let h = Harness::start().await;
    // Normalization makes attribute order irrelevant for identity.
    let a = r#"{"type":"record","name":"N","fields":[{"name":"x","type":"int"}]}"#;
    let b = r#"{"fields":[{"type":"int","name":"x"}],"name":"N","type":"record"}"#;
    assert_eq!(
        h.call(
            "POST",
            "/subjects/n/versions?normalize=true",
            Some(json!({"schema": a}))
        )
        .await,
        (200, json!({"id": 1}))
    );
    assert_eq!(
        h.call(
            "POST",
            "/subjects/n/versions?normalize=true",
            Some(json!({"schema": b}))
        )
        .await,
        (200, json!({"id": 1}))
    );
    let (status, found) = h
        .call(
            "POST",
            "/subjects/n?normalize=true",
            Some(json!({"schema": b})),
        )
        .await;
    assert_eq!(
        (status, found["version"].clone()),
        (200, json!(1)),
        "{found}"
    );
    h.register("m", ORDER_V1).await;
    let (status, listed) = h.call("GET", "/schemas?subjectPrefix=m", None).await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["subject"], json!("m"));

    // A global READONLY_OVERRIDE wins over a subject's READWRITE.
    h.call("PUT", "/mode/m", Some(json!({"mode": "READWRITE"})))
        .await;
    assert_eq!(
        h.call("PUT", "/mode", Some(json!({"mode": "READONLY_OVERRIDE"})))
            .await,
        (200, json!({"mode": "READONLY_OVERRIDE"}))
    );
    assert_eq!(error_code(&h.register("m", ORDER_V2).await.1), 42205);
    assert_eq!(
        h.call("GET", "/mode/m", None).await,
        (200, json!({"mode": "READWRITE"}))
    );
    h.call("PUT", "/mode", Some(json!({"mode": "READWRITE"})))
        .await;
    assert_eq!(h.register("m", ORDER_V2).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_without_the_broker_is_a_store_error_and_reads_go_on() {
    let h = Harness::start().await;
    h.register("s", ORDER_V1).await;
    let Harness {
        node,
        registry,
        http,
    } = h;
    let _dir = node.stop().await;
    let base = registry.url();
    // The write cannot reach _schemas: a 5000x error (store error or timeout), not a hang.
    let started = std::time::Instant::now();
    let (status, body) = call(
        &http,
        &base,
        "POST",
        "/subjects/s/versions",
        Some(json!({"schema": ORDER_V2})),
    )
    .await;
    assert_eq!(status, 500, "{body}");
    assert!([50001, 50002, 50004].contains(&error_code(&body)), "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // What the registry holds is still served.
    assert_eq!(
        call(&http, &base, "GET", "/subjects/s/versions", None).await,
        (200, json!([1]))
    );
}
