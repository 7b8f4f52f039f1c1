//! Reading schema documents into the [`Model`]: the index of resources and anchors by URI,
//! `$ref` resolution against it, and the loader that turns each schema object into nodes
//! the way everit's loader does, for every draft.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};

use super::MAX_SCHEMA_DEPTH;
use super::model::{
    Annotations, ArrayKind, Criterion, Document, Kind, Model, Node, NodeId, NumberKind, ObjectKind,
    Origin, Part, PatternProperty, StringKind, UNRESOLVED,
};
use super::parse::{
    DEFAULT_BASE_URI, id_keyword, percent_decode, push_pointer_token, resolve_uri, strip_fragment,
    unescape_pointer_token,
};

/// A schema object's place: its document, JSON pointer, and the base URI its own `$id` (if
/// any) resolves against.
#[derive(Debug, Clone)]
struct Location {
    document: usize,
    pointer: String,
    base: String,
}

/// Resources (a document, or a subschema with an `$id`) and anchors by absolute URI.
#[derive(Debug, Default)]
struct ResourceIndex {
    resources: HashMap<String, Location>,
    anchors: HashMap<String, Location>,
}

/// How a keyword holds subschemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Single,
    List,
    Named,
}

fn subschema_shape(keyword: &str, value: &Value) -> Option<Shape> {
    Some(match keyword {
        "additionalItems"
        | "additionalProperties"
        | "contains"
        | "not"
        | "if"
        | "then"
        | "else"
        | "propertyNames"
        | "unevaluatedItems"
        | "unevaluatedProperties"
        | "contentSchema" => Shape::Single,
        "items" if value.is_array() => Shape::List,
        "items" => Shape::Single,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Shape::List,
        "properties" | "patternProperties" | "definitions" | "$defs" | "dependencies"
        | "dependentSchemas" => Shape::Named,
        _ => return None,
    })
}

/// The base URI inside `schema`: its `$id` resolved against `base`, unless it has none or
/// (drafts up to 7) it is a `#name` anchor.
fn base_inside(base: &str, schema: &Value, draft: Draft) -> String {
    match schema.get(id_keyword(draft)).and_then(Value::as_str) {
        Some(id) if !(draft <= Draft::Draft7 && id.starts_with('#')) => resolve_uri(base, id)
            .map(|uri| strip_fragment(&uri).to_owned())
            .unwrap_or_else(|| base.to_owned()),
        _ => base.to_owned(),
    }
}

impl ResourceIndex {
    fn build(documents: &[Document], draft: Draft) -> ResourceIndex {
        let mut index = ResourceIndex::default();
        for (document, contents) in documents.iter().enumerate() {
            for uri in &contents.uris {
                let location = Location {
                    document,
                    pointer: String::new(),
                    base: uri.clone(),
                };
                index.resources.entry(uri.clone()).or_insert(location);
            }
            let base = contents.uris[0].clone();
            index.add_schema(&contents.value, draft, document, String::new(), &base, 0);
        }
        index
    }

