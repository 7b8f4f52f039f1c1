//! Confluent's differences and their messages: the `Difference.Type`s a comparison
//! records, which of them a reader can live with under the `STRICT` policy, how each is
//! worded, and the diff `Context` that collects them with their JSON paths.

macro_rules! difference_types {
    ($($variant:ident = $name:literal,)*) => {
        /// Confluent's `Difference.Type`: what changed at a path, from the old schema to the
        /// new one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(super) enum DifferenceType {
            $($variant,)*
        }

        impl DifferenceType {
            pub(super) fn name(self) -> &'static str {
                match self {
                    $(DifferenceType::$variant => $name,)*
                }
            }
        }
    };
}

difference_types! {
    IdChanged = "ID_CHANGED",
    DescriptionChanged = "DESCRIPTION_CHANGED",
    TitleChanged = "TITLE_CHANGED",
    DefaultChanged = "DEFAULT_CHANGED",
    SchemaAdded = "SCHEMA_ADDED",
    SchemaRemoved = "SCHEMA_REMOVED",
    TypeExtended = "TYPE_EXTENDED",
    TypeNarrowed = "TYPE_NARROWED",
    TypeChanged = "TYPE_CHANGED",
    MaxLengthAdded = "MAX_LENGTH_ADDED",
    MaxLengthRemoved = "MAX_LENGTH_REMOVED",
    MaxLengthIncreased = "MAX_LENGTH_INCREASED",
    MaxLengthDecreased = "MAX_LENGTH_DECREASED",
    MinLengthAdded = "MIN_LENGTH_ADDED",
    MinLengthRemoved = "MIN_LENGTH_REMOVED",
    MinLengthIncreased = "MIN_LENGTH_INCREASED",
    MinLengthDecreased = "MIN_LENGTH_DECREASED",
    PatternAdded = "PATTERN_ADDED",
    PatternRemoved = "PATTERN_REMOVED",
    PatternChanged = "PATTERN_CHANGED",
    MaximumAdded = "MAXIMUM_ADDED",
    MaximumRemoved = "MAXIMUM_REMOVED",
    MaximumIncreased = "MAXIMUM_INCREASED",
    MaximumDecreased = "MAXIMUM_DECREASED",
    MinimumAdded = "MINIMUM_ADDED",
    MinimumRemoved = "MINIMUM_REMOVED",
    MinimumIncreased = "MINIMUM_INCREASED",
    MinimumDecreased = "MINIMUM_DECREASED",
    ExclusiveMaximumAdded = "EXCLUSIVE_MAXIMUM_ADDED",
    ExclusiveMaximumRemoved = "EXCLUSIVE_MAXIMUM_REMOVED",
    ExclusiveMaximumIncreased = "EXCLUSIVE_MAXIMUM_INCREASED",
    ExclusiveMaximumDecreased = "EXCLUSIVE_MAXIMUM_DECREASED",
    ExclusiveMinimumAdded = "EXCLUSIVE_MINIMUM_ADDED",
    ExclusiveMinimumRemoved = "EXCLUSIVE_MINIMUM_REMOVED",
    ExclusiveMinimumIncreased = "EXCLUSIVE_MINIMUM_INCREASED",
    ExclusiveMinimumDecreased = "EXCLUSIVE_MINIMUM_DECREASED",
    MultipleOfAdded = "MULTIPLE_OF_ADDED",
    MultipleOfRemoved = "MULTIPLE_OF_REMOVED",
    MultipleOfExpanded = "MULTIPLE_OF_EXPANDED",
    MultipleOfReduced = "MULTIPLE_OF_REDUCED",
    MultipleOfChanged = "MULTIPLE_OF_CHANGED",
    RequiredAttributeAdded = "REQUIRED_ATTRIBUTE_ADDED",
    RequiredAttributeWithDefaultAdded = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    RequiredAttributeRemoved = "REQUIRED_ATTRIBUTE_REMOVED",
    MaxPropertiesAdded = "MAX_PROPERTIES_ADDED",
    MaxPropertiesRemoved = "MAX_PROPERTIES_REMOVED",
    MaxPropertiesIncreased = "MAX_PROPERTIES_INCREASED",
    MaxPropertiesDecreased = "MAX_PROPERTIES_DECREASED",
    MinPropertiesAdded = "MIN_PROPERTIES_ADDED",
    MinPropertiesRemoved = "MIN_PROPERTIES_REMOVED",
    MinPropertiesIncreased = "MIN_PROPERTIES_INCREASED",
    MinPropertiesDecreased = "MIN_PROPERTIES_DECREASED",
    AdditionalPropertiesAdded = "ADDITIONAL_PROPERTIES_ADDED",
    AdditionalPropertiesRemoved = "ADDITIONAL_PROPERTIES_REMOVED",
    AdditionalPropertiesExtended = "ADDITIONAL_PROPERTIES_EXTENDED",
    AdditionalPropertiesNarrowed = "ADDITIONAL_PROPERTIES_NARROWED",
    DependencyArrayAdded = "DEPENDENCY_ARRAY_ADDED",
    DependencyArrayRemoved = "DEPENDENCY_ARRAY_REMOVED",
    DependencyArrayExtended = "DEPENDENCY_ARRAY_EXTENDED",
    DependencyArrayNarrowed = "DEPENDENCY_ARRAY_NARROWED",
    DependencyArrayChanged = "DEPENDENCY_ARRAY_CHANGED",
    DependencySchemaAdded = "DEPENDENCY_SCHEMA_ADDED",
    DependencySchemaRemoved = "DEPENDENCY_SCHEMA_REMOVED",
    PropertyAddedToOpenContentModel = "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    PropertyWithEmptySchemaAddedToOpenContentModel =
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    RequiredPropertyAddedToUnopenContentModel = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    RequiredPropertyWithDefaultAddedToUnopenContentModel =
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    OptionalPropertyAddedToUnopenContentModel = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    PropertyRemovedFromOpenContentModel = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    PropertyWithFalseRemovedFromClosedContentModel =
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    PropertyRemovedFromClosedContentModel = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    PropertyRemovedIsCoveredByPartiallyOpenContentModel =
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyRemovedNotCoveredByPartiallyOpenContentModel =
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyAddedIsCoveredByPartiallyOpenContentModel =
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyAddedNotCoveredByPartiallyOpenContentModel =
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    UnevaluatedPropertiesAdded = "UNEVALUATED_PROPERTIES_ADDED",
    UnevaluatedPropertiesRemoved = "UNEVALUATED_PROPERTIES_REMOVED",
    UnevaluatedPropertiesExtended = "UNEVALUATED_PROPERTIES_EXTENDED",
    UnevaluatedPropertiesNarrowed = "UNEVALUATED_PROPERTIES_NARROWED",
    MaxItemsAdded = "MAX_ITEMS_ADDED",
    MaxItemsRemoved = "MAX_ITEMS_REMOVED",
    MaxItemsIncreased = "MAX_ITEMS_INCREASED",
    MaxItemsDecreased = "MAX_ITEMS_DECREASED",
    MinItemsAdded = "MIN_ITEMS_ADDED",
    MinItemsRemoved = "MIN_ITEMS_REMOVED",
    MinItemsIncreased = "MIN_ITEMS_INCREASED",
    MinItemsDecreased = "MIN_ITEMS_DECREASED",
    MaxContainsAdded = "MAX_CONTAINS_ADDED",
    MaxContainsRemoved = "MAX_CONTAINS_REMOVED",
    MaxContainsIncreased = "MAX_CONTAINS_INCREASED",
    MaxContainsDecreased = "MAX_CONTAINS_DECREASED",
    MinContainsAdded = "MIN_CONTAINS_ADDED",
    MinContainsRemoved = "MIN_CONTAINS_REMOVED",
    MinContainsIncreased = "MIN_CONTAINS_INCREASED",
    MinContainsDecreased = "MIN_CONTAINS_DECREASED",
    UniqueItemsAdded = "UNIQUE_ITEMS_ADDED",
    UniqueItemsRemoved = "UNIQUE_ITEMS_REMOVED",
    AdditionalItemsAdded = "ADDITIONAL_ITEMS_ADDED",
    AdditionalItemsRemoved = "ADDITIONAL_ITEMS_REMOVED",
    AdditionalItemsExtended = "ADDITIONAL_ITEMS_EXTENDED",
    AdditionalItemsNarrowed = "ADDITIONAL_ITEMS_NARROWED",
    UnevaluatedItemsAdded = "UNEVALUATED_ITEMS_ADDED",
    UnevaluatedItemsRemoved = "UNEVALUATED_ITEMS_REMOVED",
    UnevaluatedItemsExtended = "UNEVALUATED_ITEMS_EXTENDED",
    UnevaluatedItemsNarrowed = "UNEVALUATED_ITEMS_NARROWED",
    ItemAddedToOpenContentModel = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
    ItemWithEmptySchemaAddedToOpenContentModel = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    ItemAddedToClosedContentModel = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
    ItemRemovedFromOpenContentModel = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
    ItemWithFalseRemovedFromClosedContentModel =
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    ItemRemovedFromClosedContentModel = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    ItemRemovedIsCoveredByPartiallyOpenContentModel =
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemRemovedNotCoveredByPartiallyOpenContentModel =
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemAddedIsCoveredByPartiallyOpenContentModel =
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemAddedNotCoveredByPartiallyOpenContentModel =
        "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    EnumArrayExtended = "ENUM_ARRAY_EXTENDED",
    EnumArrayNarrowed = "ENUM_ARRAY_NARROWED",
    EnumArrayChanged = "ENUM_ARRAY_CHANGED",
    CombinedTypeExtended = "COMBINED_TYPE_EXTENDED",
    CombinedTypeChanged = "COMBINED_TYPE_CHANGED",
    ProductTypeExtended = "PRODUCT_TYPE_EXTENDED",
    ProductTypeNarrowed = "PRODUCT_TYPE_NARROWED",
    SumTypeExtended = "SUM_TYPE_EXTENDED",
    SumTypeNarrowed = "SUM_TYPE_NARROWED",
    CombinedTypeSubschemasChanged = "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
    NotTypeExtended = "NOT_TYPE_EXTENDED",
    NotTypeNarrowed = "NOT_TYPE_NARROWED",
}

