//! `kairos __render-worker` (hidden): the template worker the node's render pool starts
//! (`kairos_channels::email::template::pool`). Before it reads a byte of input it lowers its
//! own limits: `RLIMIT_AS` to `KAIROS_TEMPLATE_MEMORY_MB` (default 512), so a template that
//! grows a string without bound makes an allocation fail and the process abort (the parent
//! reports the memory limit), and `RLIMIT_CPU` to `KAIROS_TEMPLATE_CPU_SECS`, a backstop
//! behind the parent's timeout. Then it serves requests on stdin and stdout, one JSON line
//! each, until stdin closes. It runs no Tokio runtime and writes no logs.

use kairos_channels::email::template::worker;
use rlimit::Resource;
use std::process::ExitCode;

/// The address-space limit when `KAIROS_TEMPLATE_MEMORY_MB` is unset, in MiB.
const DEFAULT_MEMORY_MB: u64 = 512;
/// The CPU limit when `KAIROS_TEMPLATE_CPU_SECS` is unset, in seconds.
const DEFAULT_CPU_SECS: u64 = 3600;
/// The hard CPU limit is this much above the soft one: the soft limit's SIGXCPU is what the
/// parent recognizes as the time limit.
const CPU_HARD_MARGIN_SECS: u64 = 5;

fn setting(name: &str, default: u64, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    let Ok(raw) = std::env::var(name) else {
        return Ok(default);
    };
    match raw.trim().parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!(
            "{name}: {raw:?} is not a number between {} and {}",
            range.start(),
            range.end()
        )),
    }
}

/// Lower `resource` to `soft`/`hard`, never above the limits already in force (raising a
/// hard limit needs privileges, and a lower one set by the operator stays).
fn lower(resource: Resource, soft: u64, hard: u64) -> Result<(), String> {
    let (cur_soft, cur_hard) = rlimit::getrlimit(resource).map_err(|e| e.to_string())?;
    let hard = hard.min(cur_hard);
    let soft = soft.min(cur_soft).min(hard);
    rlimit::setrlimit(resource, soft, hard).map_err(|e| e.to_string())
}

fn limit() -> Result<(), String> {
    let mb = setting("KAIROS_TEMPLATE_MEMORY_MB", DEFAULT_MEMORY_MB, 64..=65_536)?;
    let cpu = setting("KAIROS_TEMPLATE_CPU_SECS", DEFAULT_CPU_SECS, 1..=10_000_000)?;
    let bytes = mb << 20;
    lower(Resource::AS, bytes, bytes).map_err(|e| format!("setting RLIMIT_AS: {e}"))?;
    lower(Resource::CPU, cpu, cpu + CPU_HARD_MARGIN_SECS)
        .map_err(|e| format!("setting RLIMIT_CPU: {e}"))
}

/// Set the limits, then serve until stdin closes. Exit 2 when a limit cannot be set: the
/// worker never renders unlimited.
pub fn run() -> ExitCode {
    if let Err(e) = limit() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    // A panic in a render is answered as that template's error (`worker::serve` catches it);
    // the default hook's message on stderr would go nowhere useful.
    std::panic::set_hook(Box::new(|_| {}));
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    match worker::serve(stdin, stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
