//! Kafka's FileStream connectors (`connect-file`): a source that turns each line of a
//! file into a record with a string value, resuming from the byte position it committed
//! (source partition `{"filename":...}`, offset `{"position":...}`), and a sink that
//! appends each record's value, as Java's `String.valueOf` prints it, as a line.

use std::io::SeekFrom;

use serde_json::{Map, Value as Json};
use tokio::fs::{File, OpenOptions};
use tokio::io::{AsyncBufReadExt, AsyncSeekExt, AsyncWriteExt, BufReader};

use super::{
    BoxFuture, ConfigKeyDef, ConnectError, ConnectorPlugin, Errant, Kind, OffsetReader, SinkError,
    SinkTask, SourceTask,
};
use crate::data::{Record, Schema, Type, Value};
use crate::{ConfigError, Props};

const VERSION: &str = "4.1.1";
const FILE: &str = "file";
const TOPIC: &str = "topic";
const BATCH_SIZE: &str = "batch.size";
const DEFAULT_BATCH_SIZE: usize = 2000;

pub struct FileStreamSource;

impl ConnectorPlugin for FileStreamSource {
    fn class(&self) -> &'static str {
        "org.apache.kafka.connect.file.FileStreamSourceConnector"
    }

    fn task_class(&self) -> &'static str {
        "org.apache.kafka.connect.file.FileStreamSourceTask"
    }

    fn kind(&self) -> Kind {
        Kind::Source
    }

    fn exactly_once_support(&self) -> bool {
        // Lines and positions come from the file alone: replaying from a committed
        // position reads the same lines (Kafka's FileStreamSourceConnector says
        // SUPPORTED).
        true
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    fn config_keys(&self) -> Vec<ConfigKeyDef> {
        vec![
            ConfigKeyDef {
                name: FILE,
                ty: "STRING",
                default: None,
                required: false,
                importance: "HIGH",
                documentation: "Source filename. If not specified, the standard input will be used",
            },
            ConfigKeyDef {
                name: TOPIC,
                ty: "LIST",
                default: None,
                required: true,
                importance: "HIGH",
                documentation: "The topic to publish data to",
            },
            ConfigKeyDef {
                name: BATCH_SIZE,
                ty: "INT",
                default: Some("2000"),
                required: false,
                importance: "LOW",
                documentation: "The maximum number of records the source task can read from the file each time it is polled",
            },
        ]
    }

    fn validate(&self, config: &Props) -> Result<(), ConfigError> {
        let mut errors = ConfigError::default();
        match config.get(TOPIC).map(|t| t.trim()) {
            None => errors.push(ConfigError::missing(TOPIC)),
            Some(topic) => {
                let topics: Vec<&str> = topic.split(',').map(str::trim).collect();
                if topics.len() != 1 || topics[0].is_empty() {
                    errors.push(ConfigError::new(
                        TOPIC,
                        "'topic' in FileStreamSourceConnector configuration requires definition of a single topic",
                    ));
                }
            }
        }
        if let Some(size) = config.get(BATCH_SIZE)
            && size.trim().parse::<i32>().is_err()
        {
            errors.push(ConfigError::invalid(
                BATCH_SIZE,
                size,
                "Not a number of type INT",
            ));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn task_configs(&self, config: &Props, _max_tasks: u32) -> Vec<Props> {
        // Only one input stream makes sense; the task takes the connector's config, as
        // Kafka 4.1's does.
        vec![config.clone()]
    }

    fn source_task(&self) -> Option<Box<dyn SourceTask>> {
        Some(Box::new(FileSourceTask::default()))
    }
}

#[derive(Default)]
struct FileSourceTask {
    file: String,
    topic: String,
    batch_size: usize,
    reader: Option<BufReader<File>>,
    /// Byte position after the last line read.
    position: u64,
}

impl FileSourceTask {
    fn partition(&self) -> Map<String, Json> {
        let mut partition = Map::new();
        partition.insert("filename".into(), Json::String(self.file.clone()));
        partition
    }
}

impl SourceTask for FileSourceTask {
    fn start<'a>(
        &'a mut self,
        config: &'a Props,
        offsets: &'a dyn OffsetReader,
    ) -> BoxFuture<'a, Result<(), ConnectError>> {
        Box::pin(async move {
            self.file = config.get(FILE).cloned().ok_or_else(|| {
                ConnectError(
                    "reading the standard input is not supported by a Sluice worker: set 'file'"
                        .into(),
                )
            })?;
            self.topic = config.get(TOPIC).cloned().unwrap_or_default();
            self.batch_size = config
                .get(BATCH_SIZE)
                .and_then(|s| s.trim().parse().ok())
                .filter(|n: &usize| *n > 0)
                .unwrap_or(DEFAULT_BATCH_SIZE);
            if let Some(offset) = offsets.offset(&self.partition()) {
                match offset.get("position") {
                    Some(Json::Number(n)) if n.as_u64().is_some() => {
                        self.position = n.as_u64().unwrap_or(0);
                    }
                    Some(other) => {
                        return Err(ConnectError(format!(
                            "Offset position is the incorrect type: {other}"
                        )));
                    }
                    None => {}
                }
            }
            tracing::debug!(file = %self.file, position = self.position, "file source starting");
            Ok(())
        })
    }

    fn poll(&mut self) -> BoxFuture<'_, Result<Vec<Record>, ConnectError>> {
        Box::pin(async move {
            if self.reader.is_none() {
                // The file may not exist yet: Connect's task waits for it.
                match File::open(&self.file).await {
                    Ok(mut file) => {
                        file.seek(SeekFrom::Start(self.position))
                            .await
                            .map_err(|e| {
                                ConnectError(format!("Error seeking in {}: {e}", self.file))
                            })?;
                        self.reader = Some(BufReader::new(file));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        return Ok(Vec::new());
                    }
                    Err(e) => {
                        return Err(ConnectError(format!("Couldn't open {}: {e}", self.file)));
                    }
                }
            }
            let partition = self.partition();
            let reader = self.reader.as_mut().expect("opened above");
            let mut records = Vec::new();
            let mut line = Vec::new();
            while records.len() < self.batch_size {
                line.clear();
                let read = reader
                    .read_until(b'\n', &mut line)
                    .await
                    .map_err(|e| ConnectError(format!("Error reading {}: {e}", self.file)))?;
                if read == 0 {
                    break;
                }
                if line.last() != Some(&b'\n') {
                    // A partial line: read it again once it is complete.
                    reader
                        .seek(SeekFrom::Start(self.position))
                        .await
                        .map_err(|e| {
                            ConnectError(format!("Error seeking in {}: {e}", self.file))
                        })?;
                    break;
                }
                self.position += read as u64;
                let mut text = &line[..line.len() - 1];
                if text.last() == Some(&b'\r') {
                    text = &text[..text.len() - 1];
                }
                let mut offset = Map::new();
                offset.insert("position".into(), Json::from(self.position));
                let mut record = Record::new(
                    self.topic.clone(),
                    Some(Schema::new(Type::String).into()),
                    Value::String(String::from_utf8_lossy(text).into_owned()),
                );
                record.source_partition = Some(partition.clone());
                record.source_offset = Some(offset);
                records.push(record);
            }
            if records.is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Ok(records)
        })
    }
}

