//! Topic patterns for `subscribe_pattern`: the subset of Java's `java.util.regex` that
//! topic subscriptions use, matched against the whole topic name as the Java consumer
//! does (`matcher(topic).matches()`).
//!
//! Why a small matcher here: the client crate depends on `sluice-protocol`, tokio and
//! kafka-protocol only, and topic names are short (at most 249 characters), so a
//! backtracking matcher over them costs nothing that matters. Supported: literals,
//! `.`, classes (`[a-z0-9_]`, `[^.]`), escapes (`\.`, `\d`, `\w`, `\s`), groups with
//! alternation (`(a|b)`, `(?:a|b)`), the quantifiers `*`, `+`, `?`, `{n}`, `{n,}`,
//! `{n,m}`, and the anchors `^` and `$`. Anything else is a clear error, never a
//! silently different match.

use crate::error::Error;

/// A compiled topic pattern.
#[derive(Debug, Clone)]
pub struct TopicPattern {
    source: String,
    alternatives: Vec<Vec<Node>>,
}

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    /// Ranges, and whether the class is negated.
    Class(Vec<(char, char)>, bool),
    Group(Vec<Vec<Node>>),
    Repeat(Box<Node>, usize, Option<usize>),
    Start,
    End,
}

/// A bound on repetition counts in `{n,m}`, so a pattern cannot ask for unbounded work.
const REPEAT_MAX: usize = 1_000;

impl TopicPattern {
    /// Compiles `source`; an unsupported construct is an [`Error::Config`].
    pub fn new(source: &str) -> Result<TopicPattern, Error> {
        let chars: Vec<char> = source.chars().collect();
        let mut parser = Parser {
            chars: &chars,
            at: 0,
            source,
        };
        let alternatives = parser.alternatives()?;
        if parser.at != chars.len() {
            return Err(parser.error("unbalanced ')'"));
        }
        Ok(TopicPattern {
            source: source.to_string(),
            alternatives,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `topic` matches.
    pub fn matches(&self, topic: &str) -> bool {
        let input: Vec<char> = topic.chars().collect();
        let group = Node::Group(self.alternatives.clone());
        match_nodes(std::slice::from_ref(&group), &input, 0, &mut |end| {
            end == input.len()
        })
    }
}

struct Parser<'a> {
    chars: &'a [char],
    at: usize,
    source: &'a str,
}

impl Parser<'_> {
    fn error(&self, reason: &str) -> Error {
        Error::Config(format!(
            "topic pattern {:?}: {reason} at character {}",
            self.source, self.at
        ))
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn alternatives(&mut self) -> Result<Vec<Vec<Node>>, Error> {
        let mut alternatives = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.at += 1;
            alternatives.push(self.sequence()?);
        }
        Ok(alternatives)
    }

    fn sequence(&mut self) -> Result<Vec<Node>, Error> {
        let mut nodes = Vec::new();
        while let Some(c) = self.peek() {
            let atom = match c {
                '|' | ')' => break,
                '(' => {
                    self.at += 1;
                    if self.chars[self.at..].starts_with(&['?', ':']) {
                        self.at += 2;
                    } else if self.peek() == Some('?') {
                        return Err(self.error("only (?: ) groups are supported"));
                    }
                    let group = self.alternatives()?;
                    if self.peek() != Some(')') {
                        return Err(self.error("missing ')'"));
                    }
                    self.at += 1;
                    Node::Group(group)
                }
                '[' => self.class()?,
                '.' => {
                    self.at += 1;
                    Node::Any
                }
                '^' => {
                    self.at += 1;
                    Node::Start
                }
                '$' => {
                    self.at += 1;
                    Node::End
                }
                '\\' => {
                    self.at += 1;
                    let escaped = self.peek().ok_or_else(|| self.error("trailing '\\'"))?;
                    self.at += 1;
                    escape(escaped).ok_or_else(|| self.error("unsupported escape"))?
                }
                '*' | '+' | '?' | '{' => return Err(self.error("quantifier without a target")),
                _ => {
                    self.at += 1;
                    Node::Char(c)
                }
            };
            nodes.push(self.quantified(atom)?);
        }
        Ok(nodes)
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, Error> {
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => {
                let close = self.chars[self.at..]
                    .iter()
                    .position(|c| *c == '}')
                    .ok_or_else(|| self.error("missing '}'"))?;
                let inside: String = self.chars[self.at + 1..self.at + close].iter().collect();
                let number = |text: &str| -> Result<usize, Error> {
                    text.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n <= REPEAT_MAX)
                        .ok_or_else(|| self.error("bad repetition count"))
                };
                let bounds = match inside.split_once(',') {
                    None => (number(&inside)?, Some(number(&inside)?)),
                    Some((low, "")) => (number(low)?, None),
                    Some((low, high)) => (number(low)?, Some(number(high)?)),
                };
                self.at += close;
                bounds
            }
            _ => return Ok(atom),
        };
        self.at += 1;
        if matches!(self.peek(), Some('?') | Some('+')) {
            return Err(self.error("lazy and possessive quantifiers are not supported"));
        }
        Ok(Node::Repeat(Box::new(atom), min, max))
    }

