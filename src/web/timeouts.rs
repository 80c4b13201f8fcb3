//! A deadline on request bodies.
//!
//! actix bounds the time a client may take to send a request's head
//! (`client_request_timeout`), but not its body: a client that announces a body and then sends
//! one byte every few seconds held a connection (and a worker's attention) for as long as it
//! liked, 100 s in the probe of issue #14, when the server is exposed without nginx in front.
//! [`limit_body`] gives every body a deadline counted from the moment its head arrived; when it
//! passes, reading the body fails and [`answer`] replaces whatever the handler made of that
//! with 408 and closes the connection. Real bodies are forms of a few KiB: any client sends
//! them in well under a second.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header;
use actix_web::{HttpMessage, HttpResponse};
use bytes::Bytes;
use futures_core::Stream;

/// The request's body, failing with `TimedOut` once the deadline has passed.
struct Deadline {
    inner: Payload,
    sleep: Pin<Box<actix_web::rt::time::Sleep>>,
    expired: Arc<AtomicBool>,
}

impl Stream for Deadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Poll::Ready(item) = Pin::new(&mut self.inner).poll_next(cx) {
            return Poll::Ready(item);
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.expired.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request body did not arrive in time",
            )))));
        }
        Poll::Pending
    }
}

/// Puts a deadline of `timeout` on the body of `req` (if it has one); the flag says whether it
/// passed while the handler read the body.
pub fn limit_body(req: &mut ServiceRequest, timeout: Duration) -> Option<Arc<AtomicBool>> {
    let has_body = req.headers().contains_key(header::TRANSFER_ENCODING)
        || req
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    if !has_body {
        return None;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let body = Deadline {
        inner: req.take_payload(),
        sleep: Box::pin(actix_web::rt::time::sleep(timeout)),
        expired: expired.clone(),
    };
    let boxed: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> = Box::pin(body);
    req.set_payload(Payload::from(boxed));
    Some(expired)
}

/// The handler's response, or 408 with `Connection: close` when the body's deadline passed
/// (whatever the handler answered to a body it could not read, the client is too slow to be
/// served further on this connection).
pub fn answer(res: ServiceResponse, expired: Option<&AtomicBool>) -> ServiceResponse {
    if expired.is_some_and(|e| e.load(Ordering::Relaxed)) {
        tracing::info!(path = %res.request().path(), "request body timed out");
        res.into_response(
            HttpResponse::RequestTimeout()
                .force_close()
                .content_type("text/plain; charset=utf-8")
                .body("The request body did not arrive in time.\n"),
        )
    } else {
        res
    }
}
