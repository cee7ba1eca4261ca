//! Opening a [`RedisStore`]: its options ([`RedisStoreBuilder`]); a store connects on
//! first use, and the `idem` command opens only one that exists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::fields::marker_key;
use super::io::{Io, Link, block_on, run};
use super::{MARKER_VERSION, RedisStore};
use crate::store::StoreError;

/// Options for a [`RedisStore`].
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    operation_timeout: Duration,
    wait: Option<(u32, Duration)>,
    expire_after_retention: Duration,
}

impl RedisStore {
    /// A store on the server at `url` (`redis://[user:password@]host[:port][/db]`,
    /// `rediss://` needs a TLS build of the client, which this one is not) with the default
    /// options. It connects on first use.
    pub fn new(url: &str) -> Result<RedisStore, StoreError> {
        Self::builder(url).build()
    }

    /// Options: the key prefix, deadlines, replicas to wait for.
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.to_owned(),
            prefix: "idem".to_owned(),
            operation_timeout: Duration::from_secs(5),
            wait: None,
            expire_after_retention: Duration::from_secs(3600),
        }
    }
}

impl RedisStoreBuilder {
    /// What every key of the store starts with (default `idem`): stores with different
    /// prefixes on one server are independent.
    pub fn prefix(mut self, prefix: &str) -> Self {
        prefix.clone_into(&mut self.prefix);
        self
    }

    /// The longest any operation waits for the server, connecting included (default 5 s);
    /// then it answers `STORE_UNAVAILABLE` and the connection is closed.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// After each reservation and completion, `WAIT` for `replicas` replicas to have it,
    /// at most `timeout`. A reservation fewer replicas acknowledged answers
    /// `STORE_UNAVAILABLE` and its body does not run; the reservation is released (should
    /// the release fail too, the key is handled like an abandoned call). A completion fewer
    /// replicas acknowledged is a failed completion: the caller still gets the body's
    /// result, an error event (`tracing`, with how many replicas acknowledged) and the
    /// lifecycle event [`Happened::Unrecorded`](crate::telemetry::Happened::Unrecorded) say
    /// so, and it is not written again: the primary has it, so retries replay it unless a
    /// failover loses it. See the module docs for what this does not promise.
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.wait = Some((replicas, timeout));
        self
    }

    /// How long after its retention ends a settled record's key expires (default 1 hour).
    /// [`Store::purge`](crate::store::Store::purge) removes due records before; this only bounds what nobody purged.
    pub fn expire_after_retention(mut self, after: Duration) -> Self {
        self.expire_after_retention = after;
        self
    }

    /// The store. It connects on first use.
    pub fn build(self) -> Result<RedisStore, StoreError> {
        self.make(true)
    }

    /// The store, once the server answers and holds a store under this prefix (written by
    /// a tool's first connection); never writes anything: for the `idem` command.
    pub fn open_existing(self) -> Result<RedisStore, StoreError> {
        let store = self.make(false)?;
        let marker = marker_key(&store.prefix);
        let found: Option<String> = block_on(run(&store.io, &store.link, "open", move |mut connection| async move {
            redis::cmd("GET").arg(marker).query_async(&mut connection).await
        }))?;
        match found.as_deref() {
            Some(MARKER_VERSION) => Ok(store),
            Some(other) => {
                Err(store.link.failed("open", format!("a store of another idem version (format {other:?})")))
            }
            None => Err(store.link.failed(
                "open",
                format!(
                    "no idem store under the prefix {:?} (no key {:?}): check the URL's database number and --prefix",
                    store.prefix,
                    marker_key(&store.prefix)
                ),
            )),
        }
    }

    fn make(self, mark: bool) -> Result<RedisStore, StoreError> {
        let described = format!("Redis {} (prefix {})", without_password(&self.url), self.prefix);
        let bad_url = |e: redis::RedisError| StoreError::Backend(format!("{described}: the URL: {e}").into());
        let info = redis::IntoConnectionInfo::into_connection_info(self.url.as_str()).map_err(bad_url)?;
        let link = Link {
            info,
            connections: Mutex::new(HashMap::new()),
            timeout: self.operation_timeout,
            described,
            marker: mark.then(|| marker_key(&self.prefix)),
        };
        Ok(RedisStore {
            link: Arc::new(link),
            io: Io::start()?,
            prefix: self.prefix,
            wait: self.wait,
            expire_after_retention: self.expire_after_retention,
        })
    }
}

/// `url` without its scheme and credentials: `127.0.0.1:6379/0`.
fn without_password(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.rsplit_once('@').map_or(rest, |(_, host)| host)
}