/// The four variants of a limit keyword (`ADDED`, `REMOVED`, `INCREASED`, `DECREASED`).
pub(super) type LimitTypes = [DifferenceType; 4];

impl DifferenceType {
    /// Confluent's `COMPATIBLE_CHANGES_STRICT`: a reader with this change still reads what
    /// the writer wrote.
    pub(super) fn is_compatible(self) -> bool {
        use DifferenceType::*;
        matches!(
            self,
            IdChanged
                | DescriptionChanged
                | TitleChanged
                | DefaultChanged
                | SchemaRemoved
                | TypeExtended
                | MaxLengthIncreased
                | MaxLengthRemoved
                | MinLengthDecreased
                | MinLengthRemoved
                | PatternRemoved
                | MaximumIncreased
                | MaximumRemoved
                | MinimumDecreased
                | MinimumRemoved
                | ExclusiveMaximumIncreased
                | ExclusiveMaximumRemoved
                | ExclusiveMinimumDecreased
                | ExclusiveMinimumRemoved
                | MultipleOfReduced
                | MultipleOfRemoved
                | RequiredAttributeWithDefaultAdded
                | RequiredAttributeRemoved
                | DependencyArrayNarrowed
                | DependencyArrayRemoved
                | DependencySchemaRemoved
                | MaxPropertiesIncreased
                | MaxPropertiesRemoved
                | MinPropertiesDecreased
                | MinPropertiesRemoved
                | AdditionalPropertiesAdded
                | AdditionalPropertiesExtended
                | UnevaluatedPropertiesAdded
                | UnevaluatedPropertiesExtended
                | PropertyWithEmptySchemaAddedToOpenContentModel
                | RequiredPropertyWithDefaultAddedToUnopenContentModel
                | OptionalPropertyAddedToUnopenContentModel
                | PropertyWithFalseRemovedFromClosedContentModel
                | PropertyRemovedFromOpenContentModel
                | PropertyAddedIsCoveredByPartiallyOpenContentModel
                | PropertyRemovedIsCoveredByPartiallyOpenContentModel
                | MaxItemsIncreased
                | MaxItemsRemoved
                | MinItemsDecreased
                | MinItemsRemoved
                | MaxContainsIncreased
                | MaxContainsRemoved
                | MinContainsDecreased
                | MinContainsRemoved
                | UniqueItemsRemoved
                | AdditionalItemsAdded
                | AdditionalItemsExtended
                | UnevaluatedItemsAdded
                | UnevaluatedItemsExtended
                | ItemWithEmptySchemaAddedToOpenContentModel
                | ItemAddedToClosedContentModel
                | ItemWithFalseRemovedFromClosedContentModel
                | ItemRemovedFromOpenContentModel
                | ItemAddedIsCoveredByPartiallyOpenContentModel
                | ItemRemovedIsCoveredByPartiallyOpenContentModel
                | EnumArrayExtended
                | CombinedTypeExtended
                | ProductTypeNarrowed
                | SumTypeExtended
                | NotTypeNarrowed
        )
    }

