//! The request parts of kinds: the field a kind owns in a job, schedule or channel request
//! besides `payload` (`"http": {…}`, `"digest": {…}`). The request types
//! ([`NewJob`](crate::ops::NewJob), [`NewSchedule`](crate::ops::NewSchedule),
//! [`NewChannel`](crate::ops::NewChannel)) collect every field they do not name themselves
//! into [`RequestParts`]; the facade refuses a field that is no part of a kind of the node
//! ([`Kinds::check_parts`], a 400 as for an unknown field), and the kind reads its own part
//! ([`KindRequest::part`]) into its own type. So a kind's part is written in its folder only:
//! no request type, refusal list or OpenAPI component names it.

use super::{Kind, Kinds};
use crate::error::OpsError;
use kairos_core::RetryPolicy;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// The fields of a request that its type does not name, by name, as given: the parts of
/// kinds (`"http": {…}`).
pub type RequestParts = BTreeMap<String, serde_json::Value>;

/// Where a request's payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestScope {
    /// A job enqueued on its own (`POST /v1/jobs`).
    Job,
    /// A schedule (`POST /v1/schedules`), or one of its `channels`.
    Schedule,
}

/// What a kind's request validation reads of a job or schedule request (or of one of its
/// channels).
#[derive(Debug, Clone, Copy)]
pub struct KindRequest<'a> {
    /// The request's `payload`.
    pub payload: Option<&'a serde_json::Value>,
    /// The request's kind parts (checked: each is the part of a kind of the node).
    pub parts: &'a RequestParts,
    /// The request's retry policy; `None`: the kind's default.
    pub retry: Option<&'a RetryPolicy>,
    /// Where the payload goes.
    pub scope: RequestScope,
}

/// Whether a part was given: `null` is the same as leaving it out.
fn given(v: &serde_json::Value) -> bool {
    !v.is_null()
}

impl<'a> KindRequest<'a> {
    /// The part named `name` as given; `None` when left out or `null`.
    pub fn raw_part(&self, name: &str) -> Option<&'a serde_json::Value> {
        self.parts.get(name).filter(|v| given(v))
    }

    /// The part named `name` read as `T`; `None` when left out or `null`. A part of the wrong
    /// shape is a malformed request naming the field (a 400, as when the request types
    /// named each part).
    pub fn part<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, OpsError> {
        self.raw_part(name)
            .map(|v| {
                T::deserialize(v).map_err(|e| OpsError::malformed(name, format!("`{name}`: {e}")))
            })
            .transpose()
    }

    /// Refuse the parts that belong to a kind other than `kind`, which owns `own` (an `http`
    /// object on a `webhook` job): the field names the part (a kind's part is named after
    /// it).
    pub fn refuse_foreign(&self, kind: &str, own: Option<&str>) -> Result<(), OpsError> {
        for (part, v) in self.parts {
            if given(v) && own != Some(part.as_str()) {
                return Err(OpsError::invalid(
                    part.as_str(),
                    format!("only for kind {part:?}, not {kind:?}"),
                ));
            }
        }
        Ok(())
    }
}

impl Kinds {
    /// The kind whose request part is `name`, if any.
    pub fn part_owner(&self, name: &str) -> Option<&dyn Kind> {
        self.kinds
            .iter()
            .find(|k| k.request_part() == Some(name))
            .map(|k| k.as_ref())
    }

    /// Refuse a field of `parts` that is no part these kinds take in `scope` (a `channel`'s
    /// parts are those of the channel kinds): a malformed request, as serde refuses an
    /// unknown field of a request type.
    pub fn check_parts(
        &self,
        parts: &RequestParts,
        scope: RequestScope,
        channel: bool,
    ) -> Result<(), OpsError> {
        for name in parts.keys() {
            let taken = self.part_owner(name).is_some_and(|k| match scope {
                RequestScope::Job => k.request_part_on_jobs(),
                RequestScope::Schedule => !channel || k.is_channel(),
            });
            if !taken {
                return Err(OpsError::malformed(
                    name.as_str(),
                    format!("unknown field `{name}`"),
                ));
            }
        }
        Ok(())
    }

