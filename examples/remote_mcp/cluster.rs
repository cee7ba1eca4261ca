//! Workers and clients of `remote_mcp`: a worker is the example run again with `serve`;
//! a client speaks streamable HTTP with a bearer token. (`tests/remote_mcp.rs` uses this
//! file too.)

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A worker process: this example run again with `serve`.
pub struct Worker {
    pub process: Child,
    pub address: SocketAddr,
}

impl Worker {
    /// Starts `example serve` with `args` (`--db`, `--effects`, ...); returns once it
    /// listens.
    pub fn start(example: &Path, args: &[&str]) -> Result<Worker, Error> {
        let mut process = Command::new(example).arg("serve").args(args).stdout(Stdio::piped()).spawn()?;
        let mut line = String::new();
        std::io::BufReader::new(process.stdout.take().expect("piped")).read_line(&mut line)?;
        let address = line.trim().strip_prefix("listening on ").ok_or_else(|| format!("a worker said {line:?}"))?;
        Ok(Worker { process, address: address.parse()? })
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
