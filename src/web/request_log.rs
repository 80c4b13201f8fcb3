//! The request middleware: gives each request its id ([`RequestId`]), a span carrying it, the
//! `X-Request-Id` header, and its one log line. See `web::error` for what is logged at which
//! level.
//!
//! Kept cheap for the survey's hot path: the id is not allocated, a success logs at `debug`
//! only (nothing is formatted unless enabled), and the route pattern is looked up only for a
//! line that is written.

use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::rc::Rc;
use std::time::Instant;

use actix_web::Error;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::HeaderValue;
use tracing::Instrument;

use crate::web::error::{AppError, Chain};
use crate::web::request::{CURRENT, HEADER, RequestId};

/// The middleware: wrap the whole application in it (outermost but for headers).
pub struct RequestLog;

impl<S, B> Transform<S, ServiceRequest> for RequestLog
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<B>;
    type Error = Error;
    type Transform = RequestLogService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(RequestLogService {
            service: Rc::new(service),
        }))
    }
}

pub struct RequestLogService<S> {
    service: Rc<S>,
}

impl<S, B> Service<ServiceRequest> for RequestLogService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<B>;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<ServiceResponse<B>, Error>>>>;

    actix_web::dev::forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let id = RequestId::next();
        let started = Instant::now();
        let method = req.method().clone();
        // Events logged while the request is handled (by any layer) carry its id.
        let span = tracing::info_span!("request", request_id = %id, method = %method);
        let service = self.service.clone();
        Box::pin(CURRENT.scope(id, async move {
            let result = service.call(req).instrument(span).await;
            let mut res = match result {
                Ok(res) => res,
                Err(e) => {
                    tracing::error!(request_id = %id, %method, error = %e, "request failed");
                    return Err(e);
                }
            };
            log(id, &method, started, &res);
            let hex = id.hex();
            if let Ok(value) = HeaderValue::from_bytes(&hex) {
                res.headers_mut().insert(HEADER, value);
            }
            Ok(res)
        }))
    }
}

/// The request's one line: failures at `error` (5xx, with the cause chain) or `warn` (4xx),
/// successes at `debug`.
fn log<B>(
    id: RequestId,
    method: &actix_web::http::Method,
    started: Instant,
    res: &ServiceResponse<B>,
) {
    let status = res.status();
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let route = || res.request().match_pattern().unwrap_or_else(|| "-".into());
    if status.is_server_error() {
        let error = res.response().error();
        match error.and_then(|e| e.as_error::<AppError>()) {
            Some(app) => tracing::error!(
                request_id = %id, %method, route = %route(), status = status.as_u16(), latency_us,
                error = %Chain(app), "request failed"
            ),
            None => tracing::error!(
                request_id = %id, %method, route = %route(), status = status.as_u16(), latency_us,
                error = %error.map(|e| e.to_string()).unwrap_or_default(), "request failed"
            ),
        }
    } else if status.is_client_error() {
        let error = res
            .response()
            .error()
            .map(|e| e.to_string())
            .unwrap_or_default();
        tracing::warn!(
            request_id = %id, %method, route = %route(), status = status.as_u16(), latency_us,
            %error, "request refused"
        );
    } else {
        tracing::debug!(
            request_id = %id, %method, route = %route(), status = status.as_u16(), latency_us,
            "request"
        );
    }
}
