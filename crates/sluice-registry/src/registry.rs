//! The registry's operations, as Confluent Schema Registry defines them: register and look
//! up schemas under subjects, read them by id, delete (soft, then permanently), check
//! compatibility, and set compatibility levels and modes. The HTTP layer only maps routes
//! to these calls.
//!
//! Reads answer from this instance's [`Store`]. Writes run on the leader only (the HTTP
//! layer forwards them), one at a time (`write_lock`): each reads the state, decides, and
//! writes one or more records through the [`KafkaStore`], which returns once the state
//! includes them — so the next write decides on a state that has the previous one.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use crate::compatibility::CompatibilityLevel;
use crate::error::{RegistryError, Result};
use crate::kafka_store::KafkaStore;
use crate::records::{
    ClearSubjectValue, ConfigValue, DeleteSubjectValue, Key, ModeValue, SchemaReference,
    SchemaValue,
};
use crate::schema::{self, ParsedSchema, ResolvedReference, SchemaType};
use crate::store::Store;

/// How deep references may nest (a reference's references ...): a bound on work, and a
/// guard against cycles a hand-written `_schemas` could contain.
const MAX_REFERENCE_DEPTH: usize = 32;

/// The registry's modes (Confluent's `Mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadWrite,
    ReadOnly,
    /// READONLY for every subject, whatever its own mode.
    ReadOnlyOverride,
    /// Registrations carry their id and version (migrating from another registry);
    /// compatibility is not checked.
    Import,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::ReadOnlyOverride => "READONLY_OVERRIDE",
            Mode::Import => "IMPORT",
        }
    }

    pub fn parse(name: &str) -> Option<Mode> {
        Some(match name.to_ascii_uppercase().as_str() {
            "READWRITE" => Mode::ReadWrite,
            "READONLY" => Mode::ReadOnly,
            "READONLY_OVERRIDE" => Mode::ReadOnlyOverride,
            "IMPORT" => Mode::Import,
            _ => return None,
        })
    }
}

/// A version in a path: a number in [1, 2^31-1], or `latest` (also `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSpec {
    Latest,
    Number(i32),
}

impl VersionSpec {
    pub fn parse(text: &str) -> Result<VersionSpec> {
        if text.eq_ignore_ascii_case("latest") {
            return Ok(VersionSpec::Latest);
        }
        match text.parse::<i32>() {
            Ok(-1) => Ok(VersionSpec::Latest),
            Ok(number) if number >= 1 => Ok(VersionSpec::Number(number)),
            _ => Err(RegistryError::invalid_version(text)),
        }
    }
}

/// A schema in a request (`POST /subjects/{s}/versions`, lookups, compatibility checks).
#[derive(Debug, Clone, Default)]
pub struct SchemaRequest {
    pub schema: String,
    pub schema_type: Option<String>,
    pub references: Vec<SchemaReference>,
    /// IMPORT mode only.
    pub id: Option<i32>,
    /// IMPORT mode only.
    pub version: Option<i32>,
}

/// A subject version in a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectVersion {
    pub subject: String,
    pub version: i32,
    pub id: i32,
    pub schema_type: SchemaType,
    pub references: Vec<SchemaReference>,
    pub schema: String,
}

impl SubjectVersion {
    fn from_value(value: &SchemaValue) -> SubjectVersion {
        SubjectVersion {
            subject: value.subject.clone(),
            version: value.version,
            id: value.id,
            schema_type: value.schema_type().unwrap_or(SchemaType::Avro),
            references: value.references.clone(),
            schema: value.schema.clone(),
        }
    }
}

/// What `GET /schemas/ids/{id}` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaById {
    pub schema_type: SchemaType,
    pub schema: String,
    pub references: Vec<SchemaReference>,
}

/// The outcome of a compatibility check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompatibilityResult {
    pub is_compatible: bool,
    pub messages: Vec<String>,
}

