//! Which names the rules know by their spelling: symbols, scope locals,
//! reserved names and keywords.

/// `i` then digits.
pub fn is_symbol(name: &[u8]) -> bool {
    name.len() > 1 && name[0] == b'i' && is_digits(&name[1..])
}

/// `v`, digits, `_`, anything.
pub fn is_scope_local(name: &[u8]) -> bool {
    if name.first() != Some(&b'v') {
        return false;
    }
    let digits = name[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && name.get(1 + digits) == Some(&b'_')
}

pub(super) fn is_digits(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(u8::is_ascii_digit)
}

/// `<prefix><digits>`.
pub(super) fn is_numbered(name: &[u8], prefix: &[u8]) -> bool {
    name.starts_with(prefix) && is_digits(&name[prefix.len()..])
}

/// The implementation's reserved namespace, `__x` and `_X`: never renamed
/// (keywords and the macros a driver defines unasked live there).
pub fn is_reserved(name: &[u8]) -> bool {
    matches!(name, [b'_', b'_', ..] | [b'_', b'A'..=b'Z', ..])
}

/// [`is_keyword`], or a keyword of one language that is an ordinary name in
/// the others: OpenCL C's `vec_step`, an operator like `sizeof`. A kernel
/// declaring one does not compile as OpenCL, so renamed it shared the key
/// of its twin declaring `q`, which does (review 2026-12-02, GPU F15): the
/// renamer never renames one. ([`is_keyword`] leaves them out: the isolation
/// check skips keywords, and must still count a C kernel's function
/// `vec_step` among the names it declares.) Clang's other OpenCL operator,
/// `__builtin_astype`, is in the reserved namespace, never renamed (see
/// [`is_reserved`]).
pub fn is_renamer_keyword(name: &[u8]) -> bool {
    is_keyword(name) || name == b"vec_step"
}

/// C, C++, CUDA and OpenCL C keywords (and the OpenCL and CUDA qualifiers a
/// declaration can use), none of which a declaration can rebind.
pub fn is_keyword(name: &[u8]) -> bool {
    // A match compiles to a switch on length and first bytes: no search.
    matches!(
        name,
        b"_Alignas"
            | b"_Alignof"
            | b"_Atomic"
            | b"_Bool"
            | b"_Complex"
            | b"_Generic"
            | b"_Imaginary"
            | b"_Noreturn"
            | b"_Static_assert"
            | b"_Thread_local"
            | b"__constant"
            | b"__device__"
            | b"__global"
            | b"__global__"
            | b"__host__"
            | b"__kernel"
            | b"__local"
            | b"__private"
            | b"__shared__"
            | b"alignas"
            | b"alignof"
            | b"and"
            | b"and_eq"
            | b"asm"
            | b"auto"
            | b"bitand"
            | b"bitor"
            | b"bool"
            | b"break"
            | b"case"
            | b"catch"
            | b"char"
            | b"class"
            | b"clk_event_t"
            | b"compl"
            | b"const"
            | b"const_cast"
            | b"constant"
            | b"consteval"
            | b"constexpr"
            | b"constinit"
            | b"continue"
            | b"decltype"
            | b"default"
            | b"delete"
            | b"do"
            | b"double"
            | b"dynamic_cast"
            | b"else"
            | b"enum"
            | b"explicit"
            | b"export"
            | b"extern"
            | b"false"
            | b"float"
            | b"for"
            | b"friend"
            | b"generic"
            | b"global"
            | b"goto"
            | b"half"
            | b"if"
            | b"image1d_array_t"
            | b"image1d_buffer_t"
            | b"image2d_array_depth_t"
            | b"image2d_array_msaa_depth_t"
            | b"image2d_array_msaa_t"
            | b"image2d_array_t"
            | b"image2d_depth_t"
            | b"image2d_msaa_depth_t"
            | b"image2d_msaa_t"
            | b"inline"
            | b"int"
            | b"kernel"
            | b"local"
            | b"long"
            | b"mutable"
            | b"namespace"
            | b"new"
            | b"noexcept"
            | b"not"
            | b"not_eq"
            | b"nullptr"
            | b"operator"
            | b"or"
            | b"or_eq"
            | b"pipe"
            | b"private"
            | b"protected"
            | b"public"
            | b"queue_t"
            | b"register"
            | b"reinterpret_cast"
            | b"reserve_id_t"
            | b"restrict"
            | b"return"
            | b"short"
            | b"signed"
            | b"sizeof"
            | b"static"
            | b"static_assert"
            | b"static_cast"
            | b"struct"
            | b"switch"
            | b"template"
            | b"this"
            | b"thread_local"
            | b"throw"
            | b"true"
            | b"try"
            | b"typedef"
            | b"typeid"
            | b"typename"
            | b"typeof_unqual"
            | b"union"
            | b"unsigned"
            | b"using"
            | b"virtual"
            | b"void"
            | b"volatile"
            | b"while"
            | b"xor"
            | b"xor_eq"
    )
}

/// A raw-keyed kernel's canonical text: the marker, then the text as it is.
pub(super) fn raw_text(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(super::RAW_MARKER.len() + text.len());
    out.extend_from_slice(super::RAW_MARKER);
    out.extend_from_slice(text);
    out
}

/// Bytes as text, invalid UTF-8 replaced.
pub(super) fn lossy(bytes: &[u8]) -> String {
    // Names are nearly always UTF-8: checked whole, copied once.
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// [`lossy`] of bytes already owned: no copy when they are UTF-8.
pub(super) fn lossy_owned(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| lossy(e.as_bytes()))
}

/// Adds one to the decimal number `bytes[from..end]` (empty: zero), in
/// place; where it gains a digit, the bytes after it move up one. Where the
/// number now ends.
pub(super) fn increment_decimal(bytes: &mut Vec<u8>, from: usize, end: usize) -> usize {
    for d in bytes[from..end].iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return end;
        }
    }
    bytes.insert(from, b'1');
    end + 1
}