    /// Confluent's `Difference.error()`: the description, with `reader` and `writer` for
    /// its two `%s`.
    fn description(self, path: &str, reader: &str, writer: &str) -> String {
        use DifferenceType::*;
        match self {
            MaximumAdded
            | MinimumAdded
            | ExclusiveMaximumAdded
            | ExclusiveMinimumAdded
            | MultipleOfAdded
            | MaxLengthAdded
            | MinLengthAdded
            | PatternAdded
            | RequiredAttributeAdded
            | MaxPropertiesAdded
            | MinPropertiesAdded
            | DependencyArrayAdded
            | DependencySchemaAdded
            | MaxItemsAdded
            | MinItemsAdded
            | MaxContainsAdded
            | MinContainsAdded
            | UniqueItemsAdded
            | AdditionalItemsRemoved
            | AdditionalPropertiesRemoved
            | UnevaluatedPropertiesRemoved
            | UnevaluatedItemsRemoved => format!(
                "The keyword at path '{path}' in the {reader} schema is not present in the \
                 {writer} schema"
            ),
            MinLengthIncreased
            | MinimumIncreased
            | ExclusiveMinimumIncreased
            | MinPropertiesIncreased
            | MultipleOfExpanded
            | MinItemsIncreased
            | MinContainsIncreased => format!(
                "The value at path '{path}' in the {reader} schema is more than its value in \
                 the {writer} schema"
            ),
            MaxLengthDecreased
            | MaximumDecreased
            | MaxItemsDecreased
            | MaxContainsDecreased
            | ExclusiveMaximumDecreased
            | MaxPropertiesDecreased => format!(
                "The value at path '{path}' in the {reader} schema is less than its value in \
                 the {writer} schema"
            ),
            PatternChanged | MultipleOfChanged | DependencyArrayChanged => format!(
                "The value at path '{path}' is different between the {reader} and {writer} \
                 schema"
            ),
            AdditionalItemsNarrowed
            | EnumArrayNarrowed
            | SumTypeNarrowed
            | AdditionalPropertiesNarrowed
            | UnevaluatedPropertiesNarrowed
            | UnevaluatedItemsNarrowed => format!(
                "An array or combined type at path '{path}' has fewer elements in the {reader} \
                 schema than the {writer} schema"
            ),
            DependencyArrayExtended | ProductTypeExtended | SumTypeExtended | NotTypeExtended => {
                format!(
                    "An array or combined type at path '{path}' has more elements in the {reader} \
                 schema than the {writer} schema"
                )
            }
            TypeChanged
            | TypeNarrowed
            | CombinedTypeChanged
            | CombinedTypeSubschemasChanged
            | EnumArrayChanged => format!(
                "A type at path '{path}' is different between the {reader} schema and the \
                 {writer} schema"
            ),
            PropertyAddedToOpenContentModel | ItemAddedToOpenContentModel => format!(
                "The {reader} schema has an open content model and has a property or item at \
                 path '{path}' which is missing in the {writer} schema"
            ),
            RequiredPropertyAddedToUnopenContentModel => format!(
                "The {reader} schema has an unopen content model and has a required property at \
                 path '{path}' which is missing in the {writer} schema"
            ),
            PropertyRemovedFromClosedContentModel | ItemRemovedFromClosedContentModel => format!(
                "The {reader} has a closed content model and is missing a property or item \
                 present at path '{path}' in the {writer} schema"
            ),
            PropertyRemovedNotCoveredByPartiallyOpenContentModel
            | ItemRemovedNotCoveredByPartiallyOpenContentModel => format!(
                "A property or item is missing in the {reader} schema but present at path \
                 '{path}' in the {writer} schema and is not covered by its partially open \
                 content model"
            ),
            PropertyAddedNotCoveredByPartiallyOpenContentModel
            | ItemAddedNotCoveredByPartiallyOpenContentModel => format!(
                "The {reader} schema has a property or item at path '{path}' which is missing \
                 in the {writer} schema and is not covered by its partially open content model"
            ),
            _ => String::new(),
        }
    }
}

