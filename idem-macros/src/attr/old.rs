//! Spellings that changed before 0.1 froze the grammar. Each is read whole (so the arguments
//! after it are read too, and every mistake is reported in one run) and refused, with the new
//! spelling written with the user's own value.
//!
//! | before | now |
//! | --- | --- |
//! | `approval = required` | `approval` (or `approval(always, ...)`) |
//! | `approval = amount > 1000.0` | `approval(when = amount > 1000.0)` |
//! | `approval_text = "..."` | `approval(text = "...", ...)` |
//! | `approval_ttl = "2h"` | `approval(ttl = "2h", ...)` |
//! | `on_approval_request = notify` | `approval(notify = notify, ...)` |
//! | `over_budget = approval` | `approval(over_budget, ...)` |

use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Expr, Token};

/// The error that shows the new spelling when `name` and what follows it are a spelling that
/// changed (its value is read); `None` for any other argument (nothing is read).
pub(super) fn changed(name: &str, meta: &ParseNestedMeta) -> syn::Result<Option<syn::Error>> {
    let is_old = match name {
        "approval" => meta.input.peek(Token![=]),
        "approval_text" | "approval_ttl" | "on_approval_request" | "over_budget" => true,
        _ => false,
    };
    if !is_old {
        return Ok(None);
    }
    let value: Expr = meta.value()?.parse()?;
    let written = crate::written::written(value.to_token_stream());
    let message = match name {
        "approval" if written == "required" => "`approval = required` is now `approval` alone: every first call asks \
             (with the approval's settings, `approval(always, text = \"...\")`)"
            .to_owned(),
        "approval" => format!(
            "`approval = <condition>` is now a group: write `approval(when = {written})`, with the approval's other \
             settings in it (`text`, `ttl`, `notify`)"
        ),
        "approval_text" => {
            format!("`approval_text` is now a setting of the approval: write `approval(text = {written}, ...)`")
        }
        "approval_ttl" => {
            format!("`approval_ttl` is now a setting of the approval: write `approval(ttl = {written}, ...)`")
        }
        "on_approval_request" => format!(
            "`on_approval_request` is now the approval's `notify` hook: write `approval(notify = {written}, ...)`"
        ),
        _ => "`over_budget = approval` is now a setting of the approval: write `approval(over_budget, ...)` (a call \
             the budget has no room for asks a person; a tool that also asks on every first call writes \
             `approval(always, over_budget)`)"
            .to_owned(),
    };
    // A renamed argument is refused at its name, which no longer exists; `approval = ...` as
    // a whole, since `approval` is still a name and its value still a condition.
    Ok(Some(match name {
        "approval" => meta.error(message),
        _ => syn::Error::new(syn::spanned::Spanned::span(&meta.path), message),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_changed_spelling_is_shown_in_one_run_and_the_rest_is_read() {
        let mut errors = crate::errors::Errors::default();
        let attr = crate::attr::parse(
            quote::quote!(
                key = "pay:<supplier>",
                approval = req.amount > 1000.0,
                approval_text = "pay <supplier>",
                on_approval_request = notify,
                over_budget = approval,
                store = self.store
            ),
            &mut errors,
        );
        let messages: Vec<String> = errors.into_error().expect("refused").into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].contains("write `approval(when = req.amount > 1000.0)`"), "{}", messages[0]);
        assert!(messages[1].contains("write `approval(text = \"pay <supplier>\", ...)`"), "{}", messages[1]);
        assert!(messages[2].contains("write `approval(notify = notify, ...)`"), "{}", messages[2]);
        assert!(messages[3].contains("write `approval(over_budget, ...)`"), "{}", messages[3]);
        assert!(attr.store.is_some() && attr.complete, "the arguments after them are read");
        assert!(attr.approval.is_none());
    }
}
