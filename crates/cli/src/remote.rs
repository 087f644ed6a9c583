//! `kairos --server URL` (or `KAIROS_URL`): the commands that read or change data run
//! through the HTTP API of a running server instead of opening a database, and print the
//! same views (`kairos_server::views`) the local mode prints, tables and `--json` alike.
//!
//! [`Backend`] is what a command's handler gets: the facade over the local database, or a
//! [`Remote`] client. Each handler asks it for a view and hands the view to one printer.
//!
//! This client talks to the operator's own server, named on the command line, with the
//! operator's token: it is not the SSRF-guarded client jobs use for tenant-chosen targets
//! (`kairos_channels::transport`), so it reaches `127.0.0.1` and private addresses as asked.
//! It still has explicit connect and request timeouts, follows no redirect (the token goes to
//! the named server only) and reads at most [`MAX_RESPONSE`] bytes of a response.

use crate::common::{CliError, CliResult, GlobalArgs};
use kairos_engine::Kairos;
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How long connecting to the server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may take, from sending to the end of the response.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest response read (a page of 1,000 jobs with their payloads fits).
pub const MAX_RESPONSE: usize = 32 * 1024 * 1024;

/// Where a command's data lives: the local database, or a running server's API.
pub enum Backend {
    /// The facade over the configured database.
    Local(Kairos),
    /// The API of the server given by `--server` / `KAIROS_URL`.
    Remote(Remote),
}

impl Backend {
    /// The backend of `global`: a [`Remote`] with `--server`, else the configured database
    /// (which a `read_only` command refuses to create).
    pub async fn open(global: &GlobalArgs, read_only: bool) -> CliResult<Backend> {
        if let Some(r) = Remote::from_global(global)? {
            return Ok(Backend::Remote(r));
        }
        let cfg = global.load_config(None)?;
        Ok(Backend::Local(
            crate::common::open_kairos_read(&cfg, read_only).await?,
        ))
    }
}

/// Refuse `--server` for a command that has no API (`serve`, `migrate`, `key`, …): it works
/// on a database or a node directly.
pub fn refuse(global: &GlobalArgs, command: &str) -> CliResult {
    match &global.server {
        Some(url) => Err(CliError::usage(
            "--server",
            format!(
                "`kairos {command}` has no API and works on the database or the node itself, \
                 not through a server ({url}); run it without --server (unset KAIROS_URL) on \
                 the node's host"
            ),
        )),
        None => Ok(()),
    }
}

/// A client of one kairos server's API, with its bearer token.
pub struct Remote {
    base: Url,
    shown: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// The shape of the API's errors (`application/problem+json`).
#[derive(Debug, Default, serde::Deserialize)]
struct Problem {
    #[serde(default)]
    detail: String,
    #[serde(default)]
    field: Option<String>,
}

impl Remote {
    /// The client of `--server` / `KAIROS_URL` with `--token` / `KAIROS_API_TOKEN`, if a
    /// server is given.
    pub fn from_global(global: &GlobalArgs) -> CliResult<Option<Remote>> {
        match &global.server {
            Some(url) => Ok(Some(Remote::new(url, global.token.clone())?)),
            None => Ok(None),
        }
    }

    /// A client of the server at `url` (`http://host:port`, a path prefix allowed).
    pub fn new(url: &str, token: Option<String>) -> CliResult<Remote> {
        let mut base = Url::parse(url.trim()).map_err(|e| {
            CliError::usage(
                "--server",
                format!("{url} is not a URL ({e}); give http://host:port"),
            )
        })?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(CliError::usage(
                "--server",
                format!("{url} is not an http(s) URL; give http://host:port"),
            ));
        }
        if !base.path().ends_with('/') {
            let p = format!("{}/", base.path());
            base.set_path(&p);
        }
        base.set_query(None);
        base.set_fragment(None);
        // The URL as printed in errors: without a password in its user info.
        let mut shown = base.clone();
        let _ = shown.set_password(None);
        let shown = shown.as_str().trim_end_matches('/').to_string();
        // reqwest is built with `rustls-no-provider`: install one for https (harmless when
        // one is installed already).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("kairos-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::runtime("could not build the HTTP client", &e))?;
        Ok(Remote {
            base,
            shown,
            token: token.filter(|t| !t.trim().is_empty()),
            http,
        })
    }

