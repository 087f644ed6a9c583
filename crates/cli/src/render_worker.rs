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

/// The allocator's settings in a worker process (the binary's allocator is mimalloc, see
/// `main.rs`). The worker runs under `RLIMIT_AS`, which counts address space, not memory in
/// use: with mimalloc's defaults — address space reserved ahead in arenas of up to 1 GiB, and
/// freed memory handed back to the system a second later — a template that builds and drops
/// large strings ran into the limit with memory it had already freed, and was reported as out
/// of memory (`tests/template_sandbox.rs` failed three runs in four). Here every block comes
/// from the system and goes back to it when freed, as with the C library's allocator.
/// mimalloc reads these from the environment when the process starts, so the worker starts
/// itself again with them (once; the pool starts it with an empty environment).
pub(crate) const ALLOCATOR_ENV: [(&str, &str); 2] = [
    ("MIMALLOC_PURGE_DELAY", "0"),
    ("MIMALLOC_DISALLOW_ARENA_ALLOC", "1"),
];

/// Start this worker again with [`ALLOCATOR_ENV`] unless it already runs with all of it.
/// `exec` returns only if it failed; the worker then goes on with the defaults.
fn apply_allocator_settings() {
    use std::os::unix::process::CommandExt;
    let applied = ALLOCATOR_ENV
        .iter()
        .all(|(name, value)| std::env::var_os(name).is_some_and(|v| v == *value));
    if applied {
        return;
    }
    // /proc/self/exe: the running binary even when its file was replaced or removed.
    let _failed = std::process::Command::new("/proc/self/exe")
        .args(std::env::args_os().skip(1))
        .envs(ALLOCATOR_ENV)
        .exec();
}

/// Set the limits, then serve until stdin closes. Exit 2 when a limit cannot be set: the
/// worker never renders unlimited.
pub fn run() -> ExitCode {
    apply_allocator_settings();
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
