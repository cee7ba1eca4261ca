//! The benches of `cargo bench` in their quick mode (a few iterations each), inside
//! `cargo test --workspace`, so that the bench code cannot rot: every bench runs, every
//! answer and effect count is checked (the benches panic on a wrong one), and the report
//! holds a real number in every cell. Timings are never asserted.

#[path = "../../benches/calls/main.rs"]
#[allow(dead_code)]
mod calls;

#[test]
fn every_bench_runs_and_checks_its_answers() {
    let settings = calls::Settings::quick();
    let report = calls::run(&settings);

    let names: Vec<(&str, &str)> = report.rows.iter().map(|row| (row.store, row.call)).collect();
    for store in ["memory", "SQLite FULL", "SQLite NORMAL"] {
        for call in ["first call", "replay", "in progress", "conflict"] {
            assert!(names.contains(&(store, call)), "no {call} row for {store}: {names:?}");
        }
    }
    // The memory rows' second baseline (JSON records): a first call, a replay and a conflict
    // more, and a conflict answered as idem's is; the HTTP layer's rows are a first request and a replay against each of its two.
    let baselines = |store: &str| -> Vec<(&str, &str)> {
        report.rows.iter().filter(|row| row.store == store).map(|row| (row.call, row.baseline)).collect()
    };
    let json = "HashMap + Mutex, JSON records";
    let memory = baselines("memory");
    assert_eq!(memory.iter().filter(|(_, baseline)| *baseline == json).count(), 3, "{memory:?}");
    let explained = ("conflict", "HashMap + Mutex, JSON records, the conflict explained");
    assert!(memory.contains(&explained), "{memory:?}");
    if cfg!(feature = "http") {
        let http = baselines("http (memory)");
        let expected = ["hand-written layer (HashMap + Mutex)", "hand-written layer, JSON records"]
            .into_iter()
            .flat_map(|baseline| [("first request", baseline), ("replay", baseline)])
            .collect::<Vec<_>>();
        assert_eq!(http, expected);
    }
    assert_eq!(names.iter().filter(|(_, call)| call.starts_with("key:")).count(), 3);
    // The PostgreSQL rows need a server: CI has one (and must measure it), elsewhere the
    // run says it skipped them.
    let postgres_rows = names.iter().filter(|(store, _)| *store == "PostgreSQL").count();
    if std::env::var_os("IDEM_TEST_DATABASE_URL").is_some_and(|url| !url.is_empty()) {
        assert_eq!(postgres_rows, 9, "{names:?}");
        for call in ["first call with a budget", "replay with a budget"] {
            assert!(names.contains(&("PostgreSQL", call)), "{names:?}");
        }
        assert!(report.postgres.as_deref().is_some_and(|server| server.contains("fsync=")));
    } else {
        assert_eq!(postgres_rows, 0);
        assert!(report.skipped.contains(&"postgres"), "{:?}", report.skipped);
    }
    // The same for the Redis rows (one server, a cluster), which the bench has with the
    // `redis` feature.
    for (store, env, skipped) in
        [("Redis", "IDEM_TEST_REDIS_URL", "redis"), ("Redis Cluster", "IDEM_TEST_REDIS_CLUSTER_URL", "redis cluster")]
    {
        let rows = names.iter().filter(|(name, _)| *name == store).count();
        let server = std::env::var_os(env).is_some_and(|url| !url.is_empty());
        match (cfg!(feature = "redis"), server) {
            (true, true) => {
                // One server also has `store.reserve` alone against the same read by hand.
                assert_eq!(rows, if store == "Redis" { 4 } else { 3 }, "{names:?}");
                let reported = format!("{store}: ");
                let servers = report.redis.as_deref().unwrap_or_default();
                assert!(
                    servers.split("; ").any(|server| server.starts_with(&reported) && server.contains("appendfsync="))
                );
            }
            (true, false) => assert!(rows == 0 && report.skipped.contains(&skipped), "{:?}", report.skipped),
            (false, _) => assert_eq!(rows, 0),
        }
    }
    let threads: Vec<(&str, usize)> = report.throughput.iter().map(|row| (row.sync, row.threads)).collect();
    assert_eq!(threads, [("FULL", 1), ("FULL", 2), ("FULL", 8), ("NORMAL", 1), ("NORMAL", 2), ("NORMAL", 8)]);
    for row in &report.throughput {
        let (fresh, replayed, in_progress) = row.idem_answers;
        assert_eq!(fresh, settings.keys, "one fresh call per key");
        assert_eq!(fresh + replayed + in_progress, settings.keys * 4);
    }
    let first: Vec<(&str, usize)> = report.first_calls.iter().map(|row| (row.sync, row.threads)).collect();
    let expected: Vec<(&str, usize)> =
        ["FULL", "NORMAL"].into_iter().flat_map(|sync| [1, 2, 4, 8].map(|threads| (sync, threads))).collect();
    assert_eq!(first, expected);
    for row in &report.first_calls {
        // Each first call commits twice; at FULL each commit syncs the WAL, though idem's
        // concurrent calls may share commits.
        for run in &row.hand {
            assert!(row.sync != "FULL" || run.syncs_per_call >= 2.0, "{row:?}");
        }
        for run in row.idem.iter().chain(&row.hand) {
            assert!(row.sync != "FULL" || run.syncs_per_call > 0.0, "{row:?}");
            assert!(run.wal_peak > 0, "{row:?}");
        }
    }
    for number in report.numbers() {
        assert!(number.is_finite() && number > 0.0, "{number} in {report:#?}");
    }
    let table = report.calls_table().markdown();
    assert_eq!(table.lines().count(), 2 + report.rows.len());
    assert!(!table.contains("NaN") && !table.contains("inf"), "{table}");
    let (_, judged) = report.targets();
    let postgres_targets = if postgres_rows > 0 { 2 } else { 0 };
    assert_eq!(judged, 5 + postgres_targets, "the targets of the issue are judged");
}