    /// Indexes `schema` (at `pointer`, inside `base`) and its subschemas. `depth` counts
    /// schema levels, which are fewer than the JSON levels
    /// [`check_depth`](super::parse::check_depth) bounded.
    fn add_schema(
        &mut self,
        schema: &Value,
        draft: Draft,
        document: usize,
        pointer: String,
        base: &str,
        depth: usize,
    ) {
        let Some(members) = schema.as_object() else {
            return;
        };
        if depth > MAX_SCHEMA_DEPTH {
            return;
        }
        let location = Location {
            document,
            pointer: pointer.clone(),
            base: base.to_owned(),
        };
        let inner_base = base_inside(base, schema, draft);
        match members.get(id_keyword(draft)).and_then(Value::as_str) {
            Some(anchor) if draft <= Draft::Draft7 && anchor.starts_with('#') => {
                let key = format!("{}{anchor}", strip_fragment(base));
                self.anchors.entry(key).or_insert_with(|| location.clone());
            }
            Some(_) if inner_base != base => {
                self.resources
                    .entry(inner_base.clone())
                    .or_insert_with(|| location.clone());
            }
            Some(_) => {}
            None => {}
        }
        let anchor = members
            .get("$anchor")
            .and_then(Value::as_str)
            .filter(|_| draft >= Draft::Draft201909);
        if let Some(anchor) = anchor {
            let key = format!("{inner_base}#{anchor}");
            self.anchors.entry(key).or_insert(location);
        }
        for (keyword, value) in members {
            let mut child_pointer = pointer.clone();
            push_pointer_token(&mut child_pointer, keyword);
            match subschema_shape(keyword, value) {
                Some(Shape::Single) => {
                    self.add_schema(
                        value,
                        draft,
                        document,
                        child_pointer,
                        &inner_base,
                        depth + 1,
                    );
                }
                Some(Shape::List) => {
                    for (index, item) in value.as_array().into_iter().flatten().enumerate() {
                        let mut item_pointer = child_pointer.clone();
                        push_pointer_token(&mut item_pointer, &index.to_string());
                        self.add_schema(
                            item,
                            draft,
                            document,
                            item_pointer,
                            &inner_base,
                            depth + 1,
                        );
                    }
                }
                Some(Shape::Named) => {
                    for (name, item) in value.as_object().into_iter().flatten() {
                        let mut item_pointer = child_pointer.clone();
                        push_pointer_token(&mut item_pointer, name);
                        self.add_schema(
                            item,
                            draft,
                            document,
                            item_pointer,
                            &inner_base,
                            depth + 1,
                        );
                    }
                }
                None => {}
            }
        }
    }
}

impl Model {
    /// Reads every subschema reachable from the root. Subschemas are read from a work list,
    /// not recursively, so `$ref` chains cost no stack.
    pub(super) fn load(documents: Vec<Document>, draft: Draft) -> Model {
        let index = ResourceIndex::build(&documents, draft);
        let mut loader = Loader {
            documents: &documents,
            draft,
            index,
            nodes: Vec::new(),
            by_location: HashMap::new(),
            pending: Vec::new(),
            matchers: HashMap::new(),
        };
        loader.nodes.push(Node {
            kind: Kind::Empty,
            annotations: Annotations::default(),
            origin: Origin {
                document: usize::MAX,
                pointer: String::new(),
                part: Part::Whole,
            },
        });
        let root = loader.load(Location {
            document: 0,
            pointer: String::new(),
            base: DEFAULT_BASE_URI.to_owned(),
        });
        while let Some((node, location)) = loader.pending.pop() {
            loader.fill(node, &location);
        }
        let nodes = loader.nodes;
        Model {
            documents,
            nodes,
            root,
        }
    }
}

struct Loader<'d> {
    documents: &'d [Document],
    draft: Draft,
    index: ResourceIndex,
    nodes: Vec<Node>,
    by_location: HashMap<(usize, String), NodeId>,
    pending: Vec<(NodeId, Location)>,
    matchers: HashMap<String, Option<Arc<Validator>>>,
}

const NUMBER_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
const STRING_KEYWORDS: &[&str] = &["minLength", "maxLength", "pattern", "format"];
const STRING_KEYWORDS_2019: &[&str] = &["minLength", "maxLength", "pattern"];
const OBJECT_KEYWORDS_4: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
];
const OBJECT_KEYWORDS_6: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
];
const OBJECT_KEYWORDS_2019: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
];
const ARRAY_KEYWORDS_4: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const ARRAY_KEYWORDS_6: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
];
const ARRAY_KEYWORDS_2019: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "prefixItems",
    "unevaluatedItems",
    "minContains",
    "maxContains",
];
const CONDITIONAL_KEYWORDS: &[&str] = &["if", "then", "else"];

