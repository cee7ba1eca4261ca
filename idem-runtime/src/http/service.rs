//! The service the layer wraps around the inner one: one request from its key to its
//! answer.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use tracing::Instrument;

use super::answer::{Handled, HttpPolicy};
use super::key_header::{KeyRule, read_key};
use super::problem::Problem;
use super::settings::Shared;
use super::stored::StoredResponse;
use crate::call::{Call, NoReconcile, Uncharged, run_async};
use crate::key::KeyPart;
use crate::store::Store;

/// The service [`IdempotencyLayer`](super::IdempotencyLayer) wraps around another.
pub struct Idempotency<S, St> {
    pub(crate) inner: S,
    pub(crate) shared: Arc<Shared<St>>,
}

impl<S: Clone, St> Clone for Idempotency<S, St> {
    fn clone(&self) -> Self {
        Idempotency { inner: self.inner.clone(), shared: Arc::clone(&self.shared) }
    }
}

impl<S: fmt::Debug, St> fmt::Debug for Idempotency<S, St> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency").field("inner", &self.inner).finish_non_exhaustive()
    }
}

/// The future of one request through the layer.
pub type ResponseFuture<B, E> = Pin<Box<dyn Future<Output = Result<Response<B>, E>> + Send>>;

impl<S, St, ReqBody, ResBody> tower_service::Service<Request<ReqBody>> for Idempotency<S, St>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    St: Store + 'static,
    ReqBody: Body + From<Bytes> + Send + 'static,
    ReqBody::Data: Send,
    ReqBody::Error: std::error::Error + Send + Sync + 'static,
    ResBody: Body + From<Bytes> + Send + 'static,
    ResBody::Data: Send,
    ResBody::Error: fmt::Display + Send,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The inner service that was polled ready takes this request; a clone waits for the next.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let settings = &self.shared.settings;
        if !settings.methods.contains(request.method()) {
            return Box::pin(inner.call(request));
        }
        let key = match read_key(request.headers()) {
            Ok(Some(key)) => key,
            Ok(None) if !settings.key_required => return Box::pin(inner.call(request)),
            Ok(None) => return answer(Problem::bad_key(KeyRule::Missing)),
            Err(rule) => return answer(Problem::bad_key(rule)),
        };
        let shared = Arc::clone(&self.shared);
        let mut handle = Box::pin(handle(shared, inner, request, key).in_current_span());
        Box::pin(async move {
            // A request answered without waiting (a replay from a local store, a service that
            // answers at once) is answered here. One that waits goes on on a task of its own:
            // a client that goes away does not cancel it midway, which would leave its
            // outcome unknown. Its answer waits for a retry.
            if let Poll::Ready(answered) = poll_fn(|cx| Poll::Ready(handle.as_mut().poll(cx))).await {
                return answered;
            }
            match tokio::spawn(handle).await {
                Ok(answered) => answered,
                Err(failed) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
                Err(_cancelled) => Ok(Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "shutting-down",
                    "The service is shutting down",
                    "The request was stopped by the service's shutdown; its outcome is unknown until a retry \
                     with the same key tells.",
                )
                .into_response()),
            }
        })
    }
}

/// The layer's own answer, without the service.
fn answer<B: From<Bytes> + Send + 'static, E: Send + 'static>(problem: Problem) -> ResponseFuture<B, E> {
    Box::pin(std::future::ready(Ok(problem.into_response())))
}

/// One keyed request: read its body, reserve its key, run the inner service at most once.
async fn handle<S, St, ReqBody, ResBody>(
    shared: Arc<Shared<St>>,
    mut inner: S,
    request: Request<ReqBody>,
    key: String,
) -> Result<Response<ResBody>, S::Error>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>>,
    St: Store,
    ReqBody: Body + From<Bytes>,
    ReqBody::Error: std::error::Error + Send + Sync + 'static,
    ResBody: Body + From<Bytes>,
    ResBody::Error: fmt::Display,
{
    let settings = &shared.settings;
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, settings.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return Ok(unread_body(&*error, settings.max_body).into_response()),
    };
    let compared_fields = match settings.fingerprint.of(&parts, &body) {
        Ok(fingerprint) => fingerprint.map(Ok),
        Err(problem) => return Ok(problem.into_response()),
    };
    let scope = settings.scope.as_ref().map(|scope| scope(&parts));
    let tool = shared.tool();
    let call = match &scope {
        Some(scope) => Call::new(tool, &[scope as &dyn KeyPart, &key], compared_fields),
        None => Call::new(tool, &[&key as &dyn KeyPart], compared_fields),
    };
    let request = Request::from_parts(parts, ReqBody::from(body));
    let run = async {
        let response = match inner.call(request).await {
            Ok(response) => response,
            Err(error) => {
                tracing::error!(
                    target: "idem", tool = tool.name,
                    "the service failed (its Err) after the request reached it, so nothing was stored; the key is \
                     kept and marked abandoned: repeats answer 409 outcome-unknown"
                );
                return Handled::Unknown(Err(error));
            }
        };
        if !(settings.is_final)(response.status()) {
            return Handled::Released(response);
        }
        let (parts, body) = response.into_parts();
        match body.collect().await {
            Ok(collected) => {
                let body = collected.to_bytes();
                if body.len() > settings.max_body {
                    tracing::error!(
                        target: "idem", tool = tool.name, bytes = body.len(), limit = settings.max_body,
                        "the response is larger than max_body, so it was not stored; the key is kept and \
                         marked abandoned: repeats answer 409 outcome-unknown"
                    );
                    return Handled::Unknown(Ok(Response::from_parts(parts, ResBody::from(body))));
                }
                let stored = StoredResponse::keep(parts.status, &parts.headers, &settings.replay_headers, body.clone());
                Handled::Fresh { response: Response::from_parts(parts, ResBody::from(body)), stored }
            }
            Err(error) => {
                tracing::error!(
                    target: "idem", tool = tool.name, %error,
                    "the response body failed while it was read, so it was not stored; the key is kept and \
                     marked abandoned: repeats answer 409 outcome-unknown"
                );
                Handled::Unknown(Ok(Problem::new(
                    StatusCode::BAD_GATEWAY,
                    "response-failed",
                    "The response failed",
                    "The service's response failed midway; the request may have taken effect, so a retry with \
                     the same key is not run again.",
                )
                .into_response()))
            }
        }
    };
    let handled: Handled<ResBody, S::Error> =
        run_async(call, &*shared.store, Uncharged, run, NoReconcile, HttpPolicy).await;
    handled.into_response(&key)
}

/// The problem for a request body that could not be read.
fn unread_body(error: &(dyn std::error::Error + 'static), limit: usize) -> Problem {
    if error.is::<http_body_util::LengthLimitError>() {
        return Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            "The request body is too large",
            format!("This operation reads request bodies of at most {limit} bytes; the request was not processed."),
        );
    }
    Problem::new(
        StatusCode::BAD_REQUEST,
        "body-unreadable",
        "The request body could not be read",
        format!("The request was not processed: {error}."),
    )
}
