//! Summarizers. `extractive` (the default) calls no model: titles, sources and first sentences
//! grouped by feed. `gemini` calls `POST {base}/v1beta/models/{model}:generateContent`
//! (answer in `candidates[0].content.parts[].text`); `openai` calls
//! `POST {base}/v1/chat/completions` (answer in `choices[0].message.content`). Both under the
//! model timeout, failures classified.

use super::Digester;
use super::feeds::Item;
use super::http::{read_body, request_failure, retry_after, status_failure, traced};
use crate::transport::call_span;
use chrono::{DateTime, Utc};
use kairos_core::Failure;
use serde_json::{Value, json};

/// Which summarizer builds a digest's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Summarizer {
    /// No model: titles, sources and first sentences grouped by feed.
    #[default]
    Extractive,
    /// Google Gemini, generateContent.
    Gemini,
    /// OpenAI, chat completions.
    OpenAi,
}

impl Summarizer {
    /// Every summarizer's name, as [`parse`](Self::parse) accepts it.
    pub const NAMES: [&'static str; 3] = ["extractive", "gemini", "openai"];

    /// Parse `extractive`, `gemini` or `openai`. Error field `digest.summarizer`.
    pub fn parse(s: &str) -> Result<Self, kairos_core::Error> {
        match s.trim() {
            "extractive" => Ok(Summarizer::Extractive),
            "gemini" => Ok(Summarizer::Gemini),
            "openai" => Ok(Summarizer::OpenAi),
            other => Err(kairos_core::Error::invalid(
                "digest.summarizer",
                format!(
                    "{other:?} is not a summarizer: use one of {}",
                    Self::NAMES.join(", ")
                ),
            )),
        }
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Summarizer::Extractive => "extractive",
            Summarizer::Gemini => "gemini",
            Summarizer::OpenAi => "openai",
        }
    }
}

/// A digest's text and what made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The text (Markdown).
    pub text: String,
    /// The model that wrote it (`None` for extractive).
    pub model: Option<String>,
}

/// The extractive digest: a heading, then per feed (in feed order) its items' titles, first
/// sentences and links.
pub fn extractive(title: &str, items: &[Item]) -> String {
    let mut out = format!("# {title}\n");
    let mut feeds: Vec<usize> = items.iter().map(|i| i.feed).collect();
    feeds.sort_unstable();
    feeds.dedup();
    for f in feeds {
        let group: Vec<&Item> = items.iter().filter(|i| i.feed == f).collect();
        let Some(first) = group.first() else { continue };
        out.push_str(&format!("\n## {}\n\n", first.source));
        for i in group {
            out.push_str(&format!("- **{}**", i.title));
            if !i.first_sentence.is_empty() && i.first_sentence != i.title {
                out.push_str(&format!(" — {}", i.first_sentence));
            }
            if let Some(l) = &i.link {
                out.push_str(&format!(" ({l})"));
            }
            out.push('\n');
        }
    }
    if items.is_empty() {
        out.push_str("\nNo new items.\n");
    }
    out
}

/// The prompt an LLM summarizer gets: the items as a list, and what to write.
pub fn prompt(title: &str, items: &[Item]) -> String {
    let mut p = format!(
        "Write a short daily news digest titled \"{title}\" in Markdown from the items below. \
         Group related items, keep every claim to what the items say, and link each item.\n\n"
    );
    for i in items {
        p.push_str(&format!("- [{}] {}", i.source, i.title));
        if !i.first_sentence.is_empty() {
            p.push_str(&format!(": {}", i.first_sentence));
        }
        if let Some(l) = &i.link {
            p.push_str(&format!(" <{l}>"));
        }
        p.push('\n');
    }
    p
}

