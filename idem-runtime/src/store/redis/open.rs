//! Opening a [`RedisStore`]: its options ([`RedisStoreBuilder`]); a store connects on
//! first use, and the `idem` command opens only one that exists.

use std::sync::Arc;
use std::time::Duration;

use super::fields::Keys;
use super::io::{Link, block_on, run};
use super::{MARKER_VERSION, RedisStore};
use crate::store::StoreError;
use crate::store::io_thread::IoThread;

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
    /// A store on the server at `url` (`redis://[user:password@]host[:port][/db]`), or on
    /// the Redis Cluster or Valkey cluster whose nodes `url` names
    /// (`redis+cluster://[user:password@]host:port[,host:port...]`: one node is enough, the
    /// store learns the others from their `MOVED` answers; name several so that one down
    /// at the start does not matter), with the default options. `rediss://` needs a TLS
    /// build of the client, which this one is not. It connects on first use.
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
    /// failover loses it. A `WAIT` that fails (a failover unblocks it) counts as one that
    /// fell short. See the module docs for what this does not promise.
    ///
    /// `WAIT` holds the connection it runs on (one per node and runtime): the calls behind
    /// it wait too, up to `timeout`, while a replica lags. A primary with fewer replicas
    /// than `replicas` (one just promoted, whose old primary has not come back as its
    /// replica) answers every reservation `STORE_UNAVAILABLE` until enough follow it.
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
        let marker = store.keys.marker();
        let found: Option<String> = block_on(run(&store.io, &store.link, "open", 0, move |mut connection| {
            let get = redis::cmd("GET").arg(&marker).to_owned();
            async move { get.query_async(&mut connection).await }
        }))?;
        match found.as_deref() {
            Some(MARKER_VERSION) => Ok(store),
            Some(other) => {
                Err(store.link.failed("open", format!("a store of another idem version (format {other:?})")))
            }
            None => {
                let check = match store.keys.cluster {
                    true => "check the URL's nodes and --prefix",
                    // A cluster node answers for the slots it serves: the marker may be elsewhere.
                    false
                        if block_on(store.command::<String>(
                            "open",
                            0,
                            redis::cmd("INFO").arg("cluster").to_owned(),
                        ))
                        .is_ok_and(|info| info.contains("cluster_enabled:1")) =>
                    {
                        "the server is a Redis Cluster node: open it with a redis+cluster:// URL"
                    }
                    false => "check the URL's database number and --prefix",
                };
                Err(store.link.failed(
                    "open",
                    format!(
                        "no idem store under the prefix {:?} (no key {:?}): {check}",
                        store.keys.prefix,
                        store.keys.marker(),
                    ),
                ))
            }
        }
    }

    fn make(self, mark: bool) -> Result<RedisStore, StoreError> {
        let described = format!("Redis {} (prefix {})", without_password(&self.url), self.prefix);
        let bad_url = |why: String| StoreError::Backend(format!("{described}: the URL: {why}").into());
        let (settings, nodes, cluster) = match self.url.strip_prefix("redis+cluster://") {
            Some(rest) => {
                let (credentials, hosts) = rest.rsplit_once('@').map_or(("", rest), |(c, h)| (c, h));
                let mut nodes = Vec::new();
                let mut settings = None;
                for host in hosts.split(',').filter(|host| !host.is_empty()) {
                    if host.contains('/') {
                        return Err(bad_url(format!("{host:?}: a cluster has no database number to choose")));
                    }
                    let at = if credentials.is_empty() { String::new() } else { format!("{credentials}@") };
                    let info = redis::IntoConnectionInfo::into_connection_info(format!("redis://{at}{host}").as_str())
                        .map_err(|e| bad_url(e.to_string()))?;
                    settings.get_or_insert_with(|| info.redis_settings().clone());
                    nodes.push(info.addr().clone());
                }
                let Some(settings) = settings else { return Err(bad_url("no node named".to_owned())) };
                if self.prefix.contains(['{', '}']) {
                    return Err(StoreError::Backend(
                        format!(
                            "{described}: the prefix {:?} holds a brace: on a cluster the store puts its own hash \
                             tag after the prefix, and a brace in it would put every key in one slot",
                            self.prefix
                        )
                        .into(),
                    ));
                }
                (settings, nodes, true)
            }
            None => {
                let info = redis::IntoConnectionInfo::into_connection_info(self.url.as_str())
                    .map_err(|e| bad_url(e.to_string()))?;
                (info.redis_settings().clone(), vec![info.addr().clone()], false)
            }
        };
        let keys = Keys { prefix: self.prefix, cluster };
        let marker = mark.then(|| (keys.marker(), 0));
        let link = Link::new(settings, nodes, (cluster, keys.shards()), self.operation_timeout, described, marker);
        Ok(RedisStore {
            link: Arc::new(link),
            io: IoThread::start("idem-redis")
                .map_err(|e| StoreError::Backend(format!("Redis: starting the IO thread: {e}").into()))?,
            keys,
            wait: self.wait,
            expire_after_retention: self.expire_after_retention,
            void_after: self.operation_timeout.saturating_mul(2),
            repeats: Default::default(),
        })
    }
}

/// `url` without its scheme and credentials: `127.0.0.1:6379/0`.
fn without_password(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.rsplit_once('@').map_or(rest, |(_, host)| host)
}
