//! Opening a [`PgStore`]: its options ([`PgStoreBuilder`]), checked and turned into the
//! connection settings and the pool; nothing connects until the first operation.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

use super::pool::{Connect, Pool};
use super::schema::Queries;
use super::{DATABASE_URL_ENV, IDEM_LOCK_WAIT, Inner, MakeTlsConnect, PgStore, Socket, TlsConnect};
use crate::store::StoreError;

impl PgStore {
    /// The store at `url` (`postgres://user:password@host:port/dbname`, or `host=.. user=..`)
    /// with the default options. Connects on first use.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Self::builder(url).build()
    }

    /// The store at the URL in the `IDEM_DATABASE_URL` environment variable.
    pub fn from_env() -> Result<Self, StoreError> {
        let url = std::env::var(DATABASE_URL_ENV)
            .map_err(|e| invalid(format!("cannot read {DATABASE_URL_ENV} for the idem PostgreSQL store: {e}")))?;
        Self::new(&url)
    }

    /// Options for the store at `url`: schema, pool size, timeouts, TLS.
    pub fn builder(url: &str) -> PgStoreBuilder {
        let no_tls: Connect = Arc::new(|config: Config| {
            Box::pin(async move {
                let (client, connection) = config.connect(NoTls).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            })
        });
        PgStoreBuilder {
            url: url.to_owned(),
            schema: "idem".to_owned(),
            max_connections: 16,
            checkout_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(5),
            operation_timeout: Duration::from_secs(10),
            connect: no_tls,
        }
    }
}

/// Options for a [`PgStore`]; start with [`PgStore::builder`].
pub struct PgStoreBuilder {
    url: String,
    schema: String,
    max_connections: usize,
    checkout_timeout: Duration,
    lock_timeout: Duration,
    operation_timeout: Duration,
    connect: Connect,
}

impl std::fmt::Debug for PgStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStoreBuilder")
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("checkout_timeout", &self.checkout_timeout)
            .field("lock_timeout", &self.lock_timeout)
            .field("operation_timeout", &self.operation_timeout)
            .finish_non_exhaustive()
    }
}

impl PgStoreBuilder {
    /// The schema that holds idem's tables, created on first use. Default: `idem`. A plain
    /// lowercase identifier: letters, digits and `_`, not starting with a digit.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The most connections this store opens at once. Default: 16. Each process has its own
    /// pool: keep processes × `max_connections` under the server's `max_connections`.
    pub fn max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// How long an operation waits for a free connection before it fails with
    /// [`StoreError::Backend`] (the tool answers `STORE_UNAVAILABLE`). Default: 5 seconds.
    pub fn checkout_timeout(mut self, timeout: Duration) -> Self {
        self.checkout_timeout = timeout;
        self
    }

    /// How long the statements of a [`PgTransaction`](super::PgTransaction) (your writes
    /// through it) wait for a lock, and how long a migration waits for another process's (the server's
    /// `lock_timeout`). Default: 5 seconds. idem's own statements wait at most
    /// [`IDEM_LOCK_WAIT`]: a call that finds its key held by a transaction still open is
    /// told `IN_PROGRESS` after that, not after this.
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// The longest one store operation may take, from waiting for a connection to the
    /// server's last answer. Past it the operation fails with [`StoreError::Backend`] (a
    /// tool call answers `STORE_UNAVAILABLE` and its body does not run) and the connection
    /// it used is closed, not pooled. This is what bounds a server that stops answering: a
    /// frozen backend, or a network partition that drops packets, where neither the
    /// server's timeouts nor TCP's (about 15 minutes) help. Default: 10 seconds. Keep it
    /// above `checkout_timeout` and `lock_timeout`, or it cuts their waits short.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Connects with TLS, e.g. `postgres_native_tls::MakeTlsConnector` or
    /// `tokio_postgres_rustls::MakeRustlsConnect`. Default: no TLS.
    pub fn tls<T>(mut self, tls: T) -> Self
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::Stream: Send + 'static,
        T::TlsConnect: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        self.connect = Arc::new(move |config: Config| {
            let tls = tls.clone();
            Box::pin(async move {
                let (client, connection) = config.connect(tls).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            })
        });
        self
    }

    /// Makes the store. Nothing is connected yet: the first operation connects and creates
    /// or migrates the schema. Fails on a malformed URL or schema name.
    pub fn build(self) -> Result<PgStore, StoreError> {
        let mut config: Config = self.url.parse().map_err(|e| invalid(format!("bad connection URL: {e}")))?;
        let valid_schema = self.schema.len() <= 63
            && self.schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && self.schema.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_schema {
            return Err(invalid(format!(
                "bad schema name {:?}: use lowercase letters, digits and _, starting with a letter",
                self.schema
            )));
        }
        if self.max_connections == 0 {
            return Err(invalid("max_connections must be at least 1".into()));
        }
        let options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config.options(format!("{options}-c lock_timeout={}", IDEM_LOCK_WAIT.as_millis()));
        if config.get_application_name().is_none() {
            config.application_name("idem");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5)); // an unreachable host is an answer in time
        }
        dead_peers_noticed(&mut config);
        let timeouts = (self.checkout_timeout, self.operation_timeout);
        let pool = Pool::new(config, self.connect, self.max_connections, timeouts)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let queries = Queries::new(&self.schema);
        let described = describe(pool.config(), &self.schema);
        let lock_timeout = self.lock_timeout;
        let inner = Inner {
            pool,
            queries,
            schema: self.schema,
            described,
            lock_timeout,
            migrated: OnceCell::new(),
            repeats: crate::store::repeats::Repeats::default(),
        };
        Ok(PgStore { inner: Arc::new(inner) })
    }
}

/// TCP settings that notice a dead server or a broken network within about a minute, where
/// the kernel's defaults take two hours (keepalive) or a quarter of an hour (retransmission):
/// a pooled connection to a peer that is gone is closed instead of handed to the next
/// operation. Settings the URL makes (`keepalives_idle=`, `tcp_user_timeout=`, ..) are kept.
fn dead_peers_noticed(config: &mut Config) {
    const KERNEL_KEEPALIVE_IDLE: Duration = Duration::from_secs(2 * 60 * 60); // tokio-postgres's default
    if config.get_keepalives_idle() == KERNEL_KEEPALIVE_IDLE {
        config.keepalives_idle(Duration::from_secs(30));
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(Duration::from_secs(10));
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(3);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(30)); // Linux: unacknowledged data
    }
}

fn invalid(message: String) -> StoreError {
    StoreError::Backend(message.into())
}

/// The store as an error message names it: hosts, port, database and schema, never the
/// user's password.
fn describe(config: &Config, schema: &str) -> String {
    let hosts: Vec<String> = (config.get_hosts().iter())
        .map(|host| match host {
            Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().map_or(5432, |port| *port);
    let user = config.get_user().map(|user| format!("{user}@")).unwrap_or_default();
    let dbname = config.get_dbname().unwrap_or("");
    format!("PostgreSQL {user}{}:{port}/{dbname} (schema {schema})", hosts.join(","))
}
