//! The `tend` binary: parse the command line, run, map the result to an exit code.

use std::process::ExitCode;

/// mimalloc instead of the system allocator: a run is mostly building and dropping JSON and
/// YAML trees of every object, where glibc's malloc took a fifth of the instructions of a
/// no-op diff and its per-thread arenas a sixth of the peak memory (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (libmimalloc-sys does not name it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Give freed memory back after 1 ms instead of 1 s: a run frees each LIST page right after
    // settling it, and the default delay kept ~30 MiB of them resident at 10,000 objects.
    // SAFETY: options are set before any other thread exists, as mimalloc requires.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 1) };
    tend::cli::main()
}

#[cfg(test)]
mod tests {
    #[test]
    fn purge_delay_is_the_option_we_mean() {
        // In mimalloc.h it directly precedes use_numa_nodes, which the crate does name, and
        // its default in mimalloc v3 (src/options.c) is 1000 ms.
        use libmimalloc_sys::{mi_option_get, mi_option_use_numa_nodes};
        assert_eq!(super::PURGE_DELAY, mi_option_use_numa_nodes - 1);
        assert_eq!(unsafe { mi_option_get(super::PURGE_DELAY) }, 1000);
    }
}