/// Settings of the registry itself (Confluent's `schema.compatibility.level`, `mode.mutability`).
#[derive(Debug, Clone)]
pub struct RegistrySettings {
    /// The compatibility level when none is configured (default BACKWARD).
    pub default_compatibility: CompatibilityLevel,
    /// Whether `PUT /mode` is allowed (`mode.mutability`, default true).
    pub mode_mutability: bool,
}

impl Default for RegistrySettings {
    fn default() -> RegistrySettings {
        RegistrySettings {
            default_compatibility: CompatibilityLevel::Backward,
            mode_mutability: true,
        }
    }
}

pub struct Registry {
    store: KafkaStore,
    settings: RegistrySettings,
    write_lock: tokio::sync::Mutex<()>,
    /// Parsed schemas by id: compatibility checks parse each earlier version once.
    parsed: Mutex<HashMap<i32, Arc<dyn ParsedSchema>>>,
}

impl Registry {
    pub fn new(store: KafkaStore, settings: RegistrySettings) -> Registry {
        Registry {
            store,
            settings,
            write_lock: tokio::sync::Mutex::new(()),
            parsed: Mutex::new(HashMap::new()),
        }
    }

    pub fn store(&self) -> &KafkaStore {
        &self.store
    }

    // -- reads ---------------------------------------------------------------------------

    pub fn subjects(&self, prefix: &str, deleted: bool, deleted_only: bool) -> Vec<String> {
        let store = self.store.read();
        store
            .subjects(deleted || deleted_only)
            .filter(|(subject, live)| subject.starts_with(prefix) && !(deleted_only && *live))
            .map(|(subject, _)| subject.clone())
            .collect()
    }

    pub fn versions(&self, subject: &str, deleted: bool, deleted_only: bool) -> Result<Vec<i32>> {
        let store = self.store.read();
        let versions: Vec<i32> = store
            .versions(subject, deleted || deleted_only)
            .into_iter()
            .filter(|value| !deleted_only || value.deleted)
            .map(|value| value.version)
            .collect();
        if versions.is_empty() {
            return Err(RegistryError::subject_not_found(subject));
        }
        Ok(versions)
    }

    pub fn version(
        &self,
        subject: &str,
        version: VersionSpec,
        deleted: bool,
    ) -> Result<SubjectVersion> {
        let store = self.store.read();
        resolve_version(&store, subject, version, deleted).map(SubjectVersion::from_value)
    }

    pub fn referenced_by(&self, subject: &str, version: VersionSpec) -> Result<Vec<i32>> {
        let store = self.store.read();
        let value = resolve_version(&store, subject, version, false)?;
        Ok(store.referenced_by(subject, value.version))
    }

    pub fn schema_by_id(&self, id: i32, subject: Option<&str>) -> Result<SchemaById> {
        let store = self.store.read();
        let entry = store
            .id(id)
            .filter(|entry| {
                subject.is_none_or(|subject| entry.used_by.iter().any(|(s, _)| s == subject))
            })
            .ok_or_else(|| RegistryError::schema_id_not_found(id))?;
        Ok(SchemaById {
            schema_type: entry.schema_type,
            schema: entry.schema.clone(),
            references: entry.references.clone(),
        })
    }

    /// The schema of `id` in another format (`?format=serialized` for Protobuf).
    pub fn formatted_schema(&self, id: i32, format: &str) -> Result<Option<String>> {
        let parsed = self.parsed_by_id(id)?;
        Ok(parsed.formatted(format))
    }

    /// The subject versions that use `id`; soft-deleted ones only when `deleted`.
    pub fn id_versions(&self, id: i32, deleted: bool) -> Result<Vec<(String, i32)>> {
        let store = self.store.read();
        let entry = store
            .id(id)
            .ok_or_else(|| RegistryError::schema_id_not_found(id))?;
        Ok(entry
            .used_by
            .iter()
            .filter(|(subject, version)| {
                deleted
                    || store
                        .version(subject, *version)
                        .is_some_and(|value| !value.deleted)
            })
            .cloned()
            .collect())
    }

