//! UpdateFeatures (`kafka-features.sh upgrade|downgrade`): validates the requested
//! levels against [`crate::features::SUPPORTED`] and writes FeatureLevelRecords through
//! the metadata quorum.

use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::StrBytes;
use sluice_metadata::MetadataRecord;

use crate::errors;
use crate::features::SUPPORTED;
use crate::request::RequestContext;

/// Kafka's upgrade types (UpdateFeatures v1+).
const UPGRADE: i8 = 1;
const SAFE_DOWNGRADE: i8 = 2;
const UNSAFE_DOWNGRADE: i8 = 3;

/// UpdateFeatures 0-2: validates every update as Kafka's controller does, then writes
/// them as one batch of FeatureLevelRecords (all or nothing per request). v2 answers
/// with the top-level error only (its response has no per-feature results).
pub async fn update_features(
    context: &RequestContext,
    request: UpdateFeaturesRequest,
) -> UpdateFeaturesResponse {
    let mut response = update_features_v1(context, request).await;
    if context.version >= 2 {
        if response.error_code == errors::NONE
            && let Some(failed) = response
                .results
                .iter()
                .find(|r| r.error_code != errors::NONE)
        {
            response.error_code = failed.error_code;
            response.error_message = failed.error_message.clone();
        }
        response.results.clear();
    }
    response
}

async fn update_features_v1(
    context: &RequestContext,
    request: UpdateFeaturesRequest,
) -> UpdateFeaturesResponse {
    let broker = &context.broker;
    let image = broker.image();
    let mut results = Vec::new();
    let mut records = Vec::new();
    let mut failed = false;
    for update in &request.feature_updates {
        let name = update.feature.to_string();
        let level = update.max_version_level;
        let upgrade_type = if context.version == 0 {
            if update.allow_downgrade {
                SAFE_DOWNGRADE
            } else {
                UPGRADE
            }
        } else {
            update.upgrade_type
        };
        let current = image.feature_level(&name).unwrap_or(0);
        let outcome = match SUPPORTED.iter().find(|(n, _, _)| *n == name) {
            None => Err(format!(
                "Invalid update version {level} for feature {name}. The controller does not support the given feature."
            )),
            Some((_, min, max)) if level != 0 && (level < *min || level > *max) => Err(format!(
                "Invalid update version {level} for feature {name}. Broker {} only supports versions {min}-{max}",
                broker.node_id
            )),
            Some(_) if name == "metadata.version" && level < current => Err(format!(
                "Invalid metadata.version {level}. Refusing to perform the requested downgrade because it might delete metadata information."
            )),
            Some(_) if level < current && upgrade_type == UPGRADE => Err(format!(
                "Invalid update version {level} for feature {name}. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
            )),
            Some(_) if !matches!(upgrade_type, UPGRADE | SAFE_DOWNGRADE | UNSAFE_DOWNGRADE) => Err(
                format!("Invalid upgrade type {upgrade_type} for feature {name}"),
            ),
            Some(_) => Ok(()),
        };
        let result = UpdatableFeatureResult::default().with_feature(update.feature.clone());
        results.push(match outcome {
            Ok(()) => {
                records.push(MetadataRecord::FeatureLevel { name, level });
                result
            }
            Err(message) => {
                failed = true;
                result
                    .with_error_code(errors::INVALID_UPDATE_VERSION)
                    .with_error_message(Some(StrBytes::from_string(message)))
            }
        });
    }
    let response = UpdateFeaturesResponse::default();
    if failed {
        // Kafka refuses the whole request when one update is invalid.
        for result in &mut results {
            if result.error_code == errors::NONE {
                result.error_code = errors::FEATURE_UPDATE_FAILED;
                result.error_message = Some(StrBytes::from_static_str(
                    "Unable to update finalized features because another update failed.",
                ));
            }
        }
        return response.with_error_code(errors::NONE).with_results(results);
    }
    if request.validate_only || records.is_empty() {
        return response.with_results(results);
    }
    match broker.write_metadata(&records).await {
        Ok(()) => response.with_results(results),
        Err(error) => {
            tracing::warn!(%error, "feature update failed");
            let message = StrBytes::from_string(error.to_string());
            for result in &mut results {
                result.error_code = errors::FEATURE_UPDATE_FAILED;
                result.error_message = Some(message.clone());
            }
            response
                .with_error_code(errors::FEATURE_UPDATE_FAILED)
                .with_error_message(Some(message))
                .with_results(results)
        }
    }
}
