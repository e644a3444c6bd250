//! How the token adapter reads a word: keyword, type name, qualifier, or a
//! construct whose operands are opaque.

use super::tokens::Tok;
use super::Reason;

/// What an identifier-spelled token is for the grammar.
pub fn classify(name: &[u8], glsl: bool, typedef: bool) -> Tok {
    if typedef || is_type_name(name, glsl) {
        return Tok::TypeName;
    }
    match name {
        b"typedef" => Tok::Typedef,
        b"extern" => Tok::Extern,
        b"static" | b"auto" | b"register" | b"inline" | b"__inline" | b"__inline__"
        | b"_Thread_local" | b"thread_local" | b"__forceinline__" | b"__noinline__"
        | b"constexpr" | b"_Noreturn" => Tok::Storage,
        b"const" | b"volatile" | b"restrict" | b"__restrict__" | b"__restrict" | b"_Atomic"
        | b"__read_only" | b"__write_only" | b"__read_write" | b"read_only" | b"write_only"
        | b"read_write" | b"signed" | b"unsigned" | b"short" | b"long" | b"_Complex" => Tok::Qual,
        b"__global__" | b"__device__" | b"__host__" | b"__shared__" | b"__constant__"
        | b"__managed__" | b"__kernel" | b"__global" | b"__local" | b"__constant"
        | b"__private" | b"__generic" => Tok::Space,
        b"struct" | b"union" => Tok::Struct,
        b"enum" => Tok::Enum,
        b"if" => Tok::If,
        b"else" => Tok::Else,
        b"for" => Tok::For,
        b"while" => Tok::While,
        b"do" => Tok::Do,
        b"switch" => Tok::Switch,
        b"case" => Tok::Case,
        b"default" => Tok::Default,
        b"return" => Tok::Return,
        b"break" => Tok::Break,
        b"continue" => Tok::Continue,
        b"goto" => Tok::Goto,
        b"sizeof" | b"_Alignof" | b"alignof" | b"__alignof__" | b"_Generic" | b"true"
        | b"false" | b"nullptr" | b"_Static_assert" | b"static_assert" => Tok::Op,
        b"class" | b"template" | b"typename" | b"namespace" | b"using" | b"operator" | b"new"
        | b"delete" | b"this" | b"try" | b"catch" | b"throw" | b"decltype" | b"typeof"
        | b"__typeof__" | b"__typeof" | b"__extension__" | b"virtual" | b"friend" | b"public"
        | b"protected" | b"mutable" | b"explicit" | b"const_cast" | b"static_cast"
        | b"dynamic_cast" | b"reinterpret_cast" | b"typeid" | b"concept" | b"requires"
        | b"co_await" | b"co_return" | b"co_yield" | b"__builtin_va_arg" | b"__label__" => {
            Tok::Unsupported
        }
        _ if glsl => match name {
            b"in" | b"out" | b"inout" | b"uniform" | b"buffer" | b"shared" | b"coherent"
            | b"readonly" | b"writeonly" | b"flat" | b"smooth" | b"noperspective" | b"highp"
            | b"mediump" | b"lowp" | b"precise" | b"invariant" => Tok::Space,
            b"discard" => Tok::Op,
            // `private` etc. are C keywords GLSL reserves; `struct` above.
            _ => Tok::Ident,
        },
        _ => Tok::Ident,
    }
}

/// Whether `name` is surely no word this module (or `Word::of` in
/// [`super::tokens`]) reads specially: its second byte is a digit, as in
/// no keyword, type name or construct word of C, CUDA or OpenCL (GLSL's
/// `f16vec2` has one: never so for GLSL). Generated names (`i3001`,
/// `v12_acc`) nearly all are, so their reading skips every list.
pub fn is_plain(name: &[u8], glsl: bool) -> bool {
    !glsl && name.get(1).is_some_and(u8::is_ascii_digit)
}

