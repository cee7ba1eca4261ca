//! Redis for the tests: the shared test server of `IDEM_TEST_REDIS_URL`, and servers of a
//! test's own (Debian's `redis-server`, on a free loopback port, files in a temporary
//! directory) to kill, restart and freeze.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0")
}

/// The test server's URL, or `None` after saying loudly that `test` is skipped; under CI a
/// missing URL fails the test.
pub fn test_url(test: &str) -> Option<String> {
    match std::env::var("IDEM_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if under_ci() => panic!("{test}: IDEM_TEST_REDIS_URL is not set under CI; CI must run the Redis tests"),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: set IDEM_TEST_REDIS_URL (`bash .ci/redis start DIR` prints one)"
            );
            None
        }
    }
}

/// The test cluster's URL (`IDEM_TEST_REDIS_CLUSTER_URL`, a `redis+cluster://` one), or
/// `None` after saying loudly that `test` is skipped; under CI a missing URL fails the test.
pub fn test_cluster_url(test: &str) -> Option<String> {
    match std::env::var("IDEM_TEST_REDIS_CLUSTER_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if under_ci() => {
            panic!("{test}: IDEM_TEST_REDIS_CLUSTER_URL is not set under CI; CI must run the Redis tests on a cluster")
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: set IDEM_TEST_REDIS_CLUSTER_URL (`bash .ci/redis-cluster start DIR` prints one)"
            );
            None
        }
    }
}

/// A `redis-server` process of the test's own.
pub struct Server {
    dir: tempfile::TempDir,
    port: u16,
    options: Vec<String>,
    child: Option<Child>,
}

impl Server {
    /// Starts a server with `options` (e.g. `["--appendonly", "yes"]`), or `None` after
    /// saying loudly that `test` is skipped when `redis-server` is not installed.
    pub fn start(test: &str, options: &[&str]) -> Option<Server> {
        Server::start_in(test, options, tempfile::tempdir().unwrap())
    }

    /// [`Server::start`] with its files in memory (a tmpfs, `/dev/shm`), on a disk that
    /// always keeps up: its fsyncs take no time, whatever else the machine writes. `None`,
    /// saying so, where there is no `/dev/shm`.
    pub fn start_on_tmpfs(test: &str, options: &[&str]) -> Option<Server> {
        match tempfile::tempdir_in("/dev/shm") {
            Ok(dir) => Server::start_in(test, options, dir),
            Err(e) => {
                assert!(!under_ci(), "{test}: no tmpfs at /dev/shm under CI: {e}");
                let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no tmpfs at /dev/shm ({e})");
                None
            }
        }
    }

    fn start_in(test: &str, options: &[&str], dir: tempfile::TempDir) -> Option<Server> {
        if Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_err() {
            assert!(!under_ci(), "{test}: redis-server is not installed under CI (see .ci/redis)");
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: install redis-server");
            return None;
        }
        let options = options.iter().map(|option| option.to_string()).collect();
        let mut server = Server { dir, port: 0, options, child: None };
        // A port below Linux's ephemeral range (32768-60999), which outgoing connections
        // take: a killed server's port stays free for its restart. Taken ones are skipped.
        let seed = std::process::id() as u64 * 7919 + std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos() as u64;
        for attempt in 0..50 {
            server.port = 20_000 + ((seed + attempt * 104_729) % 12_000) as u16;
            if server.spawn() {
                return Some(server);
            }
        }
        panic!("{test}: no free port for redis-server");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// One command, its reply's first line (`:1`, `+OK`, `$5`, ...).
    pub fn command(&self, args: &[&str]) -> String {
        self.commands(&[args]).pop().unwrap()
    }

    /// Commands on one connection (so a `WAIT` waits for the writes before it), each
    /// reply's first line; replies must be one line each (no bulk strings).
    pub fn commands(&self, commands: &[&[&str]]) -> Vec<String> {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut stream = stream;
        commands
            .iter()
            .map(|args| {
                let mut request = format!("*{}\r\n", args.len());
                for arg in *args {
                    request += &format!("${}\r\n{arg}\r\n", arg.len());
                }
                stream.write_all(request.as_bytes()).unwrap();
                let mut line = String::new();
                std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
                line.trim_end().to_owned()
            })
            .collect()
    }

    /// Starts the server again on its port and directory (it reads back what it persisted).
    pub fn restart(&mut self) {
        assert!(self.spawn(), "redis-server could not start again on port {}", self.port);
    }

    /// Starts the server on its port; `false` when it exits at once (the port is taken).
    /// The server that answers must be this one (its `process_id` is the child's), and it
    /// must have loaded what it persisted: until then it answers every command `LOADING`.
    fn spawn(&mut self) -> bool {
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", ""])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.options)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            if self.process_id() == Some(child.id())
                && self.info_field("persistence", "loading").as_deref() == Some("0")
            {
                self.child = Some(child);
                return true;
            }
            assert!(Instant::now() < deadline, "redis-server on {} did not answer", self.port);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The process id of the server that answers on the port now, if one does.
    fn process_id(&self) -> Option<u32> {
        self.info_field("server", "process_id")?.parse().ok()
    }

    /// One field of `INFO section` from the server that answers on the port now, if one
    /// does.
    fn info_field(&self, section: &str, field: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
        stream.write_all(format!("INFO {section}\r\n").as_bytes()).ok()?;
        let name = format!("\n{field}:"); // a line of its own: `async_loading:` is not `loading:`
        let mut reply = String::new();
        let mut buffer = [0; 4096];
        while !reply.contains(&name) || !reply[reply.find(&name)?..].contains('\n') {
            let read = stream.read(&mut buffer).ok()?;
            if read == 0 {
                return None;
            }
            reply.push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
        let at = reply.find(&name)? + name.len();
        Some(reply[at..].lines().next()?.trim().to_owned())
    }

    /// SIGKILL: the server gets no chance to write anything more.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// SIGTERM, as a service manager stops a server: it shuts down (closing its clients'
    /// connections) and exits; this returns once it has.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id().to_string();
            assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
            child.wait().unwrap();
        }
    }

    /// SIGSTOP: the server keeps its connections and answers nothing.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT.
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("a running server").id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.thaw();
            self.kill();
        }
    }
}
