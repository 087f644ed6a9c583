//! One rule for the short text fields the API takes — names, reasons, keys, zones, locales:
//! no control characters (C0, DEL, C1), so a stored value can never rewrite the terminal or the
//! log line it is later printed on. Free text meant to hold line breaks (templates, bodies,
//! payloads) is not a text field in this sense.

use crate::Error;

/// Refuse `value` for `field` if it holds a control character; the reason names the first
/// one (`U+000A`).
pub fn check_text(field: &str, value: &str) -> Result<(), Error> {
    match value.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(Error::invalid(
            field,
            format!(
                "must not contain control characters (found U+{:04X})",
                u32::from(c)
            ),
        )),
    }
}

/// `url` as views, the admin and logs show it: a password in the user info and every query
/// value masked (`https://user:***@host/path?token=***`), a lone user name (often a token
/// itself) masked too, a fragment dropped; scheme, host, port and path as they are. A string
/// without `://` is shown as `[unparsed]`.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "[unparsed]".to_string();
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("***@{host}"),
        },
        None => authority.to_string(),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(q) = query {
        out.push('?');
        let masked: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}=***"),
                None if pair.is_empty() => String::new(),
                None => "***".to_string(),
            })
            .collect();
        out.push_str(&masked.join("&"));
    }
    out
}

/// Whether `url` carries anything [`mask_url`] hides (a user info, a query or a fragment).
pub fn url_has_credentials(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.contains('@') || rest.contains('?') || rest.contains('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        for (given, shown) in [
            (
                "https://user:pa55@hooks.example.com/in/x?token=abc&v=2",
                "https://user:***@hooks.example.com/in/x?token=***&v=***",
            ),
            ("https://tok3n@example.com/", "https://***@example.com/"),
            ("https://example.com/a/b", "https://example.com/a/b"),
            ("https://example.com", "https://example.com"),
            (
                "http://example.com:8080?api_key=k",
                "http://example.com:8080?api_key=***",
            ),
            (
                "https://example.com/p?flag&x=1#frag",
                "https://example.com/p?***&x=***",
            ),
            (
                "https://u:p@[2001:db8::1]:8443/x",
                "https://u:***@[2001:db8::1]:8443/x",
            ),
            ("https://a:b@c@example.com/", "https://a:***@example.com/"),
            ("not a url", "[unparsed]"),
        ] {
            assert_eq!(mask_url(given), shown, "{given}");
        }
        assert!(url_has_credentials("https://u:p@e.com/"));
        assert!(url_has_credentials("https://e.com/?t=1"));
        assert!(!url_has_credentials("https://e.com/a@b"));
        assert!(!url_has_credentials("https://e.com/a"));
    }

    #[test]
    fn control_characters_are_refused_by_field() {
        assert_eq!(check_text("name", "Weekly report — 週報"), Ok(()));
        for bad in [
            "a\nb",
            "UTC\n",
            "\u{1b}]0;x\u{7}",
            "\r",
            "a\u{7f}",
            "\u{9b}2K",
            "\t",
        ] {
            let e = check_text("name", bad).unwrap_err();
            assert_eq!(e.field(), "name");
            assert!(e.reason().contains("control characters"), "{e}");
        }
    }
}
