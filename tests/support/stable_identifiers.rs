//! Key fields that name one thing one way, whatever the model wrote: a billing period and a
//! customer, parsed into one canonical form, and refused when they name nothing. Used by
//! `tests/edges/stable_identifiers.rs` (plain functions) and
//! `tests/frameworks/rmcp/stable_identifiers.rs` (rmcp's `Parameters`); the crate docs'
//! "Stable identifiers" (src/lib.rs) quotes `Period` from here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer};

/// A billing period, one month: "2026-10", "October 2026" and "oct 2026" are one period,
/// `2026-10` in keys. "Octember 2026" names no month and is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    year: u16,
    month: u8,
}

const MONTHS: &str = "january february march april may june july august september october november december";

impl FromStr for Period {
    type Err = String;

    fn from_str(text: &str) -> Result<Period, String> {
        let lower = text.trim().to_lowercase();
        let named = |name: &str| MONTHS.split(' ').position(|month| name.len() >= 3 && month.starts_with(name));
        let (year, month) = match lower.split_once(['-', ' ']) {
            Some((year, month)) if year.len() == 4 => (year.parse().ok(), month.parse().ok()),
            Some((month, year)) => (year.trim().parse().ok(), named(month).map(|index| index as u8 + 1)),
            None => (None, None),
        };
        match (year, month) {
            (Some(year @ 1000..=9999), Some(month @ 1..=12)) => Ok(Period { year, month }),
            _ => Err(format!("unknown billing period {text:?}: write it as 2026-10 or October 2026")),
        }
    }
}

/// Parsed where the arguments are parsed: a period that names no month never reaches the
/// tool, so idem reserves nothing for it.
impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Period, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// The key spells the period one way, however the model wrote it.
impl idem::KeyPart for Period {
    fn write_key_text(&self, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// The customers this process knows, as (id, the names each goes by). A server loads its
/// table at start or keeps a cache of it: `Deserialize` cannot query a database.
static CUSTOMERS: &[(&str, &[&str])] = &[("cus_7", &["Acme Corp", "Acme"]), ("cus_9", &["Initech"])];

/// One of our customers: "Acme Corp", "acme" and "cus_7" are one customer, `cus_7` in keys.
/// A name or id the table does not have is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Customer {
    id: &'static str,
}

impl FromStr for Customer {
    type Err = String;

    fn from_str(text: &str) -> Result<Customer, String> {
        let wanted = text.trim();
        let known = CUSTOMERS.iter().find(|(id, names)| {
            id.eq_ignore_ascii_case(wanted) || names.iter().any(|name| name.eq_ignore_ascii_case(wanted))
        });
        match known {
            Some(&(id, _)) => Ok(Customer { id }),
            None => Err(format!("unknown customer {text:?}: no customer has that name or id; ask which one is meant")),
        }
    }
}

impl<'de> Deserialize<'de> for Customer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Customer, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

impl idem::KeyPart for Customer {
    fn write_key_text(&self, out: &mut String) {
        out.push_str(self.id);
    }
}

impl fmt::Display for Customer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id)
    }
}
