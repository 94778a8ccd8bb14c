//! The top-level modules of the core crate (`src/X.rs` or `src/X/`) import each other without a
//! cycle: a cycle ties modules together so that none can be read, tested or changed alone.
//!
//! Every `.rs` file under `src/` is parsed with `syn`; an edge A → B is any path into B written
//! in A's code: `use crate::B::…`, `crate::B::f()` in an expression or a type, `super::B` from
//! A's top level, and `crate::B` inside a macro's tokens (`format!("{}", crate::B::x)`). Test
//! modules (`#[cfg(test)]`) count as well. Doc comments do not (an intra-doc link imports nothing).

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
    file: &'a str,
    found: Vec<(Vec<String>, String)>,
}

impl Paths<'_> {
    fn add(&mut self, segments: Vec<String>) {
        let text = segments.join("::");
        self.found.push((self.resolve(&segments), text));
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
                    if colons(i + 1) && colons(i + 2) {
                        if let Some(TokenTree::Ident(next)) = tts.get(i + 3) {
                            self.add(vec!["crate".into(), next.to_string()]);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

fn flatten_use(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push(prefix.iter().cloned().chain([n.ident.to_string()]).collect()),
        syn::UseTree::Rename(r) => out.push(prefix.iter().cloned().chain([r.ident.to_string()]).collect()),
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
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
        for p in out {
            self.add(p);
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
        visit::visit_item_mod(self, m);
        self.scope.pop();
    }
}

/// The graph of top-level modules of the given files (path relative to `src/`, source text).
fn graph_of(files: &[(PathBuf, String)]) -> Result<Graph, String> {
    let tops: BTreeSet<String> = files.iter().filter_map(|(p, _)| module_path(p)?.into_iter().next()).collect();
    let mut g: Graph = tops.iter().map(|t| (t.clone(), BTreeMap::new())).collect();
    for (rel, text) in files {
        let Some(scope) = module_path(rel) else { continue };
        let file = syn::parse_file(text).map_err(|e| format!("{}: {e}", rel.display()))?;
        let name = rel.display().to_string();
        let mut v = Paths { scope: scope.clone(), file: &name, found: Vec::new() };
        v.visit_file(&file);
        for (target, text) in v.found {
            let Some(to) = target.first() else { continue };
            if to != &scope[0] && tops.contains(to) {
                g.get_mut(&scope[0]).unwrap().entry(to.clone()).or_insert_with(|| format!("{} uses {text}", v.file));
            }
        }
    }
    Ok(g)
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
    let mut s = format!("import cycle between top-level modules of numascope-core: {}", cycle.join(" -> "));
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
