//! Serializers and deserializers in Confluent's wire format (placeholder: being written).
