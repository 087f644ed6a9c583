//! How the `kairos` executable is linked (`build.rs`), to keep an idle server small: with
//! packed relative relocations on Linux with glibc, so the dynamic loader reads a few
//! kilobytes of relocations at start instead of 1.7 MB that would stay resident; and, in
//! release builds for x86_64 Linux, with the functions an idle server runs side by side
//! (`link/idle-symbols.txt`).

/// The linker's list of the idle path's functions.
const IDLE_SYMBOLS: &str = include_str!("../link/idle-symbols.txt");

/// The rule `build.rs` turns the list into the linker's ordering file with.
mod idle_order {
    include!("../link/idle_order.rs");
}

fn idle_symbols() -> Vec<&'static str> {
    idle_order::listed(IDLE_SYMBOLS).collect()
}

/// Just enough of a little-endian ELF64 file to list its sections and function symbols.
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

    /// Addresses of the functions in the symbol table (`.symtab`), by name.
    fn function_addresses(&self) -> std::collections::HashMap<String, usize> {
        let all = self.sections();
        // SHT_SYMTAB = 2; its link is the string table.
        let Some(&(_, _, offset, len, link)) = all.iter().find(|s| s.1 == 2) else {
            return Default::default();
        };
        let strings = all[link].2;
        (offset..offset + len)
            .step_by(24)
            // STT_FUNC = 2, in the low nibble of st_info.
            .filter(|&s| self.0[s + 4] & 0xf == 2)
            .map(|s| (self.str_at(strings + self.u32_at(s)), self.u64_at(s + 8)))
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

/// The list names what an idle node runs: the scheduler's and executor's loops, the SQLite
/// store's hot path, SQLite itself, the runtime; and only symbol names, once each.
#[test]
fn idle_symbol_list_names_the_idle_services() {
    let names = idle_symbols();
    assert!(names.len() > 1_000, "{} names", names.len());
    let mut seen = std::collections::HashSet::new();
    for n in &names {
        assert!(!n.contains(char::is_whitespace), "not a symbol name: {n:?}");
        assert!(seen.insert(n), "listed twice: {n}");
    }
    for part in [
        "kairos_engine..scheduler..Scheduler",
        "kairos_engine..executor",
        "kairos_store_sqlite",
        "tokio..runtime",
    ] {
        assert!(names.iter().any(|n| n.contains(part)), "nothing of {part}");
    }
    assert!(names.iter().any(|n| n.starts_with("sqlite3")), "no SQLite");
}

/// In the binary `cargo build --release -p kairos` makes for x86_64 Linux (what `cargo install`
/// and `scripts/release.sh` build), 98 in 100 listed functions are present and they lie side
/// by side: within 8 MB of each other, where the whole text is about 19 MB. Test builds cannot
/// show it (their dependencies are built with the dev-dependencies' features too, so their
/// symbols carry other hashes): set `KAIROS_RELEASE_BIN` to the release binary, e.g.
/// `KAIROS_RELEASE_BIN=target/release/kairos cargo test -p kairos --test binary_layout`.
#[test]
fn idle_functions_are_side_by_side_in_a_release_build() {
    let Ok(bin) = std::env::var("KAIROS_RELEASE_BIN") else {
        eprintln!("SKIPPED: set KAIROS_RELEASE_BIN to a `cargo build --release -p kairos` binary");
        return;
    };
    let at = Elf::read(&bin).function_addresses();
    let names = idle_symbols();
    // A listed name is found when it, or a copy it stands for (renumbered), is in the binary.
    let found: Vec<usize> = names
        .iter()
        .filter_map(|n| {
            idle_order::candidates(n)
                .iter()
                .find_map(|c| at.get(c).copied())
        })
        .collect();
    assert!(
        found.len() * 100 >= names.len() * 98,
        "only {} of the {} listed functions are in {bin}: regenerate the list with \
         scripts/idle-symbols.sh",
        found.len(),
        names.len()
    );
    let (lo, hi) = (found.iter().min().unwrap(), found.iter().max().unwrap());
    assert!(
        hi - lo < 8 << 20,
        "the idle functions span {} bytes: built with KAIROS_LINK_ORDER=0, not by lld, or \
         the list's numbered copies moved further than SUFFIX_DRIFT (regenerate it with \
         scripts/idle-symbols.sh)",
        hi - lo
    );
}

/// A listed local copy (`write_str.10363`) stands for the copies numbered near it, since a
/// change anywhere renumbers them; other names stand for themselves. The ordering file holds
/// them in list order, the listed name first.
#[test]
fn numbered_local_copies_stand_for_their_neighbours() {
    assert_eq!(idle_order::numbered("f.10363"), Some(("f", 10363)));
    assert_eq!(idle_order::numbered("_ZN3foo17h0123E"), None);
    assert_eq!(idle_order::numbered("f.llvm.x"), None);
    assert_eq!(idle_order::numbered(".12"), None);
    let d = idle_order::SUFFIX_DRIFT;
    let c = idle_order::candidates("f.1000");
    assert_eq!(c[0], "f.1000");
    assert_eq!(c.len() as u32, 2 * d + 1);
    assert!(c.contains(&"f.1002".to_string()), "moved by two");
    assert!(c.contains(&format!("f.{}", 1000 + d)));
    assert!(!c.contains(&format!("f.{}", 1000 + d + 1)));
    assert_eq!(idle_order::candidates("plain"), vec!["plain"]);
    let file = idle_order::ordering_file("# a comment\n\nplain\nf.5\n");
    let lines: Vec<&str> = file.lines().collect();
    assert_eq!(lines[0], "plain");
    assert_eq!(lines[1], "f.5");
    assert_eq!(lines.len() as u32, 2 + 5 + d, "f.0 to f.{}", 5 + d);
}
