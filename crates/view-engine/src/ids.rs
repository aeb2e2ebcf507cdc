//! The id that stands for none (no node, no function, no module) in the sample columns and
//! every index above them: one name below all its users.

/// No node / no function.
pub const NONE: u32 = u32::MAX;
