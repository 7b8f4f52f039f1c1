//! Nexmark (placeholder: being written).
