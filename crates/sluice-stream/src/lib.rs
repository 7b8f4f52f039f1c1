//! Sluice's stream processing library (placeholder: being written).
