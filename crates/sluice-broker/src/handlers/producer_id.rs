//! InitProducerId for idempotent producers: a producer id from this broker's block
//! (blocks are taken through the metadata log, so ids are unique across restarts) and
//! epoch 0. Transactional ids come with the transaction coordinator (issue 6); until
//! then a request with one gets COORDINATOR_NOT_AVAILABLE, as from a Kafka broker whose
//! transaction coordinator is not loaded. (Clients find no coordinator first anyway:
//! FindCoordinator is not served yet.)

use kafka_protocol::messages::*;

use crate::apis::RequestContext;
use crate::errors;

/// Kafka's COORDINATOR_NOT_AVAILABLE.
const COORDINATOR_NOT_AVAILABLE: i16 = 15;

pub async fn init_producer_id(
    context: &RequestContext,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let response = InitProducerIdResponse::default();
    if request.transactional_id.is_some() {
        return response
            .with_error_code(COORDINATOR_NOT_AVAILABLE)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
    }
    // v3+: an idempotent producer that asks to bump its epoch (after an error) gets a
    // fresh id, which Kafka 4.1 also does for producers without a transactional id.
    match context.broker.allocate_producer_id().await {
        Ok(id) => response
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(error) => {
            tracing::error!(%error, "producer id allocation failed");
            response
                .with_error_code(errors::UNKNOWN_SERVER_ERROR)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
        }
    }
}
