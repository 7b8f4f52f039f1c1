//! MySQL/MariaDB DDL, parsed as far as a change data capture source needs it: each
//! table's columns (name, type, length, scale, nullability, default, auto increment,
//! enum values, position) and primary key, kept current across `CREATE TABLE`,
//! `ALTER TABLE` (ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, primary keys, defaults, RENAME
//! TO), `RENAME TABLE`, `DROP TABLE`, `CREATE/DROP DATABASE` and `USE`. The binlog's rows
//! carry no column names, so a source maps them through this model, as Debezium's
//! schema history does with its DDL parser.
//!
//! What it does not model is skipped, not refused: indexes other than the primary key,
//! foreign keys, checks, partitioning, table options, and statements other than the
//! above. Executable comments (`/*!50100 ... */`) are read as code, as the server reads
//! them. The input comes from the binlog (another process wrote it): every failure is
//! an error naming the statement, never a panic, and nesting is counted, not recursed.

use std::collections::BTreeMap;
use std::fmt;

/// A column as Debezium's `io.debezium.connector.schema.Column` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// Upper case, as declared (`INT`, `VARCHAR`, `DECIMAL`, `ENUM`), `UNSIGNED` kept.
    pub type_name: String,
    pub length: Option<i32>,
    pub scale: Option<i32>,
    pub unsigned: bool,
    pub charset: Option<String>,
    pub optional: bool,
    pub auto_increment: bool,
    /// A generated column (`GENERATED ALWAYS AS`, `AS (...)`).
    pub generated: bool,
    /// The default as written (string literals unquoted), `None` without one.
    pub default: Option<String>,
    /// ENUM and SET members, unquoted, in order.
    pub members: Vec<String>,
    pub comment: Option<String>,
    /// 1-based, in table order.
    pub position: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub database: String,
    pub name: String,
    pub columns: Vec<Column>,
    pub primary_key: Vec<String>,
    pub default_charset: Option<String>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }

    fn renumber(&mut self) {
        for (i, c) in self.columns.iter_mut().enumerate() {
            c.position = i + 1;
        }
    }
}

/// What a statement changed (Debezium's `tableChanges` types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Create(TableId),
    Alter(TableId),
    Drop(TableId),
    /// A table renamed: its old id, then its new one.
    Rename(TableId, TableId),
    CreateDatabase(String),
    DropDatabase(String),
    UseDatabase(String),
}

/// A table's database and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableId {
    pub database: String,
    pub name: String,
}

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.database, self.name)
    }
}

/// A statement the parser could not read, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdlError(pub String);

impl fmt::Display for DdlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DdlError {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A bare word (keyword or identifier) or a backquoted identifier.
    Word(String, bool),
    Str(String),
    Number(String),
    Punct(char),
}

