//! SQL over a fleet root with DataFusion: every table folder of the root (`samples`,
//! `frames`, `requests`, ...) registered as one table over every host, day and result,
//! its partition columns `host`, `date` and `result` read from the paths; then the views
//! of `views.sql` whose tables are there. Result directories given one by one are laid
//! out the same way first (links, in a temporary folder), so both are one path.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;
use kairos_result::fleet::{plan, Content, MANIFESTS};
use kairos_result::ResultDir;
use tempfile::TempDir;
use tokio::runtime::Runtime;

use crate::error::{io_err, FleetError, Result};
use crate::root::Root;
use crate::views::{views, View};

/// The layout's partition columns, outermost first.
pub const PARTITIONS: [&str; 3] = ["host", "date", "result"];

/// A view and whether its tables are here.
#[derive(Debug, Clone)]
pub struct ViewState {
    pub view: View,
    /// The first table it needs that no result has.
    pub missing: Option<String>,
}

/// An engine over one fleet root.
pub struct Fleet {
    rt: Runtime,
    ctx: SessionContext,
    root: Root,
    /// What was queried, in words.
    label: String,
    tables: Vec<String>,
    views: Vec<ViewState>,
    /// The links of results given one by one, removed with the engine.
    _links: Option<TempDir>,
}

impl Fleet {
    /// Every table under `root`, and the views they allow.
    pub fn open_root(root: &Root) -> Result<Fleet> {
        let rt = crate::runtime()?;
        let ctx = SessionContext::new();
        let folders = rt.block_on(folders(root, &ctx))?;
        let mut fleet = Fleet {
            rt,
            ctx,
            root: root.clone(),
            label: root.describe(),
            tables: Vec::new(),
            views: Vec::new(),
            _links: None,
        };
        for t in folders {
            fleet.register_table(&t)?;
        }
        if fleet.tables.is_empty() {
            return Err(FleetError::Empty {
                root: root.describe(),
            });
        }
        fleet.register_views()?;
        Ok(fleet)
    }

    /// The tables of these result directories, laid out as if published (without copying).
    pub fn open_results(dirs: &[ResultDir]) -> Result<Fleet> {
        let links = tempfile::Builder::new()
            .prefix("kairos-query-")
            .tempdir()
            .map_err(io_err(&std::env::temp_dir()))?;
        for dir in dirs {
            link(dir, links.path())?;
        }
        let mut fleet = Fleet::open_root(&Root::Local(links.path().to_path_buf()))?;
        fleet._links = Some(links);
        let names: Vec<String> = dirs
            .iter()
            .map(|d| d.path().display().to_string())
            .collect();
        fleet.label = names.join(", ");
        Ok(fleet)
    }

    /// The tables, by name.
    pub fn tables(&self) -> &[String] {
        &self.tables
    }

    /// The views, in their file's order, with the ones that cannot be had saying why.
    pub fn views(&self) -> &[ViewState] {
        &self.views
    }

    /// What was queried, as the user named it: the root, or the result directories.
    pub fn describe(&self) -> &str {
        &self.label
    }

