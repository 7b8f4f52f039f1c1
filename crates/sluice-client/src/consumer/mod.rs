//! The consumer (issue 8): being written.
