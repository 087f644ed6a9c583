//! The OpenAPI 3.1 document of the API, generated from the route and view definitions. The
//! committed copy is `docs/openapi.json` (`kairos openapi > docs/openapi.json`); a test fails
//! when it differs from this.

use crate::problem::Problem;
use crate::routes::artifacts::{ArtifactList, ArtifactSummary, ArtifactView};
use crate::routes::slo::{AlertList, AlertView, CheckView, SloView};
use crate::routes::{
    artifacts, deliveries, dlq, endpoints, health, hooks, jobs, metrics, occurrences, recipients,
    schedules, slo, subscriptions, suppressions, topics, unsubscribe,
};
use crate::views::*;
use kairos_engine::ops::api_enums;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "kairos",
        description = "Schedules and jobs: cron in IANA time zones, signed webhooks, retries, a dead-letter queue. \
            Every /v1 route needs `Authorization: Bearer <token>`. Errors are application/problem+json.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        health::healthz, health::readyz,
        schedules::create, schedules::list, schedules::show, schedules::replace,
        schedules::pause, schedules::resume, schedules::delete, schedules::fire, schedules::backfill, schedules::backfill_plan,
        jobs::enqueue, jobs::enqueue_batch, jobs::list, jobs::show, jobs::retry, jobs::cancel,
        jobs::bulk_cancel, jobs::bulk_retry,
        dlq::list, dlq::replay,
        artifacts::list, artifacts::show,
        metrics::metrics, slo::show, slo::alerts, slo::ack,
        recipients::put, recipients::bulk, recipients::show, recipients::list, recipients::erase,
        topics::put, topics::show, topics::list, topics::delete, topics::variant_stats,
        subscriptions::put, subscriptions::show, subscriptions::list, subscriptions::delete,
        occurrences::list, deliveries::list,
        hooks::resend, hooks::standard, unsubscribe::show, unsubscribe::confirm,
        suppressions::list, suppressions::add, suppressions::remove,
        endpoints::list, endpoints::show, endpoints::enable, endpoints::rotate, endpoints::limits,
    ),
    components(schemas(
        Problem, Status, WebhookBody, RetryBody, RetryClassBody, ScheduleBody, ChannelBody, ScheduleChannelView, JobBody,
        CancelBody, ReplayBody, ArtifactList, ArtifactSummary, ArtifactView, WebhookView, ScheduleView, ScheduleList, AttemptView, JobView,
        JobPage, FiredView, BackfillBody, BackfillView, BackfillCallView, BackfillPlanView, kairos_core::schedule::Overlap, ReplayFailure, ReplayView, SloView, CheckView, AlertView, AlertList,
        kairos_engine::ops::NewRecipient, kairos_engine::ops::NewTopic,
        kairos_engine::ops::NewVariant, kairos_engine::ops::NewSubscription,
        recipients::RecipientView, recipients::RecipientList, recipients::BulkBody,
        recipients::BulkView, topics::TopicView, topics::VariantView, topics::TopicList,
        topics::VariantStats, topics::VariantStatsRow,
        subscriptions::SubscriptionView, subscriptions::SubscriptionList,
        occurrences::OccurrenceView, occurrences::ChannelView, occurrences::OccurrenceList,
        occurrences::MissedView,
        deliveries::DeliveryView, deliveries::DeliveryChannelView, deliveries::DeliveryPage,
        kairos_engine::ops::NewSuppression, kairos_engine::ops::InboundReceipt,
        suppressions::SuppressionView, suppressions::SuppressionPage, suppressions::SuppressionAdded,
        kairos_engine::ops::JobBulkRequest, jobs::BulkView,
        jobs::JobBatchBody, jobs::JobBatchEntryView, jobs::JobBatchView,
        endpoints::EndpointView, endpoints::EndpointPage, endpoints::EndpointHealthView,
        endpoints::RotatedView, endpoints::RotateBody,
        kairos_core::concurrency::ConcurrencySpec, crate::views::JobConcurrencyView,
        endpoints::LimitsView, endpoints::RateLimitView, endpoints::WaitingView,
        endpoints::EndpointLimitsBody, kairos_engine::ops::RateLimitBody,
        api_enums::JobStateSchema, api_enums::JobKindSchema, api_enums::ChannelKindSchema,
        api_enums::AudienceChannelSchema, api_enums::PeriodSchema, api_enums::MisfireSchema,
        api_enums::ScheduleStateSchema, api_enums::AttemptOutcomeSchema,
        api_enums::ErrorClassSchema, api_enums::HttpAuthSchema, api_enums::OccurrenceStatusSchema,
        api_enums::SummarizerSchema,
    )),
    modifiers(&BearerAuth, &CommonResponses, &KindParts),
    tags(
        (name = "health", description = "Liveness and readiness (no token)"),
        (name = "schedules", description = "Clocks that create jobs"),
        (name = "jobs", description = "Units of work and their attempts"),
        (name = "dlq", description = "Dead jobs and their replay"),
        (name = "artifacts", description = "Products of periodic jobs (daily digests)"),
        (name = "slo", description = "SLO checks: warnings, never failures"),
        (name = "audiences", description = "Recipients, topics, subscriptions and occurrences (weekly summaries)"),
        (name = "endpoints", description = "Webhook endpoints: disabled state, last failure, health, enabling again, secret rotation"),
        (name = "inbound", description = "Provider webhooks, suppressions and one-click unsubscribe (no token on /hooks and /unsubscribe)"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// The kinds' request parts, documented from the kinds of `kairos serve`'s node
/// ([`kairos_engine::Kinds::builtin`]) as the facade takes them: each part a property of `JobBody` (when a
/// job enqueued on its own takes it), of `ScheduleBody`, and of `ChannelBody` (when its kind
/// can be a channel), its schema a component (`HttpBody`, `DigestBody`). The bodies take no
/// other field: serde reads the parts into a map, so the derived schemas cannot say so.
struct KindParts;

impl Modify for KindParts {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use kairos_engine::kinds::RequestScope;
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{
            AdditionalProperties, ObjectBuilder, OneOfBuilder, Ref, Schema, Type,
        };
        let kinds = kairos_engine::Kinds::builtin();
        let components = openapi.components.get_or_insert_with(Default::default);
        let bodies = [
            ("JobBody", RequestScope::Job, false),
            ("ScheduleBody", RequestScope::Schedule, false),
            ("ChannelBody", RequestScope::Schedule, true),
        ];
        let mut defined = Vec::new();
        for (body, scope, channel) in bodies {
            let mut properties = Vec::new();
            for (name, kind) in kinds.parts_taken(scope, channel) {
                let schema: RefOr<Schema> = match kind.request_part_schema() {
                    Some(part) => {
                        let mut at = Ref::from_schema_name(part.component.0.clone());
                        at.description = part.description.clone();
                        defined.push(part.component);
                        defined.extend(part.refers_to);
                        at.into()
                    }
                    None => ObjectBuilder::new().schema_type(Type::Object).into(),
                };
                let optional = OneOfBuilder::new()
                    .item(ObjectBuilder::new().schema_type(Type::Null))
                    .item(schema);
                properties.push((name.to_string(), optional.into()));
            }
            if let Some(RefOr::T(Schema::Object(o))) = components.schemas.get_mut(body) {
                o.properties.extend(properties);
                o.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
            }
        }
        for (name, schema) in defined {
            components.schemas.entry(name).or_insert(schema);
        }
    }
}

/// The answers every operation of a kind can give, added where the route's own annotation does
/// not list them (a route's own description wins):
/// - 401 on every operation that needs the bearer token (every `/v1` route), and 429 while
///   the caller's address backs off after wrong tokens;
/// - 400 where a JSON body or a query string is read (malformed JSON, an unknown field, a value
///   of the wrong type);
/// - 413 where a body is read (over the body limit);
/// - 422 where a body or a query string is validated (the problem's `field` names the field).
///
/// It also marks an optional request body `required: false`.
struct CommonResponses;

impl CommonResponses {
    fn problem(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/problem+json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Problem")))
                    .build(),
            )
            .build()
            .into()
    }

    fn complete(path: &str, op: &mut utoipa::openapi::path::Operation) {
        use utoipa::openapi::path::ParameterIn;
        use utoipa::openapi::schema::Schema;
        use utoipa::openapi::{RefOr, Required};
        // A body the route reads as optional (`request_body(content = Option<…>)`, read with
        // `OptionalJson`) says so: `required: false` rather than nothing, and its schema is
        // the body's own (absent, not `null`), so generators send nothing when it is left out.
        if let Some(b) = op.request_body.as_mut()
            && b.required.is_none()
        {
            b.required = Some(Required::False);
            for content in b.content.values_mut() {
                if let Some(RefOr::T(Schema::OneOf(one))) = &content.schema {
                    let kept: Vec<_> = one.items.iter().filter(|s| !is_null(s)).collect();
                    if let [only] = kept.as_slice() {
                        content.schema = Some((*only).clone());
                    }
                }
            }
        }
        let authenticated = op.security.as_ref().is_some_and(|s| !s.is_empty());
        let body = op.request_body.is_some();
        let query = op
            .parameters
            .iter()
            .flatten()
            .any(|p| p.parameter_in == ParameterIn::Query);
        // `/hooks/*` take the raw bytes (the signature covers them) and `/unsubscribe` a form:
        // only `/v1` bodies are parsed as JSON.
        let v1 = path.starts_with("/v1/");
        let json_body = body && v1;
        let mut add = |status: &str, description: &str| {
            op.responses
                .responses
                .entry(status.to_string())
                .or_insert_with(|| Self::problem(description));
        };
        if authenticated {
            add(
                "401",
                "No valid `Authorization: Bearer <token>` header; nothing changed",
            );
            add(
                "429",
                "Too many wrong bearer tokens from this address: retry after `Retry-After` \
                 seconds; nothing changed",
            );
        }
        if json_body || query {
            add(
                "400",
                "The body or the query string could not be read: malformed JSON, an unknown \
                 field or a value of the wrong type",
            );
        }
        if body {
            add(
                "413",
                "The body is larger than the limit (1 MiB; 16 MiB for `POST /v1/recipients/bulk`)",
            );
        }
        if json_body || (query && v1) {
            add(
                "422",
                "A field is not valid: `field` names it and `detail` says why",
            );
        }
    }
}

/// Whether `s` is the `{"type": "null"}` arm of an optional value.
fn is_null(s: &utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>) -> bool {
    use utoipa::openapi::schema::{Schema, SchemaType, Type};
    matches!(s, utoipa::openapi::RefOr::T(Schema::Object(o))
        if o.schema_type == SchemaType::Type(Type::Null))
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                Self::complete(path, op);
            }
        }
    }
}

/// The document as pretty JSON with a trailing newline (what `docs/openapi.json` holds).
pub fn openapi_json() -> String {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    match doc.to_pretty_json() {
        Ok(s) => s + "\n",
        Err(e) => format!("{{\"error\": \"{e}\"}}\n"),
    }
}
