//! Protobuf in Confluent's wire format: [`ProtobufSerializer`] writes a
//! `prost_reflect::DynamicMessage` as the frame, the message indexes of its type in its
//! file, and the message's encoding; [`ProtobufDeserializer`] rebuilds the writer's file
//! from the registry and decodes to a `DynamicMessage` of the indexed type.
//!
//! What the serializer registers: the message's file as a base64 serialized
//! `FileDescriptorProto`, the form Confluent's Python serializer registers and every
//! Confluent-compatible registry accepts for PROTOBUF (no `.proto` printer needed). Each
//! imported file is registered first under a subject named by its path, and referenced
//! by that path (Confluent's default reference subject name strategy); the files every
//! reader has ([`crate::known_types`]) are skipped when `skip.known.types`.
//!
//! What the deserializer asks for: the schema by id with `format=serialized` (base64
//! `FileDescriptorProto`) and each reference likewise; a registry that answers `.proto`
//! text instead is served too (the text is compiled with protox). The built file is kept
//! per id.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use prost::Message;
use prost_reflect::{DynamicMessage, FileDescriptor, MessageDescriptor, ReflectMessage};
use protox::file::{ChainFileResolver, File, FileResolver};

use super::strategy::SubjectNameStrategy;
use super::wire::{
    HEADER_BYTES, read_header, read_message_indexes, write_header, write_message_indexes,
};
use super::{
    MAX_REFERENCE_DEPTH, PARSED_SCHEMA_CACHE_CAPACITY, SerdeError, SerializerConfig, expect_type,
    lock, resolve_references, schema_id,
};
use crate::client::{BoundedCache, Schema, SchemaReference, SchemaRegistryClient, SchemaType};

/// The `format` of `GET /schemas/ids/{id}` that answers a base64 `FileDescriptorProto`.
pub const SERIALIZED_FORMAT: &str = "serialized";

/// The message indexes of `message` in its file: its position among the file's top-level
/// messages, then among each enclosing message's nested ones.
pub fn message_indexes(message: &MessageDescriptor) -> Vec<i32> {
    // The descriptor's path is [4, i] for a top-level message (field 4 of
    // FileDescriptorProto, `message_type`) and [.., 3, j] for each nesting (field 3 of
    // DescriptorProto, `nested_type`): the indexes are every second element.
    message.path().iter().skip(1).step_by(2).copied().collect()
}

/// The message at `indexes` in `file`.
pub fn message_at(file: &FileDescriptor, indexes: &[i32]) -> Option<MessageDescriptor> {
    let (&first, rest) = indexes.split_first()?;
    let mut message = file.messages().nth(usize::try_from(first).ok()?)?;
    for &index in rest {
        let child = message.child_messages().nth(usize::try_from(index).ok()?)?;
        message = child;
    }
    Some(message)
}

/// A file as the registry stores it for PROTOBUF: base64 of its `FileDescriptorProto`.
pub fn serialized_file(file: &FileDescriptor) -> String {
    BASE64.encode(file.file_descriptor_proto().encode_to_vec())
}

/// Writes `DynamicMessage`s in Confluent's wire format.
#[derive(Debug)]
pub struct ProtobufSerializer {
    client: SchemaRegistryClient,
    strategy: Box<dyn SubjectNameStrategy>,
    is_key: bool,
    config: SerializerConfig,
    /// (subject, file name, message full name) → the id to frame with.
    ids: Mutex<BoundedCache<(String, String, String), i32>>,
}

impl ProtobufSerializer {
    pub fn new(
        client: SchemaRegistryClient,
        strategy: impl SubjectNameStrategy + 'static,
        is_key: bool,
    ) -> ProtobufSerializer {
        ProtobufSerializer {
            client,
            strategy: Box::new(strategy),
            is_key,
            config: SerializerConfig::default(),
            ids: Mutex::new(BoundedCache::new(PARSED_SCHEMA_CACHE_CAPACITY)),
        }
    }

    pub fn with_config(
        mut self,
        config: SerializerConfig,
    ) -> Result<ProtobufSerializer, SerdeError> {
        config.validate()?;
        self.config = config;
        Ok(self)
    }

    /// The subject a message of this type for `topic` is registered under.
    pub fn subject(&self, topic: &str, message: &MessageDescriptor) -> Result<String, SerdeError> {
        self.strategy
            .subject(topic, self.is_key, Some(message.full_name()))
    }

