//! The translation unit of a group, and which kernels its diagnostics blame.

use super::PRELUDE_LABEL;
use crate::backend::KernelSource;

/// The translation unit of `kernels` after `prelude`.
pub(super) fn render(prelude: &str, kernels: &[KernelSource<'_>]) -> String {
    let len = prelude.len() + kernels.iter().map(|k| k.text.len() + 32).sum::<usize>();
    let mut tu = String::with_capacity(len + 32);
    let mut section = |label: &str, text: &str| {
        tu.push_str("#line 1 \"");
        tu.push_str(label);
        tu.push_str("\"\n");
        tu.push_str(text);
        if !text.ends_with('\n') {
            tu.push('\n');
        }
        // A text whose last line ends in a backslash (or `??/`) would splice
        // the next section's `#line` into it (review 2026-12-02: a kernel
        // ending in `//\` moved its neighbour's lines): an empty line ends it.
        let last = text
            .trim_end_matches(['\n', '\r'])
            .trim_end_matches([' ', '\t', '\x0b', '\x0c', '\0']);
        if last.ends_with('\\') || last.ends_with("??/") {
            tu.push('\n');
        }
    };
    if !prelude.is_empty() {
        section(PRELUDE_LABEL, prelude);
    }
    for k in kernels {
        section(k.symbol, k.text);
    }
    tu
}

/// The kernels the compiler's diagnostics blame: those an error is reported
/// in (`sym:LINE:COL: error:`) or under (`In file included from sym:LINE`).
/// Empty when no error names a kernel.
pub(super) fn blamed(stderr: &str, symbols: &[&str]) -> Vec<String> {
    let at = |s: &str| -> Option<usize> {
        let (name, rest) = s.split_once(':')?;
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        symbols.iter().position(|k| *k == name)
    };
    let mut hit = vec![false; symbols.len()];
    let mut context = Vec::new();
    for line in stderr.lines() {
        let continued = line.strip_prefix("In file included from ").or_else(|| {
            let t = line.trim_start();
            (t.len() < line.len())
                .then(|| t.strip_prefix("from "))
                .flatten()
        });
        if let Some(rest) = continued {
            context.extend(at(rest));
            continue;
        }
        if line.contains(": error:") || line.contains(": fatal error:") {
            if let Some(k) = at(line) {
                hit[k] = true;
            }
            for k in context.drain(..) {
                hit[k] = true;
            }
        } else if line.contains(": warning:") || line.contains(": note:") {
            context.clear();
        }
    }
    symbols
        .iter()
        .zip(hit)
        .filter(|(_, h)| *h)
        .map(|(s, _)| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_labels_each_section() {
        let k = [
            KernelSource {
                symbol: "a",
                text: "void a(void) {}",
            },
            KernelSource {
                symbol: "b",
                text: "void b(void) {}\n",
            },
        ];
        assert_eq!(
            render("#include <math.h>", &k),
            "#line 1 \"<prelude>\"\n#include <math.h>\n\
             #line 1 \"a\"\nvoid a(void) {}\n#line 1 \"b\"\nvoid b(void) {}\n"
        );
        assert_eq!(render("", &k[..1]), "#line 1 \"a\"\nvoid a(void) {}\n");
    }

    #[test]
    fn errors_are_blamed_on_their_kernels() {
        let gcc = "b: In function 'b':\n\
                   b:3:20: error: 'y' undeclared (first use in this function)\n\
                   b:3:20: note: each undeclared identifier is reported only once\n\
                   a:1:1: warning: unused\n";
        assert_eq!(blamed(gcc, &["a", "b", "c"]), ["b"]);
        let header = "In file included from c:1:\n\
                      /src/h.h:1:9: error: expected expression before ';' token\n";
        assert_eq!(blamed(header, &["a", "b", "c"]), ["c"]);
        let nested = "In file included from /src/g.h:2,\n                 from a:4:\n\
                      /src/h.h:1:9: fatal error: x.h: No such file or directory\n";
        assert_eq!(blamed(nested, &["a", "b"]), ["a"]);
        let warning_context =
            "In file included from a:1:\n/src/h.h:1: warning: w\nb:2:1: error: e\n";
        assert_eq!(blamed(warning_context, &["a", "b"]), ["b"]);
        assert!(blamed(
            "ld: cannot find -lfoo\ncollect2: error: ld returned 1",
            &["a"]
        )
        .is_empty());
        assert!(blamed("<prelude>:1:10: fatal error: nope.h: No such file", &["a"]).is_empty());
    }
}
