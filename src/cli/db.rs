//! The command line's schema policy, in one place. A command that only reads never changes
//! the schema: on a database that is behind (or missing) it stops and names `emotionbench
//! migrate`. A command that writes honours `auto_migrate` as `serve` does: on, it migrates
//! first; off, a database that is behind stops it the same way. Only `migrate` (and `serve`,
//! `demo` with auto_migrate) apply migrations.

use emotionbench::Settings;
use emotionbench::store::{self, db, instruments};

/// A pool on the database as it is, migrations or not (`migrate`, `serve` without
/// auto_migrate).
pub fn open(settings: &Settings) -> anyhow::Result<store::Pool> {
    Ok(db::connect(&settings.database_url, settings.pool_size)?)
}

/// Applies pending migrations and stores the built-in instrument.
pub fn migrated(settings: &Settings) -> anyhow::Result<store::Pool> {
    let pool = open(settings)?;
    let mut conn = pool.get()?;
    db::migrate(&mut conn)?;
    instruments::ensure_builtin(&mut conn)?;
    drop(conn);
    Ok(pool)
}

/// For a command that only reads: the database must be up to date; nothing is changed.
pub fn reading(settings: &Settings) -> anyhow::Result<store::Pool> {
    db::check_current(&settings.database_url)?;
    open(settings)
}

/// For a command that writes: migrated when `auto_migrate` is on, else it must be up to date.
pub fn writing(settings: &Settings) -> anyhow::Result<store::Pool> {
    if settings.auto_migrate {
        return migrated(settings);
    }
    db::check_current(&settings.database_url)?;
    let pool = open(settings)?;
    instruments::ensure_builtin(&mut *pool.get()?)?;
    Ok(pool)
}

/// `emotionbench migrate`.
pub fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let pool = open(settings)?;
    let mut conn = pool.get()?;
    let applied = db::migrate(&mut conn)?;
    instruments::ensure_builtin(&mut conn)?;
    if applied.is_empty() {
        println!("database is up to date ({})", conn.backend());
    } else {
        for m in &applied {
            println!("applied {m}");
        }
    }
    Ok(())
}