    /// Every live schema version (`GET /schemas`), optionally under a subject prefix, only
    /// the latest version of each subject when `latest_only`.
    pub fn schemas(&self, prefix: &str, deleted: bool, latest_only: bool) -> Vec<SubjectVersion> {
        let store = self.store.read();
        let mut out = Vec::new();
        for (subject, _) in store.subjects(deleted) {
            if !subject.starts_with(prefix) {
                continue;
            }
            let versions = store.versions(subject, deleted);
            if latest_only {
                out.extend(
                    versions
                        .last()
                        .map(|value| SubjectVersion::from_value(value)),
                );
            } else {
                out.extend(
                    versions
                        .iter()
                        .map(|value| SubjectVersion::from_value(value)),
                );
            }
        }
        out
    }

    /// `POST /subjects/{s}`: the version of `subject` holding this schema.
    pub fn lookup(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        deleted: bool,
    ) -> Result<SubjectVersion> {
        let store = self.store.read();
        if store.versions(subject, deleted).is_empty() {
            return Err(RegistryError::subject_not_found(subject));
        }
        let (schema_type, parsed) = self.parse_request(&store, request)?;
        let normalize = normalize || self.normalize_configured(&store, subject);
        let text = if normalize {
            parsed.normalized()
        } else {
            parsed.canonical()
        };
        store
            .versions(subject, deleted)
            .into_iter()
            .rev()
            .find(|value| {
                value.schema_type() == Some(schema_type)
                    && value.references == request.references
                    && (value.schema == text
                        || (normalize
                            && self
                                .parsed_by_id_locked(&store, value.id)
                                .is_ok_and(|old| old.normalized() == text)))
            })
            .map(SubjectVersion::from_value)
            .ok_or_else(RegistryError::schema_not_found)
    }

    /// `POST /compatibility/subjects/{s}/versions[/{v}]`.
    pub fn check_compatibility(
        &self,
        subject: &str,
        version: Option<VersionSpec>,
        request: &SchemaRequest,
        normalize: bool,
        verbose: bool,
    ) -> Result<CompatibilityResult> {
        let store = self.store.read();
        let level = self.level_for(&store, subject);
        let previous: Vec<&SchemaValue> = match version {
            Some(spec) => vec![resolve_version(&store, subject, spec, false)?],
            None => store.versions(subject, false),
        };
        let (_, parsed) = self.parse_request(&store, request)?;
        let _ = normalize;
        let mut messages = Vec::new();
        let mut is_compatible = true;
        // A check against one given version applies the level's direction to that one only.
        let level_for_check = match (version, level) {
            (Some(_), CompatibilityLevel::BackwardTransitive) => CompatibilityLevel::Backward,
            (Some(_), CompatibilityLevel::ForwardTransitive) => CompatibilityLevel::Forward,
            (Some(_), CompatibilityLevel::FullTransitive) => CompatibilityLevel::Full,
            (_, level) => level,
        };
        let checked: Vec<&SchemaValue> = if matches!(
            level_for_check,
            CompatibilityLevel::BackwardTransitive
                | CompatibilityLevel::ForwardTransitive
                | CompatibilityLevel::FullTransitive
        ) {
            previous.iter().rev().copied().collect()
        } else {
            previous.last().copied().into_iter().collect()
        };
        for old in checked {
            let old_parsed = self.parsed_by_id_locked(&store, old.id)?;
            let reasons =
                level_for_check.incompatibilities(parsed.as_ref(), &[old_parsed.as_ref()]);
            if !reasons.is_empty() {
                is_compatible = false;
                if verbose {
                    messages.extend(reasons);
                    messages.push(format!("{{oldSchemaVersion: {}}}", old.version));
                    messages.push(format!("{{oldSchema: '{}'}}", old.schema));
                }
            }
        }
        if !is_compatible && verbose {
            messages.push(format!("{{compatibility: '{}'}}", level.name()));
        }
        Ok(CompatibilityResult {
            is_compatible,
            messages,
        })
    }

