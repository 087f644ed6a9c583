//! The OpenAPI 3.1 document of the API, generated from the route and view definitions. The
//! committed copy is `docs/openapi.json` (`kairos openapi > docs/openapi.json`); a test fails
//! when it differs from this.

use crate::problem::Problem;
use crate::routes::{dlq, health, jobs, schedules};
use crate::views::*;
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
        schedules::pause, schedules::resume, schedules::delete, schedules::fire,
        jobs::enqueue, jobs::list, jobs::show, jobs::retry, jobs::cancel,
        dlq::list, dlq::replay,
    ),
    components(schemas(
        Problem, Status, WebhookBody, RetryBody, RetryClassBody, ScheduleBody, JobBody,
        CancelBody, ReplayBody, WebhookView, ScheduleView, ScheduleList, AttemptView, JobView,
        JobPage, FiredView, ReplayFailure, ReplayView,
    )),
    modifiers(&BearerAuth),
    tags(
        (name = "health", description = "Liveness and readiness (no token)"),
        (name = "schedules", description = "Clocks that create jobs"),
        (name = "jobs", description = "Units of work and their attempts"),
        (name = "dlq", description = "Dead jobs and their replay"),
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

/// The document as pretty JSON with a trailing newline (what `docs/openapi.json` holds).
pub fn openapi_json() -> String {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    match doc.to_pretty_json() {
        Ok(s) => s + "\n",
        Err(e) => format!("{{\"error\": \"{e}\"}}\n"),
    }
}
