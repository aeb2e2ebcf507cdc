//! Readers of `/proc` text shared across Kairos; see the README.

pub mod maps;
