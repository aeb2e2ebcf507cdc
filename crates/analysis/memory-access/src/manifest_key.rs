//! The manifest entry of a memory-access result: the collection, its finish and the TMA
//! step each write facts there, and the reports read them back.

/// The manifest entry holding what the tables do not: source, reason, unresolved counts.
pub(crate) const EXTRA: &str = "memory_access";
