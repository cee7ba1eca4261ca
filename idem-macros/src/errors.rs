//! Every mistake in one run: errors are collected and combined, not returned at the first.

use proc_macro2::Span;
use std::fmt::Display;

#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub(crate) fn into_error(self) -> Option<syn::Error> {
        self.0
    }
}
