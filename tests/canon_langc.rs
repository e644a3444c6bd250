//! A cross-check of verified binding against an independent C parser
//! (`lang-c`, on the text with its directives blanked): every name `--infer`
//! renames is declared in the kernel (a parameter, a local or a label), and
//! every expression occurrence of it is within the scope of one of its
//! declarations; it is never a member, a typedef name, a tag or a function.

use kcache::backend::Language;
use kcache::canon::bind::neutral::defined_function;
use kcache::canon::{CanonOptions, Renamer};
use lang_c::ast::*;
use lang_c::driver::{parse_preprocessed, Config};
use lang_c::span::Span;
use lang_c::visit::{self, Visit};
use proptest::prelude::*;
use std::collections::HashSet;

/// What lang-c's tree says about each name.
#[derive(Default)]
struct Scopes {
    stack: Vec<HashSet<String>>,
    /// Names declared by a parameter or a block-scope declaration.
    declared: HashSet<String>,
    /// Names with an expression occurrence no enclosing declaration covers.
    free: HashSet<String>,
    /// Names standing in any other role: tags, typedef names, functions,
    /// file-scope objects, enumerators.
    other: HashSet<String>,
    /// Struct and union members, declared or accessed: their own namespace,
    /// which renaming must leave as it is.
    members: HashSet<String>,
    labels: HashSet<String>,
    gotos: Vec<String>,
}

fn declarator_name(d: &Declarator) -> Option<&str> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(&id.node.name),
        DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}

/// Parameter names of function declarators inside `d` (a callback's
/// parameters): declared in a prototype scope, which ends with them.
fn prototype_params(d: &Declarator, out: &mut HashSet<String>) {
    if let DeclaratorKind::Declarator(inner) = &d.kind.node {
        prototype_params(&inner.node, out);
    }
    for x in &d.derived {
        if let DerivedDeclarator::Function(fd) = &x.node {
            for p in &fd.node.parameters {
                if let Some(pd) = &p.node.declarator {
                    if let Some(n) = declarator_name(&pd.node) {
                        out.insert(n.to_string());
                    }
                    prototype_params(&pd.node, out);
                }
            }
        }
    }
}

fn is_typedef(specs: &[lang_c::span::Node<DeclarationSpecifier>]) -> bool {
    specs.iter().any(|s| {
        matches!(&s.node, DeclarationSpecifier::StorageClass(c)
            if matches!(c.node, StorageClassSpecifier::Typedef | StorageClassSpecifier::Extern))
    })
}

impl Scopes {
    fn declare(&mut self, name: &str) {
        self.stack
            .last_mut()
            .expect("a scope")
            .insert(name.to_string());
        self.declared.insert(name.to_string());
    }
}

impl<'ast> Visit<'ast> for Scopes {
    fn visit_function_definition(&mut self, f: &'ast FunctionDefinition, _: &'ast Span) {
        if let Some(n) = declarator_name(&f.declarator.node) {
            self.other.insert(n.to_string());
        }
        self.stack.push(HashSet::new());
        for d in &f.declarator.node.derived {
            if let DerivedDeclarator::Function(fd) = &d.node {
                for p in &fd.node.parameters {
                    if let Some(pd) = &p.node.declarator {
                        if let Some(n) = declarator_name(&pd.node) {
                            self.declare(n);
                        }
                        prototype_params(&pd.node, &mut self.declared);
                    }
                }
            }
        }
        self.labels.clear();
        self.gotos.clear();
        self.visit_statement(&f.statement.node, &f.statement.span);
        for g in std::mem::take(&mut self.gotos) {
            if !self.labels.contains(&g) {
                self.free.insert(g);
            }
        }
        self.stack.pop();
    }

