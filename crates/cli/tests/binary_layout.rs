//! How the `kairos` executable is linked (`build.rs`): with packed relative relocations on
//! Linux with glibc, so the dynamic loader reads a few kilobytes of relocations at start
//! instead of 1.7 MB that would stay resident in an idle server.

/// Sizes of the named sections of a little-endian ELF64 file (what `readelf -S` lists).
fn sections(elf: &[u8]) -> Vec<(String, u64)> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().expect("8 bytes"));
    assert_eq!(&elf[..4], b"\x7fELF", "an ELF file");
    assert_eq!(elf[4], 2, "ELF64");
    assert_eq!(elf[5], 1, "little-endian");
    let shoff = u64_at(0x28) as usize;
    let (shentsize, shnum, shstrndx) = (u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let names_at = u64_at(header(shstrndx) + 0x18) as usize;
    (0..shnum)
        .map(|i| {
            let h = header(i);
            let start = names_at + u32_at(h) as usize;
            let end = start
                + elf[start..]
                    .iter()
                    .position(|&b| b == 0)
                    .expect("name ends");
            let name = String::from_utf8_lossy(&elf[start..end]).into_owned();
            (name, u64_at(h + 0x20))
        })
        .collect()
}

/// The binary's relative relocations are packed (`.relr.dyn`), and what is left unpacked
/// (`.rela.dyn`: symbol relocations) is small.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[test]
fn relative_relocations_are_packed() {
    if std::env::var("KAIROS_LINK_RELR").is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED: built with KAIROS_LINK_RELR=0");
        return;
    }
    let elf = std::fs::read(env!("CARGO_BIN_EXE_kairos")).expect("read the kairos binary");
    let all = sections(&elf);
    let size = |n: &str| all.iter().find(|(name, _)| name == n).map(|(_, s)| *s);
    let relr = size(".relr.dyn").expect("a .relr.dyn section: relative relocations packed");
    assert!(relr > 0);
    let rela = size(".rela.dyn").unwrap_or(0);
    assert!(
        rela < 64 * 1024,
        ".rela.dyn is {rela} bytes: relative relocations were not packed"
    );
}