    /// `message` framed for `topic`: registers its file (and imports) on first use.
    pub async fn serialize(
        &self,
        topic: &str,
        message: &DynamicMessage,
    ) -> Result<Vec<u8>, SerdeError> {
        let descriptor = message.descriptor();
        let id = self.schema_id(topic, &descriptor).await?;
        let indexes = message_indexes(&descriptor);
        let mut buffer = Vec::with_capacity(HEADER_BYTES + 1 + message.encoded_len());
        write_header(&mut buffer, id);
        write_message_indexes(&mut buffer, &indexes);
        message
            .encode(&mut buffer)
            .map_err(|e| SerdeError::Protobuf(e.to_string()))?;
        Ok(buffer)
    }

    async fn schema_id(
        &self,
        topic: &str,
        descriptor: &MessageDescriptor,
    ) -> Result<i32, SerdeError> {
        let subject = self.subject(topic, descriptor)?;
        let file = descriptor.parent_file();
        let key = (
            subject.clone(),
            file.name().to_string(),
            descriptor.full_name().to_string(),
        );
        if let Some(id) = lock(&self.ids).get(&key) {
            return Ok(id);
        }
        let id = if self.config.use_latest_version {
            let latest = self.client.get_latest(&subject).await?;
            expect_type(latest.id, &latest.schema, SchemaType::Protobuf)?;
            latest.id
        } else {
            let references = self.register_dependencies(&file).await?;
            let schema = Schema::new(SchemaType::Protobuf, serialized_file(&file))
                .with_references(references);
            schema_id(&self.client, &self.config, &subject, &schema).await?
        };
        lock(&self.ids).insert(key, id);
        Ok(id)
    }

    /// Registers (or looks up) every file `file` imports, transitively, each under the
    /// subject named by its path; answers `file`'s references.
    async fn register_dependencies(
        &self,
        file: &FileDescriptor,
    ) -> Result<Vec<SchemaReference>, SerdeError> {
        // Files in dependency order (imports before importers), each once, then registered
        // in that order so each file's references are known when it is registered.
        let mut ordered: Vec<FileDescriptor> = Vec::new();
        let mut stack: Vec<(FileDescriptor, usize, bool)> = vec![(file.clone(), 0, false)];
        while let Some((current, depth, expanded)) = stack.pop() {
            if depth > MAX_REFERENCE_DEPTH {
                return Err(SerdeError::References(format!(
                    "imports nest deeper than {MAX_REFERENCE_DEPTH} at {}",
                    current.name()
                )));
            }
            if ordered.iter().any(|done| done.name() == current.name()) {
                continue;
            }
            if expanded {
                ordered.push(current);
                continue;
            }
            let imports: Vec<FileDescriptor> = current
                .dependencies()
                .filter(|import| !self.skipped(import))
                .collect();
            stack.push((current, depth, true));
            for import in imports.into_iter().rev() {
                stack.push((import, depth + 1, false));
            }
        }
        let mut versions: HashMap<String, i32> = HashMap::new();
        let mut references = Vec::new();
        for current in &ordered {
            references = self.references_of(current, &versions);
            if current.name() == file.name() {
                break;
            }
            let subject = current.name().to_string();
            let schema = Schema::new(SchemaType::Protobuf, serialized_file(current))
                .with_references(references.clone());
            if self.config.auto_register_schemas {
                self.client
                    .register(&subject, &schema, self.config.normalize_schemas)
                    .await?;
            }
            let found = self
                .client
                .lookup(&subject, &schema, self.config.normalize_schemas)
                .await?;
            versions.insert(subject, found.version);
        }
        Ok(references)
    }

    fn skipped(&self, file: &FileDescriptor) -> bool {
        self.config.skip_known_types && crate::known_types::is_known(file.name())
    }

    /// The references of `file` to its (already registered) imports.
    fn references_of(
        &self,
        file: &FileDescriptor,
        versions: &HashMap<String, i32>,
    ) -> Vec<SchemaReference> {
        file.dependencies()
            .filter(|import| !self.skipped(import))
            .map(|import| SchemaReference {
                name: import.name().to_string(),
                subject: import.name().to_string(),
                version: *versions
                    .get(import.name())
                    .expect("imports are registered before their importers"),
            })
            .collect()
    }
}