    /// `GET /config[/{s}]`: the subject's level (`None`: the global one); with
    /// `default_to_global`, the global level when the subject has none.
    pub fn config(&self, subject: Option<&str>, default_to_global: bool) -> Result<ConfigValue> {
        let store = self.store.read();
        match subject {
            None => Ok(store.config(None).cloned().unwrap_or_else(|| ConfigValue {
                compatibility_level: Some(self.settings.default_compatibility.name().to_string()),
                normalize: None,
            })),
            Some(subject) => match store.config(Some(subject)) {
                Some(config) => Ok(config.clone()),
                None if default_to_global => {
                    drop(store);
                    self.config(None, false)
                }
                None => Err(RegistryError::subject_level_compatibility_not_configured(
                    subject,
                )),
            },
        }
    }

    /// `GET /mode[/{s}]`.
    pub fn mode(&self, subject: Option<&str>, default_to_global: bool) -> Result<Mode> {
        let store = self.store.read();
        match subject {
            None => Ok(global_mode(&store)),
            Some(subject) => match store.mode(Some(subject)).and_then(Mode::parse) {
                Some(mode) => Ok(mode),
                None if default_to_global => Ok(global_mode(&store)),
                None => Err(RegistryError::subject_level_mode_not_configured(subject)),
            },
        }
    }

    // -- writes (leader only) ------------------------------------------------------------

    /// `POST /subjects/{s}/versions`: the id of the schema, registered as a new version of
    /// `subject` unless the subject's latest live versions already hold it.
    pub async fn register(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
    ) -> Result<i32> {
        validate_subject(subject)?;
        let _write = self.lock_for_write().await?;
        let (value, existing) = {
            let store = self.store.read();
            let mode = effective_mode(&store, subject);
            if matches!(mode, Mode::ReadOnly | Mode::ReadOnlyOverride) {
                return Err(RegistryError::operation_not_permitted(format!(
                    "Subject {subject} is in read-only mode"
                )));
            }
            let (schema_type, parsed) = self.parse_request(&store, request)?;
            let normalize = normalize || self.normalize_configured(&store, subject);
            let text = if normalize {
                parsed.normalized()
            } else {
                parsed.canonical()
            };
            let live = store.versions(subject, false);
            if mode == Mode::Import {
                self.import_value(&store, subject, request, schema_type, text)?
            } else {
                if let Some(same) = live.iter().rev().find(|value| {
                    value.schema_type() == Some(schema_type)
                        && value.schema == text
                        && value.references == request.references
                }) {
                    if request.id.is_some_and(|id| id != same.id) {
                        return Err(RegistryError::id_does_not_match(same.id));
                    }
                    return Ok(same.id);
                }
                let level = self.level_for(&store, subject);
                let previous: Vec<Arc<dyn ParsedSchema>> = live
                    .iter()
                    .map(|value| self.parsed_by_id_locked(&store, value.id))
                    .collect::<Result<_>>()?;
                let previous: Vec<&dyn ParsedSchema> =
                    previous.iter().map(|parsed| parsed.as_ref()).collect();
                let reasons = level.incompatibilities(parsed.as_ref(), &previous);
                if !reasons.is_empty() {
                    let mut details = reasons;
                    if let Some(last) = live.last() {
                        details.push(format!("{{oldSchemaVersion: {}}}", last.version));
                        details.push(format!("{{oldSchema: '{}'}}", last.schema));
                    }
                    details.push(format!("{{compatibility: '{}'}}", level.name()));
                    return Err(RegistryError::incompatible(subject, &details));
                }
                let id = match store.find_id(schema_type, &text, &request.references) {
                    Some(id) => id,
                    None => store.max_id() + 1,
                };
                (
                    SchemaValue {
                        subject: subject.to_string(),
                        version: store.max_version(subject) + 1,
                        id,
                        schema_type: type_field(schema_type),
                        references: request.references.clone(),
                        schema: text,
                        deleted: false,
                    },
                    None::<i32>,
                )
            }
        };
        if let Some(id) = existing {
            return Ok(id);
        }
        let id = value.id;
        self.write_schema(&value).await?;
        Ok(id)
    }

