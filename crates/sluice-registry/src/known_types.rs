//! The `.proto` files every Confluent registry and serializer knows without a reference:
//! Google's well-known types (`google/protobuf/*.proto`, from protox), Confluent's own
//! (`confluent/meta.proto`, `confluent/type/decimal.proto`) and the Google API types
//! Confluent's Connect converter uses (`google/type/date.proto`,
//! `google/type/timeofday.proto`).
//!
//! Why: Confluent's Protobuf serializers skip these imports when registering
//! (`skip.known.types`, default true), so a schema written by Confluent's `ProtobufConverter`
//! (which imports `confluent/meta.proto` for its field metadata) arrives with no references
//! and must still compile here.
//!
//! What it is not: the whole of Confluent's bundle. `confluent/type/variant.proto` and the
//! other `google/type/*.proto` files (color, money, latlng, ...) are not served; a schema
//! importing them needs references.
//!
//! The texts carry the packages, messages, field numbers and extensions of the originals
//! (what decoding and type resolution need); the language-specific file options
//! (`java_package`, `go_package`, ...) are left out.

use protox::file::{File, FileResolver, GoogleFileResolver};

/// `confluent/meta.proto`: the `Meta` options Confluent attaches to files, messages,
/// fields and enums (`(confluent.field_meta).params` carries Connect's `connect.type`).
pub const CONFLUENT_META: &str = r#"syntax = "proto3";
package confluent;

import "google/protobuf/descriptor.proto";

message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}

extend google.protobuf.FileOptions {
  Meta file_meta = 1088;
}
extend google.protobuf.MessageOptions {
  Meta message_meta = 1088;
}
extend google.protobuf.FieldOptions {
  Meta field_meta = 1088;
}
extend google.protobuf.EnumOptions {
  Meta enum_meta = 1088;
}
extend google.protobuf.EnumValueOptions {
  Meta enum_value_meta = 1088;
}
"#;

/// `confluent/type/decimal.proto`: a decimal as its unscaled two's-complement bytes.
pub const CONFLUENT_DECIMAL: &str = r#"syntax = "proto3";
package confluent.type;

message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
"#;

/// `google/type/date.proto`.
pub const GOOGLE_DATE: &str = r#"syntax = "proto3";
package google.type;

message Date {
  int32 year = 1;
  int32 month = 2;
  int32 day = 3;
}
"#;

/// `google/type/timeofday.proto`.
pub const GOOGLE_TIME_OF_DAY: &str = r#"syntax = "proto3";
package google.type;

message TimeOfDay {
  int32 hours = 1;
  int32 minutes = 2;
  int32 seconds = 3;
  int32 nanos = 4;
}
"#;

/// Every known file by import path, Google's well-known types aside.
pub const KNOWN_FILES: [(&str, &str); 4] = [
    ("confluent/meta.proto", CONFLUENT_META),
    ("confluent/type/decimal.proto", CONFLUENT_DECIMAL),
    ("google/type/date.proto", GOOGLE_DATE),
    ("google/type/timeofday.proto", GOOGLE_TIME_OF_DAY),
];

/// Whether `path` is a file every reader has (no reference needed).
pub fn is_known(path: &str) -> bool {
    path.starts_with("google/protobuf/") || KNOWN_FILES.iter().any(|(name, _)| *name == path)
}

/// Serves the known files to protox: Confluent's and Google's API types from the texts
/// above, the well-known types from protox.
#[derive(Debug)]
pub struct KnownTypesResolver {
    google: GoogleFileResolver,
}

impl KnownTypesResolver {
    pub fn new() -> KnownTypesResolver {
        // Not GoogleFileResolver::default(): that one has an empty pool and panics on
        // every well-known file.
        KnownTypesResolver {
            google: GoogleFileResolver::new(),
        }
    }
}

impl Default for KnownTypesResolver {
    fn default() -> KnownTypesResolver {
        KnownTypesResolver::new()
    }
}

impl FileResolver for KnownTypesResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match KNOWN_FILES.iter().find(|(path, _)| *path == name) {
            Some((path, text)) => File::from_source(path, text),
            None => self.google.open_file(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_file_compiles() {
        for (path, _) in KNOWN_FILES {
            let mut compiler = protox::Compiler::with_file_resolver(KnownTypesResolver::new());
            compiler.open_file(path).expect(path);
        }
        let mut compiler = protox::Compiler::with_file_resolver(KnownTypesResolver::new());
        compiler
            .open_file("google/protobuf/wrappers.proto")
            .expect("a well-known type");
        assert!(is_known("google/protobuf/wrappers.proto"));
        assert!(is_known("confluent/meta.proto"));
        assert!(!is_known("shop/order.proto"));
    }
}
