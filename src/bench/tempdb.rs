//! A migrated SQLite database in a fresh temporary directory, for the benchmarks that generate
//! their own data.

use std::path::PathBuf;

use crate::store::db::{self, DbError, Pool, PooledConnection};

#[derive(Debug, thiserror::Error)]
pub enum TempDbError {
    #[error("cannot create {}", path.display())]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the benchmark database is closed")]
    Closed,
}

/// The directory is removed when this is dropped.
pub struct TempDb {
    dir: PathBuf,
    // An Option only so that `drop` can close the connections before the files go.
    pool: Option<Pool>,
}

impl TempDb {
    pub fn new() -> Result<TempDb, TempDbError> {
        let dir = std::env::temp_dir().join(format!(
            "emotionbench-bench-{}-{}",
            std::process::id(),
            crate::auth::password::random_secret(8)
        ));
        std::fs::create_dir_all(&dir).map_err(|source| TempDbError::Dir {
            path: dir.clone(),
            source,
        })?;
        let pool = db::connect(&format!("sqlite://{}", dir.join("bench.db").display()), 2)?;
        db::migrate(&mut *pool.get().map_err(DbError::from)?)?;
        Ok(TempDb {
            dir,
            pool: Some(pool),
        })
    }

    pub fn conn(&self) -> Result<PooledConnection, TempDbError> {
        let pool = self.pool.as_ref().ok_or(TempDbError::Closed)?;
        Ok(pool.get().map_err(DbError::from)?)
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.pool.take();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
