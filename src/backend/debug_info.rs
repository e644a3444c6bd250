//! Which options make a compile record the kernel's own spellings.
//!
//! A renaming of a kernel's locals and parameters changes nothing its
//! program computes, but debug information records those names, and the
//! lines and columns they stand at: two renderings that differ only in
//! generated names compile to different debug data, and a debugger shown
//! one kernel's would name the other's variables at the other's columns. So
//! a kernel compiled with such an option is keyed on its raw text (see
//! [`super::KeyExtras::records_names`]), as ccache keys the working
//! directory under `-g`.
//!
//! The checks err towards recording: each option element is split at
//! blanks (OpenCL joins its options into one string), and any spelling
//! that may turn debug information on counts (`-gz` alone does not, but
//! is taken as if it did: that costs reuse, never soundness).

/// Why `options` make a compile by `family` (`cc`, `opencl`, `cuda`,
/// `vulkan`) record the kernel's own spellings, if they do.
pub fn records_names(family: &str, options: &[String]) -> Option<String> {
    options
        .iter()
        .flat_map(|o| o.split_ascii_whitespace())
        .find_map(|word| {
            if records(family, word) {
                Some(format!(
                    "option `{word}` records the kernel's names (debug information)"
                ))
            } else {
                judges_names(family, word).then(|| {
                    format!("option `{word}` makes the outcome depend on the kernel's names")
                })
            }
        })
}

/// Whether `word` makes the compile's outcome depend on the kernel's own
/// spellings another way (review 2026-12-02): a warning made an error may
/// be about a name (`-Wshadow` of a header's global fails the kernel whose
/// local is spelled like it, not its renamed twin), and a sanitizer's
/// report names the variables and columns it catches.
fn judges_names(family: &str, word: &str) -> bool {
    match family {
        "cc" | "opencl" => {
            word.starts_with("-Werror")
                || word == "-pedantic-errors"
                || word.starts_with("-fsanitize=")
        }
        _ => false,
    }
}

fn records(family: &str, word: &str) -> bool {
    // `-g` and its forms (`-g3`, `-ggdb`, `-gdwarf-5`, `-gline-tables-only`,
    // glslang's `-gV`, `-gVS`), but `-g0`, which turns it off.
    let g = word.starts_with("-g") && word != "-g0";
    match family {
        "cuda" => {
            matches!(word, "-G" | "-lineinfo")
                || word.starts_with("--device-debug")
                || word.starts_with("--generate-line-info")
        }
        // PoCL and the rest keep parameter names for `clGetKernelArgInfo`
        // under this option: renamed, a hit would answer another kernel's.
        "opencl" => g || word == "-cl-kernel-arg-info",
        _ => g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn warnings_made_errors_and_sanitizers_judge_names() {
        for o in [
            "-Werror",
            "-Werror=shadow",
            "-pedantic-errors",
            "-fsanitize=address",
        ] {
            assert!(records_names("cc", &opts(&["-O2", o])).is_some(), "{o}");
        }
        assert_eq!(
            records_names(
                "cc",
                &opts(&["-Wshadow", "-Wno-error", "-fno-sanitize=all"])
            ),
            None
        );
    }

    #[test]
    fn every_debug_spelling_of_the_c_compiler_records_names() {
        for o in [
            "-g",
            "-g3",
            "-ggdb",
            "-gdwarf-5",
            "-gline-tables-only",
            "-gsplit-dwarf",
        ] {
            assert!(records_names("cc", &opts(&["-O2", o])).is_some(), "{o}");
        }
        assert_eq!(records_names("cc", &opts(&["-O2", "-g0", "-DG=1"])), None);
    }

    #[test]
    fn nvrtc_debug_and_line_info_record_names_and_nothing_else_does() {
        for o in ["-G", "--device-debug", "-lineinfo", "--generate-line-info"] {
            assert!(records_names("cuda", &opts(&[o])).is_some(), "{o}");
        }
        // `-g` means nothing to NVRTC, and `--use_fast_math` is no debug option.
        assert_eq!(
            records_names("cuda", &opts(&["--use_fast_math", "-DG"])),
            None
        );
    }

    #[test]
    fn an_opencl_option_string_is_read_word_by_word() {
        let found = records_names("opencl", &opts(&["-cl-fast-relaxed-math -g"]));
        assert!(found.is_some_and(|r| r.contains("`-g`")));
        assert!(records_names("opencl", &opts(&["-cl-kernel-arg-info"])).is_some());
        assert_eq!(records_names("opencl", &opts(&["-cl-mad-enable"])), None);
    }

    #[test]
    fn glslang_debug_forms_record_names_and_its_strip_option_does_not() {
        for o in ["-g", "-gV", "-gVS"] {
            assert!(records_names("vulkan", &opts(&[o])).is_some(), "{o}");
        }
        assert_eq!(records_names("vulkan", &opts(&["-g0", "-O"])), None);
    }
}
