//! The Vulkan program container: the bytes a store keeps for a program.

use crate::backend::gpu;

/// The program's bytes, sealed (`backend::gpu::seal`: `KCVKPROG`, a format
/// version, a blake3 digest): the pipeline-cache data, then the number of
/// kernels and each kernel's symbol and SPIR-V; integers are little-endian
/// `u32`s, and every byte string is length-prefixed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    pub(super) pipeline_cache: Vec<u8>,
    pub(super) kernels: Vec<(String, Vec<u8>)>,
}

pub(super) const CONTAINER_MAGIC: &[u8; 8] = b"KCVKPROG";
pub(super) const CONTAINER_VERSION: u32 = 1;

impl Container {
    pub(super) fn encode(&self) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let mut body = Vec::new();
        put(&mut body, &self.pipeline_cache);
        body.extend_from_slice(&(self.kernels.len() as u32).to_le_bytes());
        for (symbol, spirv) in &self.kernels {
            put(&mut body, symbol.as_bytes());
            put(&mut body, spirv);
        }
        gpu::seal(CONTAINER_MAGIC, CONTAINER_VERSION, &body)
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Container, String> {
        let mut reader = Reader(gpu::unseal(CONTAINER_MAGIC, CONTAINER_VERSION, bytes)?);
        let pipeline_cache = reader.bytes("pipeline cache")?.to_vec();
        let count = reader.u32("kernel count")?;
        let mut kernels = Vec::new();
        for _ in 0..count {
            let symbol = String::from_utf8(reader.bytes("symbol")?.to_vec())
                .map_err(|_| "a symbol is not UTF-8")?;
            if !gpu::is_identifier(&symbol) {
                return Err(format!(
                    "`{}` is not a kernel symbol",
                    symbol.escape_debug()
                ));
            }
            let spirv = reader.bytes("SPIR-V")?.to_vec();
            kernels.push((symbol, spirv));
        }
        if !reader.0.is_empty() {
            return Err(format!(
                "{} stray bytes after the last kernel",
                reader.0.len()
            ));
        }
        Ok(Container {
            pipeline_cache,
            kernels,
        })
    }
}

pub(super) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], String> {
        if self.0.len() < len {
            return Err(format!("truncated program: short {what}"));
        }
        let (head, tail) = self.0.split_at(len);
        self.0 = tail;
        Ok(head)
    }

    pub(super) fn u32(&mut self, what: &str) -> Result<u32, String> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A length-prefixed byte string.
    pub(super) fn bytes(&mut self, what: &str) -> Result<&'a [u8], String> {
        let len = self.u32(what)? as usize;
        self.take(len, what)
    }
}
