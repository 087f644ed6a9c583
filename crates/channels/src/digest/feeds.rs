//! Fetching feeds: every feed concurrently, each under its own timeout; a feed that fails is
//! recorded with its reason and the others are kept. Items are de-duplicated (by link,
//! else by id, else by title) and ordered newest first, feeds in their given order on ties.

use super::Digester;
use super::http::{read_body, request_failure, retry_after, status_failure, traced};
use crate::ssrf::check_target;
use crate::transport::call_span;
use chrono::{DateTime, Utc};
use kairos_core::{ErrorClass, Failure};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// One item of a feed, reduced to what a digest shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Index of its feed in the digest's feed list.
    pub feed: usize,
    /// The feed's title (its source), or the feed URL's host.
    pub source: String,
    /// The item's title.
    pub title: String,
    /// Its link, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// The first sentence of its summary or content, as plain text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_sentence: String,
    /// When it was published (or updated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<DateTime<Utc>>,
}

/// A feed that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedFailure {
    /// Index of the feed in the digest's feed list.
    pub feed: usize,
    /// The feed's URL.
    pub url: String,
    /// `transient` or `permanent`.
    pub class: String,
    /// The HTTP status, when there was a response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// What went wrong.
    pub error: String,
}

/// A feed that was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedInfo {
    /// Index of the feed in the digest's feed list.
    pub feed: usize,
    /// The feed's URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// Items taken from it (before de-duplication across feeds).
    pub items: usize,
}

/// What fetching a list of feeds gave.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fetched {
    /// The items, de-duplicated, newest first.
    pub items: Vec<Item>,
    /// The feeds that were read.
    pub feeds: Vec<FeedInfo>,
    /// The feeds that failed.
    pub failures: Vec<FeedFailure>,
}

impl Fetched {
    /// When no feed could be read: the failure of the whole fetch, transient if waiting may
    /// fix any of the feeds (the shortest `Retry-After` among them is kept).
    pub fn all_failed(&self) -> Option<Failure> {
        if !self.feeds.is_empty() || self.failures.is_empty() {
            return None;
        }
        let transient = self.failures.iter().any(|f| f.class == "transient");
        let mut f = Failure::new(
            if transient {
                ErrorClass::Transient
            } else {
                ErrorClass::Permanent
            },
            format!(
                "every feed failed ({}): {}",
                self.failures.len(),
                self.failures
                    .iter()
                    .map(|f| format!("feed {}: {}", f.feed, f.error))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        );
        f.status_code = self.failures.iter().find_map(|x| x.status_code);
        Some(f)
    }
}

impl Digester {
    /// Fetch `urls` concurrently, each under the feed timeout; see the module docs.
    pub async fn fetch(&self, urls: &[String], now: DateTime<Utc>) -> Fetched {
        let runs = urls
            .iter()
            .enumerate()
            .map(|(i, u)| async move { (i, u, self.fetch_one(i, u, now).await) });
        let results = futures::future::join_all(runs).await;
        let mut out = Fetched::default();
        let mut all = Vec::new();
        for (i, url, r) in results {
            match r {
                Ok((title, items)) => {
                    out.feeds.push(FeedInfo {
                        feed: i,
                        url: url.clone(),
                        title,
                        items: items.len(),
                    });
                    all.extend(items);
                }
                Err(f) => out.failures.push(FeedFailure {
                    feed: i,
                    url: url.clone(),
                    class: f.class.as_str().to_string(),
                    status_code: f.status_code,
                    error: f.message,
                }),
            }
        }
        out.items = dedupe_and_order(all);
        out
    }

