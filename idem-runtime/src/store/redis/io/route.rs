//! Which node an operation goes to: on one server, always its node; on a cluster, the node
//! that last served the operation's shard, learned from `MOVED`, else the next node known.
//! An operation is sent again only where nothing ran (see the parent module's docs).

use std::future::Future;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis::aio::MultiplexedConnection;
use redis::{ConnectionAddr, ErrorKind, RedisError, ServerErrorKind};

use super::{Driver, Link};

/// A shard whose node is not known (yet, or any more).
pub(super) const NO_ROUTE: usize = usize::MAX;

/// How many `MOVED` answers one operation follows before it gives up.
const MOST_REDIRECTS: usize = 5;

impl Link {
    /// The node to send `shard`'s operations to: its route, else the next node known.
    pub(super) fn node_for(&self, shard: usize) -> usize {
        match self.routes[shard].load(Ordering::Relaxed) {
            NO_ROUTE => {
                let known = self.nodes.lock().unwrap_or_else(PoisonError::into_inner).len();
                self.next_node.fetch_add(1, Ordering::Relaxed) % known
            }
            node => node,
        }
    }

    fn node_count(&self) -> usize {
        self.nodes.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// `shard` is served by the node at `addr` (`host:port`, as `MOVED` names it).
    fn route(&self, shard: usize, addr: &str) {
        let Some((host, port)) = addr.rsplit_once(':').and_then(|(host, port)| Some((host, port.parse().ok()?))) else {
            return self.unroute(shard);
        };
        let addr = ConnectionAddr::Tcp(host.trim_start_matches('[').trim_end_matches(']').to_owned(), port);
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        let known = nodes.iter().position(|node| same_node(node, &addr));
        let node = known.unwrap_or_else(|| {
            nodes.push(addr);
            nodes.len() - 1
        });
        self.routes[shard].store(node, Ordering::Relaxed);
    }

    /// Forgets where `shard` is served (a cluster only): its node failed.
    pub(super) fn unroute(&self, shard: usize) {
        if self.cluster {
            self.routes[shard].store(NO_ROUTE, Ordering::Relaxed);
        }
    }

    /// Runs `call` on the node that serves `shard`, following `MOVED` and trying the next
    /// node when one cannot be connected to: the two cases where nothing ran. `used` is
    /// the node last sent to, for the deadline to close its connection.
    pub(super) async fn routed<T, F, Fut>(
        &self,
        driver: Driver,
        shard: usize,
        used: &AtomicUsize,
        call: &F,
    ) -> Result<T, RedisError>
    where
        F: Fn(MultiplexedConnection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let (mut redirects, mut refused) = (0, 0);
        loop {
            let node = self.node_for(shard);
            used.store(node, Ordering::Relaxed);
            let connection = match self.connection(driver, node).await {
                Ok(connection) => connection,
                Err(error) => {
                    self.unroute(shard);
                    refused += 1;
                    if self.cluster && refused < self.node_count() {
                        continue;
                    }
                    return Err(error);
                }
            };
            match call(connection.multiplexed.clone()).await {
                Err(error) if self.cluster && error.kind() == ErrorKind::Server(ServerErrorKind::Moved) => {
                    let Some(addr) = moved_to(&error) else { return Err(error) };
                    self.route(shard, &addr);
                    redirects += 1;
                    if redirects > MOST_REDIRECTS {
                        return Err(error);
                    }
                }
                Err(error) => {
                    if error.is_io_error()
                        || error.is_connection_dropped()
                        || error.is_unrecoverable_error()
                        || error.is_timeout()
                    {
                        self.forget(driver, node);
                        self.unroute(shard);
                    }
                    return Err(error);
                }
                Ok(value) => return Ok(value),
            }
        }
    }
}

/// The node (`host:port`) a `MOVED` answer names, whether the command was sent alone or in
/// a pipeline (whose error holds each failing command's; `redirect_node` reads only a lone
/// command's).
fn moved_to(error: &RedisError) -> Option<String> {
    if let Some((addr, _slot)) = error.redirect_node() {
        return Some(addr.to_owned());
    }
    let failed = error.clone().into_server_errors()?;
    let (_, first) = failed.first()?;
    // `MOVED <slot> <host:port>`: the details are what follows the code.
    first.details()?.split_ascii_whitespace().nth(1).map(str::to_owned)
}

/// Whether two addresses name the same node.
fn same_node(a: &ConnectionAddr, b: &ConnectionAddr) -> bool {
    match (a, b) {
        (ConnectionAddr::Tcp(host_a, port_a), ConnectionAddr::Tcp(host_b, port_b)) => {
            host_a == host_b && port_a == port_b
        }
        _ => false,
    }
}
