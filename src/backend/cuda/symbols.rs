//! Which kernels a CUDA image defines, read from the image itself, so a
//! compile-only backend (no driver to load the module) still refuses a
//! program that lacks the kernel asked for, as the other backends do.

use super::CudaTarget;

/// Whether `image` (a cubin, or PTX text) defines the kernel `symbol`;
/// `None` when the image cannot be read.
pub(super) fn defines(image: &[u8], target: CudaTarget, symbol: &str) -> Option<bool> {
    match target {
        CudaTarget::Ptx => Some(ptx_entries(std::str::from_utf8(image).ok()?).any(|e| e == symbol)),
        CudaTarget::Cubin => Some(cubin_functions(image)?.contains(&symbol.as_bytes())),
    }
}

/// The names after each `.entry` directive.
fn ptx_entries(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.split(".entry").skip(1).map(|rest| {
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        &rest[..end]
    })
}

/// The names of the function symbols of a little-endian ELF64 image.
fn cubin_functions(elf: &[u8]) -> Option<Vec<&[u8]>> {
    const SHT_SYMTAB: u32 = 2;
    const STT_FUNC: u8 = 2;
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| {
        let v = u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?);
        usize::try_from(v).ok()
    };
    // ELF64 (class 2), little-endian (data 1).
    if !elf.starts_with(b"\x7fELF") || elf.get(4..6)? != [2, 1] {
        return None;
    }
    let (shoff, shentsize, shnum) = (u64_at(0x28)?, usize::from(u16_at(0x3a)?), u16_at(0x3c)?);
    let section = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
    let mut names = Vec::new();
    for i in 0..usize::from(shnum) {
        let sh = section(i)?;
        if u32_at(sh + 4)? != SHT_SYMTAB {
            continue;
        }
        let (offset, size, entsize) = (u64_at(sh + 24)?, u64_at(sh + 32)?, u64_at(sh + 56)?);
        let strtab = section(usize::try_from(u32_at(sh + 40)?).ok()?)?;
        let (str_offset, str_size) = (u64_at(strtab + 24)?, u64_at(strtab + 32)?);
        let strings = elf.get(str_offset..str_offset.checked_add(str_size)?)?;
        if entsize < 24 {
            return None;
        }
        for sym in (offset..offset.checked_add(size)?).step_by(entsize) {
            if elf.get(sym + 4)? & 0xf != STT_FUNC {
                continue;
            }
            let name = strings.get(usize::try_from(u32_at(sym)?).ok()?..)?;
            names.push(&name[..name.iter().position(|&b| b == 0)?]);
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_entries_are_read_by_name() {
        let ptx = ".visible .entry saxpy(\n.param .u64 a\n)\n.visible .entry sq_2 (";
        assert_eq!(ptx_entries(ptx).collect::<Vec<_>>(), ["saxpy", "sq_2"]);
        assert_eq!(defines(ptx.as_bytes(), CudaTarget::Ptx, "sax"), Some(false));
        assert_eq!(
            defines(ptx.as_bytes(), CudaTarget::Ptx, "saxpy"),
            Some(true)
        );
    }

    #[test]
    fn an_unreadable_cubin_defines_nothing_known() {
        assert_eq!(defines(b"\x7fELF\x02\x01", CudaTarget::Cubin, "k"), None);
        assert_eq!(defines(b"not elf", CudaTarget::Cubin, "k"), None);
    }
}
