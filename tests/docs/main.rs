//! What the docs and the benches promise: the code the docs quote is the text of compiled
//! files (`quotes`), and every bench of `cargo bench` runs and checks its answers
//! (`bench_smoke`).

mod bench_smoke;
mod quotes;
