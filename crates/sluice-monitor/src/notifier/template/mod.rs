//! Burrow's notifier templates: a Go `text/template` engine for the subset Burrow's
//! shipped templates (`config/default-*.tmpl`) and the usual user templates need, over
//! the data Burrow passes them.
//!
//! A template sees what Burrow's `executeTemplate` passes: `.Cluster`, `.Group`, `.ID`
//! (the incident's id), `.Start` (when it began, a Go `time.Time`), `.Extras` (the
//! notifier's `extras` table) and `.Result`, the group's status with Burrow's Go field
//! names (`.Result.Status`, `.Result.TotalLag`, `.Result.Partitions`, `.Result.Maxlag`,
//! `.Result.Complete`, `.Result.TotalPartitions`; each partition's `.Topic`,
//! `.Partition`, `.Status`, `.Start`/`.End` offsets, `.CurrentLag`, ...).
//!
//! What is not Go: a template is checked against that data when it is loaded, so a
//! misspelt field (Burrow's own `default-http-delete.tmpl` asks for `.Id`, which Burrow
//! does not have) is a configuration error at startup rather than a failed alert at 3 am;
//! times print in UTC; where Go would print a pointer's address, the pointee prints.
//! Supported: actions, `{{- -}}` trimming, comments, `if`/`else if`/`else`, `range` (with
//! `else`, one or two variables, `break`, `continue`), `with`/`else with`, `$x :=` and
//! `$x =`, pipelines, parentheses, methods (`.Start.Format "..."`, `.Status.String`), the
//! builtins and Burrow's helpers listed in `functions`. Not supported, refused at load:
//! `define`, `template`, `block`, `call`.
//!
//! The pieces: `parse` (lexer and parser), `check` (the load-time type check),
//! `exec` (the render), `value` (types and values), `functions`, `format` (Go's
//! `fmt` and `encoding/json` text forms) and `time` (Go's time layouts).

mod check;
mod exec;
mod format;
mod functions;
mod parse;
mod time;
mod value;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use crate::types::GroupStatus;

pub use parse::Position;

/// A template file larger than this is refused; Burrow's largest is under 1 KiB.
pub const TEMPLATE_SOURCE_BYTES_MAX: u64 = 256 * 1024;

/// What a template renders: Burrow's notifier data.
#[derive(Clone, Copy, Debug)]
pub struct TemplateData<'a> {
    pub cluster: &'a str,
    pub group: &'a str,
    /// The incident's id; empty when there is none (a notifier whose threshold is OK
    /// notifies about healthy groups too).
    pub id: &'a str,
    /// When the incident began; `None` prints as Go's zero time.
    pub start: Option<SystemTime>,
    pub extras: &'a BTreeMap<String, String>,
    pub result: &'a GroupStatus,
}

impl TemplateData<'_> {
    fn start_time(&self) -> time::GoTime {
        self.start
            .map_or(time::GoTime::ZERO, time::GoTime::from_system_time)
    }
}

