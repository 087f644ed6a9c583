//! Link the `kairos` binary with packed relative relocations (`DT_RELR`) on Linux with glibc.
//!
//! A position-independent executable carries one relocation per pointer in its read-only data
//! (vtables, panic locations, tracing callsites): about 72,000 of them in `kairos`, 1.7 MB of
//! `.rela.dyn` that the dynamic loader reads at every start, so that much of the file stays
//! resident for the life of the process. Packed, the same relocations take a few kilobytes
//! (`.relr.dyn`); what they do is unchanged, and the executable keeps its random base address
//! (ASLR). Needs GNU ld 2.38+ or lld 15+ and glibc 2.36+ where the binary runs; set
//! `KAIROS_LINK_RELR=0` to build without it (an older toolchain or C library).

fn main() {
    println!("cargo::rerun-if-env-changed=KAIROS_LINK_RELR");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let off = std::env::var("KAIROS_LINK_RELR").is_ok_and(|v| v == "0");
    if os == "linux" && env == "gnu" && !off {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
