//! Faults and abuse: oversized bodies, a database that goes away and comes back.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::{TestDb, spawn_app};
use crate::on_both_backends;
use crate::survey::{make_study, walk_to};

fn oversized_bodies_get_413_and_store_nothing(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "big", |_| {});
    let b = app.browser();
    let (page, path) = walk_to(&b, "/s/big", "feelings-now");
    let huge = "x".repeat(100 * 1024);
    let r = b.post(&path, &[("csrf", &page.csrf()), ("item-1", &huge)]);
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("Too much data"));
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    use diesel::prelude::*;
    let n: i64 = emotionbench::store::schema::responses::table
        .count()
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(n, 0);
}

on_both_backends!(oversized_bodies_get_413_and_store_nothing);

/// A TCP forwarder to Postgres that can be cut and restored, to simulate the database going
/// away under a running server.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (up2, open2, target) = (up.clone(), open.clone(), target.to_owned());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !up2.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
                    open2.lock().unwrap().extend([c2, s2]);
                }
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 * 1024];
                        loop {
                            match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, up, open }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_database_that_goes_away_gives_a_503_page_and_the_server_recovers() {
    let Some(mut db) = TestDb::postgres() else {
        return;
    };
    let proxy = Proxy::start("127.0.0.1:5432");
    // The same database, reached through the proxy.
    let name = db.url.rsplit('/').next().unwrap().to_owned();
    db.url = format!("postgres://postgres@127.0.0.1:{}/{name}", proxy.port);
    let app = spawn_app(db);
    make_study(&app, "outage", |_| {});
    let b = app.browser();
    assert_eq!(b.get("/healthz").status, 200);
    let (_, path) = walk_to(&b, "/s/outage", "demographics");

    proxy.cut();
    let r = b.get(&path);
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("Temporarily unavailable"), "{}", r.body);
    assert_eq!(b.get("/healthz").status, 503);

    proxy.restore();
    let t = Instant::now();
    loop {
        if b.get("/healthz").status == 200 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no recovery after the database came back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (page, again) = b.open(&path);
    assert_eq!(page.status, 200);
    assert_eq!(again, path, "the participant continues where they were");
}
