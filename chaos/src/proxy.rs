//! A fault-injecting TCP proxy between the workers and the store server, on loopback: it
//! passes bytes through, or delays each chunk, or stops moving them (a black hole: nothing
//! arrives, nothing is refused, as when packets are dropped), or cuts every open connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does to the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Pass,
    /// Each chunk waits this many milliseconds.
    Delay(u64),
    /// Nothing moves; connections stay open.
    Blackhole,
}

struct Shared {
    mode: Mutex<Mode>,
    /// Bumped by a cut: every connection opened before it closes.
    cuts: AtomicU64,
}

pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let port = crate::servers::free_port();
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("the proxy listens");
        let shared = Arc::new(Shared { mode: Mutex::new(Mode::Pass), cuts: AtomicU64::new(0) });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                // A connection refused upstream (the server is down) is refused here too.
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                let cut = accepting.cuts.load(Ordering::SeqCst);
                pump(&accepting, &client, &server, cut);
                pump(&accepting, &server, &client, cut);
            }
        });
        Proxy { port, shared }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn set(&self, mode: Mode) {
        *self.shared.mode.lock().expect("the mode is not poisoned") = mode;
    }

    /// Closes every open connection.
    pub fn cut(&self) {
        self.shared.cuts.fetch_add(1, Ordering::SeqCst);
    }
}

/// Moves bytes from `from` to `to` on a thread of its own until either side closes or a
/// cut comes.
fn pump(shared: &Arc<Shared>, from: &TcpStream, to: &TcpStream, cut: u64) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else { return };
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        // Short reads, so a cut or a change of mode is seen within 50 ms.
        let _ = from.set_read_timeout(Some(Duration::from_millis(50)));
        let mut buffer = vec![0; 64 * 1024];
        loop {
            if shared.cuts.load(Ordering::SeqCst) != cut {
                break;
            }
            let mode = *shared.mode.lock().expect("the mode is not poisoned");
            if mode == Mode::Blackhole {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            let read = match from.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    continue;
                }
                Err(_) => break,
            };
            if let Mode::Delay(ms) = mode {
                std::thread::sleep(Duration::from_millis(ms));
            }
            if to.write_all(&buffer[..read]).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}
