//! Browser tests' WebDriver client: Debian's `chromedriver` driving headless `chromium`, spoken
//! to by `fantoccini` over plain HTTP on 127.0.0.1 (no TLS connector: fantoccini's `rustls-tls`
//! feature pulls in hyper-rustls' default `aws-lc-rs`, and a local driver needs none). This
//! module starts the driver and keeps the few calls the admin UI tests make: navigate, find,
//! click, type, read text, screenshot.
//!
//! [`Browser::start`] returns `None` (and says so loudly) when chromedriver or chromium is not
//! installed, unless `KAIROS_TEST_BROWSER=required` (set by `.ci/run`), which makes it panic.

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A headless chromium session under a chromedriver child process (killed on drop).
pub struct Browser {
    driver: Child,
    client: Client,
}

/// An element of the current page.
#[derive(Debug, Clone)]
pub struct Element(fantoccini::elements::Element);

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

/// How long [`Browser::wait_url`] and [`Browser::wait_find`] wait.
const WAIT: Duration = Duration::from_secs(10);

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
        let mut child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", driver.display()));
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chrome,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000",
                         "--no-proxy-server"]
            }
        });
        let serde_json::Value::Object(caps) = caps else {
            unreachable!("a JSON object literal")
        };
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(caps);
        // The driver takes a moment to listen (bounded: 10 s).
        let mut listening = false;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                listening = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !listening {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromedriver did not listen within 10 s");
        }
        match builder.connect(&format!("http://127.0.0.1:{port}")).await {
            Ok(client) => Some(Browser {
                driver: child,
                client,
            }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no chromedriver session: {e}")
            }
        }
    }

    /// Navigate to `url` and wait for the page to load.
    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("webdriver goto {url}: {e}"));
    }

    /// The current URL.
    pub async fn url(&self) -> String {
        self.client
            .current_url()
            .await
            .unwrap_or_else(|e| panic!("webdriver current url: {e}"))
            .to_string()
    }

    /// Wait (at most 10 s) until the current URL contains `part`, and return it. A click
    /// that submits a form returns before the next page has loaded.
    pub async fn wait_url(&self, part: &str) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        while tokio::time::Instant::now() < deadline {
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
        match self
            .client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
        {
            Ok(e) => Element(e),
            Err(e) => panic!("no element matches {css:?} on {}: {e}", self.url().await),
        }
    }

    /// All elements matching a CSS selector.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("webdriver find {css:?}: {e}"))
            .into_iter()
            .map(Element)
            .collect()
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
        e.0.click()
            .await
            .unwrap_or_else(|err| panic!("webdriver click: {err}"));
    }

    /// Type `text` into an element (after clearing it).
    pub async fn type_into(&self, e: &Element, text: &str) {
        e.0.clear()
            .await
            .unwrap_or_else(|err| panic!("webdriver clear: {err}"));
        e.0.send_keys(text)
            .await
            .unwrap_or_else(|err| panic!("webdriver send keys: {err}"));
    }

    /// The visible text of an element.
    pub async fn text(&self, e: &Element) -> String {
        e.0.text()
            .await
            .unwrap_or_else(|err| panic!("webdriver text: {err}"))
    }

    /// The whole page's visible text.
    pub async fn page_text(&self) -> String {
        let body = self.find("body").await;
        self.text(&body).await
    }

    /// Save a PNG screenshot of the viewport to `path` (creating its directory).
    pub async fn screenshot(&self, path: &Path) {
        let png = self
            .client
            .screenshot()
            .await
            .unwrap_or_else(|e| panic!("webdriver screenshot: {e}"));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }

    /// Resize the browser window to `width` × `height` pixels.
    pub async fn set_window_size(&self, width: u32, height: u32) {
        self.client
            .set_window_size(width, height)
            .await
            .unwrap_or_else(|e| panic!("webdriver window size: {e}"));
    }

    /// How many CSS pixels the page is wider than its viewport (0: it fits, no horizontal
    /// scrolling). Measured by a script in the browser; the page itself needs none.
    pub async fn horizontal_overflow(&self) -> i64 {
        let v = self
            .client
            .execute(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
                vec![],
            )
            .await
            .unwrap_or_else(|e| panic!("webdriver execute: {e}"));
        v.as_i64().unwrap_or(i64::MAX)
    }

    /// End the session (closing chromium) and stop the driver.
    pub async fn quit(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The session dies with the driver; killing the driver also ends its chromium.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