    async fn fetch_one(
        &self,
        index: usize,
        url: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Vec<Item>), Failure> {
        let what = format!("feed {index}");
        let parsed = url::Url::parse(url)
            .map_err(|e| Failure::permanent(format!("{what}: invalid URL: {e}")))?;
        check_target(&parsed, self.config.allow_private_targets)
            .await
            .map_err(|e| {
                let mut f = e.to_failure();
                f.message = format!("{what}: {}", f.message);
                f
            })?;
        let timeout = self.config.feed_timeout;
        let fetch = async {
            let mut r = self
                .feeds
                .get(parsed.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "application/rss+xml, application/atom+xml, application/feed+json, \
                     application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| request_failure(&what, &e, timeout))?;
            let status = r.status().as_u16();
            let ra = retry_after(&r, now, self.config.retry_after_cap);
            let body = read_body(&what, &mut r, self.config.max_feed_bytes, timeout).await?;
            if !(200..300).contains(&status) {
                return Err(status_failure(&what, status, ra, &body));
            }
            Ok((status, body))
        };
        // reqwest's timeout covers the body too; this outer one also bounds the target check's
        // resolution and anything else that could wait.
        let body = traced(&what, timeout, call_span("feed", "GET"), fetch).await?;
        let feed = feed_rs::parser::parse(body.as_slice()).map_err(|e| {
            Failure::permanent(format!("{what}: not an RSS, Atom or JSON feed: {e}"))
        })?;
        let source = feed
            .title
            .map(text_of)
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| parsed.host_str().unwrap_or("feed").to_string());
        let mut items: Vec<Item> = feed
            .entries
            .into_iter()
            .filter_map(|e| {
                let title = e.title.map(text_of).unwrap_or_default();
                let text = e
                    .summary
                    .map(|s| s.content)
                    .or_else(|| e.content.and_then(|c| c.body))
                    .unwrap_or_default();
                let first = first_sentence(&plain_text(&text));
                if title.is_empty() && first.is_empty() {
                    return None;
                }
                Some(Item {
                    feed: index,
                    source: source.clone(),
                    title: if title.is_empty() {
                        first.clone()
                    } else {
                        title
                    },
                    link: e.links.first().map(|l| l.href.clone()),
                    first_sentence: first,
                    published: e.published.or(e.updated),
                })
            })
            .collect();
        // The newest first, then at most the configured number from this feed.
        items.sort_by_key(|i| std::cmp::Reverse(i.published));
        items.truncate(self.config.max_items_per_feed);
        Ok((source, items))
    }
}

/// Drop items already seen (same link, else same title, case-insensitive) and order the rest
/// newest first; items without a date come last, in feed order.
pub fn dedupe_and_order(items: Vec<Item>) -> Vec<Item> {
    let mut seen = HashSet::new();
    let mut out: Vec<Item> = items
        .into_iter()
        .filter(|i| {
            let k = match &i.link {
                Some(l) => format!("link:{}", l.trim_end_matches('/')),
                None => format!("title:{}", i.title.to_lowercase()),
            };
            let t = format!("title:{}", i.title.to_lowercase());
            // A story syndicated under two links but one title is one story too.
            let fresh = !seen.contains(&k) && !seen.contains(&t);
            seen.insert(k);
            seen.insert(t);
            fresh
        })
        .collect();
    // Stable sort: ties keep feed order.
    out.sort_by(|a, b| match (a.published, b.published) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.feed.cmp(&b.feed),
    });
    out
}

