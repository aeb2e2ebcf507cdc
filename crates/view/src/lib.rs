//! `kairos view`: the results page. The page's files (built from `web/` and embedded), the
//! page modules of the analyses (from the registry, none named here) and the comparison's
//! table make the site the view engine serves; see kairos-view-engine for the server and
//! `docs/VIEW_API.md` for the API.

mod assets;

use std::path::{Path, PathBuf};

use kairos_view_engine::site::{Assets, Site};
pub use kairos_view_engine::{Error, Loaded, Server, DEFAULT_PORT, MAX_HEAD, MAX_TARGET};

/// Binds 127.0.0.1 (`port`: exactly that one, 0 = any free; None = [`DEFAULT_PORT`] or any
/// free one), then opens every result, calling `loading` before each.
pub fn start(
    dirs: &[PathBuf],
    port: Option<u16>,
    loading: impl FnMut(&Path),
) -> Result<Server, Error> {
    Server::start(site(), dirs, port, loading)
}

/// The site: the page, every analysis's page module, `kairos compare`'s table.
pub fn site() -> Site {
    Site {
        assets: Assets {
            index_html: assets::INDEX_HTML,
            app_js: assets::APP_JS,
            style_css: assets::STYLE_CSS,
        },
        modules: kairos_analysis_registry::page_modules(),
        facts: |a, b| {
            let (fa, _) = kairos_compare::Facts::read(a);
            let (fb, _) = kairos_compare::Facts::read(b);
            kairos_compare::compare(&fa, &fb)
        },
        views: |kind| kairos_analysis_registry::find(kind).map(|a| a.views),
        reports: |kind| {
            kairos_analysis_registry::find(kind)
                .map(|a| a.report_names().join(", "))
                .unwrap_or_default()
        },
    }
}
