//! One address in front of the workers, as a load balancer without sticky sessions: each
//! HTTP request goes to the next worker in turn. (`tests/remote_mcp.rs` uses this file too.)

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

/// Serves `listener`, forwarding each request to the next of `workers`.
pub async fn round_robin(listener: TcpListener, workers: Vec<SocketAddr>) {
    let next = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().fallback(move |request: Request| {
        let worker = workers[next.fetch_add(1, Ordering::Relaxed) % workers.len()];
        forward(request, worker)
    });
    axum::serve(listener, app).await.expect("the proxy serves");
}

/// Sends `request` to `worker` on a connection of its own and streams its response back
/// (an MCP answer may be an event stream).
async fn forward(request: Request, worker: SocketAddr) -> Response {
    let sent = async {
        let stream = TcpStream::connect(worker).await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(sender.send_request(request).await?)
    };
    match sent.await {
        Ok(response) => response.map(Body::new),
        Err(error) => (StatusCode::BAD_GATEWAY, format!("worker {worker}: {error}")).into_response(),
    }
}
