//! Compacted topics (`cleanup.policy=compact`) over the wire: a record without a key is
//! refused with INVALID_RECORD and the index of the first keyless record, as Kafka's
//! LogValidator does; keyed records are appended.

mod common;

use bytes::Bytes;
use common::{TestNode, Wire};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};

const INVALID_RECORD: i16 = 87;

async fn produce(
    wire: &mut Wire,
    keys: &[Option<&str>],
) -> produce_response::PartitionProduceResponse {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for key in keys {
        builder
            .append(&NewRecord {
                timestamp: sluice_storage::now_ms(),
                key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
                value: Some(Bytes::from_static(b"v")),
                headers: Vec::new(),
            })
            .unwrap();
    }
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("compacted")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(builder.build())),
                ]),
        ]);
    wire.call(&request, 9).await.responses[0].partition_responses[0].clone()
}

#[tokio::test]
async fn a_compacted_topic_refuses_records_without_a_key() {
    let node = TestNode::start(&[]).await;
    assert_eq!(
        common::create_assigned(
            node.address,
            "compacted",
            &[1],
            &[("cleanup.policy", "compact")]
        )
        .await,
        0
    );
    let mut wire = Wire::connect(node.address).await;
    let keyed = produce(&mut wire, &[Some("a"), Some("b")]).await;
    assert_eq!((keyed.error_code, keyed.base_offset), (0, 0));
    let refused = produce(&mut wire, &[Some("a"), None, None]).await;
    assert_eq!(refused.error_code, INVALID_RECORD);
    assert_eq!(refused.record_errors.len(), 1, "{refused:?}");
    assert_eq!(refused.record_errors[0].batch_index, 1);
    assert_eq!(
        refused.error_message.as_deref(),
        Some("Compacted topic cannot accept message without key in topic partition compacted-0.")
    );
    // Nothing of the refused batch was written.
    let next = produce(&mut wire, &[Some("c")]).await;
    assert_eq!((next.error_code, next.base_offset), (0, 2));
    node.stop().await;
}
