//! `serve`: the web server.

use anyhow::Context;
use emotionbench::{Application, Settings, app, store};

use super::db;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, e.g. 0.0.0.0:8080 (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
}

pub fn run(mut settings: Settings, args: ServeArgs) -> anyhow::Result<()> {
    if let Some(bind) = args.bind {
        settings.bind = bind;
    }
    let pool = if settings.auto_migrate {
        db::migrated(&settings)?
    } else {
        db::open(&settings)?
    };
    first_admin_hint(&pool);
    serve(settings, pool, |_| {})
}

/// On a database without an enabled admin nobody can sign in to manage anything: say how to
/// create the first one. On standard error, whatever the log filter, as it is for the operator.
fn first_admin_hint(pool: &store::Pool) {
    let none = pool
        .get()
        .map_err(anyhow::Error::from)
        .and_then(|mut c| Ok(app::accounts::needs_first_admin(&mut c)?));
    match none {
        Ok(true) => eprintln!(
            "No admin account exists yet, so nobody can sign in. Create the first one with:\n  \
             {}\n(it asks for the password); admins then invite everyone else from the \
             Accounts page.",
            app::accounts::FIRST_ADMIN_HINT
        ),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "could not check for an admin account"),
    }
}

/// Serves until stopped; `on_ready` gets the base URL once the server listens.
pub fn serve(
    settings: Settings,
    pool: store::Pool,
    on_ready: impl FnOnce(&str),
) -> anyhow::Result<()> {
    let bind = settings.bind.clone();
    let system = actix_web::rt::System::new();
    system.block_on(async move {
        let app = Application::build(settings.clone(), pool)
            .with_context(|| format!("cannot listen on {bind}"))?;
        let base = settings.link_base(app.addr());
        tracing::info!(addr = %app.addr(), "listening");
        on_ready(&base);
        app.run_until_stopped().await?;
        Ok(())
    })
}