/// Whether `name` is spelled with ASCII letters, digits and `_` alone: a
/// name every compiler kcache drives takes as one.
pub fn is_ascii_word(name: &[u8]) -> bool {
    name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// Whether GLSL (glslang) may read `name` as a keyword or refuse it as a
/// name a shader declares: a reserved word, a built-in type (its samplers,
/// images, textures, matrices, vectors and sized scalars), a word an
/// `#extension` makes a keyword (by its vendor suffix), anything spelled
/// `gl_...`, or a spelling other than ASCII letters, digits and `_`. A
/// kernel declaring one does not compile where one declaring `v` does.
pub fn is_glsl_reserved(name: &[u8]) -> bool {
    if !is_ascii_word(name) || name.starts_with(b"gl_") {
        return true;
    }
    let typed = |n: &[u8]| {
        n.starts_with(b"sampler")
            || n.starts_with(b"image")
            || n.starts_with(b"texture")
            || n.starts_with(b"subpassInput")
    };
    let signed = name
        .strip_prefix(b"i")
        .or_else(|| name.strip_prefix(b"u"))
        .unwrap_or(name);
    typed(name)
        || typed(signed)
        || vector_or_matrix(name)
        || [
            &b"EXT"[..],
            b"NV",
            b"ARB",
            b"AMD",
            b"KHR",
            b"QCOM",
            b"INTEL",
            b"HUAWEI",
        ]
        .iter()
        .any(|v| name.ends_with(v))
        || matches!(
            name,
            b"attribute"
                | b"varying"
                | b"atomic_uint"
                | b"centroid"
                | b"patch"
                | b"sample"
                | b"subroutine"
                | b"precision"
                | b"common"
                | b"partition"
                | b"active"
                | b"resource"
                | b"noinline"
                | b"external"
                | b"interface"
                | b"fixed"
                | b"superp"
                | b"input"
                | b"output"
                | b"filter"
                | b"cast"
                | b"sampler"
                | b"demote"
                | b"devicecoherent"
                | b"queuefamilycoherent"
                | b"workgroupcoherent"
                | b"subgroupcoherent"
                | b"shadercallcoherent"
                | b"nonprivate"
        )
        || sized_scalar(name)
}

/// `int8_t` ... `uint64_t`, `float16_t` ... `float64_t` (GLSL extensions).
fn sized_scalar(name: &[u8]) -> bool {
    let Some(n) = name.strip_suffix(b"_t") else {
        return false;
    };
    let digits = n.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    matches!(&n[..n.len() - digits], b"int" | b"uint" | b"float")
}

/// `vec3`, `ivec2`, `f16vec4`, `mat2x3`, `dmat4`, `u8vec2`: a base type
/// prefix (`i`, `u`, `b`, `d`, `h`, `f`), a size, `vec` or `mat`, its
/// dimensions.
fn vector_or_matrix(name: &[u8]) -> bool {
    let rest = match name.first() {
        Some(b'i' | b'u' | b'b' | b'd' | b'h' | b'f') => &name[1..],
        _ => name,
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = &rest[digits..];
    let Some(dims) = rest
        .strip_prefix(b"vec")
        .or_else(|| rest.strip_prefix(b"mat"))
    else {
        return false;
    };
    matches!(dims, [b'2'..=b'4'] | [b'2'..=b'4', b'x', b'2'..=b'4'])
}

/// OpenCL C's address-space and kernel keywords without underscores.
pub fn is_opencl_space(name: &[u8]) -> bool {
    matches!(
        name,
        b"kernel" | b"global" | b"local" | b"constant" | b"private" | b"generic"
    )
}

/// A construct whose parenthesized operands are opaque, by its first word.
pub fn opaque_construct(name: &[u8], glsl: bool) -> Option<Reason> {
    match name {
        b"__attribute__"
        | b"__attribute"
        | b"__declspec"
        | b"__launch_bounds__"
        | b"__cluster_dims__"
        | b"__align__"
        | b"alignas"
        | b"_Alignas"
        | b"__builtin_offsetof"
        | b"offsetof" => Some(Reason::Attribute),
        b"asm" | b"__asm__" | b"__asm" => Some(Reason::Asm),
        b"_Pragma" | b"__pragma" => Some(Reason::Directive),
        b"layout" if glsl => Some(Reason::Attribute),
        _ => None,
    }
}

/// Builtin type names of C, CUDA, OpenCL and GLSL (the vector types
/// included): spelled like identifiers, parsed as type specifiers.
fn is_type_name(name: &[u8], glsl: bool) -> bool {
    let base = |n: &[u8]| {
        matches!(
            n,
            b"void"
                | b"char"
                | b"int"
                | b"float"
                | b"double"
                | b"bool"
                | b"_Bool"
                | b"half"
                | b"__half"
                | b"__nv_bfloat16"
                | b"size_t"
                | b"ptrdiff_t"
                | b"intptr_t"
                | b"uintptr_t"
                | b"int8_t"
                | b"int16_t"
                | b"int32_t"
                | b"int64_t"
                | b"uint8_t"
                | b"uint16_t"
                | b"uint32_t"
                | b"uint64_t"
                | b"uchar"
                | b"ushort"
                | b"uint"
                | b"ulong"
                | b"dim3"
                | b"wchar_t"
                | b"char8_t"
                | b"char16_t"
                | b"char32_t"
                | b"image2d_t"
                | b"image3d_t"
                | b"image1d_t"
                | b"sampler_t"
                | b"event_t"
                | b"longlong"
                | b"ulonglong"
        )
    };
    if base(name) {
        return true;
    }
    // Vector types: `float4`, `uint2`, `half16`, ...; GLSL `vec3`, `ivec2`, `mat4`.
    let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits > 0 && digits < name.len() {
        let (stem, n) = name.split_at(name.len() - digits);
        if matches!(n, b"2" | b"3" | b"4" | b"8" | b"16" | b"1")
            && matches!(
                stem,
                b"char"
                    | b"uchar"
                    | b"short"
                    | b"ushort"
                    | b"int"
                    | b"uint"
                    | b"long"
                    | b"ulong"
                    | b"longlong"
                    | b"ulonglong"
                    | b"float"
                    | b"double"
                    | b"half"
                    | b"__half"
                    | b"bool"
            )
        {
            return true;
        }
    }
    glsl && matches!(
        name,
        b"vec2"
            | b"vec3"
            | b"vec4"
            | b"ivec2"
            | b"ivec3"
            | b"ivec4"
            | b"uvec2"
            | b"uvec3"
            | b"uvec4"
            | b"bvec2"
            | b"bvec3"
            | b"bvec4"
            | b"dvec2"
            | b"dvec3"
            | b"dvec4"
            | b"mat2"
            | b"mat3"
            | b"mat4"
            | b"float16_t"
            | b"f16vec2"
            | b"f16vec4"
    )
}

/// Why nothing may be renamed when a word the grammar reads as a keyword
/// is a macro where the kernel is compiled (`-Dstatic=extern`, a header's
/// `#define register`): the declarations are not what they read as.
pub fn keyword_macro(macros: Option<&crate::canon::MacroNames>) -> Option<String> {
    // Not `bool`: `<stdbool.h>` defines it, as `_Bool`.
    const STRUCTURAL: [&str; 35] = [
        "typedef", "extern", "static", "auto", "register", "struct", "union", "enum", "if", "else",
        "for", "while", "do", "switch", "case", "default", "return", "break", "continue", "goto",
        "sizeof", "const", "volatile", "void", "char", "short", "int", "long", "float", "double",
        "signed", "unsigned", "_Bool", "class", "typename",
    ];
    let m = macros?;
    let kw = STRUCTURAL.iter().find(|k| m.contains(k.as_bytes()))?;
    Some(format!(
        "`{kw}` is a macro where it is compiled: its declarations are not what they read as"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-string literals of a source text.
    fn literals(src: &str) -> Vec<&str> {
        src.split("b\"")
            .skip(1)
            .filter_map(|l| l.split('"').next())
            .collect()
    }

    #[test]
    fn no_listed_word_is_plain_but_the_vector_sizes_and_glsl_words() {
        // Every word the lists read (the vector types are a stem of these
        // and a size) and those `Word::of` tests itself.
        let this = include_str!("keywords.rs");
        let mut words = literals(&this[..this.find("#[cfg(test)]").unwrap()]);
        let tokens = include_str!("tokens.rs");
        let of = &tokens[tokens.find("fn of(").unwrap()..];
        words.extend(literals(&of[..of.find("\n    }\n").unwrap()]));
        assert!(words.len() > 150, "{}", words.len());
        for word in words {
            let plain = is_plain(word.as_bytes(), false);
            // `16` is a vector size, never a name on its own.
            let allowed = matches!(word, "16" | "f16vec2" | "f16vec4");
            assert!(!plain || allowed, "{word}");
        }
    }

    #[test]
    fn a_plain_name_reads_as_a_name() {
        for name in [&b"i3001"[..], b"v12_acc", b"n2810_w3_local", b"x1"] {
            assert!(is_plain(name, false));
            assert_eq!(classify(name, false, false), Tok::Ident);
            assert_eq!(opaque_construct(name, false), None);
            assert!(!is_opencl_space(name));
        }
        assert!(!is_plain(b"f16vec2", true));
        assert!(!is_plain(b"int", false));
        assert!(!is_plain(b"x", false));
    }

    #[test]
    fn a_keyword_defined_as_a_macro_gives_the_text_up() {
        let mut m = crate::canon::MacroNames::default();
        m.insert(b"bool");
        m.insert(b"GET");
        assert_eq!(keyword_macro(Some(&m)), None);
        m.insert(b"static");
        assert!(keyword_macro(Some(&m)).is_some_and(|w| w.contains("`static`")));
        assert_eq!(keyword_macro(None), None);
    }
}