    fn import_value(
        &self,
        store: &Store,
        subject: &str,
        request: &SchemaRequest,
        schema_type: SchemaType,
        text: String,
    ) -> Result<(SchemaValue, Option<i32>)> {
        let id = request.id.ok_or_else(|| {
            RegistryError::operation_not_permitted("In IMPORT mode a schema must carry its id")
        })?;
        if let Some(entry) = store.id(id)
            && (entry.schema_type != schema_type
                || entry.schema != text
                || entry.references != request.references)
        {
            return Err(RegistryError::id_does_not_match(id));
        }
        let version = request
            .version
            .unwrap_or_else(|| store.max_version(subject) + 1);
        if version < 1 {
            return Err(RegistryError::invalid_version(&version.to_string()));
        }
        if let Some(existing) = store.version(subject, version)
            && existing.id == id
            && !existing.deleted
        {
            return Ok((existing.clone(), Some(id)));
        }
        Ok((
            SchemaValue {
                subject: subject.to_string(),
                version,
                id,
                schema_type: type_field(schema_type),
                references: request.references.clone(),
                schema: text,
                deleted: false,
            },
            None,
        ))
    }

    async fn write_schema(&self, value: &SchemaValue) -> Result<()> {
        let bytes = serde_json::to_vec(value).expect("a schema value always serializes");
        self.store
            .write(&Key::schema(&value.subject, value.version), Some(bytes))
            .await?;
        Ok(())
    }

    /// `DELETE /subjects/{s}/versions/{v}`: soft-deletes a version, or with `permanent`
    /// removes a soft-deleted one. Returns the version.
    pub async fn delete_version(
        &self,
        subject: &str,
        version: VersionSpec,
        permanent: bool,
    ) -> Result<i32> {
        let _write = self.lock_for_write().await?;
        let value = {
            let store = self.store.read();
            self.check_writable(&store, subject)?;
            if store.versions(subject, true).is_empty() {
                return Err(RegistryError::subject_not_found(subject));
            }
            // `latest` names the latest live version, unless deleting permanently.
            let include_deleted = permanent || matches!(version, VersionSpec::Number(_));
            let value = resolve_version(&store, subject, version, include_deleted)?.clone();
            if !permanent && value.deleted {
                return Err(RegistryError::version_soft_deleted(subject, value.version));
            }
            if !store.referenced_by(subject, value.version).is_empty() {
                return Err(RegistryError::reference_exists(subject, value.version));
            }
            if permanent && !value.deleted {
                return Err(RegistryError::version_not_soft_deleted(
                    subject,
                    value.version,
                ));
            }
            value
        };
        if permanent {
            self.store
                .write(&Key::schema(subject, value.version), None)
                .await?;
        } else {
            self.write_schema(&SchemaValue {
                deleted: true,
                ..value.clone()
            })
            .await?;
        }
        Ok(value.version)
    }

    /// `DELETE /subjects/{s}`: soft-deletes every version, or with `permanent` removes a
    /// soft-deleted subject. Returns the versions deleted.
    pub async fn delete_subject(&self, subject: &str, permanent: bool) -> Result<Vec<i32>> {
        let _write = self.lock_for_write().await?;
        let versions = {
            let store = self.store.read();
            self.check_writable(&store, subject)?;
            let all = store.versions(subject, true);
            if all.is_empty() {
                return Err(RegistryError::subject_not_found(subject));
            }
            let live: Vec<&SchemaValue> = all.iter().copied().filter(|v| !v.deleted).collect();
            if permanent && !live.is_empty() {
                return Err(RegistryError::subject_not_soft_deleted(subject));
            }
            if !permanent && live.is_empty() {
                return Err(RegistryError::subject_soft_deleted(subject));
            }
            let targets: Vec<&SchemaValue> = if permanent { all } else { live };
            for value in &targets {
                if !store.referenced_by(subject, value.version).is_empty() {
                    return Err(RegistryError::reference_exists(subject, value.version));
                }
            }
            targets
                .into_iter()
                .map(|value| value.version)
                .collect::<Vec<_>>()
        };
        let latest = *versions.last().expect("a subject with versions");
        if permanent {
            for version in &versions {
                self.store
                    .write(&Key::schema(subject, *version), None)
                    .await?;
            }
            let clear = serde_json::to_vec(&ClearSubjectValue {
                subject: subject.to_string(),
            })
            .expect("serializes");
            self.store
                .write(
                    &Key::ClearSubject {
                        subject: subject.to_string(),
                        magic: 0,
                    },
                    Some(clear),
                )
                .await?;
        } else {
            let delete = serde_json::to_vec(&DeleteSubjectValue {
                subject: subject.to_string(),
                version: latest,
            })
            .expect("serializes");
            self.store
                .write(
                    &Key::DeleteSubject {
                        subject: subject.to_string(),
                        magic: 0,
                    },
                    Some(delete),
                )
                .await?;
        }
        // A subject's own config and mode go with a permanent delete, as in Confluent.
        if permanent {
            let store_has = {
                let store = self.store.read();
                (
                    store.config(Some(subject)).is_some(),
                    store.mode(Some(subject)).is_some(),
                )
            };
            if store_has.0 {
                self.store.write(&Key::config(Some(subject)), None).await?;
            }
            if store_has.1 {
                self.store.write(&Key::mode(Some(subject)), None).await?;
            }
        }
        Ok(versions)
    }

