//! Workers and clients of `remote_mcp`: a worker is a process that runs `worker::serve`
//! (the example run again with `serve`); a client speaks streamable HTTP with a bearer
//! token. (`tests/remote_mcp.rs` uses this file too.)

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A worker process: this example run again with `serve`, or a test's worker.
pub struct Worker {
    pub process: Child,
    pub address: SocketAddr,
}

impl Worker {
    /// Starts `command` (`remote_mcp serve --db ... --effects ...`); returns once it says
    /// where it listens (`listening on ADDRESS`, at the end of the first line that says it:
    /// a test harness may print before it).
    pub fn start(command: &mut Command) -> Result<Worker, Error> {
        let mut process = command.stdout(Stdio::piped()).spawn()?;
        let mut lines = std::io::BufReader::new(process.stdout.take().expect("piped")).lines();
        let address = loop {
            match lines.next() {
                Some(line) => match line?.split_once("listening on ") {
                    Some((_, address)) => break address.trim().parse()?,
                    None => continue,
                },
                None => return Err("a worker ended before it said where it listens".into()),
            }
        };
        Ok(Worker { process, address })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

pub type Client = RunningService<RoleClient, ClientConfig>;

/// An MCP client of `url` authenticated by `token`, which takes MCP tasks. It speaks MCP
/// 2026-07-28 (`server/discover`), where every request carries the client's capabilities:
/// what lets a stateless worker know that this client takes tasks.
pub async fn connect(url: &str, token: &str) -> Result<Client, Error> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let transport = StreamableHttpClientTransport::from_config(config);
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    let modern = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::LATEST] };
    let client = ClientConfig::new(capabilities, Implementation::new("remote-mcp-demo", "0"));
    Ok(client.serve_with_lifecycle(transport, modern).await?)
}