    fn visit_declaration(&mut self, d: &'ast Declaration, _: &'ast Span) {
        let typedef = is_typedef(&d.specifiers);
        for s in &d.specifiers {
            self.visit_declaration_specifier(&s.node, &s.span);
        }
        for i in &d.declarators {
            let name = declarator_name(&i.node.declarator.node);
            prototype_params(&i.node.declarator.node, &mut self.declared);
            let function = i
                .node
                .declarator
                .node
                .derived
                .iter()
                .any(|x| matches!(x.node, DerivedDeclarator::Function(_)));
            match name {
                Some(n) if !typedef && !function && !self.stack.is_empty() => self.declare(n),
                Some(n) => {
                    self.other.insert(n.to_string());
                }
                None => {}
            }
            if let Some(init) = &i.node.initializer {
                self.visit_initializer(&init.node, &init.span);
            }
        }
    }

    fn visit_struct_type(&mut self, s: &'ast StructType, span: &'ast Span) {
        if let Some(id) = &s.identifier {
            self.other.insert(id.node.name.clone());
        }
        // Member declarations are no bindings of the kernel.
        let mut inner = Scopes::default();
        visit::visit_struct_type(&mut inner, s, span);
        self.other.extend(inner.declared);
        self.other.extend(inner.other);
        self.members.extend(inner.members);
        // A name in a member's array bound is an expression occurrence.
        self.free.extend(inner.free);
    }

    fn visit_struct_declarator(&mut self, d: &'ast StructDeclarator, span: &'ast Span) {
        if let Some(n) = d.declarator.as_ref().and_then(|d| declarator_name(&d.node)) {
            self.members.insert(n.to_string());
        }
        visit::visit_struct_declarator(self, d, span);
    }

    fn visit_enumerator(&mut self, e: &'ast Enumerator, _: &'ast Span) {
        self.other.insert(e.identifier.node.name.clone());
    }

    fn visit_statement(&mut self, s: &'ast Statement, span: &'ast Span) {
        match s {
            Statement::Compound(items) => {
                self.stack.push(HashSet::new());
                for i in items {
                    self.visit_block_item(&i.node, &i.span);
                }
                self.stack.pop();
            }
            Statement::Goto(g) => self.gotos.push(g.node.name.clone()),
            _ => visit::visit_statement(self, s, span),
        }
    }

    fn visit_label(&mut self, l: &'ast Label, span: &'ast Span) {
        match l {
            Label::Identifier(id) => {
                self.labels.insert(id.node.name.clone());
                self.declared.insert(id.node.name.clone());
            }
            _ => visit::visit_label(self, l, span),
        }
    }

    fn visit_for_statement(&mut self, f: &'ast ForStatement, span: &'ast Span) {
        self.stack.push(HashSet::new());
        visit::visit_for_statement(self, f, span);
        self.stack.pop();
    }

    fn visit_member_expression(&mut self, m: &'ast MemberExpression, _: &'ast Span) {
        self.members.insert(m.identifier.node.name.clone());
        self.visit_expression(&m.expression.node, &m.expression.span);
    }

    fn visit_expression(&mut self, e: &'ast Expression, span: &'ast Span) {
        if let Expression::Identifier(id) = e {
            let n = &id.node.name;
            if !self.stack.iter().any(|s| s.contains(n)) {
                self.free.insert(n.clone());
            }
            return;
        }
        visit::visit_expression(self, e, span);
    }

    fn visit_type_specifier(&mut self, t: &'ast TypeSpecifier, span: &'ast Span) {
        if let TypeSpecifier::TypedefName(id) = t {
            self.other.insert(id.node.name.clone());
        }
        visit::visit_type_specifier(self, t, span);
    }
}

/// Types the kernels take from headers, declared for lang-c (which parses
/// but does not preprocess).
const PRELUDE: &str =
    "typedef unsigned long size_t; typedef int int32_t; typedef unsigned char uint8_t;\n";