    /// The parts these kinds take in `scope` (`channel`: a channel's), with their owners,
    /// in the order the kinds were added.
    pub fn parts_taken(
        &self,
        scope: RequestScope,
        channel: bool,
    ) -> Vec<(&'static str, &dyn Kind)> {
        self.kinds
            .iter()
            .filter_map(|k| Some((k.request_part()?, k.as_ref())))
            .filter(|(_, k)| match scope {
                RequestScope::Job => k.request_part_on_jobs(),
                RequestScope::Schedule => !channel || k.is_channel(),
            })
            .collect()
    }
}

/// The OpenAPI schema of a kind's request part ([`Kind::request_part_schema`]).
#[cfg(feature = "openapi")]
#[derive(Clone)]
pub struct PartSchema {
    /// The field's description on a request body.
    pub description: String,
    /// The part's own component (`HttpBody`): its name and schema.
    pub component: (
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    ),
    /// The components its schema refers to (`RateLimitBody`).
    pub refers_to: Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>,
}

#[cfg(feature = "openapi")]
impl std::fmt::Debug for PartSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartSchema")
            .field("component", &self.component.0)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "openapi")]
impl PartSchema {
    /// The schema of `T` (a `utoipa::ToSchema` type), described by `description`.
    pub fn of<T: utoipa::ToSchema>(description: impl Into<String>) -> Self {
        let mut refers_to = Vec::new();
        T::schemas(&mut refers_to);
        PartSchema {
            description: description.into(),
            component: (T::name().into_owned(), T::schema()),
            refers_to,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_no_kind_owns_is_unknown_and_a_schedule_part_is_refused_on_a_job() {
        let k = Kinds::builtin();
        let parts = |v: serde_json::Value| -> RequestParts { serde_json::from_value(v).unwrap() };
        let field = |e: OpsError| match e.kind() {
            crate::error::OpsErrorKind::Malformed { field } => field.clone(),
            other => panic!("{other:?}"),
        };
        assert!(
            k.check_parts(&parts(json!({"http": {}})), RequestScope::Job, false)
                .is_ok()
        );
        let e = k.check_parts(&parts(json!({"colour": 1})), RequestScope::Job, false);
        assert_eq!(field(e.unwrap_err()), "colour");
        let e = k.check_parts(&parts(json!({"digest": {}})), RequestScope::Job, false);
        assert_eq!(field(e.unwrap_err()), "digest");
        assert!(
            k.check_parts(&parts(json!({"digest": {}})), RequestScope::Schedule, false)
                .is_ok()
        );
        // A digest builds an artifact: it is no channel, so no channel takes its part.
        let e = k.check_parts(&parts(json!({"digest": {}})), RequestScope::Schedule, true);
        assert_eq!(field(e.unwrap_err()), "digest");
        let names = |s, c| -> Vec<&str> { k.parts_taken(s, c).into_iter().map(|p| p.0).collect() };
        assert_eq!(names(RequestScope::Job, false), ["http"]);
        assert_eq!(names(RequestScope::Schedule, false), ["http", "digest"]);
        assert_eq!(names(RequestScope::Schedule, true), ["http"]);
    }

    #[test]
    fn a_part_of_the_wrong_shape_is_malformed_naming_it_and_null_is_left_out() {
        let parts: RequestParts =
            serde_json::from_value(json!({"http": {"url": 5}, "digest": null})).unwrap();
        let req = KindRequest {
            payload: None,
            parts: &parts,
            retry: None,
            scope: RequestScope::Job,
        };
        let e = req
            .part::<crate::kinds::http::HttpSpec>("http")
            .unwrap_err();
        assert!(
            matches!(e.kind(), crate::error::OpsErrorKind::Malformed { field } if field == "http"),
            "{e:?}"
        );
        assert!(req.raw_part("digest").is_none());
        assert!(req.refuse_foreign("http", Some("http")).is_ok());
    }
}
