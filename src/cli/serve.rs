//! `serve`: the web server.

use anyhow::Context;
use emotionbench::{Application, Settings, store};

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
    serve(settings, pool, |_| {})
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
