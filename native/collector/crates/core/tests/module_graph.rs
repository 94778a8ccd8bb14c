//! The top-level modules of the core crate (`src/X.rs` or `src/X/`) import each other without a
//! cycle: a cycle ties modules together so that none can be read, tested or changed alone. The
//! same holds inside every folder module (`src/X/`, `src/X/Y/`…): its files and sub-folders
//! (`X/a.rs`, `X/b/`) import each other without a cycle, where `X/mod.rs` counts as one more
//! node (`mod.rs`) for the items it defines itself; a path through one of its re-exports
//! (`pub use a::Item` or `pub use a::*`, then `super::Item`) is an edge to the file that
//! defines the item, and the re-export itself is no edge of `mod.rs`.
//!
//! Every `.rs` file under `src/` is parsed with `syn`; an edge A → B is any path into B written
//! in A's code: `use crate::B::…`, `crate::B::f()` in an expression or a type, `super::B` from
//! A's top level, a path from a module into its own sub-module (`pages::clip()` in `X/mod.rs`),
//! and `crate::B` inside a macro's tokens (`format!("{}", crate::B::x)`). Test modules
//! (`#[cfg(test)]`) count as well. Doc comments do not (an intra-doc link imports nothing).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// Edges between top-level modules: from → to → one example of where (file and path).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// Where a file sits: its top-level module and its module path (`src/a/b.rs` → `[a, b]`).
fn module_path(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return None; // the crate root belongs to no top-level module
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts)
}

struct Paths<'a> {
    /// Module path of the code being visited (file path plus inline `mod x { … }`).
    scope: Vec<String>,
    /// Inline modules entered (0: the file's top level).
    inline: usize,
    /// Module paths of the crate's files (to resolve `sub::item` relative to the scope).
    known: &'a BTreeSet<Vec<String>>,
    /// (absolute path, path as written, written in a top-level `pub use`).
    found: Vec<(Vec<String>, String, bool)>,
    /// The file's top-level `pub use` items: (name exported, absolute path; empty name: a glob).
    reexports: Vec<(String, Vec<String>)>,
}

