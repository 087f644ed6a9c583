//! How the `kairos` binary is linked, to keep an idle server small (`docs/benchmarks.md`).
//!
//! - **Packed relative relocations** (`DT_RELR`), on Linux with glibc. A position-independent
//!   executable carries one relocation per pointer in its read-only data (vtables, panic
//!   locations, tracing callsites): about 72,000 in `kairos`, 1.7 MB of `.rela.dyn` that the
//!   dynamic loader reads at every start, so that much of the file stayed resident for the
//!   life of the process. Packed, they take a few kilobytes (`.relr.dyn`); what they do is
//!   unchanged, and the executable keeps its random base address (ASLR). Needs GNU ld 2.38+
//!   or lld 15+ and glibc 2.36+ where the binary runs; `KAIROS_LINK_RELR=0` builds without.
//! - **The idle path's functions side by side** (release builds for x86_64 Linux, whose
//!   default linker is lld): `link/idle-symbols.txt` lists the functions an idle `kairos
//!   serve` runs, and the linker places them first. The kernel maps a binary's pages 64 KB at
//!   a time around each page touched, so code spread over the whole 19 MB text kept most of
//!   it resident; gathered, it fits in about 3 MB. The list's numbered local copies stand for
//!   their neighbours too (`link/idle_order.rs`), so that a change elsewhere, which renumbers
//!   them, does not scatter them again. `KAIROS_LINK_ORDER=0` builds without (a linker other
//!   than lld).

use std::path::Path;

mod idle_order {
    include!("link/idle_order.rs");
}

fn main() {
    println!("cargo::rerun-if-env-changed=KAIROS_LINK_RELR");
    println!("cargo::rerun-if-env-changed=KAIROS_LINK_ORDER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let os = var("CARGO_CFG_TARGET_OS");
    let env = var("CARGO_CFG_TARGET_ENV");
    if os == "linux" && env == "gnu" && var("KAIROS_LINK_RELR") != "0" {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/idle-symbols.txt");
    println!("cargo::rerun-if-changed={}", order.display());
    println!("cargo::rerun-if-changed=link/idle_order.rs");
    if var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("PROFILE") == "release"
        && var("KAIROS_LINK_ORDER") != "0"
    {
        let list = std::fs::read_to_string(&order).expect("read link/idle-symbols.txt");
        let file = Path::new(&var("OUT_DIR")).join("idle-symbol-order.txt");
        std::fs::write(&file, idle_order::ordering_file(&list)).expect("write the ordering file");
        println!(
            "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            file.display()
        );
        // Names a later build no longer has (renamed or inlined functions) are expected.
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
