//! The invoicing demo runs as the README says and ends with the article's counts. Run here
//! with short delays; the example binary is built by `cargo test` beside this test.

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile_dir = deps.parent().and_then(|d| d.parent()).unwrap();
    profile_dir.join("examples").join(name)
}

#[test]
fn the_invoicing_demo_shows_three_invoices_then_one() {
    let output = Command::new(example("invoicing"))
        .env("IDEM_DEMO_DELAY_MS", "300")
        .env("IDEM_DEMO_PATIENCE_MS", "100")
        .output()
        .expect("the example is built by `cargo test`");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the demo failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(
        stdout.lines().last(),
        Some("naive: 3 invoices, keyed: 1 invoice, matrix: 2 invoices (1 per period)"),
        "{stdout}"
    );
}