/// An email's `Date:` header value (RFC 5322), in UTC.
pub(crate) fn rfc5322_date(time: SystemTime) -> String {
    time::GoTime::from_system_time(time).format("Mon, 02 Jan 2006 15:04:05 -0700")
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("template {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("template {path}: {size} bytes is more than the {max} a template may have")]
    TooLarge { path: String, size: u64, max: u64 },
    /// The source does not parse, or does not fit Burrow's data (an unknown field, a
    /// function given the wrong arguments).
    #[error("template {name}:{}:{}: {message}", position.line, position.column)]
    Invalid {
        name: String,
        position: Position,
        message: String,
    },
    /// The render failed: a nil pointer (a partition with no commits yet), an index out
    /// of range, a division by zero, a limit reached.
    #[error("template {name}:{}:{}: executing {message}", position.line, position.column)]
    Execute {
        name: String,
        position: Position,
        message: String,
    },
}

/// A parsed and checked template.
#[derive(Clone, Debug)]
pub struct Template {
    name: String,
    nodes: Vec<parse::Node>,
}

impl Template {
    /// Parses `source` and checks it against Burrow's notifier data. `name` is used in
    /// error messages.
    pub fn parse(name: impl Into<String>, source: &str) -> Result<Template, TemplateError> {
        let name = name.into();
        let invalid = |error: parse::Located| TemplateError::Invalid {
            name: name.clone(),
            position: error.position,
            message: error.message,
        };
        let nodes = parse::parse(source).map_err(invalid)?;
        check::check(&nodes).map_err(invalid)?;
        Ok(Template { name, nodes })
    }

    /// Reads and parses a template file (Burrow's `template-open`/`template-close`).
    pub fn load(path: &Path) -> Result<Template, TemplateError> {
        let name = path.display().to_string();
        let read_error = |source| TemplateError::Read {
            path: name.clone(),
            source,
        };
        let size = std::fs::metadata(path).map_err(read_error)?.len();
        if size > TEMPLATE_SOURCE_BYTES_MAX {
            return Err(TemplateError::TooLarge {
                path: name,
                size,
                max: TEMPLATE_SOURCE_BYTES_MAX,
            });
        }
        let source = std::fs::read_to_string(path).map_err(read_error)?;
        Template::parse(name, &source)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn render(&self, data: &TemplateData<'_>) -> Result<String, TemplateError> {
        exec::execute(&self.nodes, data).map_err(|error| TemplateError::Execute {
            name: self.name.clone(),
            position: error.position,
            message: error.message,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::{ConsumerOffset, PartitionStatus, Status};
    use std::time::{Duration, UNIX_EPOCH};

    fn offset(offset: i64, timestamp: i64, lag: Option<u64>) -> Option<ConsumerOffset> {
        Some(ConsumerOffset {
            offset,
            order: offset,
            timestamp,
            observed_at: timestamp + 5,
            lag,
        })
    }

    /// A lagging group: one partition falling behind, one stopped, one that never
    /// committed (nil start and end), and Burrow's sample extras.
    pub(crate) fn fixture() -> (GroupStatus, BTreeMap<String, String>) {
        let warn = PartitionStatus {
            topic: "orders".to_string(),
            partition: 0,
            owner: "consumer-1/10.0.0.1".to_string(),
            client_id: "client-1".to_string(),
            status: Status::Warning,
            start: offset(100, 1_351_807_000_000, Some(5)),
            end: offset(160, 1_351_807_700_000, Some(45)),
            current_lag: 50,
            complete: 1.0,
        };
        let stop = PartitionStatus {
            topic: "payments".to_string(),
            partition: 3,
            owner: String::new(),
            client_id: String::new(),
            status: Status::Stop,
            start: offset(7, 1_351_806_000_000, None),
            end: offset(7, 1_351_806_500_000, Some(1200)),
            current_lag: 1250,
            complete: 0.7,
        };
        let status = GroupStatus {
            cluster: "local".to_string(),
            group: "billing".to_string(),
            status: Status::Error,
            complete: 0.5,
            partitions: vec![warn, stop.clone()],
            total_partitions: 4,
            maxlag: Some(stop),
            totallag: 1300,
        };
        let extras = [
            ("api_key", "REDACTED"),
            ("app", "burrow"),
            ("tier", "STG"),
            ("fabric", "mydc"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
        (status, extras)
    }

    pub(crate) fn start() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_351_807_721)
    }

    fn render(source: &str) -> Result<String, TemplateError> {
        let (status, extras) = fixture();
        let data = TemplateData {
            cluster: "local",
            group: "billing",
            id: "7f1c6b1e-2f6d-4e0a-9b1e-1f2a3b4c5d6e",
            start: Some(start()),
            extras: &extras,
            result: &status,
        };
        Template::parse("test", source)?.render(&data)
    }

    fn burrow_template(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/burrow-templates")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    /// Cases whose Go result is an error only at execution, with values in hand.
    const RENDER_ERRORS: &[&str] = &["err_divide_zero", "err_index_range"];

    /// Every case in `tests/data/go-template-cases.json` renders to exactly what Go's
    /// text/template printed for the same data (`tests/data/go-template-oracle`), Burrow's
    /// shipped templates included; where Go failed, Sluice fails too, at load unless the
    /// failure needs the values.
    #[test]
    fn templates_render_as_go_renders_them() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/go-template-cases.json");
        let text = std::fs::read_to_string(&path).expect("the cases file is there");
        let cases: BTreeMap<String, BTreeMap<String, String>> =
            serde_json::from_str(&text).expect("the cases file is JSON");
        assert!(cases.len() > 60, "{} cases", cases.len());
        for (name, case) in &cases {
            let source = match (case.get("template"), case.get("file")) {
                (Some(source), _) => source.clone(),
                (None, Some(file)) => burrow_template(file),
                (None, None) => panic!("{name}: neither template nor file"),
            };
            let go = &case["go"];
            if go.starts_with("ERROR:") {
                let parsed = Template::parse(name.as_str(), &source);
                if RENDER_ERRORS.contains(&name.as_str()) {
                    let error = render(&source).expect_err(name);
                    assert!(
                        matches!(error, TemplateError::Execute { .. }),
                        "{name}: {error}"
                    );
                } else {
                    let error = parsed.expect_err(name);
                    assert!(
                        matches!(error, TemplateError::Invalid { .. }),
                        "{name}: {error}"
                    );
                }
                continue;
            }
            match render(&source) {
                Ok(rendered) => assert_eq!(&rendered, go, "{name}: {source}"),
                Err(error) => panic!("{name}: {error}\n{source}"),
            }
        }
    }

    #[test]
    fn burrows_close_template_is_refused_naming_the_field_meant() {
        let error = Template::parse(
            "default-http-delete.tmpl",
            &burrow_template("default-http-delete.tmpl"),
        )
        .expect_err("Burrow's data has no .Id");
        assert_eq!(
            error.to_string(),
            "template default-http-delete.tmpl:1:97: at <.Id>: can't evaluate field Id in type \
             notifier data (it has Cluster, Group, ID, Start, Extras, Result); did you mean ID?"
        );
        // With the field Burrow meant, it renders.
        let fixed = burrow_template("default-http-delete.tmpl").replace(".Id", ".ID");
        assert_eq!(
            render(&fixed).expect("renders"),
            "{\"api_key\":\"REDACTED\",\"app\":\"burrow\",\"block\":false,\
             \"ids\":[\"7f1c6b1e-2f6d-4e0a-9b1e-1f2a3b4c5d6e\"]}\n"
        );
    }

    #[test]
    fn load_errors_say_what_and_where() {
        let cases: &[(&str, &str)] = &[
            (
                "{{.Result.Totallag}}",
                "1:2: at <.Result.Totallag>: can't evaluate field Totallag in type protocol.ConsumerGroupStatus (it has Cluster, Group, Status, Complete, Partitions, TotalPartitions, Maxlag, TotalLag); did you mean TotalLag?",
            ),
            (
                "{{range .Result.Partitions}}{{.Topc}}{{end}}",
                "1:30: at <.Topc>: can't evaluate field Topc in type *protocol.PartitionStatus",
            ),
            (
                "{{.Start.Format}}",
                "wrong number of args for Format: want 1 got 0",
            ),
            (
                "{{.Start.Format 3}}",
                "wrong type for value; expected string; got int",
            ),
            (
                "{{add 1 \"x\"}}",
                "error calling add: wrong type for value; expected int; got string",
            ),
            ("{{range .Group}}{{end}}", "range can't iterate over string"),
            ("{{$x}}", "undefined variable \"$x\""),
            (
                "{{if 1}}{{$x := 1}}{{end}}{{$x}}",
                "undefined variable \"$x\"",
            ),
            ("{{$x = 1}}", "undefined variable \"$x\""),
            ("{{.Group 1}}", "Group is not a method but has arguments"),
            ("{{nil}}", "nil is not a command"),
            ("{{1 2}}", "can't give argument to non-function 1"),
            (
                "{{topicsbystatus .Result}}",
                "expected []*protocol.PartitionStatus; got protocol.ConsumerGroupStatus",
            ),
            ("{{eq .Group}}", "missing argument for comparison"),
            ("{{lt .Group 1}}", "incompatible types for comparison"),
            (
                "{{index .Result.Partitions \"a\"}}",
                "expected int; got string",
            ),
            (
                "{{(index .Result.Partitions 0).Nope}}",
                "can't evaluate field Nope",
            ),
        ];
        for (source, expected) in cases {
            let error = Template::parse("t", source).expect_err(source).to_string();
            assert!(error.contains(expected), "{source}: {error}");
        }
    }

    #[test]
    fn render_errors_name_the_nil_and_the_limit() {
        let (mut status, extras) = fixture();
        status.partitions[0].start = None;
        let data = TemplateData {
            cluster: "local",
            group: "billing",
            id: "",
            start: None,
            extras: &extras,
            result: &status,
        };
        let template = Template::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/burrow-templates/default-email.tmpl"),
        )
        .expect("Burrow's email template loads");
        let error = template
            .render(&data)
            .expect_err("a partition without a start offset")
            .to_string();
        assert!(
            error.ends_with("default-email.tmpl:10:86: executing at <.Start.Timestamp>: nil pointer evaluating *protocol.ConsumerOffset.Timestamp"),
            "{error}"
        );
        let looping = Template::parse(
            "t",
            "{{range 1000}}{{range 1000}}{{range 10}}x{{end}}{{end}}{{end}}",
        )
        .expect("parses");
        let error = looping
            .render(&data)
            .expect_err("past the limits")
            .to_string();
        assert!(error.contains("more than"), "{error}");
        assert!(
            Template::parse("t", "{{.Start}}")
                .expect("parses")
                .render(&data)
                .expect("renders")
                == "0001-01-01 00:00:00 +0000 UTC"
        );
    }

    /// Where Go prints an address, Sluice prints the pointee.
    #[test]
    fn pointers_inside_structs_print_their_pointee() {
        let rendered = render("{{.Result.Maxlag}}").expect("renders");
        assert_eq!(
            rendered,
            "{payments 3   STOP &{7 7 1351806000000 1351806000005 <nil>} \
             &{7 7 1351806500000 1351806500005 &{1200}} 1250 0.7}"
        );
        assert_eq!(
            render("{{printf \"%+v\" (index .Result.Partitions 0).End}}").expect("renders"),
            "&{Offset:160 Order:160 Timestamp:1351807700000 ObservedTimestamp:1351807700005 Lag:&{Value:45}}"
        );
    }

    #[test]
    fn large_template_files_are_refused() {
        let directory = tempfile::tempdir().expect("a temp dir");
        let path = directory.path().join("big.tmpl");
        std::fs::write(&path, "x".repeat(TEMPLATE_SOURCE_BYTES_MAX as usize + 1)).expect("written");
        assert!(matches!(
            Template::load(&path),
            Err(TemplateError::TooLarge { .. })
        ));
        let missing = Template::load(&directory.path().join("missing.tmpl")).expect_err("no file");
        assert!(missing.to_string().contains("missing.tmpl"), "{missing}");
    }
}
