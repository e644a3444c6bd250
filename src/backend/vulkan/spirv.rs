//! What kcache reads from a SPIR-V module, checking its structure on the way.

use std::collections::HashMap;

const MAGIC: u32 = 0x0723_0203;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;
const EXECUTION_MODE_LOCAL_SIZE: u32 = 17;
const DECORATION_BLOCK: u32 = 2;
const DECORATION_BUFFER_BLOCK: u32 = 3;
const DECORATION_BINDING: u32 = 33;
const DECORATION_DESCRIPTOR_SET: u32 = 34;
const STORAGE_UNIFORM: u32 = 2;
const STORAGE_PUSH_CONSTANT: u32 = 9;
const STORAGE_STORAGE_BUFFER: u32 = 12;

/// A compute entry point's interface, as the calling convention sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reflection {
    /// The literal `LocalSize`, when the shader fixes it.
    pub local_size: Option<[u32; 3]>,
    /// How many storage buffers (bindings `0..buffers` of set 0).
    pub buffers: u32,
    /// How many 4-byte push-constant members.
    pub scalars: u32,
}

/// SPIR-V bytes as words; `None` unless the length is a multiple of 4.
pub fn words(bytes: &[u8]) -> Option<Vec<u32>> {
    bytes.len().is_multiple_of(4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// Decodes a SPIR-V literal string (UTF-8, NUL-terminated, in words).
fn string(words: &[u32]) -> Option<(String, usize)> {
    let mut bytes = Vec::new();
    for (i, word) in words.iter().enumerate() {
        for byte in word.to_le_bytes() {
            if byte == 0 {
                return Some((String::from_utf8(bytes).ok()?, i + 1));
            }
            bytes.push(byte);
        }
    }
    None
}

/// Checks `words` is a well-formed module with a `GLCompute` entry point
/// named `entry` whose interface follows the calling convention.
pub fn reflect(words: &[u32], entry: &str) -> Result<Reflection, String> {
    if words.len() < 5 || words[0] != MAGIC {
        return Err("not SPIR-V (bad magic number or short header)".into());
    }
    if words[4] != 0 {
        return Err(format!("unknown SPIR-V schema {}", words[4]));
    }
    let bound = words[3];
    let mut entry_id = None;
    let mut local_sizes: HashMap<u32, [u32; 3]> = HashMap::new();
    let mut decorations: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    let mut variables: Vec<(u32, u32, u32)> = Vec::new(); // (id, pointer type, storage class)
    let mut pointers: HashMap<u32, u32> = HashMap::new(); // pointer type -> pointee
    let mut structs: HashMap<u32, u32> = HashMap::new(); // struct -> member count

    let mut at = 5;
    while at < words.len() {
        let opcode = words[at] & 0xffff;
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return Err(format!("malformed instruction at word {at}"));
        }
        let operands = &words[at + 1..at + count];
        let need = |n: usize| {
            if operands.len() < n {
                Err(format!(
                    "truncated instruction (opcode {opcode}) at word {at}"
                ))
            } else {
                Ok(())
            }
        };
        match opcode {
            OP_ENTRY_POINT => {
                need(3)?;
                let (name, _) = string(&operands[2..])
                    .ok_or_else(|| format!("bad entry point name at word {at}"))?;
                if name == entry {
                    if operands[0] != EXECUTION_MODEL_GL_COMPUTE {
                        return Err(format!("entry point `{entry}` is not a compute shader"));
                    }
                    entry_id = Some(operands[1]);
                }
            }
            OP_EXECUTION_MODE => {
                need(2)?;
                if operands[1] == EXECUTION_MODE_LOCAL_SIZE {
                    need(5)?;
                    local_sizes.insert(operands[0], [operands[2], operands[3], operands[4]]);
                }
            }
            OP_TYPE_STRUCT => {
                need(1)?;
                structs.insert(operands[0], (operands.len() - 1) as u32);
            }
            OP_TYPE_POINTER => {
                need(3)?;
                pointers.insert(operands[0], operands[2]);
            }
            OP_VARIABLE => {
                need(3)?;
                variables.push((operands[1], operands[0], operands[2]));
            }
            OP_DECORATE => {
                need(2)?;
                let value = operands.get(2).copied().unwrap_or(0);
                decorations
                    .entry(operands[0])
                    .or_default()
                    .push((operands[1], value));
            }
            _ => {}
        }
        at += count;
    }

    let entry_id = entry_id.ok_or_else(|| format!("no compute entry point named `{entry}`"))?;
    if entry_id >= bound {
        return Err("entry point id out of bounds".into());
    }
    let decoration = |id: u32, which: u32| {
        decorations
            .get(&id)
            .and_then(|d| d.iter().find(|(k, _)| *k == which).map(|(_, v)| *v))
    };
    let has = |id: u32, which: u32| decoration(id, which).is_some();

    let mut bindings = Vec::new();
    let mut push_constants = Vec::new();
    for &(id, pointer, storage) in &variables {
        let pointee = pointers.get(&pointer).copied();
        if storage == STORAGE_PUSH_CONSTANT {
            let members = pointee
                .and_then(|t| structs.get(&t))
                .ok_or("the push constant block is not a struct")?;
            push_constants.push(*members);
            continue;
        }
        let Some(binding) = decoration(id, DECORATION_BINDING) else {
            continue;
        };
        let set = decoration(id, DECORATION_DESCRIPTOR_SET).unwrap_or(0);
        if set != 0 {
            return Err(format!(
                "binding {binding} is in descriptor set {set}; only set 0 is used"
            ));
        }
        let block = pointee.filter(|t| structs.contains_key(t));
        let storage_buffer = match (storage, block) {
            (STORAGE_STORAGE_BUFFER, Some(_)) => true,
            (STORAGE_UNIFORM, Some(t)) => {
                has(t, DECORATION_BUFFER_BLOCK) && !has(t, DECORATION_BLOCK)
            }
            _ => false,
        };
        if !storage_buffer {
            return Err(format!(
                "binding {binding} is not a storage buffer (the calling convention has only \
                 `buffer` blocks at bindings 0.. and one push_constant block)"
            ));
        }
        bindings.push(binding);
    }
    if push_constants.len() > 1 {
        return Err("more than one push_constant block".into());
    }
    bindings.sort_unstable();
    if bindings.iter().enumerate().any(|(i, b)| *b != i as u32) {
        return Err(format!(
            "storage buffers must be at bindings 0..{} without gaps or repeats (found {bindings:?})",
            bindings.len()
        ));
    }
    Ok(Reflection {
        local_size: local_sizes.get(&entry_id).copied(),
        buffers: bindings.len() as u32,
        scalars: push_constants.first().copied().unwrap_or(0),
    })
}
