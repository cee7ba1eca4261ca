//! A backend failure told with what failed: which store, which operation, and the driver's
//! own words, so that a STORE_UNAVAILABLE answer can be acted on without a debugger.

use std::error::Error;
use std::fmt;

use super::StoreError;

/// A backend failure of one operation on one store.
///
/// Its text is `<store>: <operation>: <cause>`, where the cause carries its whole chain of
/// sources (drivers often keep the useful part, a server's message or an OS error, in a
/// source and print only a category such as "db error").
#[derive(Debug)]
pub(crate) struct Failure {
    store: String,
    operation: &'static str,
    cause: Box<dyn Error + Send + Sync>,
}

impl StoreError {
    /// This error with the store and the operation named, when it is a backend failure
    /// that does not name them yet; other errors are returned as they are.
    pub(crate) fn within(self, store: &str, operation: &'static str) -> StoreError {
        match self {
            StoreError::Backend(cause) if !cause.is::<Failure>() => {
                StoreError::Backend(Box::new(Failure { store: store.to_owned(), operation, cause }))
            }
            other => other,
        }
    }

    /// What failed, for a message that already says the store failed: a backend failure's
    /// own text (without "store failed: "), else the whole error.
    pub(crate) fn backend_text(&self) -> String {
        match self {
            StoreError::Backend(cause) => cause.to_string(),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.store, self.operation, with_sources(&*self.cause))
    }
}

impl Error for Failure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.cause)
    }
}

/// An error's text followed by each of its sources' that says something new: not one the
/// text already contains, nor one that restates the error before it (rusqlite's "file is
/// not a database" has the source "Error code 26: file is not a database").
pub(crate) fn with_sources(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut last = text.clone();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !more.is_empty() && !text.contains(&more) && !more.contains(&last) {
            text.push_str(": ");
            text.push_str(&more);
        }
        last = more;
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Category(std::io::Error);
    impl fmt::Display for Category {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("db error")
        }
    }
    impl Error for Category {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn names_the_store_the_operation_and_the_whole_cause() {
        let cause = Category(std::io::Error::other("canceling statement due to lock timeout"));
        let error = StoreError::Backend(Box::new(cause)).within("PostgreSQL db:5432/app (schema idem)", "reserve");
        assert_eq!(
            error.to_string(),
            "store failed: PostgreSQL db:5432/app (schema idem): reserve: db error: canceling statement due to \
             lock timeout"
        );
        // Named once: an outer layer that adds its own context changes nothing.
        let again = error.within("another", "complete");
        assert!(again.to_string().starts_with("store failed: PostgreSQL db:5432/app"), "{again}");
    }

    #[derive(Debug)]
    struct Restated(std::io::Error);
    impl fmt::Display for Restated {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("file is not a database")
        }
    }
    impl Error for Restated {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_source_that_restates_its_error_is_left_out() {
        let restated = Restated(std::io::Error::other("Error code 26: file is not a database"));
        assert_eq!(with_sources(&restated), "file is not a database");
    }

    #[test]
    fn leaves_fenced_and_corrupt_alone() {
        assert!(matches!(StoreError::Fenced.within("s", "renew"), StoreError::Fenced));
        let corrupt = StoreError::Corrupt("bad state".into()).within("s", "read");
        assert_eq!(corrupt.to_string(), "corrupt record: bad state");
    }
}
