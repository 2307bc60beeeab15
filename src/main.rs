//! The `tend` binary: parse the command line, run, map the result to an exit code.

use std::process::ExitCode;

/// mimalloc instead of the system allocator: a run is mostly building and dropping JSON and
/// YAML trees of every object, where glibc's malloc took a fifth of the instructions of a
/// no-op diff and its per-thread arenas a sixth of the peak memory (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (libmimalloc-sys does not name it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// `mi_option_allow_thp` in mimalloc v3's `mimalloc.h` (libmimalloc-sys does not name it).
const ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

fn main() -> ExitCode {
    #[cfg(not(target_os = "linux"))]
    configure_allocator();
    tend::main()
}

/// Runs [`configure_allocator`] before Rust's runtime starts: the runtime's first allocation
/// (the main thread's name) reserves mimalloc's arena, after which `allow_thp` is too late.
#[cfg(all(target_os = "linux", not(test)))]
#[used]
#[link_section = ".init_array"]
static CONFIGURE_ALLOCATOR: extern "C" fn() = configure_allocator;

#[cfg_attr(all(target_os = "linux", test), allow(dead_code))]
extern "C" fn configure_allocator() {
    // Give freed memory back after 1 ms instead of 1 s: a run frees each LIST page right after
    // settling it, and the default delay kept ~30 MiB of them resident at 10,000 objects.
    // SAFETY: options are set before any other thread exists, as mimalloc requires.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 1) };
    // No transparent huge pages: mimalloc asks for them on its whole arena, so where the
    // kernel grants them on request (`madvise`, the common default) the first byte touched
    // in a 2 MiB stretch makes all of it resident: 5 MiB of the 14 MiB floor of a run, 9 of
    // a 28 MiB render of one Helm chart. Time is the same (a 10,000-object render too).
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_option_set(ALLOW_THP, 0) };
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

    #[test]
    fn allow_thp_is_the_option_we_mean() {
        // In mimalloc.h it is the fifth option from the end (then minimal_purge_size,
        // arena_max_object_size, arena_is_numa_local), and on by default off Android.
        use libmimalloc_sys::{_mi_option_last, mi_option_get};
        assert_eq!(super::ALLOW_THP, _mi_option_last - 4);
        assert_eq!(unsafe { mi_option_get(super::ALLOW_THP) }, 1);
    }
}