fn tokenize(sql: &str) -> Result<Vec<Token>, DdlError> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '#' || (c == '-' && chars.get(i + 1) == Some(&'-')) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            if chars.get(i + 2) == Some(&'!') {
                // An executable comment: its text (after the version digits) is code.
                i += 3;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            } else {
                i += 2;
                loop {
                    if i + 1 >= chars.len() {
                        return Err(DdlError("an unterminated comment".into()));
                    }
                    if chars[i] == '*' && chars[i + 1] == '/' {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
        } else if c == '*' && chars.get(i + 1) == Some(&'/') {
            // The end of an executable comment.
            i += 2;
        } else if c == '\'' || c == '"' || c == '`' {
            let quote = c;
            let mut text = String::new();
            i += 1;
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err(DdlError(format!("an unterminated {quote}quoted text")));
                };
                i += 1;
                if ch == quote {
                    if chars.get(i) == Some(&quote) {
                        text.push(quote);
                        i += 1;
                        continue;
                    }
                    break;
                }
                if ch == '\\' && quote != '`' {
                    let Some(&next) = chars.get(i) else {
                        return Err(DdlError("an escape at the end of the text".into()));
                    };
                    i += 1;
                    text.push(match next {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        other => other,
                    });
                    continue;
                }
                text.push(ch);
            }
            out.push(if quote == '`' {
                Token::Word(text, true)
            } else {
                Token::Str(text)
            });
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            // `1col` is an identifier in MySQL.
            if text
                .chars()
                .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
            {
                out.push(Token::Word(text, false));
            } else {
                out.push(Token::Number(text));
            }
        } else if c.is_alphanumeric() || c == '_' || c == '$' || c == '@' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '$' | '@'))
            {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect(), false));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<&'a Token> {
        let t = self.tokens.get(self.at);
        self.at += usize::from(t.is_some());
        t
    }

    fn fail<T>(&self, what: &str) -> Result<T, DdlError> {
        Err(DdlError(format!(
            "expected {what} at token {} ({:?})",
            self.at,
            self.peek()
        )))
    }

    /// The next token is this keyword (unquoted, any case); consumed if so.
    fn keyword(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(Token::Word(w, false)) if w.eq_ignore_ascii_case(word) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    fn keywords(&mut self, words: &[&str]) -> bool {
        let save = self.at;
        for w in words {
            if !self.keyword(w) {
                self.at = save;
                return false;
            }
        }
        true
    }

    fn punct(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), DdlError> {
        if self.punct(c) {
            Ok(())
        } else {
            self.fail(&format!("'{c}'"))
        }
    }

    fn identifier(&mut self) -> Result<String, DdlError> {
        match self.next() {
            Some(Token::Word(w, _)) => Ok(w.clone()),
            Some(Token::Str(s)) => Ok(s.clone()),
            _ => {
                self.at = self.at.saturating_sub(1);
                self.fail("a name")
            }
        }
    }

    /// `name` or `db.name`.
    fn table_id(&mut self, default_db: Option<&str>) -> Result<TableId, DdlError> {
        let first = self.identifier()?;
        if self.punct('.') {
            let name = self.identifier()?;
            return Ok(TableId {
                database: first,
                name,
            });
        }
        match default_db {
            Some(db) => Ok(TableId {
                database: db.to_string(),
                name: first,
            }),
            None => Err(DdlError(format!(
                "table {first} has no database and none is in use"
            ))),
        }
    }

    /// Skips a balanced parenthesised group starting at `(` (counted, not recursed).
    fn skip_group(&mut self) -> Result<(), DdlError> {
        self.expect_punct('(')?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.next() {
                Some(Token::Punct('(')) => depth += 1,
                Some(Token::Punct(')')) => depth -= 1,
                Some(_) => {}
                None => return self.fail("')'"),
            }
        }
        Ok(())
    }

    /// Skips to the next top-level `,` or `)` (not consumed).
    fn skip_item(&mut self) -> Result<(), DdlError> {
        loop {
            match self.peek() {
                Some(Token::Punct(',')) | Some(Token::Punct(')')) | None => return Ok(()),
                Some(Token::Punct('(')) => self.skip_group()?,
                Some(_) => self.at += 1,
            }
        }
    }

    fn name_list(&mut self) -> Result<Vec<String>, DdlError> {
        self.expect_punct('(')?;
        let mut names = Vec::new();
        loop {
            names.push(self.identifier()?);
            // A key part's prefix length or order: `name(10) DESC`.
            if self.peek() == Some(&Token::Punct('(')) {
                self.skip_group()?;
            }
            let _ = self.keyword("ASC") || self.keyword("DESC");
            if self.punct(')') {
                return Ok(names);
            }
            self.expect_punct(',')?;
        }
    }

    fn number(&mut self) -> Result<i32, DdlError> {
        match self.next() {
            Some(Token::Number(n)) => n
                .parse()
                .map_err(|_| DdlError(format!("a length or scale that is not a number: {n}"))),
            _ => self.fail("a number"),
        }
    }

    /// A column definition after its name.
    fn column(&mut self, name: String) -> Result<(Column, bool), DdlError> {
        let mut type_name = match self.next() {
            Some(Token::Word(w, false)) => w.to_ascii_uppercase(),
            _ => return self.fail("a column type"),
        };
        // Two-word types.
        for (first, second) in [
            ("DOUBLE", "PRECISION"),
            ("CHARACTER", "VARYING"),
            ("NATIONAL", "CHAR"),
            ("NATIONAL", "VARCHAR"),
            ("LONG", "VARCHAR"),
            ("LONG", "VARBINARY"),
        ] {
            if type_name == first && self.keyword(second) {
                type_name = format!("{first} {second}");
            }
        }
        let mut column = Column {
            name,
            type_name,
            length: None,
            scale: None,
            unsigned: false,
            charset: None,
            optional: true,
            auto_increment: false,
            generated: false,
            default: None,
            members: Vec::new(),
            comment: None,
            position: 0,
        };
        let mut primary = false;
        if self.punct('(') {
            if matches!(column.type_name.as_str(), "ENUM" | "SET") {
                loop {
                    match self.next() {
                        Some(Token::Str(s)) => column.members.push(s.clone()),
                        _ => return self.fail("an ENUM or SET member"),
                    }
                    if self.punct(')') {
                        break;
                    }
                    self.expect_punct(',')?;
                }
            } else {
                column.length = Some(self.number()?);
                if self.punct(',') {
                    column.scale = Some(self.number()?);
                }
                self.expect_punct(')')?;
            }
        }
        loop {
            match self.peek() {
                None
                | Some(Token::Punct(','))
                | Some(Token::Punct(')'))
                | Some(Token::Punct(';')) => break,
                // An ALTER's placement follows the definition.
                Some(Token::Word(w, false))
                    if w.eq_ignore_ascii_case("FIRST") || w.eq_ignore_ascii_case("AFTER") =>
                {
                    break;
                }
                _ => {}
            }
            if self.keyword("UNSIGNED") {
                column.unsigned = true;
                column.type_name.push_str(" UNSIGNED");
            } else if self.keyword("SIGNED") || self.keyword("ZEROFILL") || self.keyword("BINARY") {
            } else if self.keywords(&["CHARACTER", "SET"]) || self.keyword("CHARSET") {
                let _ = self.punct('=');
                column.charset = Some(self.identifier()?);
            } else if self.keyword("COLLATE") {
                let _ = self.punct('=');
                self.identifier()?;
            } else if self.keywords(&["NOT", "NULL"]) {
                column.optional = false;
            } else if self.keyword("NULL") {
                column.optional = true;
            } else if self.keyword("DEFAULT") {
                column.default = self.default_value()?;
            } else if self.keyword("AUTO_INCREMENT") {
                column.auto_increment = true;
            } else if self.keywords(&["PRIMARY", "KEY"]) || self.keyword("KEY") {
                primary = true;
            } else if self.keyword("UNIQUE") {
                let _ = self.keyword("KEY");
            } else if self.keyword("COMMENT") {
                match self.next() {
                    Some(Token::Str(s)) => column.comment = Some(s.clone()),
                    _ => return self.fail("a comment"),
                }
            } else if self.keywords(&["ON", "UPDATE"]) {
                self.default_value()?;
            } else if self.keywords(&["GENERATED", "ALWAYS"]) {
            } else if self.keyword("AS") {
                column.generated = true;
                self.skip_group()?;
            } else if self.keyword("VIRTUAL")
                || self.keyword("STORED")
                || self.keyword("PERSISTENT")
            {
            } else if self.keyword("CHECK") || self.keyword("REFERENCES") {
                self.skip_item()?;
            } else if self.keyword("INVISIBLE") || self.keyword("VISIBLE") {
            } else {
                // A column attribute this model does not keep (`COLUMN_FORMAT`, `STORAGE`,
                // `SRID`, ...): to the end of the definition.
                self.skip_item()?;
            }
        }
        if primary {
            column.optional = false;
        }
        Ok((column, primary))
    }

    /// A DEFAULT's value: a literal (strings unquoted), a signed number, NULL (none), or
    /// an expression kept as text (`CURRENT_TIMESTAMP(6)`).
    fn default_value(&mut self) -> Result<Option<String>, DdlError> {
        let negative = self.punct('-');
        let sign = if negative { "-" } else { "" };
        Ok(match self.next() {
            Some(Token::Str(s)) => Some(s.clone()),
            Some(Token::Number(n)) => Some(format!("{sign}{n}")),
            Some(Token::Word(w, false)) if w.eq_ignore_ascii_case("NULL") => None,
            Some(Token::Word(w, _)) => {
                let mut text = w.clone();
                if self.peek() == Some(&Token::Punct('(')) {
                    let start = self.at;
                    self.skip_group()?;
                    for t in &self.tokens[start..self.at] {
                        match t {
                            Token::Number(n) | Token::Word(n, _) => text.push_str(n),
                            Token::Punct(c) => text.push(*c),
                            Token::Str(s) => text.push_str(&format!("'{s}'")),
                        }
                    }
                }
                Some(text)
            }
            Some(Token::Punct('(')) => {
                // An expression default (MySQL 8): kept out of the model.
                self.at -= 1;
                self.skip_group()?;
                None
            }
            _ => return self.fail("a default value"),
        })
    }
}

