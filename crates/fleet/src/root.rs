//! Where a fleet layout lives: a local folder or a prefix of an S3-compatible bucket
//! (`s3://BUCKET/PREFIX`, credentials and endpoint from the standard `AWS_*` variables,
//! as the AWS tools read them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_REGION`, `AWS_ENDPOINT_URL` for MinIO and the like, `AWS_ALLOW_HTTP=true` for a
//! plain-HTTP one).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

use crate::error::{FleetError, Result};

/// What to check when object storage refuses or cannot be reached, for the sentence a
/// command says.
pub const S3_SETTINGS: &str =
    "check the bucket, AWS_ENDPOINT_URL, AWS_REGION and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";

/// A fleet root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    Local(PathBuf),
    S3 { bucket: String, prefix: String },
}

impl Root {
    /// `s3://BUCKET[/PREFIX]` or a local path; other URL schemes are refused.
    pub fn parse(s: &str) -> Result<Root> {
        let bad = |why: &str| FleetError::BadRoot {
            root: s.to_owned(),
            why: why.to_owned(),
        };
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("the bucket is missing (s3://BUCKET/PREFIX)"));
            }
            return Ok(Root::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.trim_matches('/').to_owned(),
            });
        }
        if let Some((scheme, _)) = s.split_once("://") {
            return Err(bad(&format!(
                "{scheme}:// is not supported; give a local path or s3://BUCKET/PREFIX"
            )));
        }
        if s.is_empty() {
            return Err(bad("empty path"));
        }
        Ok(Root::Local(PathBuf::from(s)))
    }

    /// As the user wrote it.
    pub fn describe(&self) -> String {
        match self {
            Root::Local(p) => p.display().to_string(),
            Root::S3 { bucket, prefix } if prefix.is_empty() => format!("s3://{bucket}"),
            Root::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
        }
    }

    /// The URL of the folder `folder` under the root, ending in `/`, as the engine lists it.
    pub(crate) fn folder_url(&self, folder: &str) -> Result<String> {
        match self {
            Root::Local(p) => {
                let abs = absolute(p)?;
                Ok(format!("{}/{folder}/", abs.display()))
            }
            Root::S3 { .. } => Ok(format!("{}/{folder}/", self.describe())),
        }
    }

    /// The object key of `key` (a `/`-separated path under the root).
    pub(crate) fn key(&self, key: &str) -> ObjectPath {
        match self {
            Root::S3 { prefix, .. } if !prefix.is_empty() => {
                ObjectPath::from(format!("{prefix}/{key}"))
            }
            _ => ObjectPath::from(key),
        }
    }

    /// The S3 client of the bucket, configured from the environment.
    pub(crate) fn s3(bucket: &str, root: &str) -> Result<Arc<dyn ObjectStore>> {
        let store = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map_err(|source| FleetError::Store {
                root: root.to_owned(),
                source,
            })?;
        Ok(Arc::new(store))
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(crate::error::io_err(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_parse_as_written() {
        assert_eq!(
            Root::parse("s3://b/fleet/prod/").ok(),
            Some(Root::S3 {
                bucket: "b".into(),
                prefix: "fleet/prod".into()
            })
        );
        assert_eq!(
            Root::parse("s3://b").map(|r| r.describe()).ok(),
            Some("s3://b".into())
        );
        assert_eq!(
            Root::parse("/data/fleet").ok(),
            Some(Root::Local("/data/fleet".into()))
        );
        let gs = Root::parse("gs://b/x")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(gs.contains("gs:// is not supported"), "{gs}");
        assert!(Root::parse("s3:///x").is_err());
        assert!(Root::parse("").is_err());
    }

    #[test]
    fn keys_sit_under_the_prefix() {
        let r = Root::parse("s3://b/fleet").unwrap_or(Root::Local(PathBuf::new()));
        assert_eq!(
            r.key("samples/x.parquet").as_ref(),
            "fleet/samples/x.parquet"
        );
    }
}
