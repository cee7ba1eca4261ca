//! Who a request comes from, where the transport puts it: the scope of a multi-tenant
//! server's tools.

use rmcp::ErrorData;
use rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use rmcp::model::Extensions;

/// What the server's authentication established about a request (a principal, a tenant,
/// a user), as an rmcp tool parameter: `Authenticated(principal): Authenticated<Principal>`,
/// then `scope = principal.tenant`.
///
/// It is found wherever the transport puts it:
///
/// - **streamable HTTP** (rmcp's `StreamableHttpService`, mounted in axum or any tower
///   stack): an authentication middleware inserts the principal into the HTTP request's
///   extensions (`request.extensions_mut().insert(principal)`); rmcp hands the tool the
///   request's `http::request::Parts`, and this reads the principal from them;
/// - any other transport: the request context's own extensions, where a custom transport
///   or `call_tool` puts it.
///
/// A request that carries none is refused with the JSON-RPC error `-32600` (invalid
/// request) before the tool runs: nothing is reserved and nothing happens. The generated
/// status tool takes the same parameter, so a tenant reads only its own records, and
/// `tasks/get` and `tasks/cancel` extract it from their own request the same way, so a
/// tenant can reach only its own tasks.
///
/// rmcp's own `Extension<T>` reads the context's extensions only, so over streamable HTTP
/// it finds the `Parts` but never what a middleware put inside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated<T>(pub T);

impl<C, T> FromContextPart<C> for Authenticated<T>
where
    C: AsRequestContext,
    T: Clone + Send + Sync + 'static,
{
    fn from_context_part(context: &mut C) -> Result<Self, ErrorData> {
        find(&context.as_request_context().extensions).cloned().map(Authenticated).ok_or_else(missing::<T>)
    }
}

/// A `T` in a request context's extensions, or in the HTTP request's inside them.
fn find<T: Send + Sync + 'static>(extensions: &Extensions) -> Option<&T> {
    extensions
        .get::<T>()
        .or_else(|| extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<T>()))
}

fn missing<T>() -> ErrorData {
    let name = std::any::type_name::<T>();
    ErrorData::invalid_request(
        format!(
            "this request carries no authenticated `{name}`: the server's authentication layer must put one in \
             the HTTP request's extensions (or the request context's); the tool did not run"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Principal(&'static str);

    #[test]
    fn found_in_the_http_parts_or_the_context() {
        let mut request = http::Request::new(());
        request.extensions_mut().insert(Principal("acme"));
        let (parts, ()) = request.into_parts();
        let mut over_http = Extensions::new();
        over_http.insert(parts);
        assert_eq!(find::<Principal>(&over_http), Some(&Principal("acme")));

        let mut direct = Extensions::new();
        direct.insert(Principal("beta"));
        assert_eq!(find::<Principal>(&direct), Some(&Principal("beta")));
    }

    #[test]
    fn a_request_without_one_is_refused() {
        let (parts, ()) = http::Request::new(()).into_parts();
        let mut over_http = Extensions::new();
        over_http.insert(parts);
        assert_eq!(find::<Principal>(&over_http), None);
        let error = missing::<Principal>();
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_REQUEST);
        assert!(error.message.contains("Principal"), "{error:?}");
    }
}
