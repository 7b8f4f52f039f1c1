//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka 4.1's
//! `ScramImage.describe` and `ScramControlManager.alterCredentials` answer them: the
//! credentials are `UserScramCredentialRecord`s in the metadata log; an upsertion
//! carries the client's salted password, from which the StoredKey and ServerKey are
//! kept (never the password). AlterUserScramCredentials is planned on the active
//! controller ([`crate::forwarding`]); Describe reads this node's image.

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::*;
use sluice_metadata::{MetadataImage, MetadataRecord};
use sluice_protocol::ErrorCode;

use super::common::str_bytes;
use crate::errors;
use crate::request::RequestContext;
use crate::scram::{MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism};

type Refusal = (i16, String);

pub async fn describe_user_scram_credentials(
    context: &RequestContext,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    describe(&context.broker.image(), &request)
}

/// Kafka's `ScramImage.describe`: every user with a credential when the request names
/// none; a named user twice is DUPLICATE_RESOURCE, one without credentials
/// RESOURCE_NOT_FOUND.
/// (A success keeps the schema's default message "", as Kafka's generated class does.)
fn describe(
    image: &MetadataImage,
    request: &DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    // name → named more than once
    let mut users: Vec<(String, bool)> = Vec::new();
    match request.users.as_deref() {
        None | Some([]) => {
            for credential in image.scram_credentials() {
                if users
                    .last()
                    .is_none_or(|(name, _)| *name != credential.name)
                {
                    users.push((credential.name.clone(), false));
                }
            }
        }
        Some(named) => {
            for user in named {
                let name = user.name.to_string();
                match users.iter_mut().find(|(n, _)| *n == name) {
                    Some(entry) => entry.1 = true,
                    None => users.push((name, false)),
                }
            }
        }
    }
    let results = users
        .into_iter()
        .map(|(name, duplicate)| {
            let result = DescribeUserScramCredentialsResult::default().with_user(str_bytes(&name));
            if duplicate {
                return result
                    .with_error_code(ErrorCode::DUPLICATE_RESOURCE.code())
                    .with_error_message(Some(str_bytes(format!(
                        "Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
                    ))));
            }
            let infos: Vec<CredentialInfo> = [ScramMechanism::Sha256, ScramMechanism::Sha512]
                .iter()
                .filter_map(|m| image.scram_credential(&name, m.type_id()))
                .map(|c| {
                    CredentialInfo::default()
                        .with_mechanism(c.mechanism)
                        .with_iterations(c.iterations)
                })
                .collect();
            if infos.is_empty() {
                result
                    .with_error_code(ErrorCode::RESOURCE_NOT_FOUND.code())
                    .with_error_message(Some(str_bytes(format!(
                        "Attempt to describe a user credential that does not exist: {name}"
                    ))))
            } else {
                result.with_credential_infos(infos)
            }
        })
        .collect();
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

pub async fn alter_user_scram_credentials(
    context: &RequestContext,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let broker = &context.broker;
    let _controller = broker.controller_lock().await;
    let (records, mut results) = plan(&broker.image(), &request);
    if !records.is_empty()
        && let Err(error) = broker.write_metadata(&records).await
    {
        // The records are one entry, applied whole or not at all (Kafka's atomicOf).
        tracing::warn!(%error, "SCRAM credential write failed");
        for result in results.iter_mut().filter(|r| r.error_code == 0) {
            result.error_code = errors::UNKNOWN_SERVER_ERROR;
            result.error_message = Some(str_bytes(error.to_string()));
        }
    }
    AlterUserScramCredentialsResponse::default().with_results(results)
}

fn check_user_and_mechanism(name: &str, mechanism: i8) -> Result<ScramMechanism, Refusal> {
    if name.is_empty() {
        return Err((
            ErrorCode::UNACCEPTABLE_CREDENTIAL.code(),
            "Username must not be empty".into(),
        ));
    }
    ScramMechanism::from_type(mechanism).ok_or_else(|| {
        (
            ErrorCode::UNSUPPORTED_SASL_MECHANISM.code(),
            "Unknown SCRAM mechanism".into(),
        )
    })
}

/// Kafka's `ScramControlManager.alterCredentials`: a user may appear once in a
/// request (deletions and upsertions together), else DUPLICATE_RESOURCE; results for
/// the deletions, then the upsertions, then the refusals. The records of every accepted
/// alteration, written as one entry.
fn plan(
    image: &MetadataImage,
    request: &AlterUserScramCredentialsRequest,
) -> (Vec<MetadataRecord>, Vec<AlterUserScramCredentialsResult>) {
    let duplicate = || {
        (
            ErrorCode::DUPLICATE_RESOURCE.code(),
            "A user credential cannot be altered twice in the same request".to_string(),
        )
    };
    let mut refused: BTreeMap<String, Refusal> = BTreeMap::new();
    let mut refusal_order: Vec<String> = Vec::new();
    let mut refuse = |refused: &mut BTreeMap<String, Refusal>, name: &str, why: Refusal| {
        if !refused.contains_key(name) {
            refusal_order.push(name.to_string());
        }
        refused.insert(name.to_string(), why);
    };
    let mut deletions: Vec<(String, ScramMechanism)> = Vec::new();
    for deletion in &request.deletions {
        let name = deletion.name.to_string();
        if refused.contains_key(&name) {
            continue;
        }
        if let Some(at) = deletions.iter().position(|(n, _)| *n == name) {
            deletions.remove(at);
            refuse(&mut refused, &name, duplicate());
            continue;
        }
        let checked = check_user_and_mechanism(&name, deletion.mechanism).and_then(|m| {
            image
                .scram_credential(&name, m.type_id())
                .map(|_| m)
                .ok_or_else(|| {
                    (
                        ErrorCode::RESOURCE_NOT_FOUND.code(),
                        "Attempt to delete a user credential that does not exist".to_string(),
                    )
                })
        });
        match checked {
            Ok(mechanism) => deletions.push((name, mechanism)),
            Err(why) => refuse(&mut refused, &name, why),
        }
    }
    let mut upsertions = Vec::new();
    for upsertion in &request.upsertions {
        let name = upsertion.name.to_string();
        if refused.contains_key(&name) {
            continue;
        }
        let deleted = deletions.iter().position(|(n, _)| *n == name);
        let upserted = upsertions
            .iter()
            .position(|(n, _, _): &(String, _, _)| *n == name);
        if deleted.is_some() || upserted.is_some() {
            if let Some(at) = deleted {
                deletions.remove(at);
            }
            if let Some(at) = upserted {
                upsertions.remove(at);
            }
            refuse(&mut refused, &name, duplicate());
            continue;
        }
        let checked = check_user_and_mechanism(&name, upsertion.mechanism).and_then(|m| {
            if upsertion.iterations < MIN_ITERATIONS {
                Err((
                    ErrorCode::UNACCEPTABLE_CREDENTIAL.code(),
                    "Too few iterations".into(),
                ))
            } else if upsertion.iterations > MAX_ITERATIONS {
                Err((
                    ErrorCode::UNACCEPTABLE_CREDENTIAL.code(),
                    "Too many iterations".into(),
                ))
            } else {
                Ok(m)
            }
        });
        match checked {
            Ok(mechanism) => upsertions.push((name, mechanism, upsertion)),
            Err(why) => refuse(&mut refused, &name, why),
        }
    }
    // Kafka sets a null message on success (not the schema's default "").
    let ok = |name: &str| {
        AlterUserScramCredentialsResult::default()
            .with_user(str_bytes(name))
            .with_error_message(None)
    };
    let mut records = Vec::new();
    let mut results = Vec::new();
    for (name, mechanism) in &deletions {
        records.push(MetadataRecord::RemoveUserScramCredential {
            name: name.clone(),
            mechanism: mechanism.type_id(),
        });
        results.push(ok(name));
    }
    for (name, mechanism, upsertion) in &upsertions {
        records.push(MetadataRecord::UserScramCredential(mechanism.credential(
            name,
            &upsertion.salt,
            &upsertion.salted_password,
            upsertion.iterations,
        )));
        results.push(ok(name));
    }
    for name in refusal_order {
        let (code, message) = &refused[&name];
        results.push(
            ok(&name)
                .with_error_code(*code)
                .with_error_message(Some(str_bytes(message.clone()))),
        );
    }
    (records, results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::alter_user_scram_credentials_request::{
        ScramCredentialDeletion, ScramCredentialUpsertion,
    };
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;

    fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
        ScramCredentialUpsertion::default()
            .with_name(str_bytes(name))
            .with_mechanism(mechanism)
            .with_iterations(iterations)
            .with_salt(bytes::Bytes::from_static(b"salt"))
            .with_salted_password(bytes::Bytes::from_static(b"salted-password-bytes"))
    }

    fn delete(name: &str, mechanism: i8) -> ScramCredentialDeletion {
        ScramCredentialDeletion::default()
            .with_name(str_bytes(name))
            .with_mechanism(mechanism)
    }

    fn outcome(results: &[AlterUserScramCredentialsResult]) -> Vec<(String, i16, Option<String>)> {
        results
            .iter()
            .map(|r| {
                (
                    r.user.to_string(),
                    r.error_code,
                    r.error_message.as_ref().map(|m| m.to_string()),
                )
            })
            .collect()
    }

    fn apply(image: &mut MetadataImage, records: &[MetadataRecord]) {
        for record in records {
            image.apply(record).unwrap();
        }
    }

    #[test]
    fn upsertions_store_keys_derived_from_the_salted_password() {
        let mut image = MetadataImage::default();
        let request = AlterUserScramCredentialsRequest::default()
            .with_upsertions(vec![upsert("alice", 1, 8192), upsert("bob", 2, 4096)]);
        let (records, results) = plan(&image, &request);
        assert_eq!(
            outcome(&results),
            [("alice".into(), 0, None), ("bob".into(), 0, None)]
        );
        apply(&mut image, &records);
        let alice = image.scram_credential("alice", 1).unwrap();
        let expected =
            ScramMechanism::Sha256.credential("alice", b"salt", b"salted-password-bytes", 8192);
        assert_eq!(alice, &expected);
        assert_ne!(alice.stored_key, b"salted-password-bytes");
        assert_eq!(
            image.scram_credential("bob", 2).unwrap().stored_key.len(),
            64
        );
    }

    #[test]
    fn refusals_carry_kafkas_codes_and_messages() {
        let mut image = MetadataImage::default();
        apply(
            &mut image,
            &[MetadataRecord::UserScramCredential(
                ScramMechanism::Sha256.credential_from_password("carol", "pw", 4096),
            )],
        );
        let request = AlterUserScramCredentialsRequest::default()
            .with_deletions(vec![
                delete("carol", 2),
                delete("", 1),
                delete("dave", 0),
                delete("erin", 1),
                delete("erin", 2),
            ])
            .with_upsertions(vec![
                upsert("few", 1, 4095),
                upsert("many", 1, 16385),
                upsert("frank", 3, 8192),
                upsert("gina", 1, 8192),
                upsert("gina", 2, 8192),
                upsert("erin", 1, 8192),
                upsert("hank", 1, 4096),
            ]);
        let (records, results) = plan(&image, &request);
        let refused = |code: ErrorCode, message: &str| (code.code(), Some(message.to_string()));
        let by_user: BTreeMap<String, (i16, Option<String>)> = outcome(&results)
            .into_iter()
            .map(|(user, code, message)| (user, (code, message)))
            .collect();
        let not_found = "Attempt to delete a user credential that does not exist";
        let twice = "A user credential cannot be altered twice in the same request";
        assert_eq!(
            by_user["carol"],
            refused(ErrorCode::RESOURCE_NOT_FOUND, not_found)
        );
        assert_eq!(
            by_user[""],
            refused(
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty"
            )
        );
        assert_eq!(
            by_user["dave"],
            refused(
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism"
            )
        );
        assert_eq!(
            by_user["erin"],
            refused(ErrorCode::RESOURCE_NOT_FOUND, not_found)
        );
        assert_eq!(
            by_user["few"],
            refused(ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        );
        assert_eq!(
            by_user["many"],
            refused(ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        );
        assert_eq!(
            by_user["frank"],
            refused(
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism"
            )
        );
        assert_eq!(
            by_user["gina"],
            refused(ErrorCode::DUPLICATE_RESOURCE, twice)
        );
        assert_eq!(by_user["hank"], (0, None));
        assert_eq!(results.len(), 9, "one result per user");
        // Only hank's upsertion is written.
        assert_eq!(records.len(), 1);
        apply(&mut image, &records);
        assert!(image.scram_credential("hank", 1).is_some());
        assert!(image.scram_credential("gina", 1).is_none());
        // A deletion and an upsertion of one user in one request: DUPLICATE_RESOURCE,
        // nothing written.
        let request = AlterUserScramCredentialsRequest::default()
            .with_deletions(vec![delete("carol", 1)])
            .with_upsertions(vec![upsert("carol", 2, 4096)]);
        let (records, results) = plan(&image, &request);
        assert!(records.is_empty());
        assert_eq!(
            outcome(&results),
            [(
                "carol".into(),
                ErrorCode::DUPLICATE_RESOURCE.code(),
                Some(twice.into())
            )]
        );
        // A deletion of an existing credential.
        let request =
            AlterUserScramCredentialsRequest::default().with_deletions(vec![delete("carol", 1)]);
        let (records, results) = plan(&image, &request);
        assert_eq!(outcome(&results), [("carol".into(), 0, None)]);
        apply(&mut image, &records);
        assert!(image.scram_credential("carol", 1).is_none());
    }

    #[test]
    fn describe_lists_mechanisms_and_iterations_never_keys() {
        let mut image = MetadataImage::default();
        apply(
            &mut image,
            &[
                MetadataRecord::UserScramCredential(
                    ScramMechanism::Sha512.credential_from_password("alice", "pw", 4096),
                ),
                MetadataRecord::UserScramCredential(
                    ScramMechanism::Sha256.credential_from_password("alice", "pw", 8192),
                ),
                MetadataRecord::UserScramCredential(
                    ScramMechanism::Sha256.credential_from_password("bob", "pw", 4096),
                ),
            ],
        );
        let summary = |response: DescribeUserScramCredentialsResponse| {
            response
                .results
                .iter()
                .map(|r| {
                    (
                        r.user.to_string(),
                        r.error_code,
                        r.error_message.as_ref().map(|m| m.to_string()),
                        r.credential_infos
                            .iter()
                            .map(|c| (c.mechanism, c.iterations))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let all = summary(describe(
            &image,
            &DescribeUserScramCredentialsRequest::default(),
        ));
        assert_eq!(
            all,
            [
                (
                    "alice".into(),
                    0,
                    Some(String::new()),
                    vec![(1, 8192), (2, 4096)]
                ),
                ("bob".into(), 0, Some(String::new()), vec![(1, 4096)])
            ]
        );
        let all_null = DescribeUserScramCredentialsRequest::default().with_users(None);
        assert_eq!(summary(describe(&image, &all_null)), all);
        let name = |n: &str| UserName::default().with_name(str_bytes(n));
        let named = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
            name("bob"),
            name("zed"),
            name("alice"),
            name("alice"),
        ]));
        assert_eq!(
            summary(describe(&image, &named)),
            [
                ("bob".into(), 0, Some(String::new()), vec![(1, 4096)]),
                (
                    "zed".into(),
                    ErrorCode::RESOURCE_NOT_FOUND.code(),
                    Some("Attempt to describe a user credential that does not exist: zed".into()),
                    vec![]
                ),
                (
                    "alice".into(),
                    ErrorCode::DUPLICATE_RESOURCE.code(),
                    Some("Cannot describe SCRAM credentials for the same user twice in a single request: alice".into()),
                    vec![]
                ),
            ]
        );
    }
}