    /// `PUT /config[/{s}]`.
    pub async fn set_config(
        &self,
        subject: Option<&str>,
        compatibility: Option<&str>,
        normalize: Option<bool>,
    ) -> Result<ConfigValue> {
        let level = match compatibility {
            Some(name) => Some(
                CompatibilityLevel::parse(name)
                    .ok_or_else(RegistryError::invalid_compatibility_level)?,
            ),
            None => None,
        };
        if let Some(subject) = subject {
            validate_subject(subject)?;
        }
        let _write = self.lock_for_write().await?;
        let previous = self.store.read().config(subject).cloned();
        let value = ConfigValue {
            compatibility_level: level.map(|level| level.name().to_string()).or_else(|| {
                previous
                    .as_ref()
                    .and_then(|p| p.compatibility_level.clone())
            }),
            normalize: normalize.or_else(|| previous.as_ref().and_then(|p| p.normalize)),
        };
        let bytes = serde_json::to_vec(&value).expect("serializes");
        self.store.write(&Key::config(subject), Some(bytes)).await?;
        Ok(value)
    }

    /// `DELETE /config[/{s}]`: returns the config removed (the global default for the
    /// global config when none was set).
    pub async fn delete_config(&self, subject: Option<&str>) -> Result<ConfigValue> {
        let _write = self.lock_for_write().await?;
        let previous = {
            let store = self.store.read();
            if let Some(subject) = subject
                && !store.subject_exists(subject)
                && store.config(Some(subject)).is_none()
            {
                return Err(RegistryError::subject_not_found(subject));
            }
            store.config(subject).cloned()
        };
        if previous.is_some() {
            self.store.write(&Key::config(subject), None).await?;
        }
        Ok(previous.unwrap_or_else(|| ConfigValue {
            compatibility_level: Some(self.settings.default_compatibility.name().to_string()),
            normalize: None,
        }))
    }

    /// `PUT /mode[/{s}]`. IMPORT for the whole registry needs it empty, unless `force`.
    pub async fn set_mode(&self, subject: Option<&str>, mode: &str, force: bool) -> Result<Mode> {
        let mode = Mode::parse(mode).ok_or_else(RegistryError::invalid_mode)?;
        if !self.settings.mode_mutability {
            return Err(RegistryError::operation_not_permitted(
                "Mode changes are not allowed",
            ));
        }
        if let Some(subject) = subject {
            validate_subject(subject)?;
        }
        let _write = self.lock_for_write().await?;
        {
            let store = self.store.read();
            let empty = match subject {
                None => store.subjects(true).next().is_none(),
                Some(subject) => !store.subject_exists(subject),
            };
            if mode == Mode::Import && !empty && !force {
                return Err(RegistryError::operation_not_permitted(
                    "Cannot import since found existing subjects",
                ));
            }
        }
        let bytes = serde_json::to_vec(&ModeValue {
            mode: mode.name().to_string(),
        })
        .expect("serializes");
        self.store.write(&Key::mode(subject), Some(bytes)).await?;
        Ok(mode)
    }

