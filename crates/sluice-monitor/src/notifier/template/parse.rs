//! Go text/template source to a tree: the lexer and the recursive-descent parser.
//!
//! Follows Go's `text/template/parse` grammar for the subset this engine runs: text,
//! `{{pipeline}}` actions, `{{- -}}` trim markers, `{{/* comments */}}`, `if`/`else if`,
//! `range` (one or two variables), `with`/`else with`, `break`, `continue`, variable
//! declaration and assignment, pipelines with `|`, parenthesized pipelines and field
//! chains on any operand. `define`, `template` and `block` are refused: Burrow loads one
//! file per template and its shipped templates use none of them.
//!
//! Not found here: whether a field exists or a function gets the right arguments. That is
//! [`super::check`]'s job, against the one shape of data a notifier template sees.

use std::fmt;

use super::functions;

/// Nesting of blocks and parentheses a template may have; deeper is a parse error, so
/// neither the parser nor the executor can recurse without bound.
pub(super) const NESTING_MAX: usize = 64;

/// Where in the source an item starts: the line counts from 1, the column is the byte
/// offset in the line, from 0, as Go's template errors give them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

/// An error with where it happened; the template's name is added by the caller.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Located {
    pub position: Position,
    pub message: String,
}

impl Located {
    pub(super) fn new(position: Position, message: impl Into<String>) -> Located {
        Located {
            position,
            message: message.into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Number {
    Int(i64),
    Uint(u64),
    Float(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Node {
    Text(String),
    /// `{{pipeline}}`: printed unless the pipeline declares or assigns a variable.
    Action(Pipeline),
    If {
        condition: Pipeline,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Range {
        pipeline: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    With {
        pipeline: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Break,
    Continue,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pipeline {
    pub position: Position,
    /// Variables declared (`$x :=`) or assigned (`$x =`); two only in `range`.
    pub variables: Vec<String>,
    pub assign: bool,
    pub commands: Vec<Command>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Command {
    pub position: Position,
    pub words: Vec<Word>,
}

/// One operand of a command. A command's first word decides what the command does: a
/// function is called with the rest as arguments, a field chain's last name may be a
/// method taking them, anything else takes none.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Word {
    Dot(Position),
    Nil(Position),
    Bool(Position, bool),
    Number(Position, Number, String),
    String(Position, String),
    /// `.A.B`: fields of dot.
    Field(Position, Vec<String>),
    /// `$x` or `$x.A.B`.
    Variable(Position, String, Vec<String>),
    /// `(pipeline).A.B`.
    Chain(Position, Box<Pipeline>, Vec<String>),
    Function(Position, String),
    Pipeline(Position, Box<Pipeline>),
}

impl Word {
    pub(super) fn position(&self) -> Position {
        match self {
            Word::Dot(position)
            | Word::Nil(position)
            | Word::Bool(position, _)
            | Word::Number(position, _, _)
            | Word::String(position, _)
            | Word::Field(position, _)
            | Word::Variable(position, _, _)
            | Word::Chain(position, _, _)
            | Word::Function(position, _)
            | Word::Pipeline(position, _) => *position,
        }
    }
}

/// The source form of a word, for error messages (`executing at <.Start.Timestamp>`).
impl fmt::Display for Word {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn names(formatter: &mut fmt::Formatter<'_>, names: &[String]) -> fmt::Result {
            names
                .iter()
                .try_for_each(|name| write!(formatter, ".{name}"))
        }
        match self {
            Word::Dot(_) => formatter.write_str("."),
            Word::Nil(_) => formatter.write_str("nil"),
            Word::Bool(_, value) => write!(formatter, "{value}"),
            Word::Number(_, _, text) => formatter.write_str(text),
            Word::String(_, value) => write!(formatter, "{value:?}"),
            Word::Field(_, field_names) => names(formatter, field_names),
            Word::Variable(_, name, field_names) => {
                formatter.write_str(name)?;
                names(formatter, field_names)
            }
            Word::Chain(_, pipeline, field_names) => {
                write!(formatter, "({pipeline})")?;
                names(formatter, field_names)
            }
            Word::Function(_, name) => formatter.write_str(name),
            Word::Pipeline(_, pipeline) => write!(formatter, "({pipeline})"),
        }
    }
}

impl fmt::Display for Pipeline {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.variables.is_empty() {
            let operator = if self.assign { "=" } else { ":=" };
            write!(formatter, "{} {operator} ", self.variables.join(", "))?;
        }
        for (index, command) in self.commands.iter().enumerate() {
            if index > 0 {
                formatter.write_str(" | ")?;
            }
            for (word_index, word) in command.words.iter().enumerate() {
                if word_index > 0 {
                    formatter.write_str(" ")?;
                }
                write!(formatter, "{word}")?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Lexer

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keyword {
    If,
    Else,
    End,
    Range,
    With,
    Break,
    Continue,
    Define,
    Template,
    Block,
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Text(String),
    LeftDelim,
    RightDelim,
    Space,
    Field(String),
    Variable(String),
    Identifier(String),
    Keyword(Keyword),
    String(String),
    Number(Number, String),
    Bool(bool),
    Nil,
    Dot,
    Pipe,
    LeftParen,
    RightParen,
    Declare,
    Assign,
    Comma,
    Eof,
}

impl fmt::Display for Token {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Text(_) => formatter.write_str("text"),
            Token::LeftDelim => formatter.write_str("\"{{\""),
            Token::RightDelim => formatter.write_str("\"}}\""),
            Token::Space => formatter.write_str("space"),
            Token::Field(name) => write!(formatter, "<.{name}>"),
            Token::Variable(name) => write!(formatter, "<{name}>"),
            Token::Identifier(name) => write!(formatter, "<{name}>"),
            Token::Keyword(keyword) => {
                write!(formatter, "<{}>", format!("{keyword:?}").to_lowercase())
            }
            Token::String(value) => write!(formatter, "{value:?}"),
            Token::Number(_, text) => write!(formatter, "<{text}>"),
            Token::Bool(value) => write!(formatter, "<{value}>"),
            Token::Nil => formatter.write_str("<nil>"),
            Token::Dot => formatter.write_str("<.>"),
            Token::Pipe => formatter.write_str("\"|\""),
            Token::LeftParen => formatter.write_str("\"(\""),
            Token::RightParen => formatter.write_str("\")\""),
            Token::Declare => formatter.write_str("\":=\""),
            Token::Assign => formatter.write_str("\"=\""),
            Token::Comma => formatter.write_str("\",\""),
            Token::Eof => formatter.write_str("EOF"),
        }
    }
}

#[derive(Clone, Debug)]
struct Item {
    token: Token,
    position: Position,
}

fn is_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\r' | '\n')
}

fn is_alphanumeric(character: char) -> bool {
    character == '_' || character.is_alphanumeric()
}

struct Lexer<'s> {
    source: &'s str,
    offset: usize,
    /// Byte offsets where each line starts, for positions.
    line_starts: Vec<usize>,
    items: Vec<Item>,
    /// The last action ended with `-}}`: the next text loses its leading spaces.
    trim_next_text: bool,
}

impl<'s> Lexer<'s> {
    fn new(source: &'s str) -> Lexer<'s> {
        let line_starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(index, _)| index + 1))
            .collect();
        Lexer {
            source,
            offset: 0,
            line_starts,
            items: Vec::new(),
            trim_next_text: false,
        }
    }

    fn position(&self, offset: usize) -> Position {
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let line_start = self.line_starts[line.saturating_sub(1)];
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(offset - line_start).unwrap_or(u32::MAX),
        }
    }

    fn error<T>(&self, offset: usize, message: impl Into<String>) -> Result<T, Located> {
        Err(Located::new(self.position(offset), message))
    }

    fn push(&mut self, token: Token, offset: usize) {
        let position = self.position(offset);
        self.items.push(Item { token, position });
    }

    fn rest(&self) -> &'s str {
        &self.source[self.offset..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn run(mut self) -> Result<Vec<Item>, Located> {
        loop {
            let text_start = self.offset;
            let delimiter = self.rest().find("{{").map(|index| self.offset + index);
            let text_end = delimiter.unwrap_or(self.source.len());
            let mut text = &self.source[text_start..text_end];
            if self.trim_next_text {
                text = text.trim_start_matches(is_space);
                self.trim_next_text = false;
            }
            let Some(delimiter) = delimiter else {
                if !text.is_empty() {
                    self.push(Token::Text(text.to_string()), text_start);
                }
                self.offset = self.source.len();
                self.push(Token::Eof, self.offset);
                return Ok(self.items);
            };
            let after = &self.source[delimiter + 2..];
            let left_trim = after.starts_with('-') && after[1..].starts_with(is_space);
            if left_trim {
                text = text.trim_end_matches(is_space);
            }
            if !text.is_empty() {
                self.push(Token::Text(text.to_string()), text_start);
            }
            self.offset = delimiter + 2 + if left_trim { 2 } else { 0 };
            if self.rest().starts_with("/*") {
                self.comment(delimiter)?;
                continue;
            }
            self.push(Token::LeftDelim, delimiter);
            self.action()?;
        }
    }

    /// `{{/* ... */}}`: nothing but the comment may sit between the delimiters.
    fn comment(&mut self, delimiter: usize) -> Result<(), Located> {
        let Some(end) = self.rest().find("*/") else {
            return self.error(delimiter, "unclosed comment");
        };
        self.offset += end + 2;
        let rest = self.rest();
        if rest.starts_with("}}") {
            self.offset += 2;
        } else if rest.starts_with(is_space) && rest[1..].starts_with("-}}") {
            self.offset += 4;
            self.trim_next_text = true;
        } else {
            return self.error(self.offset, "comment ends before closing delimiter");
        }
        Ok(())
    }

    fn action(&mut self) -> Result<(), Located> {
        loop {
            let start = self.offset;
            if self.rest().starts_with("}}") {
                self.offset += 2;
                self.push(Token::RightDelim, start);
                return Ok(());
            }
            let Some(character) = self.peek() else {
                return self.error(start, "unclosed action");
            };
            match character {
                character if is_space(character) => {
                    let spaces = self.rest().len() - self.rest().trim_start_matches(is_space).len();
                    self.offset += spaces;
                    if self.rest().starts_with("-}}") {
                        self.offset += 3;
                        self.push(Token::RightDelim, start);
                        self.trim_next_text = true;
                        return Ok(());
                    }
                    self.push(Token::Space, start);
                }
                '|' => self.single(Token::Pipe),
                '(' => self.single(Token::LeftParen),
                ')' => self.single(Token::RightParen),
                ',' => self.single(Token::Comma),
                '=' => self.single(Token::Assign),
                ':' => {
                    if self.peek_second() != Some('=') {
                        return self.error(start, "expected :=");
                    }
                    self.offset += 2;
                    self.push(Token::Declare, start);
                }
                '"' => {
                    let value = self.quoted('"')?;
                    self.push(Token::String(value), start);
                }
                '\'' => {
                    let text = self.quoted('\'')?;
                    let mut characters = text.chars();
                    let (Some(character), None) = (characters.next(), characters.next()) else {
                        return self.error(start, "malformed character constant");
                    };
                    let literal = self.source[start..self.offset].to_string();
                    self.push(
                        Token::Number(Number::Int(i64::from(u32::from(character))), literal),
                        start,
                    );
                }
                '`' => {
                    let Some(end) = self.rest()[1..].find('`') else {
                        return self.error(start, "unterminated raw quoted string");
                    };
                    let value = self.rest()[1..1 + end].replace('\r', "");
                    self.offset += end + 2;
                    self.push(Token::String(value), start);
                }
                '$' => {
                    self.offset += 1;
                    let name = self.alphanumeric_run();
                    self.push(Token::Variable(format!("${name}")), start);
                }
                '.' => {
                    if self.peek_second().is_some_and(|next| next.is_ascii_digit()) {
                        self.number()?;
                    } else if self.peek_second().is_some_and(is_alphanumeric) {
                        self.offset += 1;
                        let name = self.alphanumeric_run();
                        self.push(Token::Field(name.to_string()), start);
                    } else {
                        self.single(Token::Dot);
                    }
                }
                '+' | '-' | '0'..='9' => {
                    if !character.is_ascii_digit()
                        && !self
                            .peek_second()
                            .is_some_and(|next| next.is_ascii_digit() || next == '.')
                    {
                        return self.error(
                            start,
                            format!("unrecognized character in action: {character:?}"),
                        );
                    }
                    self.number()?;
                }
                character if is_alphanumeric(character) => {
                    let word = self.alphanumeric_run();
                    let token = match word {
                        "true" => Token::Bool(true),
                        "false" => Token::Bool(false),
                        "nil" => Token::Nil,
                        "if" => Token::Keyword(Keyword::If),
                        "else" => Token::Keyword(Keyword::Else),
                        "end" => Token::Keyword(Keyword::End),
                        "range" => Token::Keyword(Keyword::Range),
                        "with" => Token::Keyword(Keyword::With),
                        "break" => Token::Keyword(Keyword::Break),
                        "continue" => Token::Keyword(Keyword::Continue),
                        "define" => Token::Keyword(Keyword::Define),
                        "template" => Token::Keyword(Keyword::Template),
                        "block" => Token::Keyword(Keyword::Block),
                        name => Token::Identifier(name.to_string()),
                    };
                    self.push(token, start);
                }
                other => {
                    return self.error(
                        start,
                        format!("unrecognized character in action: {other:?}"),
                    );
                }
            }
        }
    }

    fn single(&mut self, token: Token) {
        let start = self.offset;
        self.offset += 1;
        self.push(token, start);
    }

    fn alphanumeric_run(&mut self) -> &'s str {
        let rest = self.rest();
        let length = rest.len() - rest.trim_start_matches(is_alphanumeric).len();
        self.offset += length;
        &rest[..length]
    }

    /// Go's number syntax: an optional sign, `0x`/`0o`/`0b` prefixes, `_` separators, a
    /// fraction and an exponent. Integers stay integers (`eq .Result.Status 2`), anything
    /// with a point or exponent is a float64, as Go's `idealConstant` decides.
    fn number(&mut self) -> Result<(), Located> {
        let start = self.offset;
        let bytes = self.source.as_bytes();
        let mut end = start;
        if matches!(bytes.get(end), Some(b'+' | b'-')) {
            end += 1;
        }
        let hex = bytes.get(end) == Some(&b'0') && matches!(bytes.get(end + 1), Some(b'x' | b'X'));
        while let Some(&byte) = bytes.get(end) {
            let exponent_sign = matches!(byte, b'+' | b'-')
                && end > start
                && if hex {
                    matches!(bytes[end - 1], b'p' | b'P')
                } else {
                    matches!(bytes[end - 1], b'e' | b'E')
                };
            if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.' || exponent_sign {
                end += 1;
            } else {
                break;
            }
        }
        let text = &self.source[start..end];
        let Some(number) = parse_number(text) else {
            return self.error(start, format!("bad number syntax: {text:?}"));
        };
        self.offset = end;
        self.push(Token::Number(number, text.to_string()), start);
        Ok(())
    }

    /// A Go interpreted string or character literal, escapes decoded.
    fn quoted(&mut self, quote: char) -> Result<String, Located> {
        let start = self.offset;
        self.offset += 1;
        let mut bytes = Vec::new();
        loop {
            let Some(character) = self.peek() else {
                return self.error(start, "unterminated quoted string");
            };
            self.offset += character.len_utf8();
            match character {
                '\n' => return self.error(start, "unterminated quoted string"),
                character if character == quote => break,
                '\\' => {
                    let Some(escape) = self.peek() else {
                        return self.error(start, "unterminated quoted string");
                    };
                    self.offset += escape.len_utf8();
                    let simple = match escape {
                        'a' => Some(0x07),
                        'b' => Some(0x08),
                        'f' => Some(0x0c),
                        'n' => Some(b'\n'),
                        'r' => Some(b'\r'),
                        't' => Some(b'\t'),
                        'v' => Some(0x0b),
                        '\\' => Some(b'\\'),
                        '"' if quote == '"' => Some(b'"'),
                        '\'' if quote == '\'' => Some(b'\''),
                        _ => None,
                    };
                    if let Some(byte) = simple {
                        bytes.push(byte);
                        continue;
                    }
                    let (digits, radix) = match escape {
                        'x' => (2, 16),
                        'u' => (4, 16),
                        'U' => (8, 16),
                        '0'..='7' => {
                            self.offset -= 1;
                            (3, 8)
                        }
                        _ => return self.error(self.offset, "unknown escape sequence"),
                    };
                    let Some(text) = self.rest().get(..digits) else {
                        return self.error(self.offset, "unterminated escape sequence");
                    };
                    let Ok(value) = u32::from_str_radix(text, radix) else {
                        return self.error(self.offset, "invalid escape sequence");
                    };
                    self.offset += digits;
                    if matches!(escape, 'u' | 'U') {
                        let Some(character) = char::from_u32(value) else {
                            return self.error(self.offset, "escape sequence is invalid Unicode");
                        };
                        let mut buffer = [0; 4];
                        bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
                    } else {
                        let Ok(byte) = u8::try_from(value) else {
                            return self.error(self.offset, "octal escape value > 255");
                        };
                        bytes.push(byte);
                    }
                }
                character => {
                    let mut buffer = [0; 4];
                    bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
                }
            }
        }
        String::from_utf8(bytes).or_else(|_| self.error(start, "string is not valid UTF-8"))
    }
}

fn parse_number(text: &str) -> Option<Number> {
    let cleaned: String = text.chars().filter(|&character| character != '_').collect();
    let (negative, digits) = match cleaned.as_bytes().first() {
        Some(b'-') => (true, &cleaned[1..]),
        Some(b'+') => (false, &cleaned[1..]),
        _ => (false, cleaned.as_str()),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(body) = lower.strip_prefix("0x") {
        (16, body)
    } else if let Some(body) = lower.strip_prefix("0o") {
        (8, body)
    } else if let Some(body) = lower.strip_prefix("0b") {
        (2, body)
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit())
    {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if radix == 10 && (body.contains('.') || body.contains('e')) {
        let value: f64 = body.parse().ok()?;
        return Some(Number::Float(if negative { -value } else { value }));
    }
    if body.is_empty() {
        return None;
    }
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if negative {
        let value = 0i64.checked_sub_unsigned(magnitude)?;
        Some(Number::Int(value))
    } else if let Ok(value) = i64::try_from(magnitude) {
        Some(Number::Int(value))
    } else {
        Some(Number::Uint(magnitude))
    }
}

// ---------------------------------------------------------------------------------------
// Parser

/// How a list of nodes ended.
enum ListEnd {
    Eof,
    End(Position),
    /// `{{else`; the parser stands after the keyword and its spaces.
    Else(Position),
}

#[derive(Clone, Copy, PartialEq)]
enum Control {
    If,
    Range,
    With,
}

struct Parser {
    items: Vec<Item>,
    index: usize,
    depth: usize,
    range_depth: usize,
}

/// Parses a whole template.
pub(super) fn parse(source: &str) -> Result<Vec<Node>, Located> {
    let items = Lexer::new(source).run()?;
    let mut parser = Parser {
        items,
        index: 0,
        depth: 0,
        range_depth: 0,
    };
    let (nodes, end) = parser.list()?;
    match end {
        ListEnd::Eof => Ok(nodes),
        ListEnd::End(position) => Err(Located::new(position, "unexpected {{end}}")),
        ListEnd::Else(position) => Err(Located::new(position, "unexpected {{else}}")),
    }
}

impl Parser {
    fn peek(&self) -> &Item {
        // The lexer always ends with Eof, and nothing consumes past it.
        &self.items[self.index.min(self.items.len() - 1)]
    }

    fn next(&mut self) -> Item {
        let item = self.peek().clone();
        if self.index < self.items.len() - 1 {
            self.index += 1;
        }
        item
    }

    fn skip_space(&mut self) {
        while self.peek().token == Token::Space {
            self.index += 1;
        }
    }

    fn expect_right_delim(&mut self, context: &str) -> Result<(), Located> {
        self.skip_space();
        let item = self.next();
        if item.token == Token::RightDelim {
            Ok(())
        } else {
            Err(Located::new(
                item.position,
                format!("unexpected {} in {context}", item.token),
            ))
        }
    }

    fn enter(&mut self, position: Position) -> Result<(), Located> {
        self.depth += 1;
        if self.depth > NESTING_MAX {
            return Err(Located::new(
                position,
                format!("nested more than {NESTING_MAX} deep"),
            ));
        }
        Ok(())
    }

    fn list(&mut self) -> Result<(Vec<Node>, ListEnd), Located> {
        let mut nodes = Vec::new();
        loop {
            let item = self.next();
            match item.token {
                Token::Text(text) => nodes.push(Node::Text(text)),
                Token::Eof => return Ok((nodes, ListEnd::Eof)),
                Token::LeftDelim => {
                    self.skip_space();
                    let keyword_item = self.peek().clone();
                    match keyword_item.token {
                        Token::Keyword(Keyword::End) => {
                            self.index += 1;
                            self.expect_right_delim("end")?;
                            return Ok((nodes, ListEnd::End(keyword_item.position)));
                        }
                        Token::Keyword(Keyword::Else) => {
                            self.index += 1;
                            self.skip_space();
                            return Ok((nodes, ListEnd::Else(keyword_item.position)));
                        }
                        Token::Keyword(Keyword::If) => {
                            self.index += 1;
                            nodes.push(self.control(Control::If, keyword_item.position)?);
                        }
                        Token::Keyword(Keyword::Range) => {
                            self.index += 1;
                            nodes.push(self.control(Control::Range, keyword_item.position)?);
                        }
                        Token::Keyword(Keyword::With) => {
                            self.index += 1;
                            nodes.push(self.control(Control::With, keyword_item.position)?);
                        }
                        Token::Keyword(keyword @ (Keyword::Break | Keyword::Continue)) => {
                            self.index += 1;
                            let name = if keyword == Keyword::Break {
                                "break"
                            } else {
                                "continue"
                            };
                            if self.range_depth == 0 {
                                return Err(Located::new(
                                    keyword_item.position,
                                    format!("{{{{{name}}}}} outside {{{{range}}}}"),
                                ));
                            }
                            self.expect_right_delim(name)?;
                            nodes.push(if keyword == Keyword::Break {
                                Node::Break
                            } else {
                                Node::Continue
                            });
                        }
                        Token::Keyword(Keyword::Define | Keyword::Template | Keyword::Block) => {
                            return Err(Located::new(
                                keyword_item.position,
                                "{{define}}, {{template}} and {{block}} are not supported: \
                                 a notifier template is one file",
                            ));
                        }
                        _ => {
                            let pipeline = self.pipeline(true, false)?;
                            nodes.push(Node::Action(pipeline));
                        }
                    }
                }
                other => {
                    return Err(Located::new(
                        item.position,
                        format!("unexpected {other} in template"),
                    ));
                }
            }
        }
    }

    /// `if`, `range` or `with` after its keyword, through its `{{end}}`.
    fn control(&mut self, control: Control, position: Position) -> Result<Node, Located> {
        self.enter(position)?;
        let pipeline = self.pipeline(true, control == Control::Range)?;
        if control == Control::Range {
            self.range_depth += 1;
        }
        let (body, end) = self.list()?;
        if control == Control::Range {
            self.range_depth -= 1;
        }
        let otherwise = match end {
            ListEnd::End(_) => Vec::new(),
            ListEnd::Eof => {
                return Err(Located::new(position, "unexpected EOF: missing {{end}}"));
            }
            ListEnd::Else(else_position) => {
                let next = self.peek().clone();
                match (next.token, control) {
                    (Token::Keyword(Keyword::If), Control::If) => {
                        self.index += 1;
                        vec![self.control(Control::If, next.position)?]
                    }
                    (Token::Keyword(Keyword::With), Control::With) => {
                        self.index += 1;
                        vec![self.control(Control::With, next.position)?]
                    }
                    (Token::RightDelim, _) => {
                        self.index += 1;
                        let (otherwise, end) = self.list()?;
                        match end {
                            ListEnd::End(_) => otherwise,
                            ListEnd::Else(position) => {
                                return Err(Located::new(position, "expected end; found {{else}}"));
                            }
                            ListEnd::Eof => {
                                return Err(Located::new(
                                    else_position,
                                    "unexpected EOF: missing {{end}}",
                                ));
                            }
                        }
                    }
                    (token, _) => {
                        return Err(Located::new(
                            next.position,
                            format!("unexpected {token} in else"),
                        ));
                    }
                }
            }
        };
        self.depth -= 1;
        Ok(match control {
            Control::If => Node::If {
                condition: pipeline,
                then: body,
                otherwise,
            },
            Control::Range => Node::Range {
                pipeline,
                body,
                otherwise,
            },
            Control::With => Node::With {
                pipeline,
                body,
                otherwise,
            },
        })
    }

    /// Is the parser at `$x :=`, `$x =` or (in range) `$i, $e :=`? Returns the variables,
    /// whether it is an assignment, and how many items the declaration spans.
    fn declaration(&self, two_allowed: bool) -> Option<(Vec<String>, bool, usize)> {
        let mut index = self.index;
        let mut variables = Vec::new();
        loop {
            let Token::Variable(name) = &self.items.get(index)?.token else {
                return None;
            };
            variables.push(name.clone());
            index += 1;
            while self.items.get(index)?.token == Token::Space {
                index += 1;
            }
            match self.items.get(index)?.token {
                Token::Declare | Token::Assign => {
                    let assign = self.items[index].token == Token::Assign;
                    return Some((variables, assign, index + 1 - self.index));
                }
                Token::Comma if two_allowed && variables.len() == 1 => {
                    index += 1;
                    while self.items.get(index)?.token == Token::Space {
                        index += 1;
                    }
                }
                _ => return None,
            }
        }
    }

    /// A pipeline through its closing `}}` (or `)` when `in_action` is false).
    fn pipeline(&mut self, in_action: bool, two_variables: bool) -> Result<Pipeline, Located> {
        self.skip_space();
        let position = self.peek().position;
        let (variables, assign) = match self.declaration(in_action) {
            Some((variables, assign, length)) => {
                if variables.len() == 2 && !two_variables {
                    return Err(Located::new(
                        position,
                        "too many declarations: two variables only in range",
                    ));
                }
                self.index += length;
                (variables, assign)
            }
            None => (Vec::new(), false),
        };
        let close = if in_action {
            Token::RightDelim
        } else {
            Token::RightParen
        };
        let mut commands = Vec::new();
        loop {
            self.skip_space();
            let command_position = self.peek().position;
            let mut words = Vec::new();
            loop {
                self.skip_space();
                let item = self.peek().clone();
                if item.token == Token::Pipe || item.token == close {
                    break;
                }
                if matches!(
                    item.token,
                    Token::RightDelim | Token::RightParen | Token::Eof
                ) {
                    let message = if in_action {
                        format!("unexpected {} in command", item.token)
                    } else {
                        "unclosed left paren".to_string()
                    };
                    return Err(Located::new(item.position, message));
                }
                words.push(self.operand()?);
                let after = &self.peek().token;
                if !matches!(
                    after,
                    Token::Space | Token::Pipe | Token::RightDelim | Token::RightParen
                ) {
                    return Err(Located::new(
                        self.peek().position,
                        format!("missing space? unexpected {after} in operand"),
                    ));
                }
            }
            if words.is_empty() {
                let message = if variables.is_empty() {
                    "missing value for command"
                } else {
                    "missing value for declaration"
                };
                return Err(Located::new(command_position, message));
            }
            commands.push(Command {
                position: command_position,
                words,
            });
            if self.next().token == close {
                break;
            }
        }
        Ok(Pipeline {
            position,
            variables,
            assign,
            commands,
        })
    }

    fn operand(&mut self) -> Result<Word, Located> {
        let term = self.term()?;
        let mut names = Vec::new();
        while let Token::Field(name) = &self.peek().token {
            names.push(name.clone());
            self.index += 1;
        }
        if names.is_empty() {
            return Ok(term);
        }
        Ok(match term {
            Word::Field(position, mut field_names) => {
                field_names.extend(names);
                Word::Field(position, field_names)
            }
            Word::Variable(position, name, mut field_names) => {
                field_names.extend(names);
                Word::Variable(position, name, field_names)
            }
            Word::Pipeline(position, pipeline) => Word::Chain(position, pipeline, names),
            other => {
                return Err(Located::new(
                    other.position(),
                    format!("unexpected . after term {other}"),
                ));
            }
        })
    }

    fn term(&mut self) -> Result<Word, Located> {
        let item = self.next();
        let position = item.position;
        Ok(match item.token {
            Token::Identifier(name) => {
                if functions::lookup(&name).is_none() {
                    return Err(Located::new(
                        position,
                        format!("function {name:?} not defined"),
                    ));
                }
                Word::Function(position, name)
            }
            Token::Dot => Word::Dot(position),
            Token::Nil => Word::Nil(position),
            Token::Variable(name) => Word::Variable(position, name, Vec::new()),
            Token::Field(name) => Word::Field(position, vec![name]),
            Token::Bool(value) => Word::Bool(position, value),
            Token::Number(number, text) => Word::Number(position, number, text),
            Token::String(value) => Word::String(position, value),
            Token::LeftParen => {
                self.enter(position)?;
                let pipeline = self.pipeline(false, false)?;
                self.depth -= 1;
                Word::Pipeline(position, Box::new(pipeline))
            }
            other => {
                return Err(Located::new(
                    position,
                    format!("unexpected {other} in operand"),
                ));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_markers_and_comments_shape_the_text() {
        let nodes =
            parse("a  {{- .ID -}}  b {{/* gone */}}c\n{{- /* gone too */ -}}\n d").expect("parses");
        let texts: Vec<&str> = nodes
            .iter()
            .filter_map(|node| match node {
                Node::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["a", "b ", "c", "d"]);
    }

    #[test]
    fn a_minus_without_a_space_is_a_number_not_a_trim_marker() {
        let nodes = parse("{{-3}}").expect("parses");
        assert!(matches!(
            &nodes[0],
            Node::Action(pipeline) if matches!(pipeline.commands[0].words[0], Word::Number(_, Number::Int(-3), _))
        ));
    }

    #[test]
    fn numbers_strings_and_chars_decode_as_go_does() {
        let cases: &[(&str, Number)] = &[
            ("42", Number::Int(42)),
            ("0x1F", Number::Int(31)),
            ("0o17", Number::Int(15)),
            ("017", Number::Int(15)),
            ("0b101", Number::Int(5)),
            ("1_000", Number::Int(1000)),
            ("1.5", Number::Float(1.5)),
            ("1e3", Number::Float(1000.0)),
            ("-2", Number::Int(-2)),
            ("'a'", Number::Int(97)),
            ("18446744073709551615", Number::Uint(u64::MAX)),
        ];
        for (source, expected) in cases {
            let nodes = parse(&format!("{{{{{source}}}}}")).expect(source);
            let Node::Action(pipeline) = &nodes[0] else {
                panic!("{source}: not an action");
            };
            let Word::Number(_, number, _) = &pipeline.commands[0].words[0] else {
                panic!("{source}: not a number");
            };
            assert_eq!(number, expected, "{source}");
        }
        let nodes = parse(r#"{{"a\tb\u00e9\x41\101\""}}{{`raw\n`}}"#).expect("parses");
        let strings: Vec<&str> = nodes
            .iter()
            .filter_map(|node| match node {
                Node::Action(pipeline) => match &pipeline.commands[0].words[0] {
                    Word::String(_, value) => Some(value.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(strings, ["a\tbéAA\"", "raw\\n"]);
    }

    #[test]
    fn malformed_templates_are_refused_with_a_position() {
        let cases: &[(&str, &str, u32, u32)] = &[
            ("{{.ID", "unclosed action", 1, 5),
            ("{{if .ID}}x", "missing {{end}}", 1, 2),
            ("x{{end}}", "unexpected {{end}}", 1, 3),
            ("a\n{{nosuch .ID}}", "function \"nosuch\" not defined", 2, 2),
            ("{{break}}", "{{break}} outside {{range}}", 1, 2),
            ("{{template \"x\"}}", "not supported", 1, 2),
            ("{{.ID | }}", "missing value for command", 1, 8),
            ("{{(.ID}}", "unclosed left paren", 1, 6),
            ("{{\"abc}}", "unterminated quoted string", 1, 2),
            ("{{/* x }}", "unclosed comment", 1, 0),
            (
                "{{/* x */ .ID}}",
                "comment ends before closing delimiter",
                1,
                9,
            ),
            ("{{1x}}", "bad number syntax", 1, 2),
            ("{{$x, $y := .ID}}", "two variables only in range", 1, 2),
            (
                "{{if .ID}}{{else}}{{else}}{{end}}",
                "expected end; found {{else}}",
                1,
                20,
            ),
            ("{{\"s\".Field}}", "unexpected . after term", 1, 2),
        ];
        for (source, message, line, column) in cases {
            let error = parse(source).expect_err(source);
            assert!(
                error.message.contains(message),
                "{source:?}: {:?} lacks {message:?}",
                error.message
            );
            assert_eq!(
                (error.position.line, error.position.column),
                (*line, *column),
                "{source:?}: {}",
                error.message
            );
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "{{if 1}}".repeat(NESTING_MAX + 1) + &"{{end}}".repeat(NESTING_MAX + 1);
        let error = parse(&deep).expect_err("too deep");
        assert!(
            error.message.contains("nested more than"),
            "{}",
            error.message
        );
        let parens = format!(
            "{{{{{}1{}}}}}",
            "(".repeat(NESTING_MAX + 1),
            ")".repeat(NESTING_MAX + 1)
        );
        assert!(parse(&parens).is_err());
        let fine = "{{if 1}}".repeat(NESTING_MAX) + &"{{end}}".repeat(NESTING_MAX);
        parse(&fine).expect("at the limit parses");
    }
}