/// One difference, at a path relative to the pair of schemas being compared (`""` is the
/// pair itself); the top-level comparison's paths are the schemas' JSON paths without `#/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Difference {
    pub(super) kind: DifferenceType,
    pub(super) path: String,
}

impl Difference {
    /// Confluent's `Difference.toString()`, with its `%s`s filled in as its
    /// `SchemaValidatorBuilder` fills them.
    pub(super) fn message(&self, reader: &str, writer: &str) -> String {
        let path = format!("#/{}", self.path);
        format!(
            "{{errorType:\"{}\", description:\"{}'}}",
            self.kind.name(),
            self.kind.description(&path, reader, writer)
        )
    }
}

/// Confluent's diff `Context`: the path being compared (relative to the current pair) and
/// the differences found so far.
#[derive(Debug, Default)]
pub(super) struct Context {
    pub(super) path: Vec<String>,
    pub(super) differences: Vec<Difference>,
}

impl Context {
    /// A context for a trial comparison whose differences the caller may keep or drop.
    pub(super) fn trial(&self) -> Context {
        Context {
            path: self.path.clone(),
            differences: Vec::new(),
        }
    }

    pub(super) fn is_compatible(&self) -> bool {
        self.differences
            .iter()
            .all(|difference| difference.kind.is_compatible())
    }

    pub(super) fn add(&mut self, kind: DifferenceType) {
        self.differences.push(Difference {
            kind,
            path: self.path.join("/"),
        });
    }

    pub(super) fn add_at(&mut self, keyword: &str, kind: DifferenceType) {
        self.path.push(keyword.to_owned());
        self.add(kind);
        self.path.pop();
    }

    pub(super) fn keep(&mut self, trial: Context) {
        self.differences.extend(trial.differences);
    }

    /// Adds a pair's differences (paths relative to the pair) at the current path.
    pub(super) fn add_rebased(&mut self, differences: &[Difference]) {
        let prefix = self.path.join("/");
        for difference in differences {
            let path = match (prefix.is_empty(), difference.path.is_empty()) {
                (true, _) => difference.path.clone(),
                (false, true) => prefix.clone(),
                (false, false) => format!("{prefix}/{}", difference.path),
            };
            self.differences.push(Difference {
                kind: difference.kind,
                path,
            });
        }
    }

    pub(super) fn enter(&mut self, segment: impl Into<String>) {
        self.path.push(segment.into());
    }

    pub(super) fn leave(&mut self) {
        self.path.pop();
    }
}