    /// `DELETE /mode[/{s}]`: returns the mode removed.
    pub async fn delete_mode(&self, subject: Option<&str>) -> Result<Mode> {
        let _write = self.lock_for_write().await?;
        let previous = {
            let store = self.store.read();
            match subject {
                Some(subject) => store
                    .mode(Some(subject))
                    .and_then(Mode::parse)
                    .ok_or_else(|| RegistryError::subject_not_found(subject))?,
                None => global_mode(&store),
            }
        };
        self.store.write(&Key::mode(subject), None).await?;
        Ok(previous)
    }

    // -- helpers -------------------------------------------------------------------------

    /// Takes the write lock and reads `_schemas` to its end: a leader decides on a state
    /// that holds every earlier write, its predecessor's included.
    async fn lock_for_write(&self) -> Result<tokio::sync::MutexGuard<'_, ()>> {
        let guard = self.write_lock.lock().await;
        self.store.sync().await?;
        Ok(guard)
    }

    fn check_writable(&self, store: &Store, subject: &str) -> Result<()> {
        match effective_mode(store, subject) {
            Mode::ReadOnly | Mode::ReadOnlyOverride => Err(RegistryError::operation_not_permitted(
                format!("Subject {subject} is in read-only mode"),
            )),
            _ => Ok(()),
        }
    }

    fn level_for(&self, store: &Store, subject: &str) -> CompatibilityLevel {
        store
            .config(Some(subject))
            .and_then(|config| config.compatibility_level.as_deref())
            .or_else(|| {
                store
                    .config(None)
                    .and_then(|config| config.compatibility_level.as_deref())
            })
            .and_then(CompatibilityLevel::parse)
            .unwrap_or(self.settings.default_compatibility)
    }

    fn normalize_configured(&self, store: &Store, subject: &str) -> bool {
        store
            .config(Some(subject))
            .and_then(|config| config.normalize)
            .or_else(|| store.config(None).and_then(|config| config.normalize))
            .unwrap_or(false)
    }

    /// Parses a request's schema with its references resolved.
    fn parse_request(
        &self,
        store: &Store,
        request: &SchemaRequest,
    ) -> Result<(SchemaType, Box<dyn ParsedSchema>)> {
        let schema_type = match request.schema_type.as_deref() {
            None | Some("") => SchemaType::Avro,
            Some(name) => SchemaType::parse(name)
                .ok_or_else(|| RegistryError::new(42201, format!("Invalid schema type {name}")))?,
        };
        if request.schema.trim().is_empty() {
            return Err(RegistryError::invalid_schema("(empty)"));
        }
        let references = resolve_references(store, &request.references)?;
        let parsed = schema::parse(schema_type, &request.schema, &references).map_err(|e| {
            RegistryError::invalid_schema(format!("{}, details: {}", request.schema, e.0))
        })?;
        Ok((schema_type, parsed))
    }

    fn parsed_by_id(&self, id: i32) -> Result<Arc<dyn ParsedSchema>> {
        let store = self.store.read();
        self.parsed_by_id_locked(&store, id)
    }

    fn parsed_by_id_locked(&self, store: &Store, id: i32) -> Result<Arc<dyn ParsedSchema>> {
        if let Some(parsed) = self
            .parsed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
        {
            return Ok(parsed.clone());
        }
        let entry = store
            .id(id)
            .ok_or_else(|| RegistryError::schema_id_not_found(id))?;
        let references = resolve_references(store, &entry.references)?;
        let parsed: Arc<dyn ParsedSchema> =
            schema::parse(entry.schema_type, &entry.schema, &references)
                .map_err(|e| {
                    RegistryError::store(format!("stored schema {id} does not parse: {}", e.0))
                })?
                .into();
        self.parsed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, parsed.clone());
        Ok(parsed)
    }
}