/// Reads `DynamicMessage`s in Confluent's wire format.
#[derive(Debug)]
pub struct ProtobufDeserializer {
    client: SchemaRegistryClient,
    /// The writer's file by schema id.
    files: Mutex<BoundedCache<i32, FileDescriptor>>,
}

impl ProtobufDeserializer {
    pub fn new(client: SchemaRegistryClient) -> ProtobufDeserializer {
        ProtobufDeserializer {
            client,
            files: Mutex::new(BoundedCache::new(PARSED_SCHEMA_CACHE_CAPACITY)),
        }
    }

    /// Decodes a framed record to a message of the type its indexes name.
    pub async fn deserialize(&self, payload: &[u8]) -> Result<DynamicMessage, SerdeError> {
        let (id, rest) = read_header(payload)?;
        let (indexes, encoded) = read_message_indexes(rest)?;
        let file = self.file(id).await?;
        let descriptor =
            message_at(&file, &indexes).ok_or(SerdeError::UnknownMessage { id, indexes })?;
        DynamicMessage::decode(descriptor, encoded).map_err(|e| SerdeError::Protobuf(e.to_string()))
    }

    /// The file of schema `id`, built with its references.
    pub async fn file(&self, id: i32) -> Result<FileDescriptor, SerdeError> {
        if let Some(file) = lock(&self.files).get(&id) {
            return Ok(file);
        }
        let schema = self
            .client
            .get_schema_by_id_in_format(id, SERIALIZED_FORMAT)
            .await?;
        expect_type(id, &schema, SchemaType::Protobuf)?;
        let references = resolve_references(&self.client, &schema.references).await?;
        let mut imports = Vec::with_capacity(references.len());
        for reference in references {
            expect_type(
                reference.version.id,
                &reference.version.schema,
                SchemaType::Protobuf,
            )?;
            let serialized = self
                .client
                .get_schema_by_id_in_format(reference.version.id, SERIALIZED_FORMAT)
                .await?;
            imports.push((reference.name, serialized.schema.clone()));
        }
        let file = build_file(&format!("schema-{id}.proto"), &schema.schema, &imports)?;
        lock(&self.files).insert(id, file.clone());
        Ok(file)
    }
}

/// Builds the file `schema` (base64 `FileDescriptorProto` or `.proto` text) with its
/// imports (`(import path, schema)`); `fallback_name` names it when it carries no name.
pub fn build_file(
    fallback_name: &str,
    schema: &str,
    imports: &[(String, String)],
) -> Result<FileDescriptor, SerdeError> {
    let mut files = HashMap::new();
    for (name, text) in imports {
        let file = match decode_descriptor(text) {
            Some(file) if file.name() == name => file,
            Some(file) => rename(file, name),
            None => parse_text(name, text)?,
        };
        files.entry(name.clone()).or_insert(file);
    }
    let root = match decode_descriptor(schema) {
        Some(file) if !file.name().is_empty() => file,
        Some(file) => rename(file, fallback_name),
        None => parse_text(fallback_name, schema)?,
    };
    let root_name = root.name().to_string();
    files.insert(root_name.clone(), root);

    let mut resolver = ChainFileResolver::new();
    resolver.add(InMemoryFiles(files));
    resolver.add(crate::known_types::KnownTypesResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler
        .open_file(&root_name)
        .map_err(|e| SerdeError::InvalidSchema(e.to_string()))?;
    compiler
        .descriptor_pool()
        .get_file_by_name(&root_name)
        .ok_or_else(|| SerdeError::InvalidSchema(format!("{root_name} did not compile")))
}

/// A schema string that is a base64 `FileDescriptorProto` (`.proto` text never is: it
/// has spaces and quotes, which base64 does not).
fn decode_descriptor(schema: &str) -> Option<File> {
    let bytes = BASE64.decode(schema.trim()).ok()?;
    File::decode_file_descriptor_proto(bytes.as_slice()).ok()
}

fn parse_text(name: &str, text: &str) -> Result<File, SerdeError> {
    File::from_source(name, text).map_err(|e| SerdeError::InvalidSchema(e.to_string()))
}

fn rename(file: File, name: &str) -> File {
    let mut descriptor = file.file_descriptor_proto().clone();
    descriptor.name = Some(name.to_string());
    File::from_file_descriptor_proto(descriptor)
}

/// Files by import path.
struct InMemoryFiles(HashMap<String, File>);

impl FileResolver for InMemoryFiles {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| protox::Error::file_not_found(name))
    }
}
