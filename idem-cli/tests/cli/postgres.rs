//! The PostgreSQL test server of `IDEM_TEST_DATABASE_URL`: its URL, and statements run on
//! a connection of their own.

/// The PostgreSQL test server's URL, or `None` after saying that `test` is skipped; under
/// CI a missing URL fails the test.
pub fn pg_url(test: &str) -> Option<String> {
    let url = std::env::var("IDEM_TEST_DATABASE_URL").ok().filter(|url| !url.is_empty());
    if url.is_none() {
        if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") {
            panic!("IDEM_TEST_DATABASE_URL is not set under CI; CI must run the PostgreSQL tests");
        }
        eprintln!("SKIPPED {test}: set IDEM_TEST_DATABASE_URL");
    }
    url
}

/// Runs `statements` on a connection of its own.
pub fn sql(url: &str, statements: &str) {
    on_server(url, |client| async move { client.batch_execute(statements).await.unwrap() });
}

/// The first column of each row `query` returns, as text.
pub fn sql_strings(url: &str, query: &str) -> Vec<String> {
    on_server(url, |client| async move {
        client.query(query, &[]).await.unwrap().iter().map(|row| row.get::<_, String>(0)).collect()
    })
}

fn on_server<T, F: std::future::Future<Output = T>>(url: &str, with: impl FnOnce(tokio_postgres::Client) -> F) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        with(client).await
    })
}
