use idem::idempotent;

#[idempotent(key = "square:<n>")]
const fn square(n: u64) -> u64 {
    n * n
}

fn main() {}
