//! Redis Clusters of a test's own (`.ci/redis-cluster`: three primaries, three replicas on
//! loopback), and what a fault test needs to see and move their nodes: roles, signals,
//! restarts, and commands in RESP over a connection of its own.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::redis::under_ci;

/// A Redis Cluster of the test's own: three primaries and three replicas on loopback
/// (`.ci/redis-cluster`), stopped when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    url: String,
}

impl Cluster {
    /// Starts a cluster whose nodes also get `options` (e.g. `["--appendonly", "no"]`), or
    /// `None` after saying loudly that `test` is skipped when `redis-server` is not installed.
    pub fn start(test: &str, options: &[&str]) -> Option<Cluster> {
        if Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_err() {
            assert!(!under_ci(), "{test}: redis-server is not installed under CI (see .ci/redis-cluster)");
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: install redis-server");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/redis-cluster");
        let started = Command::new("bash")
            .arg(script)
            .arg("start")
            .arg(dir.path().join("nodes"))
            .args(options)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(started.status.success(), "{test}: .ci/redis-cluster start failed");
        let url = String::from_utf8(started.stdout).unwrap().trim().to_owned();
        Some(Cluster { dir, url })
    }

    /// Its `redis+cluster://` URL, naming the three primaries.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where the nodes' files are: `ports` (primaries first), and a directory per port.
    pub fn nodes(&self) -> std::path::PathBuf {
        self.dir.path().join("nodes")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/redis-cluster");
        let _ = Command::new("bash").arg(script).arg("stop").arg(self.nodes()).status();
    }
}

/// The cluster's nodes, by role, as `.ci/redis-cluster` wrote them and `ROLE` tells.
pub struct Nodes {
    dir: PathBuf,
    /// The six ports, the first three primaries when the cluster started.
    pub ports: Vec<u16>,
}

impl Nodes {
    /// The cluster's nodes, once each primary's replica has synced: `.ci/redis-cluster`
    /// returns once each is known as a replica, and Redis delays a first (diskless) sync
    /// 5 s for more replicas to join. A replica that never synced does not take over.
    pub fn of(cluster: &Cluster) -> Nodes {
        let dir = cluster.nodes();
        let ports = std::fs::read_to_string(dir.join("ports")).unwrap().lines().map(|p| p.parse().unwrap()).collect();
        let nodes = Nodes { dir, ports };
        for primary in &nodes.ports[..3] {
            nodes.wait_for(&format!("{primary}'s replica to sync"), Duration::from_secs(30), || {
                primary_with_replica(*primary)
            });
        }
        nodes
    }

