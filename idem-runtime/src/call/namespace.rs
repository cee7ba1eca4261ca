//! One record namespace, one tool. The default namespace is the tool's module path and
//! name, which two functions share only when they are methods of the same name in
//! different impl blocks of one module. Such tools would silently answer each other's
//! calls from one record, so the second one to be called refuses every call instead,
//! until one of them names its namespace.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Tool;
use crate::error::{Error, ErrorCode};

/// Whether a tool was found to own its namespace in this process (so later calls skip
/// the check).
#[doc(hidden)]
#[derive(Debug)]
pub struct Claim(AtomicBool);

impl Claim {
    /// Not checked yet; usable in a `static`.
    pub const fn new() -> Self {
        Claim(AtomicBool::new(false))
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
    if tool.claim.0.load(Ordering::Acquire) {
        return Ok(());
    }
    if tool.namespace_given {
        tool.claim.0.store(true, Ordering::Release);
        return Ok(());
    }
    // First call, or a refused tool again (the slow path either way): the first site to
    // claim the namespace owns it.
    let mut claims = DEFAULT_NAMESPACES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let first = *claims.get_or_insert_with(HashMap::new).entry(tool.namespace).or_insert(tool.site);
    drop(claims);
    if first == tool.site {
        tool.claim.0.store(true, Ordering::Release);
        Ok(())
    } else {
        Err(clash(tool, first))
    }
}

fn clash(tool: &Tool, first: &str) -> Error {
    let message = format!(
        "{}: refused before running: the tool at {first} already uses the default namespace {:?}, and two tools sharing one namespace would answer each other's calls from the same records",
        tool.name, tool.namespace
    );
    tracing::error!(target: "idem", tool = tool.name, namespace = tool.namespace, site = tool.site, "{message}");
    Error::new(ErrorCode::NamespaceClash, message).with_suggestion(format!(
        "give the tool at {} its own `namespace = \"...\"` in #[idempotent(...)] (or both the same one, to share records on purpose)",
        tool.site
    ))
}
