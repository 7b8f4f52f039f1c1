//! A client of the registry's REST API (placeholder: being written).