fn type_field(schema_type: SchemaType) -> Option<String> {
    (schema_type != SchemaType::Avro).then(|| schema_type.name().to_string())
}

fn global_mode(store: &Store) -> Mode {
    store
        .mode(None)
        .and_then(Mode::parse)
        .unwrap_or(Mode::ReadWrite)
}

/// The mode that applies to `subject`: a global READONLY_OVERRIDE, else the subject's own,
/// else the global one.
fn effective_mode(store: &Store, subject: &str) -> Mode {
    let global = global_mode(store);
    if global == Mode::ReadOnlyOverride {
        return global;
    }
    store
        .mode(Some(subject))
        .and_then(Mode::parse)
        .unwrap_or(global)
}

/// Confluent refuses subjects with control characters and the reserved `__GLOBAL` /
/// `__EMPTY` context names; an empty subject cannot be routed.
fn validate_subject(subject: &str) -> Result<()> {
    if subject.is_empty()
        || subject.chars().any(char::is_control)
        || subject == "__GLOBAL"
        || subject == "__EMPTY"
    {
        return Err(RegistryError::invalid_subject(subject));
    }
    Ok(())
}

fn resolve_version<'a>(
    store: &'a Store,
    subject: &str,
    version: VersionSpec,
    deleted: bool,
) -> Result<&'a SchemaValue> {
    let versions = store.versions(subject, deleted);
    if versions.is_empty() {
        return Err(RegistryError::subject_not_found(subject));
    }
    match version {
        VersionSpec::Latest => Ok(versions.last().expect("not empty")),
        VersionSpec::Number(number) => versions
            .into_iter()
            .find(|value| value.version == number)
            .ok_or_else(|| RegistryError::version_not_found(number)),
    }
}

/// Resolves references (and theirs), dependencies before dependents, each once.
fn resolve_references(
    store: &Store,
    references: &[SchemaReference],
) -> Result<Vec<ResolvedReference>> {
    let mut resolved = Vec::new();
    let mut seen = BTreeSet::new();
    for reference in references {
        resolve_into(store, reference, 0, &mut seen, &mut resolved)?;
    }
    Ok(resolved)
}

fn resolve_into(
    store: &Store,
    reference: &SchemaReference,
    depth: usize,
    seen: &mut BTreeSet<(String, i32)>,
    out: &mut Vec<ResolvedReference>,
) -> Result<()> {
    if depth > MAX_REFERENCE_DEPTH {
        return Err(RegistryError::invalid_schema(format!(
            "references nest deeper than {MAX_REFERENCE_DEPTH}"
        )));
    }
    let spec = if reference.version == -1 {
        VersionSpec::Latest
    } else {
        VersionSpec::Number(reference.version)
    };
    let value = resolve_version(store, &reference.subject, spec, false).map_err(|_| {
        RegistryError::invalid_schema(format!(
            "reference {} to subject {} version {} not found",
            reference.name, reference.subject, reference.version
        ))
    })?;
    if !seen.insert((value.subject.clone(), value.version)) {
        return Ok(());
    }
    for nested in &value.references {
        resolve_into(store, nested, depth + 1, seen, out)?;
    }
    out.push(ResolvedReference {
        name: reference.name.clone(),
        subject: value.subject.clone(),
        version: value.version,
        schema: value.schema.clone(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_specs() {
        assert_eq!(VersionSpec::parse("latest").unwrap(), VersionSpec::Latest);
        assert_eq!(VersionSpec::parse("-1").unwrap(), VersionSpec::Latest);
        assert_eq!(VersionSpec::parse("7").unwrap(), VersionSpec::Number(7));
        for bad in ["0", "-2", "x", "2147483648", ""] {
            assert_eq!(
                VersionSpec::parse(bad).unwrap_err().error_code,
                42202,
                "{bad}"
            );
        }
    }

    #[test]
    fn modes_parse_case_insensitively() {
        assert_eq!(Mode::parse("readonly"), Some(Mode::ReadOnly));
        assert_eq!(Mode::parse("IMPORT"), Some(Mode::Import));
        assert_eq!(Mode::parse("nope"), None);
    }
}
