//! The web edge: the route table, the application factory, middleware and the error page.
//! Handlers stay thin: parse input, call domain/store, render.

pub mod assets;
pub mod error;
pub mod home;

use std::net::{SocketAddr, TcpListener};

use actix_web::dev::Server;
use actix_web::middleware::DefaultHeaders;
use actix_web::{App, HttpServer, web};

use crate::config::Settings;
use crate::store::{DbConnection, Pool, StoreError};
pub use error::AppError;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub settings: Settings,
}

impl AppState {
    /// Runs blocking database work on the blocking thread pool with a pooled connection.
    pub async fn db<T, F>(&self, f: F) -> Result<T, AppError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConnection) -> Result<T, StoreError> + Send + 'static,
    {
        let pool = self.pool.clone();
        web::block(move || {
            let mut conn = pool.get().map_err(StoreError::from)?;
            f(&mut conn)
        })
        .await
        .map_err(|e| AppError::Internal(e.to_string()))?
        .map_err(AppError::from)
    }
}

/// Every route of the application, in one table.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(home::index))
        .route("/healthz", web::get().to(home::health))
        .route("/assets/{file}", web::get().to(assets::serve));
}

/// Headers on every response. The CSP allows no inline script or style: pages work without JS.
fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add((
            "Content-Security-Policy",
            "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ))
        .add(("X-Frame-Options", "DENY"))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "no-referrer"))
        .add((
            "Permissions-Policy",
            "camera=(), microphone=(), geolocation=()",
        ))
}

/// A bound, not yet running web server. Tests build it exactly as `serve` does, on port 0.
pub struct Application {
    addr: SocketAddr,
    server: Server,
}

impl Application {
    pub fn build(settings: Settings, pool: Pool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(&settings.bind)?;
        let addr = listener.local_addr()?;
        let workers = match settings.http_workers {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let state = web::Data::new(AppState { pool, settings });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .wrap(security_headers())
                .configure(routes)
                .default_service(web::to(error::not_found))
        })
        .workers(workers)
        .listen(listener)?
        .run();
        Ok(Self { addr, server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
