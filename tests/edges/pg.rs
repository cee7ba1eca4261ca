//! What the PostgreSQL edge tests share.

/// Drops a test schema at the end, through a connection (and a runtime) of its own.
pub fn drop_schema(url: &str, schema: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await.unwrap();
    });
}
