//! The example configuration shipped in the release archive (`packaging/kairos.toml`) against
//! the real loader, so that it cannot drift from the code: it names every setting exactly
//! once, each next to its environment variable; with every setting line uncommented it loads
//! (and the monitor and alert webhook accept it) with each value arriving as written, the
//! values shown as defaults being the real defaults; as shipped, all commented, it loads to
//! the defaults.
#![allow(clippy::result_large_err)] // figment's Jail closures return figment::Error

use figment::Figment;
use figment::Jail;
use figment::providers::{Format, Toml};
use kairos_app::config::{Config, ENV_FIELDS, Overrides};
use serde_json::Value;
use std::collections::BTreeMap;

const EXAMPLE: &str = include_str!("../../../packaging/kairos.toml");

/// The setting a line sets once its leading `# ` is removed, if it is a setting line.
fn setting_of(line: &str) -> Option<&'static str> {
    let (name, _) = line.strip_prefix("# ")?.split_once(" = ")?;
    ENV_FIELDS.iter().copied().find(|f| *f == name)
}

/// The example with every setting line uncommented, and the settings in file order.
fn uncommented() -> (String, Vec<&'static str>) {
    let mut names = Vec::new();
    let mut out = String::new();
    for line in EXAMPLE.lines() {
        match setting_of(line) {
            Some(name) => {
                names.push(name);
                out.push_str(&line[2..]);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    (out, names)
}

/// Load `text` as the config file (`--config`), with no `KAIROS_*` variable set.
fn load(jail: &mut Jail, text: &str) -> Result<Config, String> {
    jail.clear_env();
    jail.create_file("example.toml", text)
        .map_err(|e| e.to_string())?;
    Config::load(&Overrides {
        config_file: Some(jail.directory().join("example.toml")),
        ..Overrides::default()
    })
    .map_err(|e| e.to_string())
}

#[test]
fn the_example_names_every_setting_once_next_to_its_environment_variable() {
    let (_, names) = uncommented();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    let mut fields: Vec<&str> = ENV_FIELDS.to_vec();
    fields.sort_unstable();
    assert_eq!(
        sorted, fields,
        "packaging/kairos.toml must have one `# name = value` line per setting"
    );
    // Each setting's comment block (the lines since the last blank one) names its variable.
    let mut block: Vec<&str> = Vec::new();
    for line in EXAMPLE.lines() {
        if line.trim().is_empty() {
            block.clear();
            continue;
        }
        if let Some(name) = setting_of(line) {
            let env = format!("KAIROS_{}", name.to_ascii_uppercase());
            assert!(
                block.iter().any(|l| l
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| w == env)),
                "the comment above `{name}` does not name {env}"
            );
        }
        block.push(line);
    }
}

#[test]
fn the_example_with_every_setting_uncommented_loads_and_each_value_arrives() {
    kairos_testkit::init_crypto();
    let (text, _) = uncommented();
    let written: BTreeMap<String, Value> = serde_json::to_value(
        Figment::from(Toml::string(&text))
            .extract::<figment::value::Dict>()
            .expect("the uncommented example is TOML"),
    )
    .and_then(serde_json::from_value)
    .expect("a table");
    assert_eq!(written.len(), ENV_FIELDS.len());
    Jail::expect_with(|jail| {
        let cfg = load(jail, &text)?;
        let loaded = serde_json::to_value(&cfg).map_err(|e| e.to_string())?;
        let defaults = serde_json::to_value(Config::default()).map_err(|e| e.to_string())?;
        for (name, value) in &written {
            assert_eq!(&loaded[name], value, "`{name}` did not arrive as written");
            // A setting with a default shows that default; one without shows an example.
            if !defaults[name].is_null() {
                assert_eq!(
                    value, &defaults[name],
                    "the example shows `{name}` with a value other than its default"
                );
            }
        }
        // What `kairos serve` builds from the same settings accepts them too.
        kairos_app::monitoring::monitor_config(&cfg).map_err(|e| e.to_string())?;
        let sink =
            kairos_app::monitoring::alert_sink(&cfg, kairos_channels::WebhookConfig::default())
                .map_err(|e| e.to_string())?;
        assert!(sink.is_some(), "the alert webhook is configured");
        assert!(
            cfg.database()
                .map_err(|e| e.to_string())?
                .describe()
                .starts_with("postgres://")
        );
        Ok(())
    });
}

#[test]
fn the_example_as_shipped_loads_to_the_defaults() {
    Jail::expect_with(|jail| {
        assert_eq!(load(jail, EXAMPLE)?, Config::default());
        Ok(())
    });
}

#[test]
fn uncommenting_finds_only_setting_lines() {
    assert_eq!(setting_of("# listen = \"127.0.0.1:8080\""), Some("listen"));
    assert_eq!(setting_of("# this = that"), None);
    assert_eq!(setting_of("listen = \"x\""), None);
}
