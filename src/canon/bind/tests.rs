use super::*;

fn verdict(text: &str, name: &str) -> Result<(), Reason> {
    bind(text.as_bytes(), None).verdict(name.as_bytes())
}

#[test]
fn parameters_and_locals_are_verified() {
    let k = "void f(float* a, int n) { int i = 0; for (int j = 0; j < n; j++) a[j] = i; }";
    for n in ["a", "n", "i", "j"] {
        assert_eq!(verdict(k, n), Ok(()), "{n}");
    }
    assert_eq!(verdict(k, "f"), Err(Reason::Linkage));
}