/// The tables of the captured server, kept current by DDL.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    tables: BTreeMap<TableId, Table>,
    /// The database `USE` made current for later statements without one.
    pub current_database: Option<String>,
}

impl Tables {
    pub fn get(&self, id: &TableId) -> Option<&Table> {
        self.tables.get(id)
    }

    pub fn get_mut(&mut self, id: &TableId) -> Option<&mut Table> {
        self.tables.get_mut(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Table> {
        self.tables.values()
    }

    /// Applies the statements of `sql` (separated by `;`), run in `database` (the binlog
    /// query event's schema) when they do not name one. Answers what each changed.
    pub fn apply(&mut self, database: Option<&str>, sql: &str) -> Result<Vec<Change>, DdlError> {
        let tokens = tokenize(sql)?;
        let mut changes = Vec::new();
        for statement in tokens.split(|t| *t == Token::Punct(';')) {
            if statement.is_empty() {
                continue;
            }
            if let Some(db) = database {
                self.current_database.get_or_insert_with(|| db.to_string());
            }
            let db = database
                .map(str::to_string)
                .or_else(|| self.current_database.clone());
            let mut p = Parser {
                tokens: statement,
                at: 0,
            };
            self.statement(&mut p, db.as_deref(), &mut changes)
                .map_err(|e| DdlError(format!("{e} in {}", preview(sql))))?;
        }
        Ok(changes)
    }

    fn statement(
        &mut self,
        p: &mut Parser,
        db: Option<&str>,
        changes: &mut Vec<Change>,
    ) -> Result<(), DdlError> {
        if p.keyword("USE") {
            let name = p.identifier()?;
            self.current_database = Some(name.clone());
            changes.push(Change::UseDatabase(name));
        } else if p.keyword("CREATE") {
            let _ = p.keyword("OR") && p.keyword("REPLACE");
            let _ = p.keyword("TEMPORARY");
            if p.keyword("TABLE") {
                self.create_table(p, db, changes)?;
            } else if p.keyword("DATABASE") || p.keyword("SCHEMA") {
                let _ = p.keywords(&["IF", "NOT", "EXISTS"]);
                changes.push(Change::CreateDatabase(p.identifier()?));
            }
        } else if p.keyword("ALTER") {
            let _ = p.keyword("ONLINE") || p.keyword("IGNORE");
            if p.keyword("TABLE") {
                self.alter_table(p, db, changes)?;
            }
        } else if p.keyword("DROP") {
            let _ = p.keyword("TEMPORARY");
            if p.keyword("TABLE") || p.keyword("TABLES") {
                let _ = p.keywords(&["IF", "EXISTS"]);
                loop {
                    let id = p.table_id(db)?;
                    if self.tables.remove(&id).is_some() {
                        changes.push(Change::Drop(id));
                    }
                    if !p.punct(',') {
                        break;
                    }
                }
            } else if p.keyword("DATABASE") || p.keyword("SCHEMA") {
                let _ = p.keywords(&["IF", "EXISTS"]);
                let name = p.identifier()?;
                let dropped: Vec<TableId> = self
                    .tables
                    .keys()
                    .filter(|id| id.database == name)
                    .cloned()
                    .collect();
                for id in dropped {
                    self.tables.remove(&id);
                    changes.push(Change::Drop(id));
                }
                changes.push(Change::DropDatabase(name));
            }
        } else if p.keyword("RENAME") && (p.keyword("TABLE") || p.keyword("TABLES")) {
            loop {
                let from = p.table_id(db)?;
                if !p.keyword("TO") {
                    return p.fail("TO");
                }
                let to = p.table_id(db)?;
                self.rename(from, to, changes);
                if !p.punct(',') {
                    break;
                }
            }
        }
        // Anything else (TRUNCATE, CREATE INDEX, GRANT, ...) leaves the columns as they are.
        Ok(())
    }

    fn rename(&mut self, from: TableId, to: TableId, changes: &mut Vec<Change>) {
        if let Some(mut table) = self.tables.remove(&from) {
            table.database = to.database.clone();
            table.name = to.name.clone();
            self.tables.insert(to.clone(), table);
            changes.push(Change::Rename(from, to));
        }
    }

    fn create_table(
        &mut self,
        p: &mut Parser,
        db: Option<&str>,
        changes: &mut Vec<Change>,
    ) -> Result<(), DdlError> {
        let if_not_exists = p.keywords(&["IF", "NOT", "EXISTS"]);
        let id = p.table_id(db)?;
        if if_not_exists && self.tables.contains_key(&id) {
            return Ok(());
        }
        if p.keyword("LIKE") {
            let source = p.table_id(db)?;
            let Some(mut table) = self.tables.get(&source).cloned() else {
                return Err(DdlError(format!(
                    "CREATE TABLE {id} LIKE {source}: {source} is not known"
                )));
            };
            table.database = id.database.clone();
            table.name = id.name.clone();
            self.tables.insert(id.clone(), table);
            changes.push(Change::Create(id));
            return Ok(());
        }
        if !p.punct('(') {
            // CREATE TABLE ... SELECT without a column list: not modelled.
            return Err(DdlError(format!("CREATE TABLE {id} without a column list")));
        }
        let mut table = Table {
            database: id.database.clone(),
            name: id.name.clone(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            default_charset: None,
        };
        loop {
            if p.keyword("CONSTRAINT")
                && !matches!(p.peek(), Some(Token::Word(w, false)) if w.eq_ignore_ascii_case("PRIMARY") || w.eq_ignore_ascii_case("UNIQUE") || w.eq_ignore_ascii_case("FOREIGN") || w.eq_ignore_ascii_case("CHECK"))
            {
                p.identifier()?;
            }
            if p.keywords(&["PRIMARY", "KEY"]) {
                let _ = p.keyword("USING") && p.identifier().is_ok();
                table.primary_key = p.name_list()?;
                p.skip_item()?;
            } else if [
                "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD",
            ]
            .iter()
            .any(|k| matches!(p.peek(), Some(Token::Word(w, false)) if w.eq_ignore_ascii_case(k)))
            {
                p.skip_item()?;
            } else {
                let name = p.identifier()?;
                let (column, primary) = p.column(name)?;
                if primary {
                    table.primary_key = vec![column.name.clone()];
                }
                table.columns.push(column);
            }
            if p.punct(')') {
                break;
            }
            p.expect_punct(',')?;
        }
        while let Some(token) = p.next() {
            if let Token::Word(w, false) = token {
                let charset = w.eq_ignore_ascii_case("CHARSET")
                    || (w.eq_ignore_ascii_case("CHARACTER") && p.keyword("SET"));
                if charset {
                    let _ = p.punct('=');
                    table.default_charset = Some(p.identifier()?);
                }
            }
        }
        finish(&mut table)?;
        self.tables.insert(id.clone(), table);
        changes.push(Change::Create(id));
        Ok(())
    }

    fn alter_table(
        &mut self,
        p: &mut Parser,
        db: Option<&str>,
        changes: &mut Vec<Change>,
    ) -> Result<(), DdlError> {
        let id = p.table_id(db)?;
        let Some(mut table) = self.tables.get(&id).cloned() else {
            // A table created before capture began and never described: nothing to keep
            // current (the snapshot describes it).
            return Ok(());
        };
        let mut renamed_to = None;
        loop {
            if p.peek().is_none() {
                break;
            }
            if p.keyword("ADD") {
                let _ = p.keyword("CONSTRAINT")
                    && {
                        if !matches!(p.peek(), Some(Token::Word(w, false)) if w.eq_ignore_ascii_case("PRIMARY"))
                        {
                            p.identifier()?;
                        }
                        true
                    };
                if p.keywords(&["PRIMARY", "KEY"]) {
                    let _ = p.keyword("USING") && p.identifier().is_ok();
                    table.primary_key = p.name_list()?;
                    p.skip_item()?;
                } else if ["KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PARTITION"]
                    .iter()
                    .any(|k| matches!(p.peek(), Some(Token::Word(w, false)) if w.eq_ignore_ascii_case(k)))
                {
                    p.skip_item()?;
                } else {
                    let _ = p.keyword("COLUMN");
                    let _ = p.keywords(&["IF", "NOT", "EXISTS"]);
                    if p.punct('(') {
                        loop {
                            let name = p.identifier()?;
                            let (column, primary) = p.column(name)?;
                            add_column(&mut table, column, primary, None)?;
                            if p.punct(')') {
                                break;
                            }
                            p.expect_punct(',')?;
                        }
                    } else {
                        let name = p.identifier()?;
                        let (column, primary) = p.column_with_place(name)?;
                        add_column(&mut table, column.0, primary, column.1)?;
                    }
                }
            } else if p.keyword("DROP") {
                if p.keywords(&["PRIMARY", "KEY"]) {
                    table.primary_key.clear();
                } else if ["KEY", "INDEX", "FOREIGN", "CHECK", "CONSTRAINT", "PARTITION"]
                    .iter()
                    .any(|k| matches!(p.peek(), Some(Token::Word(w, false)) if w.eq_ignore_ascii_case(k)))
                {
                    p.skip_item()?;
                } else {
                    let _ = p.keyword("COLUMN");
                    let if_exists = p.keywords(&["IF", "EXISTS"]);
                    let name = p.identifier()?;
                    let before = table.columns.len();
                    table.columns.retain(|c| !c.name.eq_ignore_ascii_case(&name));
                    if table.columns.len() == before && !if_exists {
                        return Err(DdlError(format!("DROP COLUMN {name}: {id} has no such column")));
                    }
                    table.primary_key.retain(|k| !k.eq_ignore_ascii_case(&name));
                }
            } else if p.keyword("MODIFY") {
                let _ = p.keyword("COLUMN");
                let _ = p.keywords(&["IF", "EXISTS"]);
                let name = p.identifier()?;
                let ((column, place), primary) = p.column_with_place(name.clone())?;
                replace_column(&mut table, &name, column, primary, place)?;
            } else if p.keyword("CHANGE") {
                let _ = p.keyword("COLUMN");
                let _ = p.keywords(&["IF", "EXISTS"]);
                let old = p.identifier()?;
                let new = p.identifier()?;
                let ((column, place), primary) = p.column_with_place(new)?;
                replace_column(&mut table, &old, column, primary, place)?;
            } else if p.keyword("RENAME") {
                if p.keyword("COLUMN") {
                    let old = p.identifier()?;
                    if !p.keyword("TO") {
                        return p.fail("TO");
                    }
                    let new = p.identifier()?;
                    let Some(column) = table
                        .columns
                        .iter_mut()
                        .find(|c| c.name.eq_ignore_ascii_case(&old))
                    else {
                        return Err(DdlError(format!(
                            "RENAME COLUMN {old}: {id} has no such column"
                        )));
                    };
                    column.name = new.clone();
                    for k in table
                        .primary_key
                        .iter_mut()
                        .filter(|k| k.eq_ignore_ascii_case(&old))
                    {
                        *k = new.clone();
                    }
                } else if p.keyword("INDEX") || p.keyword("KEY") {
                    p.skip_item()?;
                } else {
                    let _ = p.keyword("TO") || p.keyword("AS");
                    renamed_to = Some(p.table_id(Some(&id.database))?);
                }
            } else if p.keyword("ALTER") {
                let _ = p.keyword("COLUMN");
                let name = p.identifier()?;
                let Some(column) = table
                    .columns
                    .iter_mut()
                    .find(|c| c.name.eq_ignore_ascii_case(&name))
                else {
                    return Err(DdlError(format!(
                        "ALTER COLUMN {name}: {id} has no such column"
                    )));
                };
                if p.keywords(&["SET", "DEFAULT"]) {
                    column.default = p.default_value()?;
                } else if p.keywords(&["DROP", "DEFAULT"]) {
                    column.default = None;
                }
                p.skip_item()?;
            } else {
                // A table option or an operation that does not change the columns.
                p.skip_item()?;
            }
            if !p.punct(',') {
                break;
            }
        }
        finish(&mut table)?;
        match renamed_to {
            Some(to) => {
                self.tables.insert(id.clone(), table);
                self.rename(id.clone(), to.clone(), changes);
                changes.push(Change::Alter(to));
            }
            None => {
                self.tables.insert(id.clone(), table);
                changes.push(Change::Alter(id));
            }
        }
        Ok(())
    }
}

/// Where an added or redefined column goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    First,
    After(String),
}

impl Parser<'_> {
    fn column_with_place(
        &mut self,
        name: String,
    ) -> Result<((Column, Option<Place>), bool), DdlError> {
        let (column, primary) = self.column(name)?;
        let place = if self.keyword("FIRST") {
            Some(Place::First)
        } else if self.keyword("AFTER") {
            Some(Place::After(self.identifier()?))
        } else {
            None
        };
        Ok(((column, place), primary))
    }
}

fn insert_at(table: &mut Table, column: Column, place: Option<Place>) -> Result<(), DdlError> {
    let index = match place {
        None => table.columns.len(),
        Some(Place::First) => 0,
        Some(Place::After(after)) => {
            table
                .columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&after))
                .ok_or_else(|| DdlError(format!("AFTER {after}: no such column")))?
                + 1
        }
    };
    table.columns.insert(index, column);
    Ok(())
}

