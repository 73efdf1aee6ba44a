//! Which thread store a command works on, from `--store`.

use std::path::PathBuf;
use std::sync::Arc;

use thread_store::ThreadStore;
use thread_store::postgres::{PostgresConfig, PostgresStore};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

use crate::{Failure, exit};

/// A parsed `--store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreSpec {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL. It may hold a password: never printed.
    Postgres(String),
}

impl StoreSpec {
    /// `sqlite:PATH`, `postgresql://…` or `postgres://…`; the default SQLite file without one.
    pub(crate) fn from_arg(arg: Option<&str>) -> Result<Self, Failure> {
        match arg {
            None => default_sqlite_path().map(Self::Sqlite),
            Some(s) if s.starts_with("postgresql://") || s.starts_with("postgres://") => {
                Ok(Self::Postgres(s.to_owned()))
            }
            Some(s) => match s.strip_prefix("sqlite:") {
                Some(path) if !path.is_empty() => Ok(Self::Sqlite(PathBuf::from(path))),
                _ => Err(Failure::new(
                    2,
                    "--store takes sqlite:PATH or a postgresql:// URL",
                )),
            },
        }
    }

    /// Opens the store, creating a missing SQLite file (and its 0700 directory) for a run.
    pub(crate) async fn open_or_create(
        &self,
        pg_schema: &str,
    ) -> Result<Arc<dyn ThreadStore>, Failure> {
        if let Self::Sqlite(path) = self
            && let Some(dir) = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        {
            create_private_dir(dir)?;
        }
        if let Self::Sqlite(path) = self
            && !path.exists()
        {
            let store = SqliteStore::open(SqliteConfig::new(path))
                .await
                .map_err(|e| Failure::store("cannot create the SQLite store", &e))?;
            return Ok(Arc::new(store));
        }
        self.open_existing(pg_schema).await
    }

    /// Opens a store that already exists: a missing SQLite file is reported, not created.
    pub(crate) async fn open_existing(
        &self,
        pg_schema: &str,
    ) -> Result<Arc<dyn ThreadStore>, Failure> {
        match self {
            Self::Sqlite(path) => {
                if !path.exists() {
                    return Err(Failure::new(
                        exit::NOT_FOUND,
                        format!("no thread store at {}", path.display()),
                    ));
                }
                let store = SqliteStore::open(SqliteConfig::new(path))
                    .await
                    .map_err(|e| Failure::store("cannot open the SQLite store", &e))?;
                Ok(Arc::new(store))
            }
            Self::Postgres(url) => {
                let config = PostgresConfig::from_url(url, pg_schema)
                    .map_err(|e| Failure::store("invalid PostgreSQL store", &e))?;
                let store = PostgresStore::connect(config)
                    .await
                    .map_err(|e| Failure::store("cannot open the PostgreSQL store", &e))?;
                Ok(Arc::new(store))
            }
        }
    }
}

/// Creates `dir` and its missing parents, 0700.
pub(crate) fn create_private_dir(dir: &std::path::Path) -> Result<(), Failure> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("cannot create {}: {e}", dir.display()),
            )
        })
}

/// `$XDG_DATA_HOME/agentctl/threads.sqlite3`, or `$HOME/.local/share/agentctl/…`.
fn default_sqlite_path() -> Result<PathBuf, Failure> {
    Ok(data_dir()?.join("threads.sqlite3"))
}

/// agentctl's data directory: `$XDG_DATA_HOME/agentctl`, or `$HOME/.local/share/agentctl`.
pub(crate) fn data_dir() -> Result<PathBuf, Failure> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let data = absolute("XDG_DATA_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/share")))
        .ok_or_else(|| {
            Failure::new(
                exit::FAILURE,
                "neither XDG_DATA_HOME nor HOME is set: pass --store (or --base)",
            )
        })?;
    Ok(data.join("agentctl"))
}

#[cfg(test)]
mod tests {
    use super::StoreSpec;

    #[test]
    fn store_arguments_parse() {
        assert_eq!(
            StoreSpec::from_arg(Some("sqlite:/tmp/x.db")).ok(),
            Some(StoreSpec::Sqlite("/tmp/x.db".into()))
        );
        assert!(matches!(
            StoreSpec::from_arg(Some("postgresql://u@h/db")),
            Ok(StoreSpec::Postgres(_))
        ));
        for bad in ["sqlite:", "/tmp/x.db", "mysql://h"] {
            assert!(StoreSpec::from_arg(Some(bad)).is_err(), "{bad}");
        }
    }
}
