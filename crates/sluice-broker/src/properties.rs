//! Java's `.properties` format, as Kafka reads `server.properties` with
//! `java.util.Properties.load`: `key=value`, `key: value` or `key value`; `#` and `!`
//! comment lines; a backslash at the end of a line continues it; `\t \n \r \f \\ \uXXXX`
//! escapes; leading whitespace of keys and values ignored. A later line overrides an
//! earlier one with the same key.
//!
//! Bounds: the caller passes the text (a file it read); nothing here allocates more than
//! the text's size.

/// Why a properties text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertiesError {
    #[error("line {line}: malformed \\uXXXX escape")]
    MalformedUnicodeEscape { line: usize },
}

/// Parses `text` into (key, value) pairs in file order; duplicate keys are kept (the
/// caller lets the last win). Each pair carries the line it started on.
pub fn parse(text: &str) -> Result<Vec<(usize, String, String)>, PropertiesError> {
    let mut pairs = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, first)) = lines.next() {
        let line_number = index + 1;
        let trimmed = first.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines: a line ending in an odd number of backslashes.
        let mut logical = String::from(trimmed);
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let (key, value) = split_key_value(&logical);
        pairs.push((
            line_number,
            unescape(key, line_number)?,
            unescape(value, line_number)?,
        ));
    }
    Ok(pairs)
}

fn ends_with_continuation(line: &str) -> bool {
    line.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or whitespace; whitespace around the separator
/// is skipped.
fn split_key_value(line: &str) -> (&str, &str) {
    let bytes = line.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => break,
            _ => index += 1,
        }
    }
    let index = index.min(bytes.len());
    let key = &line[..index];
    let mut rest = line[index..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(after) = rest.strip_prefix(['=', ':']) {
        rest = after.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(text: &str, line: usize) -> Result<String, PropertiesError> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or(PropertiesError::MalformedUnicodeEscape { line })?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_properties_syntax() {
        let text = "# comment\n! also a comment\n\n  node.id=1\nlog.dirs : /data/a,\\\n    /data/b\nprocess.roles broker,controller\nkey\\=with\\:escapes = value with spaces  \nunicode=caf\\u00e9\nempty=\nnode.id=2\n";
        let pairs: Vec<(String, String)> = parse(text)
            .unwrap()
            .into_iter()
            .map(|(_, k, v)| (k, v))
            .collect();
        let expected = [
            ("node.id", "1"),
            ("log.dirs", "/data/a,/data/b"),
            ("process.roles", "broker,controller"),
            ("key=with:escapes", "value with spaces  "),
            ("unicode", "café"),
            ("empty", ""),
            ("node.id", "2"),
        ];
        assert_eq!(pairs.len(), expected.len());
        for ((key, value), (want_key, want_value)) in pairs.iter().zip(expected) {
            assert_eq!((key.as_str(), value.as_str()), (want_key, want_value));
        }
    }

    #[test]
    fn malformed_escape_is_an_error_with_its_line() {
        assert_eq!(
            parse("a=1\nb=\\u12").unwrap_err(),
            PropertiesError::MalformedUnicodeEscape { line: 2 }
        );
    }
}
