//! Stopping foreground work cleanly on SIGINT or SIGTERM (`run`, `worker`, `runs score`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sets `stop` on SIGINT or SIGTERM (a thread running a small signal-only runtime).
pub fn stop_on_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let system = actix_web::rt::System::new();
        system.block_on(async move {
            use actix_web::rt::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            std::future::poll_fn(|cx| {
                if int.poll_recv(cx).is_ready() || term.poll_recv(cx).is_ready() {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            })
            .await;
            flag.store(true, Ordering::SeqCst);
        });
    });
    stop
}
