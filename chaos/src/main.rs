//! The chaos run: W worker processes call four `#[idempotent]` tools over a moving set of
//! business keys, from several threads each, while a nemesis kills and pauses workers,
//! kills, restarts and freezes the store server, and breaks the network between them;
//! then a checker reads every answer and the provider's ledger. See RELIABILITY.md.
//!
//! ```sh
//! cargo run -p idem-chaos -- --store all --seconds 60
//! ```

mod checker;
mod events;
mod fleet;
mod ledger;
mod nemesis;
mod proxy;
mod run;
mod self_test;
mod servers;
mod tools;
mod worker;

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: idem-chaos [--store sqlite|postgres|redis|all] [--seconds N] [--workers W] \
[--threads T] [--seed S] [--lying-hook] [--keep]
       idem-chaos --self-test
       idem-chaos --check DIR

  --store       the store to run on; `all` runs the three one after another (default: all)
  --seconds     how long the nemesis runs on each store (default: 60)
  --workers     worker processes (default: 4)
  --threads     calling threads per worker (default: 3)
  --seed        the run's seed, printed at its start: the same seed gives the same faults at
                the same times, and each worker thread the same sequence of calls (how the
                machine interleaves them differs) (default: from the clock)
  --lying-hook  the deliberately broken variant: refund's reconcile hook answers \"not done\"
                without asking the provider. The checker must find anomalies.
  --keep        keep the run's directory (history, ledger, store files) even when it passes
  --check DIR   check a kept run's files again (after a change to the checker)
  --self-test   run the checker on made-up histories, each breaking one promise: every
                check must fire, and a clean history must pass

exit status: 0 no anomaly, 3 anomalies found, 2 bad arguments, 101 the harness failed (a panic)";

/// Milliseconds since the Unix epoch: every process of a run is on this machine, so their
/// times compare.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() as i64
}

/// splitmix64: small, fast and good enough to choose faults and calls from a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.draw() % n.max(1)
    }

    /// A number in `low..high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low)
    }
}

thread_local! {
    static JITTER: std::cell::RefCell<Rng> =
        std::cell::RefCell::new(Rng::new(now_ms() as u64 ^ u64::from(std::process::id()) << 32));
}

/// A pause of up to `max_ms`, for the bodies: where it ends is not part of the schedule.
pub fn jitter(max_ms: u64) -> u64 {
    JITTER.with(|rng| rng.borrow_mut().below(max_ms))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir] = &args[..]
        && flag == "--check"
    {
        return run::check_again(std::path::Path::new(dir));
    }
    if args.first().map(String::as_str) == Some("--self-test") {
        return if self_test::main() { ExitCode::SUCCESS } else { ExitCode::from(3) };
    }
    if args.first().map(String::as_str) == Some(worker::COMMAND) {
        worker::main(&args[1..]);
        return ExitCode::SUCCESS;
    }
    let options = match run::Options::parse(&args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    run::main(&options)
}
