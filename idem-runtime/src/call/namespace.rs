//! One record namespace, one tool. The default namespace is the tool's module path and
//! name, which two functions share only when they are methods of the same name in
//! different impl blocks of one module. Such tools would silently answer each other's
//! calls from one record, so the second one to be called refuses every call instead,
//! until one of them names its namespace.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

use super::Tool;
use crate::error::{Error, ErrorCode};

/// Whether a tool's namespace was checked against the others in this process.
#[doc(hidden)]
#[derive(Debug)]
pub struct Claim(AtomicU8);

const UNCHECKED: u8 = 0;
const OWN: u8 = 1;
const CLASH: u8 = 2;

impl Claim {
    /// Not checked yet; usable in a `static`.
    pub const fn new() -> Self {
        Claim(AtomicU8::new(UNCHECKED))
    }
}

impl Default for Claim {
    fn default() -> Self {
        Self::new()
    }
}

/// The site of the first tool called with each default namespace.
static DEFAULT_NAMESPACES: Mutex<Option<HashMap<&'static str, &'static str>>> = Mutex::new(None);

/// `Ok` when `tool` may use its namespace: it was named with `namespace = "..."` (sharing
/// it is then deliberate), or no other tool in this process uses it by default. A tool's
/// call and its status function are one tool: they share the attribute's site.
pub(crate) fn claim(tool: &'static Tool) -> Result<(), Error> {
    match tool.claim.0.load(Ordering::Acquire) {
        OWN => return Ok(()),
        CLASH => return Err(clash(tool, None)),
        _ => {}
    }
    if tool.namespace_given {
        tool.claim.0.store(OWN, Ordering::Release);
        return Ok(());
    }
    let mut claims = DEFAULT_NAMESPACES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let first = *claims.get_or_insert_with(HashMap::new).entry(tool.namespace).or_insert(tool.site);
    drop(claims);
    if first == tool.site {
        tool.claim.0.store(OWN, Ordering::Release);
        Ok(())
    } else {
        tool.claim.0.store(CLASH, Ordering::Release);
        Err(clash(tool, Some(first)))
    }
}

fn clash(tool: &Tool, first: Option<&str>) -> Error {
    let other = first.map_or_else(|| "another tool".to_owned(), |site| format!("the tool at {site}"));
    let message = format!(
        "{}: refused before running: {other} already uses the default namespace {:?}, and two tools sharing one namespace would answer each other's calls from the same records",
        tool.name, tool.namespace
    );
    tracing::error!(target: "idem", tool = tool.name, namespace = tool.namespace, site = tool.site, "{message}");
    Error::new(ErrorCode::NamespaceClash, message).with_suggestion(format!(
        "give the tool at {} its own `namespace = \"...\"` in #[idempotent(...)] (or both the same one, to share records on purpose)",
        tool.site
    ))
}
