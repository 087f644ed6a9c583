//! How the `kairos` binary is linked: with **packed relative relocations** (`DT_RELR`), on
//! Linux with glibc. A position-independent executable carries one relocation per pointer in
//! its read-only data (vtables, panic locations, tracing callsites): about 72,000 in `kairos`,
//! 1.7 MB of `.rela.dyn` that the dynamic loader reads at every start. Packed, they take a few
//! kilobytes (`.relr.dyn`); what they do is unchanged, and the executable keeps its random
//! base address (ASLR). Needs GNU ld 2.38+ or lld 15+ and glibc 2.36+ where the binary runs;
//! `KAIROS_LINK_RELR=0` builds without. `tests/binary_layout.rs` checks the flag took effect.

fn main() {
    println!("cargo::rerun-if-env-changed=KAIROS_LINK_RELR");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && var("KAIROS_LINK_RELR") != "0"
    {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
