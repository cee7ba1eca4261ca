//! A `tracing` layer that keeps every span (with its fields as recorded, its parent and
//! whether it closed) and every event (with the span it happened in).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span: its fields are the values given at creation and recorded since.
#[derive(Clone, Debug)]
pub struct SpanSeen {
    pub name: &'static str,
    /// Every field the span declares, recorded or not.
    pub declared: Vec<&'static str>,
    pub target: String,
    pub parent: Option<usize>,
    pub fields: BTreeMap<String, String>,
    pub closed: bool,
}

impl SpanSeen {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// One event and the span it happened in (an index into [`Seen::spans`]).
#[derive(Clone, Debug)]
pub struct EventSeen {
    pub fields: BTreeMap<String, String>,
    pub span: Option<usize>,
}

impl EventSeen {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Default, Debug)]
pub struct Seen {
    pub spans: Vec<SpanSeen>,
    pub events: Vec<EventSeen>,
}

impl Seen {
    /// The spans named `name`, with their indices.
    pub fn spans_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (usize, &'a SpanSeen)> + 'a {
        self.spans.iter().enumerate().filter(move |(_, span)| span.name == name)
    }

    /// The one span named `name`.
    pub fn only_span<'a>(&'a self, name: &'a str) -> (usize, &'a SpanSeen) {
        let found: Vec<_> = self.spans_named(name).collect();
        assert_eq!(found.len(), 1, "one span named {name:?}, in {:#?}", self.spans);
        found[0]
    }

    /// The events whose `message` is `message`.
    pub fn events_saying<'a>(&'a self, message: &'a str) -> impl Iterator<Item = &'a EventSeen> + 'a {
        self.events.iter().filter(move |event| event.field("message") == Some(message))
    }
}

/// Where a span's capture and index are kept, in the registry's extensions (the registry
/// reuses ids, and a span may close on another thread than the one that opened it).
struct Index(Capture, usize);

#[derive(Clone, Default)]
pub struct Capture(pub Arc<Mutex<Seen>>);

thread_local!(static CURRENT: RefCell<Option<Capture>> = const { RefCell::new(None) });

impl Capture {
    /// Runs `f` with this capture taking what this thread's spans and events report.
    ///
    /// One subscriber serves the whole test binary, installed globally on first use and
    /// routing to each thread's capture: per-thread subscribers (`with_default`) race with
    /// `tracing`'s callsite interest cache when other threads call the same tools without
    /// one, and then lose events.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        static INSTALLED: OnceLock<()> = OnceLock::new();
        INSTALLED.get_or_init(|| {
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Router))
                .expect("no other global subscriber in this test binary");
        });
        struct Restore(Option<Capture>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|current| *current.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|current| current.borrow_mut().replace(self.clone())));
        f()
    }

    pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// The one layer: sends each span and event to the capture it belongs to.
struct Router;

fn index_of<S: Subscriber + for<'a> LookupSpan<'a>>(id: &Id, ctx: &Context<'_, S>) -> Option<(Capture, usize)> {
    let span = ctx.span(id)?;
    let extensions = span.extensions();
    extensions.get::<Index>().map(|Index(capture, index)| (capture.clone(), *index))
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Router {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(capture) = CURRENT.with(|current| current.borrow().clone()) else { return };
        let span = ctx.span(id).expect("a new span is in the registry");
        let parent = span.parent().and_then(|parent| parent.extensions().get::<Index>().map(|index| index.1));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let meta = attrs.metadata();
        let index = {
            let mut seen = capture.seen();
            seen.spans.push(SpanSeen {
                name: meta.name(),
                declared: meta.fields().iter().map(|field| field.name()).collect(),
                target: meta.target().to_owned(),
                parent,
                fields,
                closed: false,
            });
            seen.spans.len() - 1
        };
        span.extensions_mut().insert(Index(capture, index));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some((capture, index)) = index_of(id, &ctx) {
            values.record(&mut Fields(&mut capture.seen().spans[index].fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let in_span = ctx.event_span(event).and_then(|span| index_of(&span.id(), &ctx));
        let capture = CURRENT.with(|current| current.borrow().clone()).or_else(|| in_span.clone().map(|(c, _)| c));
        let Some(capture) = capture else { return };
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = in_span.filter(|(owner, _)| Arc::ptr_eq(&owner.0, &capture.0)).map(|(_, index)| index);
        capture.seen().events.push(EventSeen { fields, span });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some((capture, index)) = index_of(&id, &ctx) {
            capture.seen().spans[index].closed = true;
        }
    }
}