    fn class(&mut self) -> Result<Node, Error> {
        self.at += 1;
        let negated = self.peek() == Some('^');
        if negated {
            self.at += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek().ok_or_else(|| self.error("missing ']'"))?;
            self.at += 1;
            if c == ']' && !first {
                break;
            }
            first = false;
            let low = if c == '\\' {
                let escaped = self.peek().ok_or_else(|| self.error("trailing '\\'"))?;
                self.at += 1;
                match escape(escaped) {
                    Some(Node::Char(literal)) => literal,
                    Some(Node::Class(class_ranges, false)) => {
                        ranges.extend(class_ranges);
                        continue;
                    }
                    _ => return Err(self.error("unsupported escape in a class")),
                }
            } else {
                c
            };
            if self.peek() == Some('-') && self.chars.get(self.at + 1).is_some_and(|c| *c != ']') {
                let high = self.chars[self.at + 1];
                self.at += 2;
                ranges.push((low, high));
            } else {
                ranges.push((low, low));
            }
        }
        Ok(Node::Class(ranges, negated))
    }
}

fn escape(c: char) -> Option<Node> {
    let class = |ranges: &[(char, char)]| Some(Node::Class(ranges.to_vec(), false));
    match c {
        'd' => class(&[('0', '9')]),
        'w' => class(&[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]),
        's' => class(&[(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')]),
        c if c.is_ascii_alphanumeric() => None,
        c => Some(Node::Char(c)),
    }
}

fn match_one(node: &Node, input: &[char], at: usize) -> bool {
    let Some(&c) = input.get(at) else {
        return false;
    };
    match node {
        Node::Char(expected) => c == *expected,
        Node::Any => c != '\n',
        Node::Class(ranges, negated) => {
            ranges.iter().any(|(low, high)| *low <= c && c <= *high) != *negated
        }
        _ => false,
    }
}

/// Matches `nodes` from `at`, calling `then` with each end position until it accepts.
fn match_nodes(
    nodes: &[Node],
    input: &[char],
    at: usize,
    then: &mut dyn FnMut(usize) -> bool,
) -> bool {
    let Some((node, rest)) = nodes.split_first() else {
        return then(at);
    };
    match node {
        Node::Start => at == 0 && match_nodes(rest, input, at, then),
        Node::End => at == input.len() && match_nodes(rest, input, at, then),
        Node::Group(alternatives) => alternatives.iter().any(|alternative| {
            match_nodes(alternative, input, at, &mut |end| {
                match_nodes(rest, input, end, then)
            })
        }),
        Node::Repeat(inner, min, max) => repeat(inner, *min, *max, 0, input, at, &mut |end| {
            match_nodes(rest, input, end, then)
        }),
        single => match_one(single, input, at) && match_nodes(rest, input, at + 1, then),
    }
}

/// Greedy repetition: as many as allowed first, then fewer.
fn repeat(
    inner: &Node,
    min: usize,
    max: Option<usize>,
    count: usize,
    input: &[char],
    at: usize,
    then: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if max.is_none_or(|max| count < max) {
        let more = match_nodes(std::slice::from_ref(inner), input, at, &mut |end| {
            // An empty iteration would loop forever without consuming input.
            end != at && repeat(inner, min, max, count + 1, input, end, then)
        });
        if more {
            return true;
        }
    }
    count >= min && then(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_topic_names_as_java_does() {
        let cases: &[(&str, &str, bool)] = &[
            ("orders.*", "orders", true),
            ("orders.*", "orders-eu", true),
            ("orders.*", "my-orders", false),
            ("orders", "orders-eu", false),
            ("orders-(eu|us)", "orders-us", true),
            ("orders-(?:eu|us)", "orders-asia", false),
            ("t[0-9]+", "t42", true),
            ("t[0-9]+", "t", false),
            ("t\\d{2}", "t42", true),
            ("t\\d{2}", "t421", false),
            ("t\\d{2,}", "t421", true),
            ("[^_].*", "__consumer_offsets", false),
            ("[^_].*", "orders", true),
            ("a\\.b", "a.b", true),
            ("a\\.b", "axb", false),
            ("(a|ab)(c|bcd)d?", "abcd", true),
            ("^x?y$", "y", true),
            ("(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaab", true),
        ];
        for (pattern, topic, expected) in cases {
            let compiled = TopicPattern::new(pattern).unwrap();
            assert_eq!(compiled.matches(topic), *expected, "{pattern} ~ {topic}");
        }
    }

    #[test]
    fn unsupported_constructs_are_errors() {
        for pattern in ["(a", "a)", "*a", "a{2", "(?i)a", "a*?", "\\p{L}", "[a"] {
            assert!(TopicPattern::new(pattern).is_err(), "{pattern}");
        }
    }
}
