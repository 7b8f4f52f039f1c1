//! Json schemas (placeholder: being written).

use std::any::Any;

use crate::schema::{InvalidSchema, ParsedSchema, ResolvedReference, SchemaType};

#[derive(Debug)]
pub struct JsonSchema {
    text: String,
}

impl JsonSchema {
    pub fn parse(schema: &str, _references: &[ResolvedReference]) -> Result<Self, InvalidSchema> {
        Err(InvalidSchema(format!("{} schemas are not supported yet: {}", "Json", schema.len())))
    }
}

impl ParsedSchema for JsonSchema {
    fn schema_type(&self) -> SchemaType {
        SchemaType::Json
    }
    fn canonical(&self) -> String {
        self.text.clone()
    }
    fn normalized(&self) -> String {
        self.text.clone()
    }
    fn record_name(&self) -> Option<String> {
        None
    }
    fn formatted(&self, _format: &str) -> Option<String> {
        None
    }
    fn backward_incompatibilities(&self, _previous: &dyn ParsedSchema) -> Vec<String> {
        Vec::new()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
