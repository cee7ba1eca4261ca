//! The per-call benches: first calls, replays, IN_PROGRESS and CONFLICT answers on the
//! memory and SQLite stores, and key building alone.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use idem::__private::{FieldMode, Segment, build_key};
use idem::store::Synchronous;
use idem::{KeyPart, MemoryStore, SqliteStore, Status};

use super::Settings;
use super::hand::{HandMemory, HandMemoryJson, HandSchema, HandSqlite, sync_pragma};
use super::harness::compare;
use super::report::{Report, Row, Target};
use super::tool::{
    AMOUNT, Check, OTHER_AMOUNT, PERIOD, Tools, conflict, cycling, fresh, fresh_customers, in_progress, replayed,
    reserve_in_progress, timed,
};

pub fn memory(settings: &Settings, report: &mut Report) {
    let baseline = "HashMap + Mutex";
    let first = compare(
        settings.plan(2000),
        |n| {
            let tools = Tools::new(MemoryStore::new());
            let elapsed = timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh);
            assert_eq!(tools.effects.total(), n as u64);
            elapsed
        },
        |n| {
            let hand = HandMemory::new();
            let elapsed = timed(fresh_customers(n), |c, p, a, m| hand.send_invoice(c, p, a, m), fresh);
            assert_eq!(hand.effects.total(), n as u64);
            elapsed
        },
    );
    report.rows.push(Row {
        store: "memory",
        call: "first call",
        baseline,
        pair: first,
        target: Target::IdemAtMostNs(1500.0),
    });

    // Existing keys: completed ones for replays and conflicts, reserved ones for IN_PROGRESS.
    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..settings.pool()).map(|i| format!("busy{i}")).collect();
    let tools = Tools::new(MemoryStore::new());
    let hand = HandMemory::new();
    for customer in &pool {
        fresh(&tools.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
        fresh(&hand.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    for customer in &busy {
        reserve_in_progress(&tools.store, customer);
        hand.reserve_only(customer);
    }
    let answers: [(&str, &[String], f64, Check); 3] = [
        ("replay", &pool, AMOUNT, replayed),
        ("in progress", &busy, AMOUNT, in_progress),
        ("conflict", &pool, OTHER_AMOUNT, conflict),
    ];
    for (call, keys, amount, check) in answers {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(2000),
            |n| timed(cycling(keys, &mut a, n, amount), |c, p, a, m| tools.send_invoice(c, p, a, m), check),
            |n| timed(cycling(keys, &mut b, n, amount), |c, p, a, m| hand.send_invoice(c, p, a, m), check),
        );
        report.rows.push(Row { store: "memory", call, baseline, pair, target: Target::None });
    }
    assert_eq!(tools.effects.total(), pool.len() as u64, "repeats must not run the body");
    assert_eq!(hand.effects.total(), pool.len() as u64);

    // The same first calls, replays and conflicts against a baseline that keeps JSON text,
    // as a store keeps bytes: what idem costs beyond serializing the record.
    let baseline = "HashMap + Mutex, JSON records";
    let json = HandMemoryJson::new();
    let first = compare(
        settings.plan(2000),
        |n| timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh),
        |n| timed(fresh_customers(n), |c, p, a, m| json.send_invoice(c, p, a, m), fresh),
    );
    report.rows.push(Row { store: "memory", call: "first call", baseline, pair: first, target: Target::None });
    for customer in &pool {
        fresh(&json.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    let repeats: [(&str, f64, Check); 2] = [("replay", AMOUNT, replayed), ("conflict", OTHER_AMOUNT, conflict)];
    for (call, amount, check) in repeats {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(2000),
            |n| timed(cycling(&pool, &mut a, n, amount), |c, p, a, m| tools.send_invoice(c, p, a, m), check),
            |n| timed(cycling(&pool, &mut b, n, amount), |c, p, a, m| json.send_invoice(c, p, a, m), check),
        );
        report.rows.push(Row { store: "memory", call, baseline, pair, target: Target::None });
    }

    // Conflicts against a baseline that answers with what idem's CONFLICT carries: the floor
    // for that answer.
    let explaining = HandMemoryJson::explaining();
    for customer in &pool {
        fresh(&explaining.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    let (mut a, mut b) = (0, 0);
    let pair = compare(
        settings.plan(2000),
        |n| timed(cycling(&pool, &mut a, n, OTHER_AMOUNT), |c, p, a, m| tools.send_invoice(c, p, a, m), conflict),
        |n| timed(cycling(&pool, &mut b, n, OTHER_AMOUNT), |c, p, a, m| explaining.send_invoice(c, p, a, m), conflict),
    );
    let baseline = "HashMap + Mutex, JSON records, the conflict explained";
    report.rows.push(Row { store: "memory", call: "conflict", baseline, pair, target: Target::None });
}

pub fn keys(settings: &Settings, report: &mut Report) {
    const NORMAL: FieldMode = FieldMode { normalize: true, hash: false };
    const HASH: FieldMode = FieldMode { normalize: true, hash: true };
    static INVOICE: [Segment; 4] = [
        Segment::Literal("invoice:"),
        Segment::Field("customer", NORMAL),
        Segment::Literal(":"),
        Segment::Field("period", NORMAL),
    ];
    static WELCOME: [Segment; 2] = [Segment::Literal("welcome:"), Segment::Field("email", HASH)];
    type Case = (&'static str, fn(u64) -> String, bool, &'static str);
    let cases: [Case; 3] = [
        ("key: typical", |i| format!("  Acme Corp {i} "), true, "format! + trim + to_lowercase"),
        ("key: non-ASCII", |i| format!(" Müller & Söhne {i} "), true, "format! + trim + to_lowercase"),
        ("key: hashed field", |i| format!("Ann.Lee{i}@Example.com"), false, "format! + trim + to_lowercase, no hash"),
    ];
    // Every input is new: both sides draw from one counter.
    let next = std::cell::Cell::new(0u64);
    for (call, value, invoice, baseline) in cases {
        let inputs = |n: usize| -> Vec<String> {
            let first = next.replace(next.get() + n as u64);
            (first..first + n as u64).map(value).collect()
        };
        let (mut idem_inputs, mut hand_inputs) = (Vec::new(), Vec::new());
        let idem_side = |n: usize| {
            // The previous batch's inputs are dropped here, before the clock starts.
            idem_inputs = inputs(n);
            let start = Instant::now();
            for text in &idem_inputs {
                let key = if invoice {
                    build_key("send_invoice", &INVOICE, &[black_box(text) as &dyn KeyPart, &PERIOD])
                } else {
                    build_key("send_welcome", &WELCOME, &[black_box(text) as &dyn KeyPart])
                };
                black_box(key.unwrap());
            }
            start.elapsed()
        };
        let hand_side = |n: usize| {
            hand_inputs = inputs(n);
            let start = Instant::now();
            for text in &hand_inputs {
                let key = if invoice {
                    format!("invoice:{}:{PERIOD}", black_box(text).trim().to_lowercase())
                } else {
                    format!("welcome:{}", black_box(text).trim().to_lowercase())
                };
                black_box(key);
            }
            start.elapsed()
        };
        let pair = compare(settings.plan(5000), idem_side, hand_side);
        report.rows.push(Row { store: "-", call, baseline, pair, target: Target::None });
    }
}

pub fn sqlite(settings: &Settings, sync: Synchronous, dir: &Path, report: &mut Report) {
    let (store_name, first_baseline, repeat_baseline, first_plan) = match sync {
        // Two disk syncs per call, whose time varies a lot from one to the next: many
        // small rounds.
        Synchronous::Full => {
            ("SQLite FULL", "rusqlite FULL: INSERT + UPDATE", "rusqlite FULL: SELECT", settings.plan_rounds(16, 61))
        }
        // Without a sync per commit, WAL checkpoints (every 1,000 pages written) are most of
        // a first call's cost: a batch spans several of them so that every batch pays its share.
        _ => ("SQLite NORMAL", "rusqlite NORMAL: INSERT + UPDATE", "rusqlite NORMAL: SELECT", settings.plan(1000)),
    };
    let name = sync_pragma(sync).to_lowercase();
    let store = SqliteStore::builder(dir.join(format!("idem-{name}.db"))).synchronous(sync).open().unwrap();
    let tools = Tools::new(store);
    let hand = HandSqlite::open(&dir.join(format!("hand-{name}.db")), sync, Arc::default());

    let first = compare(
        first_plan,
        |n| timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh),
        |n| timed(fresh_customers(n), |c, p, a, m| hand.send_invoice_new(c, p, a, m), fresh),
    );
    let first_calls = tools.effects.total();
    assert_eq!(first_calls, hand.effects.total(), "every first call runs its body once");
    report.rows.push(Row {
        store: store_name,
        call: "first call",
        baseline: first_baseline,
        pair: first,
        target: Target::RatioAtMost(1.15),
    });
    // The same first calls against a hand-written table with idem's schema: what the
    // schema's extra page writes cost, apart from idem's code.
    let like =
        HandSqlite::open_with(&dir.join(format!("hand-like-{name}.db")), sync, Arc::default(), HandSchema::IdemLike);
    let schema = compare(
        first_plan,
        |n| timed(fresh_customers(n), |c, p, a, m| tools.send_invoice(c, p, a, m), fresh),
        |n| timed(fresh_customers(n), |c, p, a, m| like.send_invoice_new(c, p, a, m), fresh),
    );
    assert_eq!(tools.effects.total(), first_calls + like.effects.total(), "every first call runs its body once");
    let idem_first_calls = tools.effects.total();
    report.rows.push(Row {
        store: store_name,
        call: "first call, same schema",
        baseline: if sync == Synchronous::Full {
            "rusqlite FULL: INSERT + UPDATE, idem's schema"
        } else {
            "rusqlite NORMAL: INSERT + UPDATE, idem's schema"
        },
        pair: schema,
        target: Target::None,
    });

    let pool: Vec<String> = fresh_customers(settings.pool()).into_iter().map(|a| a.customer).collect();
    let busy: Vec<String> = (0..settings.pool()).map(|i| format!("busy{i}")).collect();
    for customer in &pool {
        fresh(&tools.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
        fresh(&hand.send_invoice(customer.clone(), PERIOD.into(), AMOUNT, String::new()));
    }
    for customer in &busy {
        reserve_in_progress(&tools.store, customer);
        hand.reserve_only(customer);
    }
    assert!(matches!(tools.send_invoice_status(busy[0].clone(), PERIOD.into()), Ok(Status::InProgress { .. })));
    let answers: [(&str, &[String], f64, Check, Target); 3] = [
        ("replay", &pool, AMOUNT, replayed, Target::RatioAtMost(1.5)),
        ("in progress", &busy, AMOUNT, in_progress, Target::None),
        ("conflict", &pool, OTHER_AMOUNT, conflict, Target::None),
    ];
    for (call, keys, amount, check, target) in answers {
        let (mut a, mut b) = (0, 0);
        let pair = compare(
            settings.plan(500),
            |n| timed(cycling(keys, &mut a, n, amount), |c, p, a, m| tools.send_invoice(c, p, a, m), check),
            |n| timed(cycling(keys, &mut b, n, amount), |c, p, a, m| hand.send_invoice(c, p, a, m), check),
        );
        report.rows.push(Row { store: store_name, call, baseline: repeat_baseline, pair, target });
    }
    assert_eq!(tools.effects.total(), idem_first_calls + pool.len() as u64, "repeats must not run the body");
    assert_eq!(hand.effects.total(), first_calls + pool.len() as u64);
}