    /// The replica that follows `primary` (not necessarily the port 3 above it).
    pub fn replica_of(&self, primary: u16) -> u16 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let replica = self.ports.iter().copied().find(|port| {
                role(*port).is_some_and(|role| role[0] == "slave" && role.get(2) == Some(&primary.to_string()))
            });
            if let Some(replica) = replica {
                return replica;
            }
            assert!(Instant::now() < deadline, "no node says it replicates {primary}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A port other than these.
    pub fn other_than(&self, ports: &[u16]) -> u16 {
        self.ports.iter().copied().find(|port| !ports.contains(port)).unwrap()
    }

    /// Sends `signal` (`-KILL`, `-STOP`, `-CONT`) to the node on `port`.
    pub fn signal(&self, port: u16, signal: &str) {
        let pid = std::fs::read_to_string(self.dir.join(port.to_string()).join("redis.pid")).unwrap();
        let sent = Command::new("kill").args([signal, pid.trim()]).status().unwrap();
        assert!(sent.success(), "kill {signal} {pid} (the node on {port})");
    }

    /// SIGKILL, returning once the node no longer answers.
    pub fn kill(&self, port: u16) {
        self.signal(port, "-KILL");
        let deadline = Instant::now() + Duration::from_secs(10);
        while cli(port, &["PING"]).is_some() {
            assert!(Instant::now() < deadline, "the node on {port} still answers 10 s after SIGKILL");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The settings of the node on `port` that it must be started again with (those
    /// `.ci/redis-cluster` sets besides its files and port), as command-line options.
    pub fn settings(&self, port: u16) -> Vec<String> {
        const KEPT: [&str; 6] = ["cluster-port", "cluster-node-timeout", "appendonly", "appendfsync", "save", "bind"];
        let pairs = command(port, &[&["CONFIG", "GET"][..], &KEPT].concat()).expect("CONFIG GET");
        pairs.chunks(2).flat_map(|pair| [format!("--{}", pair[0]), pair[1].clone()]).collect()
    }

    /// Starts the node on `port` again with `settings`, on its files (its `nodes.conf`
    /// makes it the same node), returning once it answers.
    pub fn restart(&self, port: u16, settings: &[String]) {
        let node = self.dir.join(port.to_string());
        let started = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--daemonize", "yes", "--cluster-enabled", "yes"])
            .arg("--dir")
            .arg(&node)
            .arg("--pidfile")
            .arg(node.join("redis.pid"))
            .arg("--logfile")
            .arg(node.join("redis.log"))
            .arg("--cluster-config-file")
            .arg(node.join("nodes.conf"))
            .args(settings)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(started.success(), "redis-server could not start again on {port}");
        self.wait_for(&format!("the restarted node on {port} to answer"), Duration::from_secs(10), || {
            cli(port, &["PING"]).as_deref() == Some("PONG")
        });
    }

    /// Polls `done` every 20 ms until it holds, failing after `within` with what each node
    /// says.
    pub fn wait_for(&self, what: &str, within: Duration, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + within;
        while !done() {
            assert!(Instant::now() < deadline, "waited {within:?} for {what}; the nodes:\n{}", self.state());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Each node's role, view of the cluster and last lines of log.
    fn state(&self) -> String {
        let mut state = String::new();
        for port in &self.ports {
            let role = role(*port).map_or("down".to_owned(), |role| role.join(" "));
            let nodes = cli(*port, &["CLUSTER", "NODES"]).unwrap_or_default();
            let log = std::fs::read_to_string(self.dir.join(port.to_string()).join("redis.log")).unwrap_or_default();
            let log: Vec<_> = log.lines().rev().take(8).collect();
            let log: Vec<_> = log.into_iter().rev().collect();
            state += &format!("{port}: {role}\n{nodes}\n  {}\n", log.join("\n  "));
        }
        state
    }
}

/// One command to the node on `port`, its reply one item a line (as `redis-cli` prints
/// it), or `None` when the node refuses the connection, answers an error or nothing within
/// 5 s (it is frozen).
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    Some(command(port, args)?.join("\n").trim().to_owned())
}

/// One command to the node on `port`, the items of its reply (see [`cli`]). `QUIT` follows
/// the command, so that the node closes the connection first and keeps it in TIME_WAIT,
/// rather than this side, whose ephemeral ports are many tests' to take.
pub fn command(port: u16, args: &[&str]) -> Option<Vec<String>> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.set_write_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut request = String::new();
    for command in [args, &["QUIT"]] {
        request += &format!("*{}\r\n", command.len());
        for arg in command {
            request += &format!("${}\r\n{arg}\r\n", arg.len());
        }
    }
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).ok()?;
    let mut items = Vec::new();
    parse(&reply, &mut 0, &mut items)?;
    Some(items)
}

/// The RESP reply at `at` in `reply`, its items appended to `items`; `None` for an error
/// reply or one cut short.
fn parse(reply: &[u8], at: &mut usize, items: &mut Vec<String>) -> Option<()> {
    let end = *at + reply.get(*at..)?.windows(2).position(|pair| pair == b"\r\n")?;
    let (kind, line) = (reply[*at], std::str::from_utf8(&reply[*at + 1..end]).ok()?);
    *at = end + 2;
    match kind {
        b'+' | b':' => items.push(line.to_owned()),
        b'$' => {
            if let Ok(length) = usize::try_from(line.parse::<i64>().ok()?) {
                items.push(String::from_utf8_lossy(reply.get(*at..*at + length)?).into_owned());
                *at += length + 2;
            }
        }
        b'*' => {
            for _ in 0..line.parse::<i64>().ok()? {
                parse(reply, at, items)?;
            }
        }
        _ => return None, // `-`: an error
    }
    Some(())
}

/// `ROLE`'s reply, one item a line: `master`, or `slave`, host, primary's port, ...
pub fn role(port: u16) -> Option<Vec<String>> {
    Some(cli(port, &["ROLE"])?.lines().map(str::to_owned).collect())
}

/// Whether `port` is a primary that the cluster, as it sees it, is whole and that one
/// replica follows, online.
pub fn primary_with_replica(port: u16) -> bool {
    let info = cli(port, &["CLUSTER", "INFO"]).unwrap_or_default();
    let replication = cli(port, &["INFO", "replication"]).unwrap_or_default();
    info.lines().any(|line| line.trim() == "cluster_state:ok")
        && replication.lines().any(|line| line.trim() == "role:master")
        && replication.lines().any(|line| line.starts_with("slave0:") && line.contains("state=online"))
}
