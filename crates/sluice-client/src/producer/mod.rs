//! The producer (issue 8): being written.
