//! How the `kairos` executable is linked (`build.rs`): with packed relative relocations on
//! Linux with glibc, so the dynamic loader reads a few kilobytes of relocations at start
//! instead of 1.7 MB.

/// Just enough of a little-endian ELF64 file to list its sections.
struct Elf(Vec<u8>);

/// A section header: (name offset, type, file offset, size, link).
type Section = (usize, u32, usize, usize, usize);

impl Elf {
    fn read(path: &str) -> Elf {
        let elf = Elf(std::fs::read(path).expect("read the kairos binary"));
        assert_eq!(&elf.0[..4], b"\x7fELF", "an ELF file");
        assert_eq!(elf.0[4], 2, "ELF64");
        assert_eq!(elf.0[5], 1, "little-endian");
        elf
    }

    fn u16_at(&self, o: usize) -> usize {
        u16::from_le_bytes([self.0[o], self.0[o + 1]]) as usize
    }

    fn u32_at(&self, o: usize) -> usize {
        u32::from_le_bytes(self.0[o..o + 4].try_into().expect("4 bytes")) as usize
    }

    fn u64_at(&self, o: usize) -> usize {
        u64::from_le_bytes(self.0[o..o + 8].try_into().expect("8 bytes")) as usize
    }

    /// The NUL-terminated string at `o`.
    fn str_at(&self, o: usize) -> String {
        let len = self.0[o..]
            .iter()
            .position(|&b| b == 0)
            .expect("string ends");
        String::from_utf8_lossy(&self.0[o..o + len]).into_owned()
    }

    fn sections(&self) -> Vec<Section> {
        let (shoff, size, count) = (self.u64_at(0x28), self.u16_at(0x3a), self.u16_at(0x3c));
        (0..count)
            .map(|i| shoff + i * size)
            .map(|h| {
                let (name, kind) = (self.u32_at(h), self.u32_at(h + 4) as u32);
                let (offset, len) = (self.u64_at(h + 0x18), self.u64_at(h + 0x20));
                (name, kind, offset, len, self.u32_at(h + 0x28))
            })
            .collect()
    }

    /// Sizes of the named sections (what `readelf -S` lists).
    fn section_sizes(&self) -> Vec<(String, usize)> {
        let all = self.sections();
        let names = all[self.u16_at(0x3e)].2;
        all.iter()
            .map(|&(name, _, _, len, _)| (self.str_at(names + name), len))
            .collect()
    }
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
    let all = Elf::read(env!("CARGO_BIN_EXE_kairos")).section_sizes();
    let size = |n: &str| all.iter().find(|(name, _)| name == n).map(|(_, s)| *s);
    let relr = size(".relr.dyn").expect("a .relr.dyn section: relative relocations packed");
    assert!(relr > 0);
    let rela = size(".rela.dyn").unwrap_or(0);
    assert!(
        rela < 64 * 1024,
        ".rela.dyn is {rela} bytes: relative relocations were not packed"
    );
}
