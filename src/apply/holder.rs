//! Who holds the run lock: the identity tend writes into the Lease (`host/pid-N`; the host is
//! the pod name in a CronJob), and whether that holder is a dead process of this host, whose
//! lock can be taken over at once instead of after the lease expires.

/// Whether a process runs on this machine: a holder that names this host and a pid that
/// no longer exists crashed (or was killed) and will never release its lock.
pub trait Processes: Send + Sync {
    /// This machine's name, as [`holder_identity`] writes it.
    fn host(&self) -> String;
    fn alive(&self, pid: u32) -> bool;
}

/// The operating system's view.
pub struct LocalProcesses;

impl Processes for LocalProcesses {
    fn host(&self) -> String {
        hostname()
    }

    fn alive(&self, pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // Signal 0 checks existence only; EPERM means it exists but is not ours.
        // SAFETY: kill(2) with signal 0 sends nothing and touches no memory.
        let answer = unsafe { libc::kill(pid, 0) };
        answer == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
}

/// Why a held lease may be taken at once: its holder is a dead process on this host.
pub fn dead_holder(holder: &str, processes: &dyn Processes) -> bool {
    let Some((host, pid)) = holder.rsplit_once("/pid-") else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    host == processes.host() && pid != std::process::id() && !processes.alive(pid)
}

/// Identity written into the lease: host (pod name in a CronJob) and process.
pub fn holder_identity() -> String {
    format!("{}/pid-{}", hostname(), std::process::id())
}

pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl Processes for Fixed {
        fn host(&self) -> String {
            "runner-1".into()
        }
        fn alive(&self, pid: u32) -> bool {
            pid == 7
        }
    }

    #[test]
    fn only_a_dead_process_of_this_host_is_a_dead_holder() {
        assert!(dead_holder("runner-1/pid-8", &Fixed));
        assert!(!dead_holder("runner-1/pid-7", &Fixed));
        assert!(!dead_holder("runner-2/pid-8", &Fixed));
        assert!(!dead_holder("someone else", &Fixed));
        assert!(!dead_holder("runner-1/pid-x", &Fixed));
        assert!(LocalProcesses.alive(std::process::id()));
    }
}