    fn url_of(&self, path: &str, query: &[(&str, Option<String>)]) -> CliResult<Url> {
        let mut url = self
            .base
            .join(path.trim_start_matches('/'))
            .map_err(|e| CliError::usage("--server", format!("{}: {e}", self.shown)))?;
        let present: Vec<_> = query
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (*k, v.as_str())))
            .collect();
        if !present.is_empty() {
            url.query_pairs_mut().extend_pairs(present);
        }
        Ok(url)
    }

    /// `GET path?query` (absent values left out), the JSON answer as `T`.
    pub async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, Option<String>)],
    ) -> CliResult<T> {
        let body = self.call(Method::GET, path, query, None).await?;
        self.decode(&body)
    }

    /// `POST path` with a JSON body (none: no body), the JSON answer as `T`.
    pub async fn post<T: DeserializeOwned, B: Serialize>(
        &self,
        path: &str,
        body: Option<&B>,
    ) -> CliResult<T> {
        let body = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| CliError::runtime("could not write the request", &e))?;
        let answer = self.call(Method::POST, path, &[], body).await?;
        self.decode(&answer)
    }

    /// `PUT path` with a JSON body, the JSON answer as `T`.
    pub async fn put<T: DeserializeOwned, B: Serialize>(
        &self,
        path: &str,
        body: &B,
    ) -> CliResult<T> {
        let body = serde_json::to_vec(body)
            .map_err(|e| CliError::runtime("could not write the request", &e))?;
        let answer = self.call(Method::PUT, path, &[], Some(body)).await?;
        self.decode(&answer)
    }

    /// `DELETE path?query`, the answer (often empty) as text.
    pub async fn delete(&self, path: &str, query: &[(&str, Option<String>)]) -> CliResult<Vec<u8>> {
        self.call(Method::DELETE, path, query, None).await
    }

    fn decode<T: DeserializeOwned>(&self, body: &[u8]) -> CliResult<T> {
        serde_json::from_slice(body).map_err(|e| {
            CliError::Runtime(format!(
                "the server at {} answered with JSON this CLI does not read ({e}); is it a \
                 kairos server of the same version?",
                self.shown
            ))
        })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, Option<String>)],
        body: Option<Vec<u8>>,
    ) -> CliResult<Vec<u8>> {
        let url = self.url_of(path, query)?;
        let mut req = self
            .http
            .request(method, url)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(b);
        }
        let mut res = req.send().await.map_err(|e| self.transport_error(&e))?;
        let status = res.status();
        let mut out = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| self.transport_error(&e))? {
            if out.len() + chunk.len() > MAX_RESPONSE {
                return Err(CliError::Runtime(format!(
                    "the answer of the server at {} is larger than {} MiB; ask for a smaller \
                     page (--limit)",
                    self.shown,
                    MAX_RESPONSE / (1024 * 1024)
                )));
            }
            out.extend_from_slice(&chunk);
        }
        if status.is_success() {
            return Ok(out);
        }
        Err(self.status_error(status, &out))
    }

    fn transport_error(&self, e: &reqwest::Error) -> CliError {
        if e.is_timeout() {
            return CliError::Runtime(format!(
                "the kairos server at {} did not answer in time (connect {}s, request {}s)",
                self.shown,
                CONNECT_TIMEOUT.as_secs(),
                REQUEST_TIMEOUT.as_secs()
            ));
        }
        CliError::Runtime(format!(
            "cannot reach the kairos server at {}: {}",
            self.shown,
            crate::common::chain(e)
        ))
    }

    fn status_error(&self, status: StatusCode, body: &[u8]) -> CliError {
        let p: Problem = serde_json::from_slice(body).unwrap_or_default();
        let detail = if p.detail.is_empty() {
            String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned()
        } else {
            p.detail
        };
        match status {
            StatusCode::UNAUTHORIZED => CliError::usage(
                "token",
                match &self.token {
                    None => format!(
                        "the server at {} wants an API token and none was given: pass --token \
                         or set KAIROS_API_TOKEN",
                        self.shown
                    ),
                    Some(_) => format!(
                        "the server at {} refused the API token (--token / KAIROS_API_TOKEN): \
                         it is wrong or revoked ({detail})",
                        self.shown
                    ),
                },
            ),
            StatusCode::FORBIDDEN => CliError::usage(
                "token",
                format!(
                    "the API token lacks the scope this command needs on {} ({detail}); \
                     `kairos token create --scope write|admin` makes one that has it",
                    self.shown
                ),
            ),
            s if s == StatusCode::UNPROCESSABLE_ENTITY || s == StatusCode::BAD_REQUEST => {
                let field = p.field.unwrap_or_else(|| "request".into());
                // The detail starts with the field already (`cron: …`): printed once, as the
                // local mode prints it.
                let reason = detail
                    .strip_prefix(&format!("{field}: "))
                    .map(str::to_string)
                    .unwrap_or(detail);
                CliError::usage(field, reason)
            }
            s => CliError::Runtime(format!(
                "{} (HTTP {} from {})",
                detail,
                s.as_u16(),
                self.shown
            )),
        }
    }
}

/// `s` as one URL path segment (ids, names and periods never hold `/`, but an operator may
/// type one).
pub fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':' | b'@') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Path segments are escaped, so an id never changes the route it is sent to.
    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(seg("job_01"), "job_01");
        assert_eq!(seg("a/b?c#d e"), "a%2Fb%3Fc%23d%20e");
        assert_eq!(seg("ops@example.com"), "ops@example.com");
    }

    /// The URL in messages never shows a password, and a path prefix is kept.
    #[test]
    fn server_url_is_shown_without_a_password() {
        let r = Remote::new("http://u:secret@127.0.0.1:9/kairos", None).expect("client");
        assert_eq!(r.shown, "http://u@127.0.0.1:9/kairos");
        let u = r
            .url_of(
                "/v1/jobs",
                &[("state", Some("dead".into())), ("kind", None)],
            )
            .expect("url");
        assert_eq!(u.path(), "/kairos/v1/jobs");
        assert_eq!(u.query(), Some("state=dead"));
        assert!(Remote::new("ftp://x", None).is_err());
        assert!(Remote::new("not a url", None).is_err());
    }
}