impl Digester {
    /// Summarize `items` under `title` with `summarizer`. Model calls are bounded by the model
    /// timeout; every failure is classified.
    pub async fn summarize(
        &self,
        summarizer: Summarizer,
        title: &str,
        items: &[Item],
        now: DateTime<Utc>,
    ) -> Result<Summary, Failure> {
        match summarizer {
            Summarizer::Extractive => Ok(Summary {
                text: extractive(title, items),
                model: None,
            }),
            Summarizer::Gemini => {
                let api = &self.config.gemini;
                let key = api.api_key.as_deref().ok_or_else(|| {
                    Failure::permanent("the gemini summarizer needs KAIROS_GEMINI_API_KEY")
                })?;
                let url = format!(
                    "{}/v1beta/models/{}:generateContent",
                    api.url.trim_end_matches('/'),
                    api.model
                );
                let body = json!({
                    "contents": [{"role": "user", "parts": [{"text": prompt(title, items)}]}]
                });
                let answer = self.call_model("gemini", &url, ("x-goog-api-key", key), &body, now);
                let v = answer.await?;
                let text = v["candidates"][0]["content"]["parts"]
                    .as_array()
                    .map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("")
                    })
                    .unwrap_or_default();
                self.answer("gemini", text, &api.model)
            }
            Summarizer::OpenAi => {
                let api = &self.config.openai;
                let key = api.api_key.as_deref().ok_or_else(|| {
                    Failure::permanent("the openai summarizer needs KAIROS_OPENAI_API_KEY")
                })?;
                let url = format!("{}/v1/chat/completions", api.url.trim_end_matches('/'));
                let body = json!({
                    "model": api.model,
                    "messages": [
                        {"role": "system", "content": "You write concise, factual news digests."},
                        {"role": "user", "content": prompt(title, items)},
                    ]
                });
                let bearer = format!("Bearer {key}");
                let v = self
                    .call_model("openai", &url, ("authorization", &bearer), &body, now)
                    .await?;
                let text = v["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                self.answer("openai", text, &api.model)
            }
        }
    }

    fn answer(&self, what: &str, text: String, model: &str) -> Result<Summary, Failure> {
        if text.trim().is_empty() {
            // A well-formed answer without text (a blocked prompt, say): waiting will not
            // change it.
            return Err(Failure::permanent(format!(
                "{what}: the answer has no text"
            )));
        }
        Ok(Summary {
            text,
            model: Some(model.to_string()),
        })
    }

    /// POST `body` to `url` with one auth header, under the model timeout; the answer as JSON.
    async fn call_model(
        &self,
        what: &str,
        url: &str,
        auth: (&str, &str),
        body: &Value,
        now: DateTime<Utc>,
    ) -> Result<Value, Failure> {
        let timeout = self.config.model_timeout;
        let call = async {
            let mut r = self
                .models
                .post(url)
                .header(auth.0, auth.1)
                .json(body)
                .send()
                .await
                .map_err(|e| request_failure(what, &e, timeout))?;
            let status = r.status().as_u16();
            let ra = retry_after(&r, now, self.config.retry_after_cap);
            let bytes = read_body(what, &mut r, 4 << 20, timeout).await?;
            if !(200..300).contains(&status) {
                return Err(status_failure(what, status, ra, &bytes));
            }
            let answer = serde_json::from_slice::<Value>(&bytes).map_err(|e| {
                // A garbled body from a proxy or a cut connection: worth another try.
                let mut f = Failure::transient(format!("{what}: the answer is not JSON: {e}"));
                f.status_code = Some(status);
                f
            })?;
            Ok((status, answer))
        };
        traced(what, timeout, call_span("model", "POST"), call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarizer_names_parse_and_unknown_names_the_field() {
        for n in Summarizer::NAMES {
            assert_eq!(Summarizer::parse(n).unwrap().as_str(), n);
        }
        let e = Summarizer::parse("claude").unwrap_err();
        assert_eq!(e.field(), "digest.summarizer");
    }

    #[test]
    fn extractive_groups_by_feed_with_titles_sources_and_first_sentences() {
        let it = |feed: usize, src: &str, title: &str, first: &str| Item {
            feed,
            source: src.into(),
            title: title.into(),
            link: Some(format!("https://x/{title}")),
            first_sentence: first.into(),
            published: None,
        };
        let text = extractive(
            "AI news 2026-10-20",
            &[
                it(1, "Lab B", "B1", "B one."),
                it(0, "Lab A", "A1", "A one."),
                it(1, "Lab B", "B2", ""),
            ],
        );
        assert_eq!(
            text,
            "# AI news 2026-10-20\n\n## Lab A\n\n- **A1** — A one. (https://x/A1)\n\n## Lab B\n\n\
             - **B1** — B one. (https://x/B1)\n- **B2** (https://x/B2)\n"
        );
    }
}
