//! `kairos publish`: a result copied into the fleet layout of a root, on a local disk
//! (kairos-result's copy, each file renamed into place) or in an S3-compatible bucket
//! (one PUT per file). Both follow kairos-result's plan: the same keys, the same
//! `results` row, the manifest last so that a reader never sees half a result.

use kairos_result::fleet::{plan, Content, Published};
use kairos_result::ResultDir;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::{io_err, FleetError, Result};
use crate::root::Root;

/// Publishes `dir` under `root`; refuses a result already there.
pub fn publish(dir: &ResultDir, root: &Root) -> Result<Published> {
    match root {
        Root::Local(path) => kairos_result::fleet::publish(dir, path).map_err(|e| match e {
            kairos_result::Error::AlreadyExists { path } => FleetError::AlreadyPublished {
                what: dir.path().display().to_string(),
                place: path.display().to_string(),
            },
            other => other.into(),
        }),
        Root::S3 { bucket, .. } => {
            let store = Root::s3(bucket, &root.describe())?;
            crate::runtime()?.block_on(put(dir, root, store.as_ref()))
        }
    }
}

async fn put(dir: &ResultDir, root: &Root, store: &dyn ObjectStore) -> Result<Published> {
    let store_err = |source| FleetError::Store {
        root: root.describe(),
        source,
    };
    let (published, entries) = plan(dir)?;
    if let Some(manifest) = entries.last() {
        let key = root.key(&manifest.key);
        match store.head(&key).await {
            Ok(_) => {
                return Err(FleetError::AlreadyPublished {
                    what: dir.path().display().to_string(),
                    place: format!("{}/{}", root.describe(), manifest.key),
                })
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(store_err(e)),
        }
    }
    let scratch = tempfile::tempdir().map_err(io_err(&std::env::temp_dir()))?;
    for e in &entries {
        let bytes = match &e.content {
            Content::Copy(from) => std::fs::read(from).map_err(io_err(from))?,
            Content::ResultsRow => {
                let file = scratch.path().join("results.parquet");
                kairos_result::fleet::write_results_table(dir, &file)?;
                std::fs::read(&file).map_err(io_err(&file))?
            }
        };
        store
            .put(&root.key(&e.key), PutPayload::from(bytes))
            .await
            .map_err(store_err)?;
    }
    Ok(published)
}
