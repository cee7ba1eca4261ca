//! An rmcp server served in this process over an in-memory pipe, for the tests that call a
//! tool through rmcp's own client and look at what the server did with each request. The
//! transports users run (stdio, streamable HTTP) have tests of their own: `wire.rs`,
//! `json_names.rs` and `remote_mcp.rs`.

use rmcp::ServiceExt;
use rmcp::service::{RoleServer, Service};
use tokio::io::DuplexStream;

/// Starts `server` on one end of a pipe and returns the other end, for a client to serve
/// on. The server runs until the client hangs up. It is served as rmcp's boxed
/// `dyn DynService`, so rmcp's serving code is compiled once in a test binary, not once
/// per server type.
pub fn served<S: Service<RoleServer>>(server: S) -> DuplexStream {
    let server = server.into_dyn();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let server = server.serve(server_io).await.expect("the server starts");
        let _ = server.waiting().await;
    });
    client_io
}
