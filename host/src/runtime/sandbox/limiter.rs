//! The per-call memory and table limits, and the note that a refused growth ran out of memory.

use super::*;

/// Applies the per-call memory and table limits and remembers when it
/// refused growth, so the resulting trap is reported as `out_of_memory`.
pub(super) struct CallLimiter {
    pub(super) memory_bytes: usize,
    pub(super) memory_denied: bool,
    pub(super) table_denied: bool,
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.memory_bytes;
        self.memory_denied |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= MAX_TABLE_ELEMENTS;
        self.table_denied |= !allowed;
        Ok(allowed)
    }

    fn instances(&self) -> usize {
        CORE_INSTANCES_PER_COMPONENT as usize
    }

    fn memories(&self) -> usize {
        MEMORIES_PER_COMPONENT as usize
    }

    fn tables(&self) -> usize {
        TABLES_PER_COMPONENT as usize
    }
}
