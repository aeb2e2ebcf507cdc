//! The page, built from `web/` by build.rs and embedded so that `kairos view` needs no
//! files and no network at run time.

pub const INDEX_HTML: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/web/index.html"));
pub const APP_JS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/web/app.js"));
pub const STYLE_CSS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/web/style.css"));
