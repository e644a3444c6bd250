//! Block scopes as the binder orders them: deeply nested blocks, sibling
//! blocks after nested ones, `for`-init declarations in nested loops,
//! statement expressions, declarations after statements, shadowing, labels.
//! The texts are generated with their scopes known, so each name's every
//! occurrence is known to refer to a declaration in the kernel or not; a
//! name renamed by inference must have no occurrence of the second kind
//! (there it names something outside the kernel, whose renaming would give
//! kernels that compile differently one key).

use kcache::canon::{CanonOptions, Renamer};

mod rng;
use rng::Rng;

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const LABELS: [&str; 2] = ["L1", "L2"];

/// A generated function and what each spelling's occurrences refer to.
#[derive(Default)]
struct Gen {
    out: String,
    /// Declarations in scope, innermost last (a stack of blocks).
    scopes: Vec<Vec<&'static str>>,
    /// Spellings with an occurrence no declaration in the kernel covers.
    free: Vec<&'static str>,
    labels: Vec<&'static str>,
    gotos: Vec<&'static str>,
}

impl Gen {
    fn in_scope(&self, n: &str) -> bool {
        self.scopes.iter().any(|s| s.contains(&n))
    }

    fn name_use(&mut self, rng: &mut Rng) {
        // Mostly a name in scope, so that many texts rename some.
        let seen: Vec<&'static str> = self.scopes.iter().flatten().copied().collect();
        let n = if !seen.is_empty() && rng.below(16) > 0 {
            seen[rng.below(seen.len())]
        } else {
            NAMES[rng.below(NAMES.len())]
        };
        if !self.in_scope(n) {
            self.free.push(n);
        }
        self.out.push_str(n);
    }

    fn expr(&mut self, rng: &mut Rng, depth: usize) {
        match rng.below(if depth > 3 { 3 } else { 40 }) {
            0 | 8..=12 => self.out.push('1'),
            3..=7 => {
                self.expr(rng, depth + 1);
                self.out.push_str(" + ");
                self.expr(rng, depth + 1);
            }
            39 => {
                // A statement expression: a block whose last statement is
                // its value.
                self.out.push_str("({ ");
                self.scopes.push(Vec::new());
                self.stmts(rng, depth + 1);
                self.expr(rng, depth + 1);
                self.out.push_str("; })");
                self.scopes.pop();
            }
            _ => self.name_use(rng),
        }
    }

    fn decl(&mut self, rng: &mut Rng, depth: usize) {
        let n = NAMES[rng.below(NAMES.len())];
        self.out.push_str("int ");
        self.out.push_str(n);
        // The scope begins at the end of the declarator, before its
        // initializer: `int a = a;` refers to itself.
        self.scopes.last_mut().unwrap().push(n);
        if rng.below(2) == 0 {
            self.out.push_str(" = ");
            self.expr(rng, depth + 1);
        }
        self.out.push_str("; ");
    }

    fn block(&mut self, rng: &mut Rng, depth: usize) {
        self.out.push_str("{ ");
        self.scopes.push(Vec::new());
        self.stmts(rng, depth + 1);
        self.scopes.pop();
        self.out.push_str("} ");
    }

    fn stmts(&mut self, rng: &mut Rng, depth: usize) {
        for _ in 0..rng.below(if depth > 3 { 2 } else { 5 }) {
            self.stmt(rng, depth);
        }
    }

    fn stmt(&mut self, rng: &mut Rng, depth: usize) {
        let kinds = if depth > 5 { 3 } else { 9 };
        match rng.below(kinds) {
            0 => self.decl(rng, depth),
            1 => {
                self.expr(rng, depth);
                self.out.push_str("; ");
            }
            2 => {
                let l = LABELS[rng.below(LABELS.len())];
                if rng.below(2) == 0 && !self.labels.contains(&l) {
                    self.labels.push(l);
                    self.out.push_str(&format!("{l}: ; "));
                } else {
                    self.gotos.push(l);
                    self.out.push_str(&format!("goto {l}; "));
                }
            }
            3 | 4 => self.block(rng, depth),
            5 | 6 => {
                // A `for` with a declaration: its scope is the statement.
                self.out.push_str("for (");
                self.scopes.push(Vec::new());
                if rng.below(3) > 0 {
                    self.decl(rng, depth);
                } else {
                    self.expr(rng, depth);
                    self.out.push_str("; ");
                }
                self.expr(rng, depth);
                self.out.push_str("; ");
                self.name_use(rng);
                self.out.push_str("++) ");
                if rng.below(4) == 0 {
                    // A statement, not a declaration.
                    self.expr(rng, depth + 1);
                    self.out.push_str("; ");
                } else {
                    self.block(rng, depth);
                }
                self.scopes.pop();
            }
            7 => {
                self.out.push_str("if (");
                self.expr(rng, depth);
                self.out.push_str(") ");
                self.block(rng, depth);
                if rng.below(2) == 0 {
                    self.out.push_str("else ");
                    self.block(rng, depth);
                }
            }
            _ => {
                self.out.push_str("while (");
                self.expr(rng, depth);
                self.out.push_str(") ");
                self.block(rng, depth);
            }
        }
    }
}

/// A kernel of nested blocks; the spellings that must not be renamed.
fn kernel(rng: &mut Rng) -> (String, Vec<&'static str>) {
    let mut g = Gen::default();
    let param = NAMES[rng.below(NAMES.len())];
    g.out.push_str(&format!("void k(int {param}) "));
    g.scopes.push(vec![param]);
    g.block(rng, 0);
    let mut free = g.free;
    // A label's uses refer to it wherever it stands in the function.
    free.extend(g.gotos.into_iter().filter(|l| !g.labels.contains(l)));
    (g.out, free)
}

#[test]
fn a_name_renamed_in_nested_blocks_is_declared_wherever_it_stands() {
    let options = CanonOptions {
        infer: true,
        symbols: false,
        scope_locals: false,
        ..CanonOptions::default()
    };
    let r = Renamer::new(&options);
    let mut rng = Rng(0xb10c_5c0e);
    let (mut renamed, mut refused) = (0, 0);
    for _ in 0..8192 {
        let (text, free) = kernel(&mut rng);
        let c = r.canonicalize(text.as_bytes());
        for n in &c.inferred {
            assert!(
                !free.contains(&n.as_str()),
                "`{n}` renamed but it stands outside every declaration of it in:\n{text}\n=> {}",
                c.text_lossy()
            );
        }
        renamed += c.inferred.len();
        refused += NAMES.iter().filter(|n| free.contains(n)).count();
    }
    // The texts hold both kinds of names.
    assert!(renamed > 8000 && refused > 1200, "{renamed} {refused}");
}
