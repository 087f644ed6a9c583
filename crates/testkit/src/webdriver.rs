//! A small W3C WebDriver client for browser tests: Debian's `chromedriver` driving headless
//! `chromium`, spoken to over plain HTTP on 127.0.0.1. Only what the admin UI tests need:
//! navigate, find, click, type, read text, screenshot.
//!
//! [`Browser::start`] returns `None` (and says so loudly) when chromedriver or chromium is not
//! installed, unless `KAIROS_TEST_BROWSER=required` (set by `.ci/run`), which makes it panic.

use base64::Engine as _;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless chromium session under a chromedriver child process (killed on drop).
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

/// An element handle of the current page.
#[derive(Debug, Clone)]
pub struct Element(String);

fn find_binary(env: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(env) {
        return Some(PathBuf::from(p));
    }
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Browser {
    /// Start chromedriver and a headless chromium session, or `None` when they are not
    /// installed (a panic instead when `KAIROS_TEST_BROWSER=required`).
    pub async fn start() -> Option<Browser> {
        let required = std::env::var("KAIROS_TEST_BROWSER").as_deref() == Ok("required");
        let driver = find_binary("KAIROS_TEST_CHROMEDRIVER", &["/usr/bin/chromedriver"]);
        let chrome = find_binary("KAIROS_TEST_CHROMIUM", &["/usr/bin/chromium"]);
        let (Some(driver), Some(chrome)) = (driver, chrome) else {
            let msg = "chromium/chromedriver are not installed (apt-get install chromium chromium-driver; .ci/run does it)";
            assert!(!required, "KAIROS_TEST_BROWSER=required but {msg}");
            eprintln!("\n*** SKIPPING BROWSER TEST: {msg} ***\n");
            return None;
        };
        let port = free_port().expect("a free port");
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", driver.display()));
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("http client");
        let mut browser = Browser {
            driver: child,
            base,
            session: String::new(),
            http,
        };
        // Wait (bounded) for the driver to answer.
        let mut ready = false;
        for _ in 0..100 {
            if let Ok(r) = browser
                .http
                .get(format!("{}/status", browser.base))
                .send()
                .await
                && r.status().is_success()
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "chromedriver did not answer within 10 s");
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chrome,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000",
                         "--no-proxy-server"]
            }
        }}});
        let v = browser.call("POST", "/session", Some(caps)).await;
        browser.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {v}"))
            .to_string();
        Some(browser)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body.unwrap_or_else(|| json!({}))),
        };
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("webdriver {path}: {e}"));
        let status = res.status();
        let v: Value = res.json().await.unwrap_or(Value::Null);
        assert!(
            status.is_success(),
            "webdriver {method} {path}: {status} {v}"
        );
        v["value"].clone()
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Navigate to `url` and wait for the page to load.
    pub async fn goto(&self, url: &str) {
        self.call("POST", &self.s("/url"), Some(json!({"url": url})))
            .await;
    }

    /// The current URL.
    pub async fn url(&self) -> String {
        self.call("GET", &self.s("/url"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Wait (at most 10 s) until the current URL contains `part`, and return it. A click
    /// that submits a form returns before the next page has loaded.
    pub async fn wait_url(&self, part: &str) -> String {
        for _ in 0..100 {
            let url = self.url().await;
            if url.contains(part) {
                return url;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the URL did not come to contain {part:?}: {}",
            self.url().await
        )
    }

    /// Wait (at most 10 s) for an element matching `css` to be on the page.
    pub async fn wait_find(&self, css: &str) -> Element {
        for _ in 0..100 {
            if let Some(e) = self.find_all(css).await.into_iter().next() {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.find(css).await
    }

    /// All elements matching a CSS selector.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let v = self
            .call(
                "POST",
                &self.s("/elements"),
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT_KEY].as_str().map(|s| Element(s.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css` (panics with the page URL when there is none).
    pub async fn find(&self, css: &str) -> Element {
        match self.find_all(css).await.into_iter().next() {
            Some(e) => e,
            None => panic!("no element matches {css:?} on {}", self.url().await),
        }
    }

    /// Click an element.
    pub async fn click(&self, e: &Element) {
        self.call("POST", &self.s(&format!("/element/{}/click", e.0)), None)
            .await;
    }

    /// Type `text` into an element (after clearing it).
    pub async fn type_into(&self, e: &Element, text: &str) {
        self.call("POST", &self.s(&format!("/element/{}/clear", e.0)), None)
            .await;
        self.call(
            "POST",
            &self.s(&format!("/element/{}/value", e.0)),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// The visible text of an element.
    pub async fn text(&self, e: &Element) -> String {
        self.call("GET", &self.s(&format!("/element/{}/text", e.0)), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The whole page's visible text.
    pub async fn page_text(&self) -> String {
        let body = self.find("body").await;
        self.text(&body).await
    }

    /// Save a PNG screenshot of the viewport to `path` (creating its directory).
    pub async fn screenshot(&self, path: &Path) {
        let v = self.call("GET", &self.s("/screenshot"), None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("screenshot is base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }
}

impl Browser {
    /// End the session (closing chromium) and stop the driver.
    pub async fn quit(self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The session dies with the driver; killing the driver also ends its chromium.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