fn add_column(
    table: &mut Table,
    column: Column,
    primary: bool,
    place: Option<Place>,
) -> Result<(), DdlError> {
    if table.column(&column.name).is_some() {
        return Err(DdlError(format!(
            "ADD COLUMN {}: the column exists",
            column.name
        )));
    }
    if primary {
        table.primary_key = vec![column.name.clone()];
    }
    insert_at(table, column, place)
}

fn replace_column(
    table: &mut Table,
    old: &str,
    column: Column,
    primary: bool,
    place: Option<Place>,
) -> Result<(), DdlError> {
    let Some(index) = table
        .columns
        .iter()
        .position(|c| c.name.eq_ignore_ascii_case(old))
    else {
        return Err(DdlError(format!("{old}: no such column")));
    };
    for k in table
        .primary_key
        .iter_mut()
        .filter(|k| k.eq_ignore_ascii_case(old))
    {
        *k = column.name.clone();
    }
    if primary {
        table.primary_key = vec![column.name.clone()];
    }
    match place {
        None => table.columns[index] = column,
        Some(place) => {
            table.columns.remove(index);
            insert_at(table, column, Some(place))?;
        }
    }
    Ok(())
}

/// Primary key columns are NOT NULL; positions follow the order.
fn finish(table: &mut Table) -> Result<(), DdlError> {
    for key in &table.primary_key {
        let Some(column) = table
            .columns
            .iter_mut()
            .find(|c| c.name.eq_ignore_ascii_case(key))
        else {
            return Err(DdlError(format!(
                "primary key column {key} is not a column of {}.{}",
                table.database, table.name
            )));
        };
        column.optional = false;
    }
    table.renumber();
    Ok(())
}