/// A feed's text construct as plain text: HTML ones lose their tags; plain ones (RSS titles,
/// already entity-decoded) keep `<` and `>` as written.
fn text_of(t: feed_rs::model::Text) -> String {
    if t.content_type.to_string().contains("html") {
        plain_text(&t.content)
    } else {
        t.content.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// At most this many bytes of a feed's HTML are read as text: a digest shows one sentence.
pub const MAX_HTML_BYTES: usize = 32 * 1024;

/// At most this many tags (`<`) of a feed's HTML are read: parsing HTML as a browser does
/// costs time in proportion to nesting depth times tags (64 KiB of nested `<ul><li>` took
/// seconds), so the count of tags, which bounds the depth, is bounded too.
pub const MAX_HTML_TAGS: usize = 512;

/// Text of an HTML fragment (`html2text` parses it as a browser does: tags dropped, entities
/// decoded, scripts, styles and comments left out), whitespace collapsed. Only the first
/// [`MAX_HTML_BYTES`] and [`MAX_HTML_TAGS`] are read; HTML that cannot be rendered is no text.
pub fn plain_text(html: &str) -> String {
    let mut end = html.len().min(MAX_HTML_BYTES);
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    let mut html = &html[..end];
    if let Some((i, _)) = html.match_indices('<').nth(MAX_HTML_TAGS) {
        html = &html[..i];
    }
    // No line is longer than the input, so wrapping never splits a word; the newlines it
    // adds are collapsed with the rest of the whitespace.
    let text = html2text::config::with_decorator(html2text::render::TrivialDecorator::new())
        .raw_mode(true)
        .allow_width_overflow()
        .string_from_read(html.as_bytes(), MAX_HTML_BYTES)
        .unwrap_or_default();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first sentence of `text` (up to `.`, `!`, `?` followed by a space, or `。`), at most
/// 300 characters.
pub fn first_sentence(text: &str) -> String {
    let mut end = None;
    let mut prev: Option<(usize, char)> = None;
    for (i, c) in text.char_indices() {
        if c == '。' || c == '！' || c == '？' {
            end = Some(i + c.len_utf8());
            break;
        }
        if let Some((pi, pc)) = prev
            && matches!(pc, '.' | '!' | '?')
            && c.is_whitespace()
        {
            end = Some(pi + pc.len_utf8());
            break;
        }
        prev = Some((i, c));
    }
    let s = &text[..end.unwrap_or(text.len())];
    if s.chars().count() > 300 {
        let cut: String = s.chars().take(299).collect();
        format!("{cut}…")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(feed: usize, title: &str, link: Option<&str>, day: Option<u32>) -> Item {
        Item {
            feed,
            source: format!("f{feed}"),
            title: title.into(),
            link: link.map(str::to_string),
            first_sentence: String::new(),
            published: day.map(|d| {
                DateTime::parse_from_rfc3339(&format!("2026-10-{d:02}T00:00:00Z"))
                    .unwrap()
                    .to_utc()
            }),
        }
    }

    #[test]
    fn dedupe_by_link_or_title_and_order_newest_first() {
        let items = vec![
            item(0, "A", Some("https://x/a"), Some(1)),
            item(0, "B", Some("https://x/b"), Some(3)),
            item(1, "A again", Some("https://x/a/"), Some(2)),
            item(1, "b", Some("https://y/b"), Some(4)),
            item(1, "Undated", None, None),
            item(0, "Undated 0", None, None),
        ];
        let out = dedupe_and_order(items);
        let titles: Vec<_> = out.iter().map(|i| i.title.as_str()).collect();
        assert_eq!(titles, ["B", "A", "Undated 0", "Undated"]);
    }

    #[test]
    fn first_sentences_and_plain_text() {
        assert_eq!(
            first_sentence("Gemini 3 ships. It is fast."),
            "Gemini 3 ships."
        );
        assert_eq!(first_sentence("v1.2 is out! Yes"), "v1.2 is out!");
        assert_eq!(first_sentence("新しいモデル。詳細は"), "新しいモデル。");
        assert_eq!(first_sentence("no end"), "no end");
        assert_eq!(
            plain_text("<p>Hello&nbsp;<b>world</b> &amp; more</p>"),
            "Hello world & more"
        );
    }

    /// Nested tags and entities of every kind (named, decimal, hex, without `;`) come out as
    /// the text a browser shows; scripts, styles and comments are not text.
    #[test]
    fn plain_text_decodes_entities_and_nested_tags() {
        let html = "<div><p>Caf&eacute; <em>&ldquo;<b>ship&#8217;s</b>&rdquo;</em> \
                    &lt;model&gt; &#x1F680; &amp;c&hellip;</p><script>alert(1)</script>\
                    <style>p{x:y}</style><!-- hidden --><ul><li>one</li><li><a href=\"x\">two</a></li></ul>\
                    <table><tr><td>a</td><td>b</td></tr></table>&copy 2026</div>";
        assert_eq!(
            plain_text(html),
            "Café “ship’s” <model> 🚀 &c… one two a b © 2026"
        );
    }

    /// Only the first `MAX_HTML_BYTES`, cut on a character boundary, and the first
    /// `MAX_HTML_TAGS` tags are read; nesting and unclosed tags are text too.
    #[test]
    fn plain_text_is_bounded() {
        let mut html = "é".repeat(MAX_HTML_BYTES / 2 + 10);
        html.push_str("<b>tail</b>");
        let text = plain_text(&html);
        assert!(text.len() <= MAX_HTML_BYTES, "{}", text.len());
        assert!(!text.contains("tail"));
        let tags = format!("{}tail", "<i>x</i>".repeat(MAX_HTML_TAGS / 2 + 1));
        assert!(tags.len() < MAX_HTML_BYTES);
        let text = plain_text(&tags);
        assert!(text.starts_with("xxx") && !text.contains("tail"), "{text}");
        let deep = format!("{}deep", "<div><ul><li>".repeat(MAX_HTML_TAGS / 3 - 1));
        assert_eq!(plain_text(&deep), "deep");
        assert_eq!(plain_text("<p>unclosed <b>bold"), "unclosed bold");
    }
}
