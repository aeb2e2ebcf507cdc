//! The memory-access analysis's part of the page: `api/memory` (objects, cache lines,
//! samples over time), `api/numa` (placement), `api/bandwidth` (the bandwidth timeline any
//! result has, with the by-object table where there are accesses), and the memory objects
//! of a comparison.

mod accesses;
mod bandwidth;
mod compare;
mod memory;
mod numa;

use kairos_view_engine::site::PageModule;
use serde_json::json;

/// The page module the spec declares.
pub(crate) static PAGE: PageModule = PageModule {
    endpoints: &[
        ("memory", memory::get),
        ("numa", numa::get),
        ("bandwidth", bandwidth::get),
    ],
    opened: None,
    fields: Some(|d| vec![("has_memory", json!(accesses::has_memory(d)))]),
    compare: Some(("objects", compare::objects)),
};
