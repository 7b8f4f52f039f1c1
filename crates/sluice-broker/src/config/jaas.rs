//! A listener's SASL settings, and the JAAS configuration text they are read from
//! (`listener.name.<listener>.<mechanism>.sasl.jaas.config`, as Kafka's `JaasConfig`
//! parses it).

use std::collections::BTreeMap;

/// A listener's SASL settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerSasl {
    /// The mechanisms the listener enables, in the configured order (the names are
    /// echoed to clients as configured, known or not, as Kafka does).
    pub enabled_mechanisms: Vec<String>,
    /// PLAIN's users: name → password.
    pub plain_users: BTreeMap<String, String>,
}

/// One option-bearing module of a JAAS configuration text
/// (`<class> <flag> key="value" ...;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasModule {
    pub class: String,
    pub flag: String,
    pub options: BTreeMap<String, String>,
}

/// Parses a `sasl.jaas.config` value as Kafka's `JaasConfig` does: one or more
/// `<login module class> <required|requisite|sufficient|optional> [key=value ...];`,
/// values bare or double-quoted (with `\"` and `\\` escapes).
pub fn parse_jaas(text: &str) -> Result<Vec<JaasModule>, String> {
    let mut chars = text.chars().peekable();
    let mut modules = Vec::new();
    let skip_space = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
    };
    let word = |chars: &mut std::iter::Peekable<std::str::Chars>| -> String {
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == '=' || c == ';' || c == '"' {
                break;
            }
            word.push(c);
            chars.next();
        }
        word
    };
    loop {
        skip_space(&mut chars);
        if chars.peek().is_none() {
            break;
        }
        let class = word(&mut chars);
        skip_space(&mut chars);
        let flag = word(&mut chars);
        if class.is_empty() || flag.is_empty() {
            return Err("expected a login module class and a control flag".into());
        }
        if !["required", "requisite", "sufficient", "optional"].contains(&flag.as_str()) {
            return Err(format!("invalid control flag {flag:?}"));
        }
        let mut options = BTreeMap::new();
        loop {
            skip_space(&mut chars);
            match chars.peek() {
                Some(';') => {
                    chars.next();
                    break;
                }
                None => return Err("a login module must end with ';'".into()),
                _ => {}
            }
            let key = word(&mut chars);
            if key.is_empty() || chars.next() != Some('=') {
                return Err(format!("expected key=value after {class}"));
            }
            let value = if chars.peek() == Some(&'"') {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some('\\') => match chars.next() {
                            Some(c) => value.push(c),
                            None => return Err("unterminated quoted value".into()),
                        },
                        Some('"') => break,
                        Some(c) => value.push(c),
                        None => return Err("unterminated quoted value".into()),
                    }
                }
                value
            } else {
                word(&mut chars)
            };
            options.insert(key, value);
        }
        modules.push(JaasModule {
            class,
            flag,
            options,
        });
    }
    if modules.is_empty() {
        return Err("no login module".into());
    }
    Ok(modules)
}

/// The `PLAIN` users a JAAS configuration declares (`user_<name>="<password>"`).
pub fn plain_users(modules: &[JaasModule]) -> BTreeMap<String, String> {
    modules
        .iter()
        .flat_map(|m| m.options.iter())
        .filter_map(|(key, value)| Some((key.strip_prefix("user_")?.to_string(), value.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin"
        password="admin-secret"
        user_admin="admin-secret"
        user_alice="al\"ice";"#;

    #[test]
    fn a_jaas_config_is_read_as_kafka_reads_it() {
        let modules = parse_jaas(JAAS).unwrap();
        assert_eq!(modules.len(), 1);
        assert_eq!(
            modules[0].class,
            "org.apache.kafka.common.security.plain.PlainLoginModule"
        );
        assert_eq!(modules[0].flag, "required");
        assert_eq!(modules[0].options["username"], "admin");
        let users = plain_users(&modules);
        assert_eq!(users.len(), 2);
        assert_eq!(users["alice"], "al\"ice");
        for bad in [
            "",
            "Module required user_a=\"x\"",
            "Module sometimes;",
            "Module required key;",
            "Module required key=\"open;",
        ] {
            assert!(parse_jaas(bad).is_err(), "{bad:?}");
        }
    }
}