impl Paths<'_> {
    fn add(&mut self, segments: Vec<String>) {
        self.add_use(segments, false);
    }

    fn add_use(&mut self, segments: Vec<String>, reexport: bool) {
        let text = segments.join("::");
        self.found.push((self.resolve(&segments), text, reexport));
    }

    /// The absolute module path a path starts with (empty when it is not a crate path).
    fn resolve(&self, segments: &[String]) -> Vec<String> {
        match segments.first().map(String::as_str) {
            Some("crate") => segments[1..].to_vec(),
            Some("self") => self.scope.iter().cloned().chain(segments[1..].iter().cloned()).collect(),
            Some("super") => {
                let mut scope = self.scope.clone();
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    scope.pop();
                    rest = &rest[1..];
                }
                scope.into_iter().chain(rest.iter().cloned()).collect()
            }
            // `sub::item` names a sub-module of the scope (a single segment is a local name)
            Some(first) if segments.len() >= 2 => {
                let mut sub = self.scope.clone();
                sub.push(first.to_string());
                if self.known.contains(&sub) {
                    self.scope.iter().cloned().chain(segments.iter().cloned()).collect()
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in tts.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => self.scan_tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" => {
                    // `crate :: name`: the punctuation arrives as two ':' tokens.
                    let colons = |k: usize| matches!(tts.get(k), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                    if i > 0 && matches!(tts[i - 1], TokenTree::Punct(ref p) if p.as_char() == '$') {
                        continue;
                    }
                    // the whole `crate::a::b…` path (sub-module edges need more than `a`)
                    let mut path = vec!["crate".to_string()];
                    let mut k = i + 1;
                    while colons(k) && colons(k + 1) {
                        let Some(TokenTree::Ident(next)) = tts.get(k + 2) else { break };
                        path.push(next.to_string());
                        k += 3;
                    }
                    if path.len() > 1 {
                        self.add(path);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The paths of a `use` tree, each with the name it brings into scope (empty for a glob).
fn flatten_use(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = if n.ident == "self" { prefix.last().cloned().unwrap_or_default() } else { n.ident.to_string() };
            out.push((prefix.iter().cloned().chain([n.ident.to_string()]).collect(), name));
        }
        syn::UseTree::Rename(r) => {
            out.push((prefix.iter().cloned().chain([r.ident.to_string()]).collect(), r.rename.to_string()))
        }
        // `*` as a last segment: `sub::*` is then a path of two segments, resolved as `sub::item`
        syn::UseTree::Glob(_) => out.push((prefix.iter().cloned().chain(["*".to_string()]).collect(), String::new())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut out = Vec::new();
        flatten_use(&u.tree, &mut Vec::new(), &mut out);
        let reexport = self.inline == 0 && !matches!(u.vis, syn::Visibility::Inherited);
        for (p, name) in out {
            if reexport {
                let target = self.resolve(&p);
                self.reexports.push((name, target));
            }
            self.add_use(p, reexport);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.add(p.segments.iter().map(|s| s.ident.to_string()).collect());
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        visit::visit_macro(self, m);
        self.scan_tokens(m.tokens.clone());
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.scope.push(m.ident.to_string());
        self.inline += 1;
        visit::visit_item_mod(self, m);
        self.inline -= 1;
        self.scope.pop();
    }
}

/// One parsed file: its module path, where it is, what it names, what it re-exports and the
/// names of the items it defines at its top level.
struct Parsed {
    module: Vec<String>,
    file: String,
    /// `mod.rs` (the file of a folder module).
    folder: bool,
    found: Vec<(Vec<String>, String, bool)>,
    reexports: Vec<(String, Vec<String>)>,
    defines: BTreeSet<String>,
}

fn parse_all(files: &[(PathBuf, String)]) -> Result<Vec<Parsed>, String> {
    let known: BTreeSet<Vec<String>> = files.iter().filter_map(|(p, _)| module_path(p)).collect();
    let mut out = Vec::new();
    for (rel, text) in files {
        let Some(scope) = module_path(rel) else { continue };
        let file = syn::parse_file(text).map_err(|e| format!("{}: {e}", rel.display()))?;
        let mut v = Paths { scope: scope.clone(), inline: 0, known: &known, found: Vec::new(), reexports: Vec::new() };
        v.visit_file(&file);
        let defines = file
            .items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Const(x) => Some(x.ident.to_string()),
                syn::Item::Enum(x) => Some(x.ident.to_string()),
                syn::Item::Fn(x) => Some(x.sig.ident.to_string()),
                syn::Item::Static(x) => Some(x.ident.to_string()),
                syn::Item::Struct(x) => Some(x.ident.to_string()),
                syn::Item::Trait(x) => Some(x.ident.to_string()),
                syn::Item::Type(x) => Some(x.ident.to_string()),
                syn::Item::Union(x) => Some(x.ident.to_string()),
                syn::Item::Macro(x) => x.ident.as_ref().map(|i| i.to_string()),
                _ => None,
            })
            .collect();
        out.push(Parsed {
            module: scope,
            file: rel.display().to_string(),
            folder: rel.file_name().is_some_and(|n| n == "mod.rs"),
            found: v.found,
            reexports: v.reexports,
            defines,
        });
    }
    Ok(out)
}

/// The graph of top-level modules of the given files (path relative to `src/`, source text).
fn graph_of(files: &[(PathBuf, String)]) -> Result<Graph, String> {
    let parsed = parse_all(files)?;
    let tops: BTreeSet<String> = parsed.iter().map(|p| p.module[0].clone()).collect();
    let mut g: Graph = tops.iter().map(|t| (t.clone(), BTreeMap::new())).collect();
    for p in &parsed {
        for (target, text, _) in &p.found {
            let Some(to) = target.first() else { continue };
            if to != &p.module[0] && tops.contains(to) {
                g.get_mut(&p.module[0]).unwrap().entry(to.clone()).or_insert_with(|| format!("{} uses {text}", p.file));
            }
        }
    }
    Ok(g)
}

/// The node of a folder module's own file in its graph.
const MOD_RS: &str = "mod.rs";

/// The graph inside each folder module (key: its path, `apply` or `apply::launch`): between its
/// files and sub-folders, and its `mod.rs` for the items that file defines itself.
fn folder_graphs(files: &[(PathBuf, String)]) -> Result<BTreeMap<String, Graph>, String> {
    let parsed = parse_all(files)?;
    let mut out = BTreeMap::new();
    for root in parsed.iter().filter(|p| p.folder) {
        let dir = &root.module;
        let k = dir.len();
        let inside = |m: &[String]| m.len() >= k && m[..k] == dir[..];
        let children: BTreeSet<String> =
            parsed.iter().filter(|p| inside(&p.module) && p.module.len() > k).map(|p| p.module[k].clone()).collect();
        // A name `mod.rs` re-exports from a child (explicitly, or by a glob over a child that
        // defines it) stands for that child.
        let child_of = |t: &[String]| (t.len() > k && inside(t) && children.contains(&t[k])).then(|| t[k].clone());
        let mut exported: BTreeMap<String, String> = BTreeMap::new();
        for (name, target) in &root.reexports {
            let Some(c) = child_of(target) else { continue };
            if name.is_empty() {
                let globbed = &target[..target.len() - 1]; // without its `*`
                for p in parsed.iter().filter(|p| p.module == globbed) {
                    // what the child defines, and what it re-exports itself
                    for d in p.defines.iter().chain(p.reexports.iter().map(|r| &r.0).filter(|n| !n.is_empty())) {
                        exported.entry(d.clone()).or_insert_with(|| c.clone());
                    }
                }
            } else {
                exported.insert(name.clone(), c);
            }
        }
        let mut g: Graph = children.iter().chain([&MOD_RS.to_string()]).map(|c| (c.clone(), BTreeMap::new())).collect();
        for p in parsed.iter().filter(|p| inside(&p.module)) {
            let from = if p.module.len() > k { p.module[k].clone() } else { MOD_RS.to_string() };
            for (target, text, reexport) in &p.found {
                if *reexport && p.folder && p.module == *dir {
                    continue; // mod.rs re-exporting a child's item does not use it
                }
                if target.len() <= k || !inside(target) {
                    continue;
                }
                let to = match child_of(target) {
                    Some(c) => c,
                    None if root.defines.contains(&target[k]) => MOD_RS.to_string(),
                    None => exported.get(&target[k]).cloned().unwrap_or_else(|| MOD_RS.to_string()),
                };
                if to != from {
                    g.get_mut(&from).unwrap().entry(to).or_insert_with(|| format!("{} uses {text}", p.file));
                }
            }
        }
        out.insert(dir.join("::"), g);
    }
    Ok(out)
}

/// A cycle of the graph, if it has one: the modules in order, the first repeated at the end.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    // Depth-first search; a back edge to a module on the stack closes a cycle.
    fn dfs(g: &Graph, n: &str, state: &mut BTreeMap<String, u8>, stack: &mut Vec<String>) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flat_map(|e| e.keys()) {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap();
                    let mut c = stack[start..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = dfs(g, m, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(g, n, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The failure message: the cycle, and where each of its edges comes from.
fn describe_cycle(g: &Graph, cycle: &[String]) -> String {
    describe_cycle_in(g, cycle, "top-level modules of numascope-core")
}

fn describe_cycle_in(g: &Graph, cycle: &[String], what: &str) -> String {
    let mut s = format!("import cycle between {what}: {}", cycle.join(" -> "));
    for w in cycle.windows(2) {
        s.push_str(&format!("\n  {} -> {}: {}", w[0], w[1], g[&w[0]][&w[1]]));
    }
    s.push_str("\nmove the shared item into a module both can depend on, so that the edges point one way");
    s
}

fn read_sources(dir: &Path, base: &Path, out: &mut Vec<(PathBuf, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            read_sources(&p, base, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((p.strip_prefix(base).unwrap().to_path_buf(), std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn core_modules_have_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    files.sort();
    let g = graph_of(&files).unwrap();
    // The check sees the modules it should: a parse or path mistake would leave it with none.
    assert!(g.len() >= 10, "found only the modules {:?}", g.keys().collect::<Vec<_>>());
    assert!(g["recorder"].contains_key("sources") && g["sources"].contains_key("trace"), "{g:#?}");
    if let Some(c) = find_cycle(&g) {
        panic!("{}", describe_cycle(&g, &c));
    }
}

#[test]
fn core_folder_modules_have_no_import_cycle_inside() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    files.sort();
    let gs = folder_graphs(&files).unwrap();
    // The check sees the folders and edges it should.
    for d in ["apply", "apply::launch", "recorder", "trace"] {
        assert!(gs.contains_key(d), "no graph for {d}: {:?}", gs.keys().collect::<Vec<_>>());
    }
    assert!(
        gs["apply"]["engine"].contains_key("mover") && gs["apply"]["launch"].contains_key("plan"),
        "{:#?}",
        gs["apply"]
    );
    let cycles: Vec<String> = gs
        .iter()
        .filter_map(|(d, g)| {
            find_cycle(g).map(|c| describe_cycle_in(g, &c, &format!("the files of numascope-core's {d}/")))
        })
        .collect();
    assert!(cycles.is_empty(), "{}", cycles.join("\n\n"));
}

/// The other crates of the workspace (the CLI, the allocation shim, the Node binding…) hold the
/// same rule: no cycle between their top-level modules, none inside any of their folders. A
/// `src/bin/` program is a crate of its own and is left out.
///
/// Not yet the allocation shim: its top-level modules still import each other in circles (state
/// ↔ out, interpose ↔ real, interpose ↔ place; issue 34). It is checked to be still cyclic, so that
/// the day the circles are opened this list must shrink and the check then holds for it too.
const KNOWN_CYCLIC: &[&str] = &["allocshim"];

#[test]
fn every_crate_of_the_workspace_has_no_import_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = BTreeMap::new();
    let mut cycles = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&crates).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for dir in names {
        let src = dir.join("src");
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name == "core" || !src.is_dir() {
            continue; // core has the two tests above
        }
        let mut files = Vec::new();
        read_sources(&src, &src, &mut files);
        files.retain(|(p, _)| !p.starts_with("bin"));
        files.sort();
        let g = graph_of(&files).unwrap();
        if KNOWN_CYCLIC.contains(&name.as_str()) {
            assert!(find_cycle(&g).is_some(), "{name} has no import cycle any more: remove it from KNOWN_CYCLIC");
            checked.insert(name, (g, BTreeMap::new()));
            continue;
        }
        if let Some(c) = find_cycle(&g) {
            cycles.push(describe_cycle_in(&g, &c, &format!("the top-level modules of the {name} crate")));
        }
        let gs = folder_graphs(&files).unwrap();
        for (d, fg) in &gs {
            if let Some(c) = find_cycle(fg) {
                cycles.push(describe_cycle_in(fg, &c, &format!("the files of the {name} crate's {d}/")));
            }
        }
        checked.insert(name, (g, gs));
    }
    // The check sees the crates, folders and edges it should.
    let (cli, cli_folders) = &checked["cli"];
    assert!(cli.contains_key("cmd_serve") && cli_folders.contains_key("cmd_serve"), "{cli:#?}");
    assert!(cli_folders["cmd_serve"]["routes"].contains_key("recordings"), "{:#?}", cli_folders["cmd_serve"]);
    let (shim, _) = &checked["allocshim"];
    assert!(shim.contains_key("interpose") && !shim.contains_key("bin"), "src/bin is a crate of its own: {shim:#?}");
    assert!(checked.contains_key("node") && checked.contains_key("testload"), "{:?}", checked.keys());
    assert!(cycles.is_empty(), "{}", cycles.join("\n\n"));
}

fn folders(files: &[(&str, &str)]) -> BTreeMap<String, Graph> {
    let files: Vec<(PathBuf, String)> = files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
    folder_graphs(&files).unwrap()
}

#[test]
fn a_cycle_inside_a_folder_is_found_also_through_a_re_export() {
    let gs = folders(&[
        ("lib.rs", "pub mod a;"),
        ("a/mod.rs", "mod x; mod y; pub use x::Thing;\npub use y::*;"),
        // y reaches x only through mod.rs's re-export of Thing; x uses y's item through the glob
        ("a/x.rs", "pub struct Thing; fn f() { super::helper() }"),
        ("a/y.rs", "pub fn helper() { let _ = super::Thing; }"),
    ]);
    let g = &gs["a"];
    assert!(!g["mod.rs"].contains_key("x"), "a re-export is no edge of mod.rs: {g:?}");
    let c = find_cycle(g).expect("x -> y -> x");
    assert_eq!(c.len(), 3, "{c:?}");
    let msg = describe_cycle_in(g, &c, "the files of a/");
    assert!(msg.contains("a/y.rs uses super::Thing") && msg.contains("a/x.rs uses super::helper"), "{msg}");
}

#[test]
fn a_folder_graph_counts_mod_rs_and_sub_folders() {
    let files = [
        ("lib.rs", "pub mod a;"),
        // mod.rs uses its child x by a relative path and defines an item y uses
        ("a/mod.rs", "mod x; mod y; mod b; pub struct Root;\nfn r() { x::f(); }"),
        ("a/x.rs", "pub fn f() { let _ = crate::a::b::c::G; println!(\"{}\", crate::a::b::N); }"),
        ("a/y.rs", "use super::Root;\nfn g() { let pages = 1; let _ = pages; }"),
        ("a/b/mod.rs", "pub mod c; pub const N: u8 = 1;"),
        ("a/b/c.rs", "pub const G: u8 = 1; #[cfg(test)] mod tests { use super::super::N; }"),
    ];
    let gs = folders(&files);
    let a = &gs["a"];
    assert_eq!(a["mod.rs"].keys().collect::<Vec<_>>(), ["x"]);
    assert_eq!(a["x"].keys().collect::<Vec<_>>(), ["b"], "a macro's crate path is an edge: {a:?}");
    assert_eq!(a["y"].keys().collect::<Vec<_>>(), ["mod.rs"]);
    assert!(a["b"].is_empty(), "{a:?}");
    assert_eq!(find_cycle(a), None);
    assert_eq!(gs["a::b"]["c"].keys().collect::<Vec<_>>(), ["mod.rs"], "{:?}", gs["a::b"]);
    // mod.rs using a child that uses an item of mod.rs is a cycle
    let mut with_cycle = files.to_vec();
    with_cycle[2] = ("a/x.rs", "pub fn f() { let _ = super::Root; }");
    let gs = folders(&with_cycle);
    let c = find_cycle(&gs["a"]).expect("mod.rs -> x -> mod.rs");
    assert!(c.contains(&"mod.rs".to_string()) && c.contains(&"x".to_string()), "{c:?}");
}

fn fixture(files: &[(&str, &str)]) -> Graph {
    let files: Vec<(PathBuf, String)> = files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
    graph_of(&files).unwrap()
}

#[test]
fn a_deliberate_cycle_is_found_and_named() {
    let g = fixture(&[
        ("lib.rs", "pub mod a; pub mod b; pub mod c;"),
        ("a.rs", "use crate::b::Thing;\nfn f() {}"),
        ("b/mod.rs", "mod inner;\npub struct Thing;"),
        // The edge back to a, two levels down and only in an expression: still an edge of b.
        ("b/inner.rs", "fn g() { let _ = crate::c::h(); }"),
        ("c.rs", "pub fn h() { super::a::f() }"),
    ]);
    let c = find_cycle(&g).expect("a -> b -> c -> a is a cycle");
    assert_eq!(c.len(), 4, "{c:?}");
    let msg = describe_cycle(&g, &c);
    for edge in ["a -> b", "b -> c", "c -> a"] {
        assert!(msg.contains(edge), "{msg}");
    }
    assert!(msg.contains("b/inner.rs uses crate::c::h"), "{msg}");
    assert!(msg.contains("c.rs uses super::a::f"), "{msg}");
}

#[test]
fn acyclic_fixture_passes_and_macros_groups_and_tests_count() {
    let files = [
        ("a.rs", "use crate::{b::{self, X}, c as cc};\nfn f() { println!(\"{}\", crate::d::N); }"),
        ("b.rs", "pub struct X; fn g() -> crate::c::T { todo!() }"),
        ("c.rs", "pub struct T; #[cfg(test)] mod tests { use super::super::d::N; use super::T; }"),
        (
            "d.rs",
            "pub const N: u8 = 1;\n/// [`crate::a`] is only a doc link\npub fn k() {}\nmacro_rules! m { () => { $crate::a::f() } }",
        ),
    ];
    let g = fixture(&files);
    assert_eq!(g["a"].keys().collect::<Vec<_>>(), ["b", "c", "d"]);
    assert_eq!(g["b"].keys().collect::<Vec<_>>(), ["c"]);
    assert_eq!(g["c"].keys().collect::<Vec<_>>(), ["d"], "a test module's `super::super::d` is an edge of c");
    assert!(g["d"].is_empty(), "doc links and `$crate` are no edges: {g:?}");
    assert_eq!(find_cycle(&g), None);
    // Closing the loop from a test module is a cycle too.
    let mut with_test = files.to_vec();
    with_test[3] = ("d.rs", "pub const N: u8 = 1;\n#[cfg(test)]\nmod tests { #[test] fn t() { crate::a::f() } }");
    let c = find_cycle(&fixture(&with_test)).expect("d's tests use a");
    assert_eq!(c.first(), c.last());
    assert!(c.contains(&"d".to_string()) && c.contains(&"a".to_string()), "{c:?}");
}