impl<'d> Loader<'d> {
    fn object_keywords(&self) -> &'static [&'static str] {
        match self.draft {
            Draft::Draft4 => OBJECT_KEYWORDS_4,
            Draft::Draft6 | Draft::Draft7 => OBJECT_KEYWORDS_6,
            _ => OBJECT_KEYWORDS_2019,
        }
    }

    fn array_keywords(&self) -> &'static [&'static str] {
        match self.draft {
            Draft::Draft4 => ARRAY_KEYWORDS_4,
            Draft::Draft6 | Draft::Draft7 => ARRAY_KEYWORDS_6,
            _ => ARRAY_KEYWORDS_2019,
        }
    }

    fn string_keywords(&self) -> &'static [&'static str] {
        if self.draft >= Draft::Draft201909 {
            STRING_KEYWORDS_2019
        } else {
            STRING_KEYWORDS
        }
    }

    fn modern(&self) -> bool {
        self.draft >= Draft::Draft201909
    }

    /// The node for the schema at `location`, read later from the work list.
    fn load(&mut self, location: Location) -> NodeId {
        let key = (location.document, location.pointer.clone());
        if let Some(&node) = self.by_location.get(&key) {
            return node;
        }
        let node = self.nodes.len();
        self.nodes.push(Node {
            kind: Kind::Empty,
            annotations: Annotations::default(),
            origin: Origin {
                document: location.document,
                pointer: location.pointer.clone(),
                part: Part::Whole,
            },
        });
        self.by_location.insert(key, node);
        self.pending.push((node, location));
        node
    }

    fn add(&mut self, kind: Kind, origin: Origin) -> NodeId {
        self.nodes.push(Node {
            kind,
            annotations: Annotations::default(),
            origin,
        });
        self.nodes.len() - 1
    }

    fn fill(&mut self, node: NodeId, location: &Location) {
        let documents = self.documents;
        let Some(schema) = documents[location.document]
            .value
            .pointer(&location.pointer)
        else {
            return;
        };
        let (kind, annotations) = match schema {
            Value::Bool(true) => (Kind::True, Annotations::default()),
            Value::Bool(false) => (Kind::False, Annotations::default()),
            Value::Object(members) => {
                let base = base_inside(&location.base, schema, self.draft);
                let kind = self.read_object(location, &base, members);
                (kind, self.annotations(members))
            }
            _ => (Kind::Empty, Annotations::default()),
        };
        self.nodes[node].kind = kind;
        self.nodes[node].annotations = annotations;
    }

    fn annotations(&self, members: &Map<String, Value>) -> Annotations {
        let text = |key: &str| members.get(key).and_then(Value::as_str).map(str::to_owned);
        Annotations {
            id: text(id_keyword(self.draft)),
            title: text("title"),
            description: text("description"),
            default: members.get("default").cloned(),
            connect_bytes: members.get("connect.type").and_then(Value::as_str) == Some("bytes"),
        }
    }

    /// everit's `loadSchemaObject`: each extractor in turn takes the keywords it
    /// understands; one result is the schema, several an `allOf` of them, none the empty
    /// schema.
    fn read_object(
        &mut self,
        location: &Location,
        base: &str,
        members: &'d Map<String, Value>,
    ) -> Kind {
        let child = |segments: &[&str]| {
            let mut pointer = location.pointer.clone();
            for segment in segments {
                push_pointer_token(&mut pointer, segment);
            }
            Location {
                document: location.document,
                pointer,
                base: base.to_owned(),
            }
        };
        let origin = |part: Part| Origin {
            document: location.document,
            pointer: location.pointer.clone(),
            part,
        };
        let mut consumed: HashSet<&'static str> = HashSet::new();
        let mut parts: Vec<(Kind, Part)> = Vec::new();

        if let Some(reference) = members.get("$ref").and_then(Value::as_str) {
            let target = match self.resolve_reference(reference, base) {
                Some(target) => self.load(target),
                None => UNRESOLVED,
            };
            if !self.modern() {
                // Up to draft-07 a `$ref` replaces its siblings.
                return Kind::Reference(target);
            }
            consumed.insert("$ref");
            parts.push((Kind::Reference(target), Part::Keyword("$ref")));
        }
        if let Some(values) = members.get("enum").and_then(Value::as_array) {
            consumed.insert("enum");
            parts.push((Kind::Enum(values.clone()), Part::Keyword("enum")));
        }
        for criterion in [Criterion::All, Criterion::Any, Criterion::One] {
            let keyword = criterion.keyword();
            if let Some(items) = members.get(keyword).and_then(Value::as_array) {
                consumed.insert(keyword);
                let subschemas = (0..items.len())
                    .map(|index| self.load(child(&[keyword, &index.to_string()])))
                    .collect();
                parts.push((
                    Kind::Combined(criterion, subschemas),
                    Part::Keyword(keyword),
                ));
            }
        }
        if members.contains_key("not") {
            consumed.insert("not");
            let negated = self.load(child(&["not"]));
            parts.push((Kind::Not(negated), Part::Keyword("not")));
        }
        // Draft-04 has no `const`.
        if let Some(value) = members.get("const").filter(|_| self.draft != Draft::Draft4) {
            consumed.insert("const");
            parts.push((Kind::Const(value.clone()), Part::Keyword("const")));
        }
        match members.get("type") {
            Some(Value::String(name)) => {
                consumed.insert("type");
                if let Some((kind, name)) = self.read_typed(name, members, &child, &mut consumed) {
                    parts.push((kind, Part::Typed(name)));
                }
            }
            Some(Value::Array(names)) => {
                consumed.insert("type");
                let mut alternatives = Vec::with_capacity(names.len());
                for name in names.iter().filter_map(Value::as_str) {
                    if let Some((kind, name)) =
                        self.read_typed(name, members, &child, &mut consumed)
                    {
                        alternatives.push(self.add(kind, origin(Part::Typed(name))));
                    }
                }
                parts.push((Kind::Combined(Criterion::Any, alternatives), Part::TypeList));
            }
            _ => {}
        }
        // everit's property sniffer: keywords no extractor took imply a type.
        let present = |keywords: &[&str], consumed: &HashSet<&'static str>| {
            keywords
                .iter()
                .any(|keyword| members.contains_key(*keyword) && !consumed.contains(keyword))
        };
        if present(self.array_keywords(), &consumed) {
            let array = self.read_array(members, &child);
            parts.push((Kind::Array(Box::new(array)), Part::Sniffed("array")));
        }
        if present(self.object_keywords(), &consumed) {
            let object = self.read_object_kind(members, &child);
            parts.push((Kind::Object(Box::new(object)), Part::Sniffed("object")));
        }
        if present(NUMBER_KEYWORDS, &consumed) {
            let number = self.read_number(members, false);
            parts.push((Kind::Number(number), Part::Sniffed("number")));
        }
        if present(self.string_keywords(), &consumed) {
            parts.push((Kind::String(read_string(members)), Part::Sniffed("string")));
        }
        if self.draft >= Draft::Draft7 && present(CONDITIONAL_KEYWORDS, &consumed) {
            parts.push((Kind::Conditional, Part::Sniffed("if")));
        }

        match parts.len() {
            0 => Kind::Empty,
            1 => parts.pop().map_or(Kind::Empty, |(kind, _)| kind),
            _ => {
                let subschemas = parts
                    .into_iter()
                    .map(|(kind, part)| self.add(kind, origin(part)))
                    .collect();
                Kind::Combined(Criterion::All, subschemas)
            }
        }
    }

    /// everit's `loadForExplicitType`: the schema for one `type`, taking its keywords.
    fn read_typed(
        &mut self,
        name: &str,
        members: &'d Map<String, Value>,
        child: &dyn Fn(&[&str]) -> Location,
        consumed: &mut HashSet<&'static str>,
    ) -> Option<(Kind, &'static str)> {
        Some(match name {
            "string" => {
                consumed.extend(self.string_keywords());
                (Kind::String(read_string(members)), "string")
            }
            "integer" | "number" => {
                consumed.extend(NUMBER_KEYWORDS);
                let integer = name == "integer";
                let kind = Kind::Number(self.read_number(members, integer));
                (kind, if integer { "integer" } else { "number" })
            }
            "boolean" => (Kind::Boolean, "boolean"),
            "null" => (Kind::Null, "null"),
            "array" => {
                consumed.extend(self.array_keywords());
                let array = self.read_array(members, child);
                (Kind::Array(Box::new(array)), "array")
            }
            "object" => {
                consumed.extend(self.object_keywords());
                let object = self.read_object_kind(members, child);
                (Kind::Object(Box::new(object)), "object")
            }
            _ => return None,
        })
    }

    fn read_number(&self, members: &Map<String, Value>, requires_integer: bool) -> NumberKind {
        let number = |key: &str| members.get(key).and_then(Value::as_f64);
        // Draft-04's exclusive limits are booleans, which Confluent does not compare.
        let exclusive = |key: &str| {
            if self.draft == Draft::Draft4 {
                None
            } else {
                number(key)
            }
        };
        NumberKind {
            minimum: number("minimum"),
            maximum: number("maximum"),
            exclusive_minimum: exclusive("exclusiveMinimum"),
            exclusive_maximum: exclusive("exclusiveMaximum"),
            multiple_of: number("multipleOf"),
            requires_integer,
        }
    }

    fn read_object_kind(
        &mut self,
        members: &'d Map<String, Value>,
        child: &dyn Fn(&[&str]) -> Location,
    ) -> ObjectKind {
        let number = |key: &str| members.get(key).and_then(Value::as_f64);
        let mut object = ObjectKind {
            properties: Vec::new(),
            required: Vec::new(),
            min_properties: number("minProperties"),
            max_properties: number("maxProperties"),
            permits_additional: true,
            additional_schema: None,
            pattern_properties: Vec::new(),
            property_dependencies: Vec::new(),
            schema_dependencies: Vec::new(),
            unevaluated: None,
        };
        let id_keyword = id_keyword(self.draft);
        for (name, schema) in members
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            // everit skips a property named like the id keyword unless it is a schema object.
            if name == id_keyword && !schema.is_object() {
                continue;
            }
            let node = self.load(child(&["properties", name]));
            object.properties.push((name.clone(), node));
        }
        match members.get("additionalProperties") {
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => object.permits_additional = false,
            Some(Value::Object(_)) => {
                object.additional_schema = Some(self.load(child(&["additionalProperties"])));
            }
            _ => {}
        }
        object.required = members
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        for (pattern, _) in members
            .get("patternProperties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let schema = self.load(child(&["patternProperties", pattern]));
            let matcher = self.matcher(pattern);
            object
                .pattern_properties
                .push(PatternProperty { matcher, schema });
        }
        let dependencies = |keyword: &str, loader: &mut Self, object: &mut ObjectKind| {
            for (name, dependency) in members
                .get(keyword)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                match dependency {
                    Value::Array(names) => {
                        let names = names.iter().filter_map(Value::as_str).map(str::to_owned);
                        object
                            .property_dependencies
                            .push((name.clone(), names.collect()));
                    }
                    Value::Object(_) | Value::Bool(_) => {
                        let node = loader.load(child(&[keyword, name]));
                        object.schema_dependencies.push((name.clone(), node));
                    }
                    _ => {}
                }
            }
        };
        dependencies("dependencies", self, &mut object);
        if self.modern() {
            dependencies("dependentRequired", self, &mut object);
            dependencies("dependentSchemas", self, &mut object);
            if members.contains_key("unevaluatedProperties") {
                object.unevaluated = Some(self.load(child(&["unevaluatedProperties"])));
            }
        }
        object
    }

    fn read_array(
        &mut self,
        members: &'d Map<String, Value>,
        child: &dyn Fn(&[&str]) -> Location,
    ) -> ArrayKind {
        let number = |key: &str| members.get(key).and_then(Value::as_f64);
        let mut array = ArrayKind {
            all_items: None,
            tuple_items: Vec::new(),
            permits_additional: true,
            additional_schema: None,
            min_items: number("minItems"),
            max_items: number("maxItems"),
            unique_items: members.get("uniqueItems").and_then(Value::as_bool) == Some(true),
            min_contains: number("minContains"),
            max_contains: number("maxContains"),
            unevaluated: None,
        };
        let mut additional_flag = true;
        let tuple = |loader: &mut Self, keyword: &str, items: &[Value]| -> Vec<NodeId> {
            (0..items.len())
                .map(|index| loader.load(child(&[keyword, &index.to_string()])))
                .collect()
        };
        if self.draft == Draft::Draft202012 {
            // json-sKema's reading, as Confluent translates it: `prefixItems` is the tuple,
            // `items` the schema of the rest (of all items when there is no tuple).
            if let Some(items) = members.get("prefixItems").and_then(Value::as_array) {
                array.tuple_items = tuple(self, "prefixItems", items);
            }
            match members.get("items") {
                Some(Value::Bool(false)) => additional_flag = false,
                Some(Value::Object(_)) => {
                    let node = self.load(child(&["items"]));
                    if array.tuple_items.is_empty() {
                        array.all_items = Some(node);
                    } else {
                        array.additional_schema = Some(node);
                    }
                }
                _ => {}
            }
        } else {
            match members.get("additionalItems") {
                Some(Value::Bool(flag)) => additional_flag = *flag,
                Some(Value::Object(_)) => {
                    array.additional_schema = Some(self.load(child(&["additionalItems"])));
                }
                _ => {}
            }
            match members.get("items") {
                Some(Value::Array(items)) => array.tuple_items = tuple(self, "items", items),
                Some(Value::Object(_) | Value::Bool(_)) => {
                    array.all_items = Some(self.load(child(&["items"])));
                }
                _ => {}
            }
        }
        // everit's `ArraySchema` constructor.
        array.permits_additional = if !additional_flag && array.all_items.is_some() {
            true
        } else {
            array.additional_schema.is_some() || additional_flag
        };
        if self.modern() && members.contains_key("unevaluatedItems") {
            array.unevaluated = Some(self.load(child(&["unevaluatedItems"])));
        }
        array
    }

    fn matcher(&mut self, pattern: &str) -> Option<Arc<Validator>> {
        if let Some(matcher) = self.matchers.get(pattern) {
            return matcher.clone();
        }
        let matcher = jsonschema::options()
            .with_draft(Draft::Draft7)
            .offline()
            .build(&serde_json::json!({ "pattern": pattern }))
            .ok()
            .map(Arc::new);
        self.matchers.insert(pattern.to_owned(), matcher.clone());
        matcher
    }

    /// The schema `reference` names, seen from `base`: a resource (document or `$id`), a
    /// JSON pointer into one, or an anchor.
    fn resolve_reference(&self, reference: &str, base: &str) -> Option<Location> {
        let target = resolve_uri(base, reference)?;
        let (resource, fragment) = target.split_once('#').unwrap_or((&target, ""));
        let root = self.index.resources.get(resource)?;
        let fragment = percent_decode(fragment);
        if fragment.is_empty() {
            return Some(root.clone());
        }
        match fragment.strip_prefix('/') {
            Some(pointer) => self.walk_pointer(root, pointer),
            None => self
                .index
                .anchors
                .get(&format!("{resource}#{fragment}"))
                .cloned(),
        }
    }

    /// Walks a JSON pointer from a resource, keeping track of the base URI as it passes
    /// through schemas with an `$id`.
    fn walk_pointer(&self, root: &Location, pointer: &str) -> Option<Location> {
        let document = &self.documents[root.document].value;
        let mut value = document.pointer(&root.pointer)?;
        let mut location = root.clone();
        // Whether `value` is a schema (its `$id` counts), a container of schemas, or
        // somewhere the walk no longer knows.
        #[derive(Clone, Copy)]
        enum Position {
            Schema,
            Container,
            Unknown,
        }
        let mut position = Position::Schema;
        for raw_token in pointer.split('/') {
            let token = unescape_pointer_token(raw_token);
            let next_position = match position {
                Position::Schema => {
                    location.base = base_inside(&location.base, value, self.draft);
                    let child = value.get(&token)?;
                    match subschema_shape(&token, child) {
                        Some(Shape::Single) => Position::Schema,
                        Some(Shape::List | Shape::Named) => Position::Container,
                        None => Position::Unknown,
                    }
                }
                Position::Container => Position::Schema,
                Position::Unknown => Position::Unknown,
            };
            value = match value {
                Value::Object(members) => members.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
            push_pointer_token(&mut location.pointer, &token);
            position = next_position;
        }
        Some(location)
    }
}

fn read_string(members: &Map<String, Value>) -> StringKind {
    StringKind {
        min_length: members.get("minLength").and_then(Value::as_f64),
        max_length: members.get("maxLength").and_then(Value::as_f64),
        pattern: members
            .get("pattern")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}