fn preview(sql: &str) -> String {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 120 {
        format!("{}...", flat.chars().take(120).collect::<String>())
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(db: &str, name: &str) -> TableId {
        TableId {
            database: db.into(),
            name: name.into(),
        }
    }

    fn names(t: &Table) -> Vec<&str> {
        t.columns.iter().map(|c| c.name.as_str()).collect()
    }

    /// The guide's order service, as `SHOW CREATE TABLE` prints it.
    const ORDERS: &str = "CREATE TABLE `orders` (
      `id` int(11) NOT NULL AUTO_INCREMENT,
      `customer_id` int(11) NOT NULL,
      `status` enum('NEW','PAID','SHIPPED') NOT NULL DEFAULT 'NEW',
      `total` decimal(10,2) DEFAULT NULL,
      `created_at` datetime(3) DEFAULT NULL,
      `updated_at` timestamp(6) NULL DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),
      `note` text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci DEFAULT NULL COMMENT 'free text',
      `data` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`data`)),
      PRIMARY KEY (`id`),
      KEY `by_customer` (`customer_id`)
    ) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";

    #[test]
    fn show_create_table_output_gives_columns_types_and_the_key() {
        let mut tables = Tables::default();
        let changes = tables.apply(Some("order_service"), ORDERS).unwrap();
        assert_eq!(changes, vec![Change::Create(id("order_service", "orders"))]);
        let t = tables.get(&id("order_service", "orders")).unwrap();
        assert_eq!(
            names(t),
            [
                "id",
                "customer_id",
                "status",
                "total",
                "created_at",
                "updated_at",
                "note",
                "data"
            ]
        );
        assert_eq!(t.primary_key, ["id"]);
        assert_eq!(t.default_charset.as_deref(), Some("utf8mb4"));
        let c = t.column("id").unwrap();
        assert!(c.auto_increment && !c.optional);
        assert_eq!(
            (c.type_name.as_str(), c.length, c.position),
            ("INT", Some(11), 1)
        );
        let s = t.column("status").unwrap();
        assert_eq!(s.members, ["NEW", "PAID", "SHIPPED"]);
        assert_eq!(s.default.as_deref(), Some("NEW"));
        let total = t.column("total").unwrap();
        assert_eq!(
            (total.length, total.scale, total.optional),
            (Some(10), Some(2), true)
        );
        assert_eq!(total.default, None);
        let updated = t.column("updated_at").unwrap();
        assert_eq!(updated.default.as_deref(), Some("current_timestamp(6)"));
        let note = t.column("note").unwrap();
        assert_eq!(note.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(note.comment.as_deref(), Some("free text"));
    }

    #[test]
    fn alter_table_keeps_columns_and_key_current() {
        let mut tables = Tables::default();
        tables.apply(Some("shop"), ORDERS).unwrap();
        let orders = id("shop", "orders");
        tables
            .apply(
                Some("shop"),
                "ALTER TABLE orders ADD COLUMN channel VARCHAR(16) DEFAULT 'web'",
            )
            .unwrap();
        let t = tables.get(&orders).unwrap();
        let channel = t.column("channel").unwrap();
        assert_eq!(
            (channel.position, channel.default.as_deref()),
            (9, Some("web"))
        );
        tables
            .apply(
                Some("shop"),
                "ALTER TABLE shop.orders ADD COLUMN region char(2) NOT NULL AFTER id, \
                 DROP COLUMN note, MODIFY total decimal(12,3) NOT NULL, \
                 CHANGE COLUMN created_at placed_at datetime(6) FIRST, \
                 RENAME COLUMN data TO payload, ALTER COLUMN channel SET DEFAULT 'app', \
                 ENGINE=InnoDB",
            )
            .unwrap();
        let t = tables.get(&orders).unwrap();
        assert_eq!(
            names(t),
            [
                "placed_at",
                "id",
                "region",
                "customer_id",
                "status",
                "total",
                "updated_at",
                "payload",
                "channel"
            ]
        );
        assert_eq!(t.column("region").unwrap().position, 3);
        let total = t.column("total").unwrap();
        assert_eq!(
            (total.length, total.scale, total.optional),
            (Some(12), Some(3), false)
        );
        assert_eq!(t.column("channel").unwrap().default.as_deref(), Some("app"));
        tables
            .apply(
                Some("shop"),
                "ALTER TABLE orders DROP PRIMARY KEY, ADD PRIMARY KEY (id, region)",
            )
            .unwrap();
        assert_eq!(tables.get(&orders).unwrap().primary_key, ["id", "region"]);
    }

    #[test]
    fn renames_drops_use_and_databases() {
        let mut tables = Tables::default();
        let changes = tables
            .apply(
                None,
                "CREATE DATABASE IF NOT EXISTS inv; USE inv; \
                 CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10)); \
                 CREATE TABLE b LIKE a; RENAME TABLE a TO a2, b TO inv.b2; \
                 ALTER TABLE a2 RENAME TO a3",
            )
            .unwrap();
        assert!(changes.contains(&Change::Rename(id("inv", "a"), id("inv", "a2"))));
        assert!(tables.get(&id("inv", "a3")).is_some());
        assert_eq!(tables.get(&id("inv", "b2")).unwrap().primary_key, ["id"]);
        tables
            .apply(Some("inv"), "DROP TABLE IF EXISTS a3, nope")
            .unwrap();
        assert!(tables.get(&id("inv", "a3")).is_none());
        let changes = tables.apply(None, "DROP DATABASE inv").unwrap();
        assert!(changes.contains(&Change::Drop(id("inv", "b2"))));
        assert_eq!(tables.iter().count(), 0);
    }

    #[test]
    fn composite_keys_comments_quoting_and_executable_comments() {
        let mut tables = Tables::default();
        tables
            .apply(
                Some("d"),
                "/* a comment */ CREATE TABLE `order items` ( -- trailing\n\
                 `order_id` INT, line_no SMALLINT UNSIGNED, sku VARCHAR(32) DEFAULT 'it''s', \
                 qty INT DEFAULT -1, price DECIMAL(8,2) GENERATED ALWAYS AS (qty * 2) VIRTUAL, \
                 CONSTRAINT pk PRIMARY KEY (order_id, line_no), \
                 CONSTRAINT fk FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE \
                 ) /*!50100 DEFAULT CHARSET=latin1 */",
            )
            .unwrap();
        let t = tables.get(&id("d", "order items")).unwrap();
        assert_eq!(t.primary_key, ["order_id", "line_no"]);
        assert!(
            !t.column("order_id").unwrap().optional,
            "key columns are NOT NULL"
        );
        assert_eq!(t.column("line_no").unwrap().type_name, "SMALLINT UNSIGNED");
        assert_eq!(t.column("sku").unwrap().default.as_deref(), Some("it's"));
        assert_eq!(t.column("qty").unwrap().default.as_deref(), Some("-1"));
        assert!(t.column("price").unwrap().generated);
        assert_eq!(t.default_charset.as_deref(), Some("latin1"));
    }

    #[test]
    fn other_statements_change_nothing_and_bad_input_is_an_error() {
        let mut tables = Tables::default();
        tables
            .apply(Some("d"), "CREATE TABLE t (id INT PRIMARY KEY)")
            .unwrap();
        for sql in [
            "TRUNCATE t",
            "CREATE INDEX i ON t (id)",
            "GRANT SELECT ON *.* TO 'x'@'%'",
            "ALTER TABLE unknown ADD COLUMN x INT",
            "FLUSH PRIVILEGES",
        ] {
            assert!(tables.apply(Some("d"), sql).unwrap().is_empty(), "{sql}");
        }
        assert_eq!(tables.get(&id("d", "t")).unwrap().columns.len(), 1);
        for sql in [
            "CREATE TABLE x (id INT",
            "CREATE TABLE x (id INT PRIMARY KEY, PRIMARY KEY (nope))",
            "ALTER TABLE t DROP COLUMN nope",
            "CREATE TABLE y ('unterminated",
            "CREATE TABLE z (a ENUM(1, 2))",
            "CREATE TABLE w (a INT) /* open",
            "CREATE TABLE v (a VARCHAR(99999999999))",
        ] {
            let e = tables.apply(Some("d"), sql).unwrap_err();
            assert!(!e.0.is_empty(), "{sql}");
        }
        // A table named without a database and none in use.
        assert!(
            Tables::default()
                .apply(None, "CREATE TABLE t (a INT)")
                .is_err()
        );
    }

    #[test]
    fn nesting_is_counted_not_recursed() {
        let mut tables = Tables::default();
        let deep = format!(
            "CREATE TABLE t (a INT CHECK {}1{}, b INT)",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        let changes = tables.apply(Some("d"), &deep).unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(names(tables.get(&id("d", "t")).unwrap()), ["a", "b"]);
        let open = format!("CREATE TABLE u (a INT CHECK {}", "(".repeat(100_000));
        assert!(tables.apply(Some("d"), &open).is_err());
    }
}
