// How the list of the idle path's functions (`idle-symbols.txt`) becomes the linker's symbol
// ordering file. Included (`include!`) by `build.rs`, which writes the ordering file, and by
// `tests/binary_layout.rs`, which checks a release binary against the same rule.
//
// Many listed names end in a number that LLVM appends to a local copy of a function when fat
// LTO merges crates that each hold one (`String as fmt::Write>::write_str.10363`, one of 33
// such copies). The numbers count the renames made before that copy, so a change anywhere
// in the program moves them: a two-line change to `kairos bench` moved every one by two,
// 22 of the 2,814 listed functions fell out of the idle region, and an idle server held
// 16.4 MB instead of 14.3 (the kernel maps 64 KB around each page of code touched). So a
// numbered name stands for the copies of its function numbered within `SUFFIX_DRIFT` of it.
// A few unneeded copies of small helpers land in the idle region too; that costs far less
// than one copy missing.

/// How far the number of a listed local copy may have moved in a later build.
pub const SUFFIX_DRIFT: u32 = 200;

/// The listed names: lines that are neither blank nor `#` comments.
pub fn listed(list: &str) -> impl Iterator<Item = &str> {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// `name` split into its function and LLVM's number (`foo.10363` -> `("foo", 10363)`), when
/// it ends in one.
pub fn numbered(name: &str) -> Option<(&str, u32)> {
    let (base, n) = name.rsplit_once('.')?;
    if base.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, n.parse().ok()?))
}

/// The names one listed name stands for, the listed one first.
pub fn candidates(name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    if let Some((base, n)) = numbered(name) {
        let lo = n.saturating_sub(SUFFIX_DRIFT);
        out.extend(
            (lo..=n.saturating_add(SUFFIX_DRIFT))
                .filter(|&m| m != n)
                .map(|m| format!("{base}.{m}")),
        );
    }
    out
}

/// The ordering file for the linker: every candidate of every listed name, in list order.
pub fn ordering_file(list: &str) -> String {
    let mut out = String::new();
    for name in listed(list) {
        for c in candidates(name) {
            out.push_str(&c);
            out.push('\n');
        }
    }
    out
}
