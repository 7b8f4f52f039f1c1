//! Connect's `/admin/loggers` (KIP-495, KIP-976): the worker's log levels, read and
//! changed at runtime.
//!
//! Names are Connect's logger names: `root`, Java-style names (`org.apache.kafka.connect`
//! and below stand for this crate's `sluice_connect` target, `org.apache.kafka` for every
//! `sluice` crate), or tracing targets (`sluice_connect::worker`). Levels are Log4j's
//! (`OFF`, `FATAL`, `ERROR`, `WARN`, `INFO`, `DEBUG`, `TRACE`), mapped onto tracing's.
//! The binary that owns the subscriber installs an applier ([`install`]) that rebuilds
//! its filter from [`directives`]; without one (a library user with a subscriber of its
//! own) levels are only recorded.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock, PoisonError};

type Applier = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

struct Loggers {
    /// logger name -> (Log4j level, last modified, ms since the epoch).
    levels: BTreeMap<String, (String, Option<i64>)>,
    /// The filter the process started with (`RUST_LOG`), kept until the root is set.
    base: String,
    applier: Option<Applier>,
}

fn loggers() -> &'static Mutex<Loggers> {
    static LOGGERS: OnceLock<Mutex<Loggers>> = OnceLock::new();
    LOGGERS.get_or_init(|| {
        Mutex::new(Loggers {
            levels: BTreeMap::from([("root".to_string(), ("WARN".to_string(), None))]),
            base: "warn".to_string(),
            applier: None,
        })
    })
}

/// Log4j's level names, upper case; None for anything else.
pub fn parse_level(level: &str) -> Option<&'static str> {
    match level.trim().to_ascii_uppercase().as_str() {
        "OFF" => Some("OFF"),
        "FATAL" => Some("FATAL"),
        "ERROR" => Some("ERROR"),
        "WARN" => Some("WARN"),
        "INFO" => Some("INFO"),
        "DEBUG" => Some("DEBUG"),
        "TRACE" => Some("TRACE"),
        _ => None,
    }
}

fn tracing_level(level: &str) -> &'static str {
    match level {
        "OFF" => "off",
        "FATAL" | "ERROR" => "error",
        "WARN" => "warn",
        "INFO" => "info",
        "DEBUG" => "debug",
        _ => "trace",
    }
}

/// The tracing target a logger name stands for (None: the root, the default level).
fn target(name: &str) -> Option<String> {
    if name == "root" {
        return None;
    }
    if name.starts_with("org.apache.kafka.connect") {
        return Some("sluice_connect".into());
    }
    if name.starts_with("org.apache.kafka") {
        return Some("sluice".into());
    }
    Some(name.to_string())
}

/// The tracing filter the levels make: the root's level, then each logger's target.
pub fn directives() -> String {
    let loggers = loggers().lock().unwrap_or_else(PoisonError::into_inner);
    directives_of(&loggers.levels, &loggers.base)
}

fn directives_of(levels: &BTreeMap<String, (String, Option<i64>)>, base: &str) -> String {
    let mut out = match levels.get("root") {
        Some((root, Some(_))) => vec![tracing_level(root).to_string()],
        _ => vec![base.to_string()],
    };
    let mut targets: Vec<(String, &str)> = levels
        .iter()
        .filter_map(|(name, (level, _))| target(name).map(|t| (t, tracing_level(level))))
        .collect();
    // Broader names first, so a narrower one's level is the one that holds for it.
    targets.sort_by_key(|(t, _)| t.len());
    out.extend(targets.into_iter().map(|(t, l)| format!("{t}={l}")));
    out.join(",")
}

/// Installs the function that applies [`directives`] to the process's subscriber, with
/// the filter it started with (a bare level there is the root's).
pub fn install(base: &str, applier: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static) {
    let mut loggers = loggers().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(level) = parse_level(base) {
        loggers.levels.insert("root".into(), (level.into(), None));
    }
    loggers.base = base.to_string();
    loggers.applier = Some(Box::new(applier));
}

/// Every logger with a level set here, and the root: name -> (level, last modified).
pub fn all() -> BTreeMap<String, (String, Option<i64>)> {
    loggers()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .levels
        .clone()
}

/// One logger's level, for the loggers this worker knows (the root and those a level was
/// set for; Connect answers 404 for a logger Log4j has not created).
pub fn level(name: &str) -> Option<(String, Option<i64>)> {
    let loggers = loggers().lock().unwrap_or_else(PoisonError::into_inner);
    loggers.levels.get(name).cloned()
}

/// Sets `name` (and, as Log4j does, every logger set below it) to `level`; answers the
/// loggers changed.
pub fn set(name: &str, level: &str, now_ms: i64) -> Result<Vec<String>, String> {
    let level = parse_level(level).ok_or_else(|| format!("invalid log level '{level}'."))?;
    let mut loggers = loggers().lock().unwrap_or_else(PoisonError::into_inner);
    let mut changed: Vec<String> = loggers
        .levels
        .keys()
        .filter(|k| {
            name == "root"
                || k.as_str() == name
                || k.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("::"))
        })
        .cloned()
        .collect();
    if !changed.iter().any(|k| k == name) {
        changed.push(name.to_string());
    }
    for k in &changed {
        loggers
            .levels
            .insert(k.clone(), (level.to_string(), Some(now_ms)));
    }
    let filter = directives_of(&loggers.levels, &loggers.base);
    if let Some(apply) = &loggers.applier {
        apply(&filter)?;
    }
    changed.sort();
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_their_filter() {
        assert_eq!(parse_level("debug"), Some("DEBUG"));
        assert_eq!(parse_level("verbose"), None);
        let levels = BTreeMap::from([
            ("root".to_string(), ("INFO".to_string(), Some(0))),
            (
                "org.apache.kafka.connect".to_string(),
                ("DEBUG".to_string(), Some(1)),
            ),
            (
                "sluice_connect::group".to_string(),
                ("TRACE".to_string(), Some(2)),
            ),
        ]);
        assert_eq!(
            directives_of(&levels, "warn,sluice_broker=debug"),
            "info,sluice_connect=debug,sluice_connect::group=trace"
        );
        // Until the root is set, the filter the process started with stays.
        let mut unset = levels.clone();
        unset.insert("root".into(), ("WARN".into(), None));
        assert_eq!(
            directives_of(&unset, "warn,sluice_broker=debug"),
            "warn,sluice_broker=debug,sluice_connect=debug,sluice_connect::group=trace"
        );
    }

    #[test]
    fn set_changes_the_logger_and_those_below_it() {
        let changed = set("sluice_connect::test_only", "DEBUG", 5).unwrap();
        assert_eq!(changed, ["sluice_connect::test_only"]);
        set("sluice_connect::test_only::inner", "TRACE", 6).unwrap();
        let changed = set("sluice_connect::test_only", "WARN", 7).unwrap();
        assert_eq!(
            changed,
            [
                "sluice_connect::test_only",
                "sluice_connect::test_only::inner"
            ]
        );
        assert_eq!(
            level("sluice_connect::test_only::inner"),
            Some(("WARN".to_string(), Some(7)))
        );
        assert_eq!(level("sluice_connect::never_set"), None);
        assert!(set("x", "LOUD", 8).is_err());
    }
}