    /// Runs `sql`; a bare table or view name selects all of it (a view in its order).
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let sql = self.expand(sql.trim())?;
        self.rt.block_on(async {
            let df = self.ctx.sql(&sql).await?;
            Ok(df.collect().await?)
        })
    }

    fn expand(&self, sql: &str) -> Result<String> {
        let word = sql.trim_end_matches(';').trim();
        if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(sql.to_owned());
        }
        if let Some(v) = self.views.iter().find(|v| v.view.name == word) {
            if let Some(table) = &v.missing {
                return Err(FleetError::ViewUnavailable {
                    view: word.to_owned(),
                    table: table.clone(),
                });
            }
            return Ok(format!("SELECT * FROM {word} ORDER BY {}", v.view.order));
        }
        Ok(format!("SELECT * FROM {word}"))
    }

    fn register_table(&mut self, name: &str) -> Result<()> {
        let url = ListingTableUrl::parse(self.root.folder_url(name)?)?;
        let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
            .with_file_extension(".parquet")
            .with_table_partition_cols(
                PARTITIONS
                    .iter()
                    .map(|p| (p.to_string(), DataType::Utf8))
                    .collect(),
            );
        let state = self.ctx.state();
        let schema = match self.rt.block_on(options.infer_schema(&state, &url)) {
            Ok(s) => s,
            // A folder without Parquet files (a half-written layout, a stray folder) is no table.
            Err(_) if !self.rt.block_on(has_parquet(&self.ctx, &url))? => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let config = ListingTableConfig::new(url)
            .with_listing_options(options)
            .with_schema(schema);
        self.ctx
            .register_table(name, Arc::new(ListingTable::try_new(config)?))?;
        self.tables.push(name.to_owned());
        Ok(())
    }

    fn register_views(&mut self) -> Result<()> {
        let have: BTreeSet<&str> = self.tables.iter().map(String::as_str).collect();
        let mut states = Vec::new();
        for view in views() {
            let missing = view
                .needs
                .iter()
                .find(|t| !have.contains(t.as_str()))
                .cloned();
            if missing.is_none() {
                let df = self.rt.block_on(self.ctx.sql(&view.sql))?;
                self.ctx
                    .register_table(view.name.as_str(), df.into_view())?;
            }
            states.push(ViewState { view, missing });
        }
        self.views = states;
        Ok(())
    }
}

/// The table folders under the root (not the manifests'), sorted.
async fn folders(root: &Root, ctx: &SessionContext) -> Result<Vec<String>> {
    let mut names = match root {
        Root::Local(path) => local_folders(path)?,
        Root::S3 { bucket, .. } => {
            let store = Root::s3(bucket, &root.describe())?;
            let url =
                url::Url::parse(&format!("s3://{bucket}")).map_err(|e| FleetError::BadRoot {
                    root: root.describe(),
                    why: e.to_string(),
                })?;
            ctx.register_object_store(&url, store.clone());
            let listed = store
                .list_with_delimiter(Some(&root.key("")))
                .await
                .map_err(|source| FleetError::Store {
                    root: root.describe(),
                    source,
                })?;
            listed
                .common_prefixes
                .iter()
                .filter_map(|p| p.filename().map(str::to_owned))
                .collect()
        }
    };
    names.retain(|n| n != MANIFESTS && !n.starts_with('.'));
    names.sort();
    Ok(names)
}

fn local_folders(path: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(path).map_err(io_err(path))?;
    Ok(entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

async fn has_parquet(ctx: &SessionContext, url: &ListingTableUrl) -> Result<bool> {
    let state = ctx.state();
    let store = state.runtime_env().object_store(url)?;
    let files: Vec<_> = url
        .list_all_files(&state, store.as_ref(), ".parquet")
        .await?
        .try_collect()
        .await?;
    Ok(!files.is_empty())
}

/// Lays `dir` out under `to` as publishing would, with links to its files.
fn link(dir: &ResultDir, to: &Path) -> Result<()> {
    let (_, entries) = plan(dir)?;
    if let Some(manifest) = entries.last().map(|e| to.join(&e.key)) {
        if manifest.exists() {
            return Err(FleetError::AlreadyPublished {
                what: dir.path().display().to_string(),
                place: "the same host, date and result as another one given".into(),
            });
        }
    }
    for e in &entries {
        let at = to.join(&e.key);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        match &e.content {
            Content::Copy(from) => {
                let from = std::path::absolute(from).map_err(io_err(from))?;
                std::os::unix::fs::symlink(&from, &at).map_err(io_err(&at))?;
            }
            Content::ResultsRow => kairos_result::fleet::write_results_table(dir, &at)?,
        }
    }
    Ok(())
}