pub struct FileStreamSink;

impl ConnectorPlugin for FileStreamSink {
    fn class(&self) -> &'static str {
        "org.apache.kafka.connect.file.FileStreamSinkConnector"
    }

    fn task_class(&self) -> &'static str {
        "org.apache.kafka.connect.file.FileStreamSinkTask"
    }

    fn kind(&self) -> Kind {
        Kind::Sink
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    fn config_keys(&self) -> Vec<ConfigKeyDef> {
        vec![ConfigKeyDef {
            name: FILE,
            ty: "STRING",
            default: None,
            required: false,
            importance: "HIGH",
            documentation: "Destination filename. If not specified, the standard output will be used",
        }]
    }

    fn validate(&self, _config: &Props) -> Result<(), ConfigError> {
        Ok(())
    }

    fn task_configs(&self, config: &Props, max_tasks: u32) -> Vec<Props> {
        (0..max_tasks.max(1)).map(|_| config.clone()).collect()
    }

    fn sink_task(&self) -> Option<Box<dyn SinkTask>> {
        Some(Box::new(FileSinkTask { out: None }))
    }
}

struct FileSinkTask {
    out: Option<File>,
}

impl SinkTask for FileSinkTask {
    fn start<'a>(&'a mut self, config: &'a Props) -> BoxFuture<'a, Result<(), ConnectError>> {
        Box::pin(async move {
            let file = config.get(FILE).ok_or_else(|| {
                ConnectError("writing to the standard output is not supported by a Sluice worker: set 'file'".into())
            })?;
            let out = OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .await
                .map_err(|e| {
                    ConnectError(format!(
                        "Couldn't find or create file '{file}' for FileStreamSinkTask: {e}"
                    ))
                })?;
            self.out = Some(out);
            Ok(())
        })
    }

    fn put<'a>(
        &'a mut self,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Vec<Errant>, SinkError>> {
        Box::pin(async move {
            let out = self
                .out
                .as_mut()
                .ok_or_else(|| ConnectError("not started".into()))?;
            let mut text = String::new();
            for record in records {
                text.push_str(&record.value.to_string());
                text.push('\n');
            }
            out.write_all(text.as_bytes())
                .await
                .map_err(|e| ConnectError(format!("Error writing the sink file: {e}")))?;
            Ok(Vec::new())
        })
    }

    fn flush(&mut self) -> BoxFuture<'_, Result<(), SinkError>> {
        Box::pin(async move {
            if let Some(out) = self.out.as_mut() {
                out.flush()
                    .await
                    .and(out.sync_data().await)
                    .map_err(|e| ConnectError(format!("Error flushing the sink file: {e}")))?;
            }
            Ok(())
        })
    }
}
