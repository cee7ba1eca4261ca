//! The store a run is on: an SQLite file, or a PostgreSQL or Redis server the run starts
//! on a loopback port (from Debian's packages, as `.ci/pg` and `.ci/redis` do) and then
//! kills, restarts and freezes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::worker::Kind;

pub enum Server {
    Sqlite { path: PathBuf },
    Postgres { dir: PathBuf, port: u16, url: String },
    Redis { dir: PathBuf, port: u16, child: Child },
}

/// The repository's `.ci` scripts.
fn ci_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci").join(name)
}

impl Server {
    pub fn start(kind: Kind, dir: &Path) -> Server {
        match kind {
            Kind::Sqlite => Server::Sqlite { path: dir.join("store.db") },
            Kind::Postgres => start_postgres(&dir.join("pg")),
            Kind::Redis => {
                let dir = dir.join("redis");
                std::fs::create_dir_all(&dir).expect("redis' directory");
                let port = free_port();
                let child = spawn_redis(&dir, port);
                Server::Redis { dir, port, child }
            }
        }
    }

    /// The store's URL, or its path; with `via`, through the proxy on that port.
    pub fn url(&self, via: Option<u16>) -> String {
        match self {
            Server::Sqlite { path } => path.display().to_string(),
            Server::Postgres { port, url, .. } => {
                url.replace(&format!(":{port}/"), &format!(":{}/", via.unwrap_or(*port)))
            }
            Server::Redis { port, .. } => format!("redis://127.0.0.1:{}/0", via.unwrap_or(*port)),
        }
    }

    /// The server's port; none for SQLite.
    pub fn port(&self) -> Option<u16> {
        match self {
            Server::Sqlite { .. } => None,
            Server::Postgres { port, .. } | Server::Redis { port, .. } => Some(*port),
        }
    }

    /// The server's processes: the postmaster and its backends, or redis-server.
    fn pids(&self) -> Vec<i32> {
        match self {
            Server::Sqlite { .. } => Vec::new(),
            Server::Redis { child, .. } => vec![child.id() as i32],
            Server::Postgres { dir, .. } => {
                let Ok(text) = std::fs::read_to_string(dir.join("data/postmaster.pid")) else { return Vec::new() };
                let Some(postmaster) = text.lines().next().and_then(|line| line.trim().parse::<i32>().ok()) else {
                    return Vec::new();
                };
                let mut pids = vec![postmaster];
                pids.extend(children_of(postmaster));
                pids
            }
        }
    }

    /// Sends `signal` to every process of the server, the parent first (a stopped
    /// postmaster starts no backend meanwhile).
    pub fn signal(&self, signal: i32) {
        for pid in self.pids() {
            // SAFETY: kill(2) on a pid this run started; a pid that is gone gives ESRCH.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Kills the server (SIGKILL), as a crash would, and waits until every process of it is gone.
    pub fn kill(&mut self) {
        let pids = self.pids();
        self.signal(libc::SIGKILL);
        if let Server::Redis { child, .. } = self {
            let _ = child.wait();
        }
        wait_until(|| pids.iter().all(|pid| !alive(*pid)));
    }

    /// Starts the server again after [`kill`](Server::kill), or restarts a running one
    /// (a clean shutdown, then a start): it reads back what it made durable.
    pub fn restart(&mut self) {
        match self {
            Server::Sqlite { .. } => {}
            Server::Redis { dir, port, child } => {
                if child.try_wait().expect("redis-server's state").is_none() {
                    // SAFETY: kill(2) on our child: SIGTERM, redis' clean shutdown.
                    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                    let _ = child.wait();
                }
                *child = spawn_redis(dir, *port);
            }
            Server::Postgres { dir, .. } => {
                // `restart` reuses the options of the first start (postmaster.opts), and
                // starts a server that is not running, after a kill too.
                let data = dir.join("data");
                let log = dir.join("server.log");
                for attempt in 0.. {
                    let status = as_owner(&pg_bin().join("pg_ctl"))
                        .args(["-D", &data.display().to_string(), "-l", &log.display().to_string()])
                        .args(["-m", "fast", "-w", "-t", "60", "restart"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .expect("pg_ctl runs");
                    if status.success() {
                        break;
                    }
                    assert!(attempt < 20, "PostgreSQL does not start again; see {}", log.display());
                    std::thread::sleep(Duration::from_millis(250));
                }
            }
        }
    }

    /// Stops the server and removes its files.
    pub fn remove(mut self) {
        self.signal(libc::SIGCONT);
        match &mut self {
            Server::Sqlite { .. } => {}
            Server::Redis { child, .. } => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Server::Postgres { dir, .. } => {
                let _ = Command::new("bash").arg(ci_script("pg")).arg("stop").arg(&*dir).stderr(Stdio::null()).status();
            }
        }
    }
}

fn start_postgres(dir: &Path) -> Server {
    // The server's own writes must survive a SIGKILL of it: synchronous_commit on (a commit
    // waits for its WAL to reach the kernel). fsync stays off: the machine does not crash,
    // and the kernel's page cache outlives the server.
    let output = Command::new("bash")
        .arg(ci_script("pg"))
        .arg("start")
        .arg(dir)
        .env("IDEM_PG_OPTIONS", "-c synchronous_commit=on -c max_connections=300")
        .stderr(Stdio::inherit())
        .output()
        .expect(".ci/pg runs");
    assert!(output.status.success(), ".ci/pg could not start PostgreSQL");
    let url = String::from_utf8(output.stdout).expect("a URL").trim().to_owned();
    let port = url.rsplit(':').next().and_then(|tail| tail.split('/').next()).and_then(|port| port.parse().ok());
    Server::Postgres { dir: dir.to_owned(), port: port.expect("the URL's port"), url }
}

fn pg_bin() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (.ci/pg installs it)")
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
        .collect();
    found.sort();
    found.pop().expect("a PostgreSQL version")
}

/// A command run as the cluster's owner: `postgres` when this is root (as in .ci/pg).
fn as_owner(program: &Path) -> Command {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn spawn_redis(dir: &Path, port: u16) -> Child {
    // Every write is on disk before its reply (appendfsync always), so a SIGKILL loses
    // nothing the store was told was written.
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--protected-mode", "no"])
        .args(["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server runs (apt-get install redis-server)");
    let started = Instant::now();
    while !redis_answers(port) {
        assert!(started.elapsed() < Duration::from_secs(30), "redis-server does not answer on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn redis_answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0; 5];
    stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG"
}

/// A free loopback port below Linux's ephemeral range (32768-60999), which outgoing
/// connections take: a killed server's port stays free for its restart.
pub fn free_port() -> u16 {
    let seed = u64::from(std::process::id()) * 7919 + crate::now_ms() as u64;
    (0..500)
        .map(|attempt| 20_000 + ((seed + attempt * 104_729) % 12_000) as u16)
        .find(|port| TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free port")
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| state_of(&stat) != Some('Z'))
}

fn state_of(stat: &str) -> Option<char> {
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

fn children_of(parent: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
                ppid == Some(parent)
            })
        })
        .collect()
}

fn wait_until(mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
}