/// The text with its directive lines blanked (lang-c takes preprocessed text;
/// the kernels checked define no macro the code needs).
fn blank_directives(text: &str) -> String {
    // Comments go too, as a preprocessor would take them.
    let mut code = String::new();
    for t in kcache::canon::lexer::lex(text.as_bytes()) {
        if t.kind.is_comment() {
            code.push(' ');
        } else {
            code.push_str(&text[t.span]);
        }
    }
    code.lines()
        .map(|l| {
            if l.trim_start().starts_with('#') {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The scopes lang-c finds in `text`, if it parses it.
fn scopes(text: &str) -> Option<Scopes> {
    let source = format!("{PRELUDE}{}", blank_directives(text));
    let parse = parse_preprocessed(&Config::with_gcc(), source).ok()?;
    let mut s = Scopes::default();
    s.visit_translation_unit(&parse.unit);
    Some(s)
}

/// Checks one C kernel; `None` when lang-c does not parse it.
fn check(text: &str) -> Option<usize> {
    let s = scopes(text)?;
    let c = Renamer::new(&CanonOptions {
        kernel_name: defined_function(text.as_bytes()),
        infer: true,
        ..CanonOptions::default()
    })
    .canonicalize(text.as_bytes());
    for name in &c.inferred {
        assert!(
            s.declared.contains(name),
            "`{name}` is not declared per lang-c:\n{text}"
        );
        assert!(
            !s.free.contains(name),
            "`{name}` has a free occurrence per lang-c:\n{text}"
        );
        assert!(
            !s.other.contains(name),
            "`{name}` has another role per lang-c:\n{text}"
        );
    }
    // Renaming leaves every member as it was, declared or accessed.
    let canonical = scopes(&c.text_lossy()).expect("lang-c parses the canonical text");
    assert_eq!(canonical.members, s.members, "members changed:\n{text}");
    Some(c.inferred.len())
}

/// The C kernels of the foreign corpus that define no macro their code uses.
fn corpus_c() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/foreign");
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .filter(|(_, t)| !t.contains("#define"))
        .collect();
    v.sort();
    v
}

#[test]
fn inferred_names_of_the_c_corpus_are_bound_per_lang_c() {
    let mut checked = 0;
    let mut renamed = 0;
    for (file, text) in corpus_c() {
        match check(&text) {
            Some(n) => {
                checked += 1;
                renamed += n;
            }
            None => eprintln!("{file}: lang-c does not parse it"),
        }
    }
    assert!(checked >= 15, "only {checked} kernels checked");
    assert!(renamed >= 60, "only {renamed} names checked");
}

#[test]
fn inferred_names_of_the_tune_renderings_are_bound_per_lang_c() {
    use kcache::tune::render::{render, search_space, Problem};
    let p = Problem { m: 4, k: 8, n: 4 };
    let mut checked = 0;
    for config in search_space() {
        for k in render(config, p, Language::C).kernels {
            assert!(check(&k.text).is_some_and(|n| n > 0), "{}", k.text);
            checked += 1;
        }
    }
    assert!(checked >= 100);
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256),
        ..ProptestConfig::default()
    }
}

/// A small random C kernel: nested blocks and loops that declare, shadow
/// and use a few names, some of them declared nowhere (free).
fn kernel() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["a", "b", "c", "d", "g", "h"]);
    let stmt = prop_oneof![
        (name.clone(), name.clone()).prop_map(|(x, y)| format!("{x} = {y} + 1;")),
        (name.clone(), name.clone()).prop_map(|(x, y)| format!("float {x} = {y};")),
        (name.clone(), name.clone())
            .prop_map(|(x, y)| format!("for (int {x} = 0; {x} < {y}; {x}++) {y} += {x};")),
        name.clone()
            .prop_map(|x| format!("{{ int {x} = 2; {x}++; }}")),
        (name.clone(), name.clone())
            .prop_map(|(x, y)| format!("if ({x}) {{ float {y} = {x}; }} else {x} = 0;")),
        (name.clone(), name).prop_map(|(x, y)| format!("p[{x}] = {y}.re;")),
    ];
    (
        prop::collection::vec(stmt, 1..8),
        prop::sample::subsequence(vec!["a", "b", "c"], 0..3),
    )
        .prop_map(|(body, params)| {
            let params: Vec<String> = params.iter().map(|p| format!("int {p}")).collect();
            let params = if params.is_empty() {
                String::from("float* p")
            } else {
                format!("float* p, {}", params.join(", "))
            };
            format!("void k({params}) {{\n  {}\n}}\n", body.join("\n  "))
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn inferred_names_of_random_kernels_are_bound_per_lang_c(text in kernel()) {
        prop_assert!(check(&text).is_some(), "lang-c does not parse\n{}", text);
    }
}
