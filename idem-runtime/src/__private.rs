//! What the `#[idempotent]` expansion calls. Not a public API: it changes without notice.

pub use crate::__idem_instruments as instruments;
pub use crate::call::{
    Call, Claim, DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_RETAIN, ErrorPolicy, Keep, NoReconcile, Reconcile, Release,
    Tool, reconcile_async, reconcile_sync, run_async, run_async_timeout, run_sync,
};
pub use crate::compare::compared;
pub use crate::default_store::DefaultStore;
pub use crate::frameworks::{Rmcp, StatusTool};
pub use crate::key::{FieldMode, KeyPart, Segment};
pub use crate::observe::conventions::SPAN_FIELDS;
pub use crate::observe::{Instruments, SpanCallsite};
pub use crate::output::ToolOutput;
pub use crate::status::{record_id, status_async, status_sync};
pub use tracing;

/// Checks a key field's type where the user wrote it: the expansion calls this with the
/// parameter's span, so an unfit type is reported on that parameter.
#[inline(always)]
pub fn key_part<T: KeyPart>(value: &T) -> &dyn KeyPart {
    value
}

/// Names the return type's stored value for the generated status function.
pub type ValueOf<O> = <O as ToolOutput>::Value;

/// What the generated status function of a tool returning `O` returns.
pub type StatusOf<O> = Result<crate::Status<ValueOf<O>>, crate::Error>;
pub use crate::key::build_key;

/// The error type of a tool's `Result`, for status functions served as tools of the same
/// framework (a rig status tool fails with the tool's own error type).
pub trait ResultParts {
    /// The `E` of `Result<T, E>`.
    type Error;
}

impl<T, E> ResultParts for Result<T, E> {
    type Error = E;
}

/// Names the error type of a tool returning `Result<T, E>`.
pub type ErrorOf<O> = <O as ResultParts>::Error;

/// rmcp glue the `#[idem::status_tools]` expansion calls.
#[cfg(feature = "rmcp")]
pub use crate::frameworks::rmcp;
/// An rmcp status tool's input: the key's fields only.
#[cfg(feature = "rmcp")]
pub use crate::frameworks::rmcp::status_input::{StatusArgs, StatusInput, status_input_schema};
