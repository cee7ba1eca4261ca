//! One worker of `remote_mcp` (`remote_mcp serve ...`): the billing server's MCP endpoint
//! on a port of its own, over the store every worker shares. (`tests/remote_mcp.rs` runs
//! this file's `serve` in worker processes too.)

use std::sync::Arc;
use std::time::Duration;

use idem::store::DynStore;

use crate::billing::{self, Billing, Effects};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// The value of `--name` in `args`.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.windows(2).find(|pair| pair[0] == name).map(|pair| pair[1].as_str())
}

/// One worker: serves the billing server's MCP endpoint until it is stopped.
pub async fn serve(args: &[String]) -> Result<()> {
    let db = flag(args, "--db").ok_or("serve needs --db (an SQLite file or a postgres:// URL)")?;
    let effects = flag(args, "--effects").ok_or("serve needs --effects FILE")?;
    let port: u16 = flag(args, "--port").unwrap_or("0").parse()?;
    let millis = |name: &str, default: &str| flag(args, name).unwrap_or(default).parse().map(Duration::from_millis);
    let (invoice, page) = (millis("--invoice-ms", "200")?, millis("--page-ms", "1000")?);
    let store = open_store(db, flag(args, "--schema").unwrap_or("idem")).await?;
    let billing = Billing { store, effects: Effects { path: effects.into() }, invoice, page };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // The first line a parent reads: where this worker listens.
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, billing::app(billing)).await?;
    Ok(())
}

/// The store every worker shares.
async fn open_store(db: &str, schema: &str) -> Result<Arc<dyn DynStore>> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        {
            // Each worker has its own pool: keep workers x 8 under the server's max_connections.
            let store = idem::PgStore::builder(db).schema(schema).max_connections(8).build()?;
            store.migrate().await?; // safe from every worker at once: they take turns
            return Ok(Arc::new(store));
        }
        #[cfg(not(feature = "postgres"))]
        return Err(
            format!("a postgres:// store needs the `postgres` feature: --features rmcp,postgres ({schema})").into()
        );
    }
    Ok(Arc::new(idem::SqliteStore::open(db)?))
}
