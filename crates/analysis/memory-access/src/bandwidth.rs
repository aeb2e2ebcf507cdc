//! Memory bandwidth over the collection: the recorder every collection runs lives in
//! kairos-session (`session::bandwidth`); this module names it for memory-access's
//! collection, reports and the page.

pub use kairos_session::bandwidth::{finish, load, start, uncore_file, TICK};
